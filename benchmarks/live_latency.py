#!/usr/bin/env python3
"""Latency from an external append to the daemon's `session/didChange` notification.

Usage:
    .venv/bin/python benchmarks/live_latency.py [--appends 100] [--mode inotify|polling|both]
                                                [--session big.jsonl]

A real daemon (`sessiontree serve`) runs over stdio with a temporary agent dir and has a
session open. This process (another process, as far as the daemon knows) appends one
complete JSON line at a time with a single `O_APPEND` write, the way an agent writes, and
measures the time from the end of the write to the arrival of the matching
`session/didChange` (`source: "external"`) at the client. Appends are spaced 20 to 120 ms
apart (seeded), so the polling fallback is not phase-locked to the writes.
Prints median, 90th percentile and worst. Not part of the test run.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "server"), str(ROOT / "protocol")]

from sessiontree.client import Client  # noqa: E402
from sessiontree.core.session import SessionManager  # noqa: E402


def measure(appends: int, polling: bool, session: str | None = None) -> list[float]:
    root = Path(tempfile.mkdtemp(prefix="live-latency-"))
    agent = root / "agent"
    sessions = agent / "sessions" / "-bench"
    sessions.mkdir(parents=True)
    if session:
        path = str(sessions / "followed.jsonl")
        shutil.copyfile(session, path)
    else:
        m = SessionManager.create(str(root), str(sessions))
        m.append_message({"role": "user", "content": "start", "timestamp": 1})
        m.append_message({"role": "assistant", "content": [{"type": "text", "text": "ok"}], "timestamp": 2})
        m.close()
        path = m.get_session_file() or ""
    env = {
        "PI_CODING_AGENT_DIR": str(agent),
        "SESSIONTREE_STATE_DIR": str(root / "state"),
        "PYTHONPATH": os.pathsep.join([str(ROOT / "server"), str(ROOT / "protocol")]),
    }
    if polling:
        env["SESSIONTREE_WATCH_POLLING"] = "1"
    arrived: dict[str, float] = {}
    cond = threading.Condition()
    with Client.spawn(init_options={"agentDir": str(agent), "stateDir": str(root / "state")}, env=env) as c:
        opened = c.request("session/open", {"path": path}, timeout=300)
        leaf = opened["leafId"]
        time.sleep(0.5)  # let the watches settle

        # Timestamp notifications as they are read (the client's reader thread).
        original = c._cond  # the client's condition, notified on every message

        def watch() -> None:
            seen = 0
            while True:
                with original:
                    original.wait(0.5)
                    notes = c.notifications[seen:]
                    seen = len(c.notifications)
                now = time.monotonic()
                for name, params in notes:
                    if name == "session/didChange" and params.get("source") == "external":
                        for e in params["appended"]:
                            with cond:
                                arrived.setdefault(e["id"], now)
                                cond.notify_all()
                if stop.is_set():
                    return

        stop = threading.Event()
        t = threading.Thread(target=watch, daemon=True)
        t.start()
        latencies: list[float] = []
        rng = random.Random(7)  # random spacing, so polling is not phase-locked to the writes
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        try:
            for i in range(appends):
                eid = f"{i:08x}"
                line = orjson.dumps(
                    {
                        "type": "message",
                        "id": eid,
                        "parentId": leaf,
                        "timestamp": "2026-01-01T00:00:00.000Z",
                        "message": {"role": "user", "content": f"probe {i}"},
                    }
                )
                leaf = eid
                os.write(fd, line + b"\n")
                t0 = time.monotonic()
                with cond:
                    if not cond.wait_for(lambda eid=eid: eid in arrived, timeout=5):  # type: ignore[misc]
                        raise SystemExit(f"no notification for append {i} within 5 s")
                latencies.append(arrived[eid] - t0)
                time.sleep(0.02 + rng.random() * 0.1)
        finally:
            os.close(fd)
            stop.set()
    return latencies


def report(name: str, lat: list[float]) -> None:
    ms = sorted(x * 1000 for x in lat)
    p90 = ms[int(len(ms) * 0.9) - 1]
    print(
        f"{name:8s} n={len(ms)}  median {statistics.median(ms):6.1f} ms  p90 {p90:6.1f} ms  worst {ms[-1]:6.1f} ms"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--appends", type=int, default=100)
    ap.add_argument("--mode", choices=["inotify", "polling", "both"], default="both")
    ap.add_argument("--session", help="follow a copy of this session file (e.g. a 100k-entry corpus)")
    args = ap.parse_args()
    if args.mode in ("inotify", "both"):
        report("inotify", measure(args.appends, polling=False, session=args.session))
    if args.mode in ("polling", "both"):
        report("polling", measure(args.appends, polling=True, session=args.session))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
