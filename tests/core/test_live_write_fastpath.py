"""The write fast path of core/live.py: one stat when the file is as last seen, a full look otherwise."""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest
from sessiontree.core.ids import FixedClock, IdSource
from sessiontree.core.live import ChangeKind
from sessiontree.core.session import SessionManager


def user(text: str) -> dict:
    return {"role": "user", "content": text, "timestamp": 1}


def make_session(tmp_path: Path) -> SessionManager:
    m = SessionManager.create(
        str(tmp_path), str(tmp_path / "sessions"), ids=IdSource(seed=1), clock=FixedClock(step_ms=1)
    )
    m.append_message(user("q1"))
    m.append_message(
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "a1"}],
            "stopReason": "stop",
            "timestamp": 2,
        }
    )
    return m


def test_own_appends_do_not_read_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    m = make_session(tmp_path)
    m.append_message(user("warm up"))
    path = m.get_session_file()
    assert path is not None
    reads: list[int] = []
    real_pread = os.pread

    def counting_pread(fd: int, n: int, offset: int) -> bytes:
        reads.append(n)
        return real_pread(fd, n, offset)

    monkeypatch.setattr(os, "pread", counting_pread)
    for i in range(50):
        m.append_message(user(f"q{i}"))
    # at most the writer's one-byte look at the file end per append, no fingerprints
    assert all(n <= 1 for n in reads), reads
    monkeypatch.undo()
    lines = [orjson.loads(x) for x in Path(path).read_bytes().splitlines()]
    assert [e["message"]["content"] for e in lines[-50:]] == [f"q{i}" for i in range(50)]


def test_external_append_between_own_appends_is_folded_in(tmp_path: Path) -> None:
    a = make_session(tmp_path)
    path = a.get_session_file()
    assert path is not None
    a.append_message(user("mine 1"))
    b = SessionManager.open(path, ids=IdSource(seed=2), clock=FixedClock(start_ms=1_767_225_700_000))
    theirs = b.append_message(user("theirs"))
    b.close()
    mine = a.append_message(user("mine 2"))
    assert a.get_entry(theirs) is not None
    assert a.get_entry(mine)["parentId"] == theirs  # type: ignore[index]
    assert any(ev.kind is ChangeKind.APPENDED and theirs in ev.appended for ev in a.live_events)


def test_truncation_before_a_write_is_seen(tmp_path: Path) -> None:
    a = make_session(tmp_path)
    path = a.get_session_file()
    assert path is not None
    a.append_message(user("mine"))
    lines = Path(path).read_bytes().splitlines(keepends=True)
    os.truncate(path, len(lines[0]) + len(lines[1]))
    a.append_message(user("after the truncation"))
    assert any(ev.kind is ChangeKind.TRUNCATED for ev in a.live_events)
    entries = [orjson.loads(x) for x in Path(path).read_bytes().splitlines()]
    assert entries[-1]["message"]["content"] == "after the truncation"
    assert len(entries) == 3
