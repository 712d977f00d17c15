"""No writer loses a line (issue "Hold the line", data): the real daemon over stdio.

- another writer's line still in flight is never split by a breaker line, and the daemon
  never rewrites the file by rename underneath a writer that keeps its descriptor open;
- an append to a file that lost its header is refused, never acknowledged;
- a cancelled append either did not happen (-32800) or is reported (its result);
- doctor refuses to repair a file that is open in the daemon;
- a stateDir inside the agent directory is refused with a warning.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from sessiontree.core.store import TORN_LINE_BREAKER

from .helpers import chain, line, message, write_session
from .rawlsp import RawLsp

#: How long the raw writer runs beside the daemon (the issue asks for 30 s or more).
RAW_WRITER_SECONDS = float(os.environ.get("SESSIONTREE_RAW_WRITER_SECONDS", "30"))

RAW_WRITER = r"""
import json, os, random, sys, time
path, seconds, seed = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
rng = random.Random(seed)
fd = os.open(path, os.O_WRONLY | os.O_APPEND)  # kept open for the whole run, as agents do
parent = sys.argv[4]
n = 0
end = time.monotonic() + seconds
while time.monotonic() < end:
    n += 1
    eid = "raw%05d" % n
    entry = {"type": "message", "id": eid, "parentId": parent, "timestamp": "2026-01-01T00:00:00.000Z",
             "message": {"role": "user", "content": [{"type": "text", "text": "raw line %d " % n + "y" * rng.randrange(0, 3000)}],
                         "timestamp": n}}
    data = (json.dumps(entry, separators=(",", ":")) + "\n").encode()
    # The line goes out in up to four pieces with pauses between them: a reader sees it
    # unfinished for up to ~0.6 s.
    cuts = sorted(rng.sample(range(1, len(data)), k=min(3, len(data) - 1)))
    start = 0
    for cut in [*cuts, len(data)]:
        os.write(fd, data[start:cut])
        start = cut
        time.sleep(rng.choice((0, 0.001, 0.05, 0.2)))
    parent = eid
    # Between lines: a line begun in the microseconds between the daemon's look at the end
    # and its write is glued to the daemon's line (the daemon then writes its own again, so
    # only this writer's split line could be lost); spacing the line starts keeps that rare.
    time.sleep(0.1 + rng.random() * 0.2)
