"""Following a file: change classification, tail reads, torn lines (core/live.py)."""

from __future__ import annotations

import os
from pathlib import Path

import orjson
from sessiontree.core.live import ChangeKind, FileMark, parse_appended, read_appended

HEADER = {"type": "session", "version": 3, "id": "s1", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/x"}


def line(obj: dict) -> bytes:
    return orjson.dumps(obj) + b"\n"


def entry(i: int, parent: str | None) -> dict:
    return {
        "type": "message",
        "id": f"e{i:07d}",
        "parentId": parent,
        "timestamp": "2026-01-01T00:00:01.000Z",
        "message": {"role": "user", "content": f"hello {i}"},
    }


def write(path: Path, data: bytes, mode: str = "ab") -> None:
    with open(path, mode) as f:
        f.write(data)


def test_capture_puts_mark_after_last_complete_line(tmp_path: Path) -> None:
    p = tmp_path / "s.jsonl"
    write(p, line(HEADER) + line(entry(1, None)) + b'{"type":"mess', "wb")
    mark = FileMark.capture(p)
    assert mark is not None
    assert mark.offset == len(line(HEADER) + line(entry(1, None)))
    assert mark.size == p.stat().st_size
    assert FileMark.capture(tmp_path / "missing.jsonl") is None


def test_append_returns_only_new_complete_lines(tmp_path: Path) -> None:
    p = tmp_path / "s.jsonl"
    write(p, line(HEADER) + line(entry(1, None)), "wb")
    mark = FileMark.capture(p)
    assert mark is not None
    r = read_appended(p, mark)
    assert r.kind is ChangeKind.UNCHANGED and r.data == b""

    new = line(entry(2, "e0000001")) + line(entry(3, "e0000002"))
    write(p, new)
    r = read_appended(p, mark)
    assert r.kind is ChangeKind.APPENDED
    assert r.data == new
    assert r.data_offset == mark.offset
    assert r.mark.offset == p.stat().st_size
    parsed = parse_appended(r.data)
    assert [e["id"] for e in parsed.entries] == ["e0000002", "e0000003"]
    assert parsed.spans[1] == (len(line(entry(2, "e0000001"))), len(line(entry(3, "e0000002"))) - 1)
    # Reading again from the new mark sees nothing new.
    assert read_appended(p, r.mark).kind is ChangeKind.UNCHANGED


def test_torn_line_waits_for_its_newline(tmp_path: Path) -> None:
    p = tmp_path / "s.jsonl"
    write(p, line(HEADER), "wb")
    mark = FileMark.capture(p)
    assert mark is not None
    full = line(entry(1, None))
    write(p, full[:20])
    r = read_appended(p, mark)
    assert r.kind is ChangeKind.UNCHANGED
    assert r.data == b"" and r.pending == 20
    assert r.mark.offset == mark.offset
    write(p, full[20:])
    r2 = read_appended(p, r.mark)
    assert r2.kind is ChangeKind.APPENDED
    assert r2.data == full
    assert [e["id"] for e in parse_appended(r2.data).entries] == ["e0000001"]


def test_complete_lines_before_a_torn_tail_are_delivered(tmp_path: Path) -> None:
    p = tmp_path / "s.jsonl"
    write(p, line(HEADER), "wb")
    mark = FileMark.capture(p)
    assert mark is not None
    a, b = line(entry(1, None)), line(entry(2, "e0000001"))
    write(p, a + b[:10])
    r = read_appended(p, mark)
    assert r.kind is ChangeKind.APPENDED and r.data == a and r.pending == 10
    write(p, b[10:])
    r2 = read_appended(p, r.mark)
    assert r2.data == b and r2.pending == 0


def test_replaced_by_rename_is_noticed(tmp_path: Path) -> None:
    p = tmp_path / "s.jsonl"
    write(p, line(HEADER) + line(entry(1, None)), "wb")
    mark = FileMark.capture(p)
    assert mark is not None
    tmp = tmp_path / ".s.jsonl.123.tmp"
    write(tmp, line(HEADER) + line(entry(1, None)) + line(entry(2, "e0000001")), "wb")
    os.replace(tmp, p)
    r = read_appended(p, mark)
    assert r.kind is ChangeKind.REPLACED and r.kind.needs_reload
    assert r.data == b""
    assert r.mark.inode == p.stat().st_ino and r.mark.offset == p.stat().st_size


def test_truncation_is_noticed(tmp_path: Path) -> None:
    p = tmp_path / "s.jsonl"
    write(p, line(HEADER) + line(entry(1, None)), "wb")
    mark = FileMark.capture(p)
    assert mark is not None
    os.truncate(p, len(line(HEADER)))
    r = read_appended(p, mark)
    assert r.kind is ChangeKind.TRUNCATED and r.kind.needs_reload
    assert r.mark.offset == len(line(HEADER))


def test_in_place_rewrite_is_noticed_even_when_longer(tmp_path: Path) -> None:
    p = tmp_path / "s.jsonl"
    write(p, line(HEADER) + line(entry(1, None)), "wb")
    mark = FileMark.capture(p)
    assert mark is not None
    # Same inode, the header gains a title (what an in-place set_session_name does).
    with open(p, "r+b") as f:
        f.write(line({**HEADER, "title": "named"}) + line(entry(1, None)) + line(entry(2, "e0000001")))
    r = read_appended(p, mark)
    assert r.kind is ChangeKind.REWRITTEN


def test_same_size_rewrite_is_noticed(tmp_path: Path) -> None:
    p = tmp_path / "s.jsonl"
    write(p, line(HEADER) + line(entry(1, None)), "wb")
    mark = FileMark.capture(p)
    assert mark is not None
    data = p.read_bytes().replace(b"hello 1", b"HELLO 1")
    with open(p, "r+b") as f:
        f.write(data)
    assert read_appended(p, mark).kind is ChangeKind.REWRITTEN


def test_deleted_file(tmp_path: Path) -> None:
    p = tmp_path / "s.jsonl"
    write(p, line(HEADER), "wb")
    mark = FileMark.capture(p)
    assert mark is not None
    p.unlink()
    r = read_appended(p, mark)
    assert r.kind is ChangeKind.DELETED and not r.kind.needs_reload
    assert r.mark == mark


def test_max_bytes_cuts_at_a_line_end(tmp_path: Path) -> None:
    p = tmp_path / "s.jsonl"
    write(p, line(HEADER), "wb")
    mark = FileMark.capture(p)
    assert mark is not None
    lines = [line(entry(i, None)) for i in range(10)]
    write(p, b"".join(lines))
    r = read_appended(p, mark, max_bytes=len(lines[0]) * 3 + 5)
    assert r.data == b"".join(lines[:3])
    r2 = read_appended(p, r.mark)
    assert r2.data == b"".join(lines[3:])


def test_parse_appended_reports_bad_lines() -> None:
    data = line(entry(1, None)) + b"garbage\n\n" + b"42\n" + line(entry(2, "e0000001"))
    parsed = parse_appended(data)
    assert [e["id"] for e in parsed.entries] == ["e0000001", "e0000002"]
    assert [(off, ln) for off, ln, _ in parsed.dropped] == [
        (len(line(entry(1, None))), 7),
        (len(line(entry(1, None))) + 9, 2),
    ]


def test_a_fifo_at_the_path_never_blocks(tmp_path: Path) -> None:
    p = tmp_path / "s.jsonl"
    write(p, line(HEADER), "wb")
    mark = FileMark.capture(p)
    assert mark is not None
    p.unlink()
    os.mkfifo(p)  # nobody writes to it: a blocking open would hang here
    assert FileMark.capture(p) is None
    assert read_appended(p, mark).kind is ChangeKind.DELETED
