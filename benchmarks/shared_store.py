#!/usr/bin/env python3
"""Benchmarks of the shared session store (docs/shared-store.md), against a PostgreSQL
server this script starts in a temporary directory (as the tests do, tests/pg.py).

Figures: the first push of an N-entry session (default 100,000, benchmarks/gen_corpus.py),
its open from the store (`SessionManager` over `PostgresSessionStorage`), an incremental
sync after 100 appends (push on the owner, pull on a second machine), and the latency from
an append on one daemon to the `session/didChange` on another (median and worst of 20):
both daemons on the shared session, and through the owner's file and `sync --watch`; and
what a daemon answers while the store's server is stopped (SIGSTOP).

    .venv/bin/python benchmarks/shared_store.py [--entries 100000] [--markdown]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from pg import PgServer  # noqa: E402
from sessiontree.client import Client  # noqa: E402
from sessiontree.core.session import SessionManager  # noqa: E402
from sessiontree.core.store.pg_schema import migrate  # noqa: E402
from sessiontree.core.store.postgres import PostgresSessionStorage  # noqa: E402
from sessiontree.core.sync import Syncer  # noqa: E402


def timed(fn: Any) -> tuple[float, float, Any]:
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - w, time.process_time() - c, out


def fmt(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"


def msg(ident: str, parent: str | None, text: str) -> bytes:
    v = {
        "type": "message",
        "id": ident,
        "parentId": parent,
        "timestamp": "2026-01-01T00:00:00.000Z",
        "message": {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1},
    }
    return json.dumps(v).encode() + b"\n"


def last_id(path: Path) -> str:
    with open(path, "rb") as f:
        f.seek(max(0, os.path.getsize(path) - 200_000))
        lines = f.read().splitlines()
    for line in reversed(lines):
        try:
            v = json.loads(line)
        except ValueError:
            continue
        if isinstance(v, dict) and isinstance(v.get("id"), str) and v.get("type") != "session":
            return str(v["id"])
    raise RuntimeError("no entry")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--entries", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    rows: list[tuple[str, str]] = []
    server = PgServer()
    base = Path(tempfile.mkdtemp(prefix="st-bench-"))
    env = dict(os.environ)
    for name in ("HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"):
        env[name] = str(base / name.lower())
    os.environ.update({k: env[k] for k in ("HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME")})
    try:
        server.init()
        url = server.new_database()
        import psycopg

        with psycopg.connect(url, autocommit=True) as conn:
            migrate(conn)
        a_agent = base / "alpha" / "agent"
        sdir = a_agent / "sessions" / "--bench--"
        sdir.mkdir(parents=True)
        path = sdir / "bench.jsonl"
        subprocess.run(
            [sys.executable, str(HERE / "gen_corpus.py"), str(path), str(args.entries)],
            check=True,
            capture_output=True,
        )
        size_mb = path.stat().st_size / 1e6
        session_id = json.loads(path.read_bytes().split(b"\n", 1)[0])["id"]

        alpha = Syncer(
            PostgresSessionStorage(url, machine="alpha"),
            agent_dir=str(a_agent),
            state_path=str(base / "alpha-sync"),
        )
        w, c, r = timed(lambda: alpha.sync_file(str(path)))
        rows.append(
            (
                f"push of a {args.entries:,}-entry session ({size_mb:.0f} MB), first sync",
                f"{fmt(w)} (cpu {fmt(c)}), {r.pushed:,} entries",
            )
        )

        info = alpha.store.find_session(session_id)
        assert info is not None
        w, c, sm = timed(lambda: SessionManager.open(info.path, storage=PostgresSessionStorage(url)))
        rows.append(
            (
                "open from the store (SessionManager over the store)",
                f"{fmt(w)} (cpu {fmt(c)}), {len(sm.index):,} entries",
            )
        )
        w, c, _ = timed(lambda: alpha.sync_file(str(path)))
        rows.append(("sync with nothing changed", f"{fmt(w)} (cpu {fmt(c)})"))

        b_dir = base / "beta" / "agent" / "sessions" / "--bench--"
        beta = Syncer(
            PostgresSessionStorage(url, machine="beta"),
            agent_dir=str(base / "beta" / "agent"),
            state_path=str(base / "beta-sync"),
        )
        w, c, _ = timed(lambda: beta.fetch(session_id, str(b_dir)))
        rows.append(("first pull to a second machine (fetch)", f"{fmt(w)} (cpu {fmt(c)})"))

        parent = last_id(path)
        with open(path, "ab") as f:
            for i in range(100):
                f.write(msg(f"inc{i}", parent, "one more"))
                parent = f"inc{i}"
        w, c, r = timed(lambda: alpha.sync_file(str(path)))
        rows.append(
            ("incremental sync after 100 appends: push", f"{fmt(w)} (cpu {fmt(c)}), {r.pushed} entries")
        )
        w, c, r = timed(lambda: beta.sync_file(str(b_dir / "bench.jsonl")))
        rows.append(
            (
                "incremental sync after 100 appends: pull on the other machine",
                f"{fmt(w)} (cpu {fmt(c)}), {r.pulled} entries",
            )
        )

        rows.extend(latency(base, url, session_id, path, a_agent, args.rounds, env))
        rows.extend(frozen_store(server, base, url, session_id, a_agent, env))
    finally:
        server.destroy()
        shutil.rmtree(base, ignore_errors=True)
    load = os.getloadavg()
    if args.markdown:
        print(
            f"`benchmarks/shared_store.py --entries {args.entries}` on {time.strftime('%Y-%m-%d')} "
            f"({platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
            f"PostgreSQL from {server.bin}); load after: {load[0]:.2f}.\n"
        )
        print("| figure | measured |\n|---|---|")
        for name, value in rows:
            print(f"| {name} | {value} |")
    else:
        for name, value in rows:
            print(f"{name}: {value}")
    return 0


def frozen_store(
    server: PgServer, base: Path, url: str, session_id: str, a_agent: Path, env: dict[str, str]
) -> list[tuple[str, str]]:
    """What a daemon answers while the store answers nothing (its server stopped, SIGSTOP)."""
    opts = {"store": url, "allowedRoots": [str(base)], "agentDir": str(a_agent)}
    with Client.spawn(init_options=opts, env={**env, "SESSIONTREE_MACHINE": "gamma"}) as c:
        c.request("session/list", {"all": True}, timeout=600)
        h = c.request("session/openShared", {"sessionId": session_id}, timeout=600)["session"]
        c.request("session/view", {"session": h, "limit": 50}, timeout=600)
        with server.frozen():
            lists = []
            for _ in range(3):
                w, _c, res = timed(lambda: c.request("session/list", {"all": True}, timeout=60))
                assert res["store"]["reachable"] is False
                lists.append(w)
            w_view, _c, _ = timed(lambda: c.request("session/view", {"session": h, "limit": 50}, timeout=60))
            w_page, _c, _ = timed(
                lambda: c.request("session/view", {"session": h, "offset": 50_000, "limit": 50}, timeout=60)
            )
    return [
        (
            "session/list with the store stopped (SIGSTOP): the first, then the next two",
            f"{fmt(lists[0])}, then {fmt(lists[1])} and {fmt(lists[2])}",
        ),
        (
            "a view of the open shared session with the store stopped (first page; a page 50,000 rows in)",
            f"{fmt(w_view)}; {fmt(w_page)}",
        ),
    ]


def latency(
    base: Path, url: str, session_id: str, path: Path, a_agent: Path, rounds: int, env: dict[str, str]
) -> list[tuple[str, str]]:
    out = []
    opts = {"store": url, "allowedRoots": [str(base)], "agentDir": str(a_agent)}
    with (
        Client.spawn(init_options=opts, env={**env, "SESSIONTREE_MACHINE": "alpha"}) as a,
        Client.spawn(init_options=opts, env={**env, "SESSIONTREE_MACHINE": "beta"}) as b,
    ):
        ha = a.request("session/openShared", {"sessionId": session_id}, timeout=600)["session"]
        hb = b.request("session/openShared", {"sessionId": session_id}, timeout=600)["session"]
        times = []
        for i in range(rounds):
            b.notifications.clear()
            t0 = time.perf_counter()
            res = a.request(
                "session/append",
                {
                    "session": ha,
                    "entry": {
                        "type": "message",
                        "message": {"role": "user", "content": f"l{i}", "timestamp": 1},
                    },
                },
            )
            b.wait_for_notification(
                "session/didChange",
                lambda p, rid=res["id"]: p["session"] == hb and rid in [e["id"] for e in p["appended"]],
                timeout=30,
            )
            times.append(time.perf_counter() - t0)
        out.append(
            (
                f"append on one daemon -> session/didChange on another (both on the shared session; {rounds} rounds)",
                f"median {fmt(statistics.median(times))}, worst {fmt(max(times))}",
            )
        )
        # Through the owner's file: a plain append to alpha's file, alpha's sync --watch, beta's daemon.
        watch = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "sessiontree",
                "sync",
                "--watch",
                "--all",
                "--quiet",
                "--machine",
                "alpha",
                "--agent-dir",
                str(a_agent),
                "--state",
                str(base / "alpha-sync"),
                "--store",
                url,
            ],
            env=env,
        )
        try:
            time.sleep(1.0)
            times = []
            for i in range(rounds):
                b.notifications.clear()
                parent = last_id(path)
                t0 = time.perf_counter()
                with open(path, "ab") as f:
                    f.write(msg(f"w{i}", parent, "via the file"))
                b.wait_for_notification(
                    "session/didChange",
                    lambda p, rid=f"w{i}": p["session"] == hb and rid in [e["id"] for e in p["appended"]],
                    timeout=30,
                )
                times.append(time.perf_counter() - t0)
            out.append(
                (
                    f"append to the owner's file -> session/didChange on another machine's daemon (via sync --watch; {rounds} rounds)",
                    f"median {fmt(statistics.median(times))}, worst {fmt(max(times))}",
                )
            )
        finally:
            watch.send_signal(signal.SIGTERM)
            watch.wait(timeout=30)
    return out


if __name__ == "__main__":
    raise SystemExit(main())
