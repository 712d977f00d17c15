"""Discovery: recent sessions from a 4096-byte prefix, listings with titles and counts."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson
from sessiontree.core import discovery
from sessiontree.core.discovery import (
    find_most_recent_session,
    get_recent_sessions,
    list_all_sessions,
    list_sessions,
)


def write(path: Path, rows: list[Any], mtime: int) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join((orjson.dumps(r) if not isinstance(r, bytes) else r) + b"\n" for r in rows))
    os.utime(path, (mtime, mtime))
    return path


def header(sid: str, **extra: Any) -> dict[str, Any]:
    return {
        "type": "session",
        "version": 3,
        "id": sid,
        "timestamp": "2025-01-02T03:04:05.678Z",
        "cwd": "/w",
        **extra,
    }


def msg(eid: str, role: str, content: Any) -> dict[str, Any]:
    return {
        "type": "message",
        "id": eid,
        "parentId": None,
        "timestamp": "2025-01-02T03:04:06.000Z",
        "message": {"role": role, "content": content},
    }


def test_recent_sessions_names_and_order(tmp_path: Path) -> None:
    d = tmp_path / "s"
    write(d / "a.jsonl", [header("ida", title="My\ttitle\nsecond line")], 100)
    write(
        d / "b.jsonl",
        [header("idb"), msg("1", "user", [{"type": "image"}, {"type": "text", "text": "x" * 60}])],
        300,
    )
    write(d / "c.jsonl", [header("idc"), msg("1", "assistant", "no user")], 200)
    write(d / "bad.jsonl", [b"garbage"], 400)
    write(d / "noid.jsonl", [{"type": "session"}], 500)
    write(d / "notjsonl.txt", [header("x")], 600)
    (d / "sub").mkdir()
    write(d / "sub" / "deep.jsonl", [header("deep")], 700)
    recent = get_recent_sessions(str(d), limit=10)
    assert [r.path for r in recent] == [str(d / "b.jsonl"), str(d / "c.jsonl"), str(d / "a.jsonl")]
    assert recent[0].full_name == "x" * 60 and recent[0].name == "x" * 39 + "…"
    assert recent[1].name == "idc"
    assert recent[2].name == "Mytitle"  # first line only, control characters removed
    assert get_recent_sessions(str(d))[0].path == str(d / "b.jsonl") and len(get_recent_sessions(str(d))) == 3
    assert find_most_recent_session(str(d)) == str(d / "b.jsonl")
    assert find_most_recent_session(str(tmp_path / "missing")) is None
    assert get_recent_sessions(str(tmp_path / "missing")) == []


def test_recent_reads_only_the_prefix(tmp_path: Path) -> None:
    d = tmp_path / "s"
    # the first user message lies beyond 4096 bytes: the id is the name
    write(d / "a.jsonl", [header("ida"), msg("0", "assistant", "y" * 5000), msg("1", "user", "late")], 1)
    assert get_recent_sessions(str(d))[0].name == "ida"


def test_list_golden(tmp_path: Path) -> None:
    d = tmp_path / "s"
    write(
        d / "one.jsonl",
        [
            header("one", parentSession="/p/x.jsonl"),
            msg(
                "1",
                "user",
                [{"type": "text", "text": "hello"}, {"type": "image"}, {"type": "text", "text": "world"}],
            ),
            msg("2", "assistant", [{"type": "text", "text": "answer"}, {"type": "toolCall"}]),
            msg("3", "toolResult", [{"type": "text", "text": "tool out"}]),
            {
                "type": "compaction",
                "id": "c",
                "parentId": "3",
                "timestamp": "t",
                "summary": "s",
                "shortSummary": "short one",
                "tokensBefore": 1,
            },
            {
                "type": "compaction",
                "id": "c2",
                "parentId": "c",
                "timestamp": "t",
                "summary": "s",
                "shortSummary": "short two",
                "tokensBefore": 1,
            },
            msg("4", "user", "again"),
        ],
        2000,
    )
    write(d / "two.jsonl", [header("two", title="Titled"), b"broken line", {"type": "label"}], 3000)
    write(d / "empty.jsonl", [header("")], 4000)  # a falsy id: skipped
    infos = list_sessions(str(d), cache_dir=str(tmp_path / "cache" / "index"))
    assert [i.id for i in infos] == ["two", "one"]
    two, one = infos
    assert two.title == "Titled" and two.message_count == 0 and two.first_message == "(no messages)"
    assert one.title == "short two"
    assert one.message_count == 4
    assert one.first_message == "hello world"
    assert one.all_messages_text == "hello world answer again"
    assert one.parent_session_path == "/p/x.jsonl" and one.cwd == "/w"
    assert one.created is not None and one.created.isoformat() == "2025-01-02T03:04:05.678000+00:00"
    assert one.modified.timestamp() == 2000
    assert one.to_dict()["created"] == "2025-01-02T03:04:05.678Z"


def test_list_cache_follows_changes(tmp_path: Path) -> None:
    d = tmp_path / "s"
    cache = str(tmp_path / "cache" / "index")
    p = write(d / "one.jsonl", [header("one"), msg("1", "user", "first")], 1000)
    assert list_sessions(str(d), cache_dir=cache)[0].message_count == 1
    discovery.summary.memo.clear()  # a new process: only the disk cache is left
    write(p, [header("one"), msg("1", "user", "first"), msg("2", "user", "second")], 1001)
    again = list_sessions(str(d), cache_dir=cache)
    assert again[0].message_count == 2
    assert list(Path(tmp_path / "cache").rglob("*.jsonl")) == []
    p.unlink()
    assert list_sessions(str(d), cache_dir=cache) == []


def test_list_all_is_recursive(tmp_path: Path) -> None:
    agent = tmp_path / "agent"
    write(agent / "sessions" / "-a" / "x.jsonl", [header("x")], 10)
    write(agent / "sessions" / "-b" / "deep" / "y.jsonl", [header("y")], 20)
    infos = list_all_sessions(str(agent), cache_dir=str(tmp_path / "c" / "index"))
    assert [i.id for i in infos] == ["y", "x"]