print(n)
"""


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_bytes().splitlines() if x.strip()]


@pytest.fixture
def daemon(tmp_path: Path) -> Any:
    lsp = RawLsp(env={"XDG_STATE_HOME": str(tmp_path / "state"), "XDG_CACHE_HOME": str(tmp_path / "cache")})
    lsp.initialize({"allowedRoots": [str(tmp_path)], "agentDir": str(tmp_path / "agent")})
    yield lsp
    lsp.close()


def _open(lsp: RawLsp, path: Path) -> str:
    res = lsp.request("session/open", {"path": str(path)})
    assert "result" in res, res
    return str(res["result"]["session"])


def test_a_line_in_flight_is_never_split_and_the_file_never_renamed(tmp_path: Path, daemon: RawLsp) -> None:
    f = tmp_path / "live.jsonl"
    entries = chain(20)
    write_session(f, entries)
    inode = f.stat().st_ino
    handle = _open(daemon, f)
    writer = subprocess.Popen(
        [sys.executable, "-c", RAW_WRITER, str(f), str(RAW_WRITER_SECONDS), "7", entries[-1]["id"]],
        stdout=subprocess.PIPE,
        text=True,
    )
    ours: list[str] = []
    deadline = time.monotonic() + RAW_WRITER_SECONDS
    i = 0
    while time.monotonic() < deadline:
        i += 1
        if i % 5 == 0:
            res = daemon.request(
                "session/setLabel",
                {"session": handle, "targetId": entries[1]["id"], "label": f"l{i}"},
                timeout=30,
            )
            assert "result" in res, res
            ours.append(res["result"]["entryId"])
        else:
            entry = {
                "type": "message",
                "message": {"role": "user", "content": f"from the client {i}", "timestamp": i},
            }
            res = daemon.request("session/append", {"session": handle, "entry": entry}, timeout=30)
            assert "result" in res, res
            ours.append(res["result"]["id"])
        time.sleep(0.04)
    out, _ = writer.communicate(timeout=60)
    raw_count = int(out.strip())
    assert f.stat().st_ino == inode, "the daemon replaced the file underneath the raw writer"
    rows, garbage = _rows_and_garbage(f.read_bytes())
    ids = [r.get("id") for r in rows[1:]]
    raw_ids = [x for x in ids if isinstance(x, str) and x.startswith("raw")]
    # A line the raw writer begins in the instant between the daemon's look at the end and
    # its write is glued to the daemon's line; the daemon sees it and writes its line again
    # behind a breaker (docs/storage-format.md, "Append"). That costs the raw writer the one
    # line it had begun, never one of ours, and shows as exactly three unreadable lines: the
    # glued one, the breaker, and the rest of the raw line. A line in flight is otherwise
    # never split: no breaker is written while another writer's line is unfinished.
    glued = [g for g in garbage if TORN_LINE_BREAKER in g]
    assert len(glued) <= 2, (
        f"{len(glued)} glued appends in {RAW_WRITER_SECONDS:.0f} s: the look at the end failed"
    )
    assert len(garbage) <= 3 * len(glued), garbage[:6]
    expected_raw = [f"raw{n:05d}" for n in range(1, raw_count + 1)]
    lost = [x for x in expected_raw if x not in set(raw_ids)]
    assert raw_ids == [x for x in expected_raw if x not in set(lost)]
    assert len(lost) == len(glued), (lost, len(glued))
    assert sorted(x for x in ids if x in set(ours)) == sorted(ours)
    assert len(ids) == len(set(ids)) == len(entries) - 1 + raw_count - len(lost) + len(ours)
    assert len(ours) > 50 and raw_count > 10


def _rows_and_garbage(data: bytes) -> tuple[list[dict[str, Any]], list[bytes]]:
    rows: list[dict[str, Any]] = []
    garbage: list[bytes] = []
    for x in data.splitlines():
        if not x.strip():
            continue
        try:
            rows.append(json.loads(x))
        except ValueError:
            garbage.append(x)
    return rows, garbage


def test_an_append_to_a_file_without_its_header_is_refused(tmp_path: Path, daemon: RawLsp) -> None:
    f = tmp_path / "t.jsonl"
    write_session(f, chain(6))
    handle = _open(daemon, f)
    os.truncate(f, 0)
    entry = {"type": "message", "message": {"role": "user", "content": "after truncation", "timestamp": 1}}
    res = daemon.request("session/append", {"session": handle, "entry": entry})
    assert "error" in res and res["error"]["code"] == -32004, res
    assert f.read_bytes() == b"", "an entry was written without a header"
    res = daemon.request("session/setLabel", {"session": handle, "targetId": chain(6)[1]["id"], "label": "x"})
    assert "error" in res and res["error"]["code"] in (-32004, -32602), res
    assert f.read_bytes() == b""
    # The daemon keeps serving, and writes again once the file holds a session.
    write_session(f, chain(6))
    deadline = time.monotonic() + 10
    while True:
        res = daemon.request("session/append", {"session": handle, "entry": entry})
        if "result" in res or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert "result" in res, res
    assert _lines(f)[0]["type"] == "session" and _lines(f)[-1]["id"] == res["result"]["id"]


def test_cancelled_appends_are_written_at_most_once_and_reported(tmp_path: Path, daemon: RawLsp) -> None:
    f = tmp_path / "c.jsonl"
    write_session(f, chain(10))
    handle = _open(daemon, f)
    sent: dict[int, str] = {}
    for n in range(200):
        rid = daemon.next_id()
        text = f"cancel storm {n}"
        sent[rid] = text
        entry = {"type": "message", "message": {"role": "user", "content": text, "timestamp": n}}
        daemon.send(
            {
                "jsonrpc": "2.0",
                "id": rid,
                "method": "session/append",
                "params": {"session": handle, "entry": entry},
            }
        )
        if n % 3:
            time.sleep(0.001 * (n % 4))
        daemon.send({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": rid}})
    answers = {rid: daemon.response(rid, timeout=30) for rid in sent}
    written = [r["message"]["content"] for r in _lines(f)[1:] if r.get("type") == "message"]
    cancelled = done = 0
    for rid, res in answers.items():
        text = sent[rid]
        if "error" in res:
            assert res["error"]["code"] == -32800, res
            assert text not in written, f"{text!r} was answered cancelled but written"
            cancelled += 1
        else:
            assert written.count(text) == 1, (
                f"{text!r} was acknowledged but written {written.count(text)} times"
            )
            done += 1
    assert cancelled + done == len(sent)
    assert len(written) == len([r for r in chain(10)[1:] if r["type"] == "message"]) + done
    print(f"cancel storm: {cancelled} cancelled before writing, {done} written and reported")


def test_doctor_refuses_to_repair_a_file_open_in_the_daemon(tmp_path: Path, daemon: RawLsp) -> None:
    f = tmp_path / "d.jsonl"
    data = write_session(f, chain(6)) + b"garbage\n" + line(message("zz", None, "user", "after"))
    f.write_bytes(data)
    _open(daemon, f)
    res = daemon.request("session/doctor", {"path": str(f), "repair": True})
    assert "error" in res and res["error"]["code"] == -32004, res
    assert f.read_bytes() == data
    assert not any(p.name.startswith(".d.jsonl.") for p in tmp_path.iterdir())


def test_a_state_dir_inside_the_agent_dir_is_refused(tmp_path: Path) -> None:
    agent = tmp_path / "agent"
    (agent / "sessions").mkdir(parents=True)
    f = agent / "sessions" / "s.jsonl"
    write_session(f, chain(4))
    lsp = RawLsp(env={"XDG_STATE_HOME": str(tmp_path / "state"), "XDG_CACHE_HOME": str(tmp_path / "cache")})
    try:
        lsp.initialize(
            {
                "allowedRoots": [str(tmp_path)],
                "agentDir": str(agent),
                "stateDir": str(agent / "sessions" / "st"),
            }
        )
        handle = _open(lsp, f)
        res = lsp.request("session/navigate", {"session": handle, "targetId": chain(4)[1]["id"]})
        assert "result" in res, res
        lsp.request("session/close", {"session": handle})
        warnings = [
            n
            for n in lsp.notifications
            if n.get("method") == "window/showMessage" and "stateDir" in json.dumps(n)
        ]
        assert warnings, lsp.notifications
    finally:
        lsp.close()
    assert not (agent / "sessions" / "st").exists()
    assert (tmp_path / "state" / "sessiontree").is_dir()
