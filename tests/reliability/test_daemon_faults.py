"""The daemon under faults: SIGKILL while it writes, and a full disk.

Acknowledged means: the `session/append` (or `session/setName`) response arrived and a
following `session/flush` returned. Every acknowledged entry must be in the file after the
kill; the file always loads.
"""

from __future__ import annotations

import contextlib
import errno
import os
import random
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from sessiontree.core import SessionManager
from sessiontree.core.format.jsonl import parse_jsonl_lenient

from .helpers import chain, write_session
from .rawlsp import RawLsp
from .test_storage_faults import fill, tmpfs

DAEMON_ROUNDS = 6
RNG = random.Random(int(os.environ.get("CRASH_SEED", "7")))


def _start(tmp: Path, root: Path) -> RawLsp:
    env = {
        "HOME": str(tmp),
        "PI_CODING_AGENT_DIR": str(tmp / "agent"),
        "SESSIONTREE_STATE_DIR": str(tmp / "st"),
    }
    d = RawLsp(env=env)
    res = d.initialize({"agentDir": str(tmp / "agent"), "allowedRoots": [str(root)], "watch": False})
    assert "result" in res, res
    return d


def _msg(role: str, i: int) -> dict[str, Any]:
    m: dict[str, Any] = {
        "role": role,
        "content": [{"type": "text", "text": f"m{i} " + "z" * 300}],
        "timestamp": i,
    }
    if role == "assistant":
        m.update(
            {"api": "anthropic-messages", "provider": "anthropic", "model": "claude", "stopReason": "stop"}
        )
    return {"type": "message", "message": m}


@pytest.mark.timeout(120)
def test_sigkill_of_a_writing_daemon(tmp_path: Path) -> None:
    (tmp_path / "agent").mkdir()
    survived = 0
    for r in range(DAEMON_ROUNDS):
        root = tmp_path / f"r{r}"
        root.mkdir()
        f = root / "s.jsonl"
        write_session(f, chain(20, seed=r))
        original = [v["id"] for v in parse_jsonl_lenient(f.read_bytes()).values[1:]]
        d = _start(tmp_path, root)
        handle = d.request("session/open", {"path": str(f)})["result"]["session"]
        mode = ("append", "append", "append", "setName", "setName", "branched")[r % 6]
        acked: list[str] = []
        names: list[str] = []
        made: list[str] = []
        killer = threading.Timer(RNG.uniform(0.05, 0.6), d.proc.send_signal, args=(signal.SIGKILL,))
        killer.start()
        try:
            i = 0
            while d.alive():
                if mode == "append":
                    res = d.request(
                        "session/append",
                        {"session": handle, "entry": _msg(("user", "assistant")[i % 2], i)},
                        timeout=5,
                    )
                    assert "result" in res, res
                    d.request("session/flush", {"session": handle}, timeout=5)["result"]
                    acked.append(res["result"]["id"])
                elif mode == "setName":
                    res = d.request("session/setName", {"session": handle, "name": f"name-{i}"}, timeout=5)
                    assert "result" in res, res
                    names.append(f"name-{i}")
                else:
                    leaf = d.request("session/open", {"path": str(f)}, timeout=5)["result"]["leafId"]
                    res = d.request(
                        "session/createBranchedSession", {"session": handle, "leafId": leaf}, timeout=5
                    )
                    assert "result" in res, res
                    made.append(res["result"]["path"])
                    # the handle now addresses the new file; open the source again
                    handle = d.request("session/open", {"path": str(f)}, timeout=5)["result"]["session"]
                i += 1
        except (EOFError, TimeoutError, KeyError, BrokenPipeError):
            # the daemon was killed mid-request (or between an answer and the next request:
            # then writing that request finds the pipe closed)
            pass
        finally:
            killer.cancel()
            d.proc.wait(timeout=10)
            d.close()
        values = parse_jsonl_lenient(f.read_bytes()).values
        ids = [v.get("id") for v in values[1:] if isinstance(v, dict)]
        assert ids[: len(original)] == original
        assert set(acked) <= set(ids), f"round {r}: lost {set(acked) - set(ids)}"
        if names:
            last = int(names[-1].split("-")[1])
            assert values[0].get("title") in (f"name-{last}", f"name-{last + 1}")
        for p in made:
            assert Path(p).exists() and SessionManager.open(p).get_entries()
        sm = SessionManager.open(str(f))
        assert {e["id"] for e in sm.get_entries()} >= set(original) | set(acked)
        print(
            f"round {r} {mode}: {len(acked)} appends, {len(names)} renames, {len(made)} branched files acknowledged"
        )
        survived += 1
    assert survived == DAEMON_ROUNDS


def test_daemon_full_disk_reports_32003_and_recovers(tmp_path: Path) -> None:
    (tmp_path / "agent").mkdir()
    with tmpfs(tmp_path / "mnt", "256k") as mnt:
        f = mnt / "s.jsonl"
        write_session(f, chain(10))
        d = _start(tmp_path, mnt)
        try:
            handle = d.request("session/open", {"path": str(f)})["result"]["session"]
            ok = d.request("session/append", {"session": handle, "entry": _msg("assistant", 0)})["result"][
                "id"
            ]
            assert "result" in d.request("session/flush", {"session": handle})
            before = f.read_bytes()
            filler = fill(mnt)
            err = None
            for i in range(60):
                res = d.request("session/append", {"session": handle, "entry": _msg("user", i)})
                if "error" in res:
                    err = res["error"]
                    break
                res = d.request("session/flush", {"session": handle})
                if "error" in res:
                    err = res["error"]
                    break
            assert err is not None, "the disk never filled up"
            assert err["code"] == -32003, err
            assert err["data"]["path"] == str(f)
            assert "No space left" in err["message"] or str(errno.ENOSPC) in err["message"]
            # latched: the next write fails the same way
            again = d.request("session/append", {"session": handle, "entry": _msg("user", 99)})
            assert again["error"]["code"] == -32003
            now = f.read_bytes()
            assert now[: len(before)] == before
            # the fault goes away: close and open again, then writing works
            filler.unlink()
            d.request("session/close", {"session": handle})
            h2 = d.request("session/open", {"path": str(f)})["result"]["session"]
            res = d.request("session/append", {"session": h2, "entry": _msg("user", 100)})
            assert "result" in res, res
            assert "result" in d.request("session/flush", {"session": h2})
            ids = [v.get("id") for v in parse_jsonl_lenient(f.read_bytes()).values]
            assert ok in ids and res["result"]["id"] in ids
        finally:
            d.close()
            with contextlib.suppress(Exception):
                subprocess.run(["sync"], timeout=10)
    time.sleep(0)
