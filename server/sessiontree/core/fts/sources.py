"""The one seam the index takes sessions from: which files, of which agent, and their entries.

`enumerate_sessions(roots)` lists the session files under the sessions roots with the agent
that wrote them; `read_entries(file, offset)` reads one file's entries as pi-shaped dicts
from a byte offset. A reader of another agent's transcripts plugs in by adding its files to
`enumerate_sessions` and its reader to `READERS` (its entries mapped into pi's shape: ``id``,
``parentId``, ``timestamp``, ``type: "message"`` with ``message.role`` and ``content``).
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ..format.jsonl import is_session_header, loads_line, parse_jsonl_lenient
from ..format.migrations import CURRENT_SESSION_VERSION, fill_missing_ids, migrate_session_entries

__all__ = ["READERS", "ReadResult", "SessionFile", "enumerate_sessions", "head_hash", "read_entries"]

#: The header line hashed to tell a rewritten file from a grown one (at most this much of it).
HEAD_BYTES = 65536


@dataclass(frozen=True)
class SessionFile:
    """A session file found under a sessions root: its path, the agent, the root."""

    path: str
    agent: str
    root: str


@dataclass
class ReadResult:
    """What `read_entries` read: the header (None when reading on from an offset), the
    entries in file order, the byte offset just past the last complete line read, the hash
    of that last line (`line_hash`), and whether the reader could only read the whole file
    (an old format version: an append is a re-index)."""

    header: dict[str, Any] | None
    entries: list[dict[str, Any]]
    end: int
    last_line_hash: str
    whole_file_only: bool = False
    head_hash: str = ""
    dropped: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


def line_hash(line: bytes) -> str:
    return hashlib.sha256(line).hexdigest()[:32]


def head_hash(data: bytes) -> str:
    """The hash of the first line (the header) of a file's first bytes."""
    nl = data.find(b"\n")
    return line_hash(data if nl < 0 else data[:nl])


def _is_session_name(name: str) -> bool:
    return name.endswith(".jsonl") and not name.startswith(".")


def enumerate_sessions(roots: Iterable[str]) -> list[SessionFile]:
    """Every session file under each sessions root (recursive), with its agent.

    Other agents' readers add their files here (their own roots, their agent name).
    """
    out: list[SessionFile] = []
    for root in roots:
        for directory, _dirs, files in os.walk(root):
            for name in files:
                if _is_session_name(name):
                    out.append(SessionFile(os.path.join(directory, name), "pi", root))
    return out


def _open_regular(path: str) -> int | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            return None
    except OSError:
        os.close(fd)
        return None
    return fd


def read_pi(path: str, offset: int = 0, expect_tail: tuple[int, str] | None = None) -> ReadResult | None:
    """A pi-family session file's entries from ``offset`` (0: the whole file, header first).

    Only complete lines are read (a torn last line waits for its newline). With
    ``expect_tail`` (the length and hash of the line ending at ``offset``), None is returned
    when the bytes there differ: the file was rewritten, not grown. None too for a file
    that is gone or has no session header.
    """
    fd = _open_regular(path)
    if fd is None:
        return None
    with os.fdopen(fd, "rb") as f:
        if offset == 0:
            data = f.read()
            end = data.rfind(b"\n") + 1
            body = data[:end]
            hh = head_hash(data[:HEAD_BYTES])
            values = parse_jsonl_lenient(body).values
            if not values or not is_session_header(values[0]):
                return None
            entries: list[Any] = values
            version_was = migrate_session_entries(entries)
            header = entries[0]
            rest = [e for e in entries[1:] if isinstance(e, dict) and e.get("type") != "session"]
            fill_missing_ids(rest)
            last = body[: end - 1].rsplit(b"\n", 1)[-1] if end else b""
            return ReadResult(
                header,
                [e for e in rest if isinstance(e.get("id"), str)],
                end,
                line_hash(last),
                whole_file_only=version_was is not None or not _current(header),
                head_hash=hh,
                extra={"last_len": len(last) + 1 if end else 0},
            )
        if expect_tail is not None:
            n, want = expect_tail
            if n > offset:
                return None
            f.seek(offset - n)
            prev = f.read(n)
            if line_hash(prev[:-1]) != want or not prev.endswith(b"\n"):
                return None
        else:
            f.seek(offset)
        data = f.read()
    end_rel = data.rfind(b"\n") + 1
    out: list[dict[str, Any]] = []
    dropped = 0
    for line in data[:end_rel].split(b"\n"):
        if not line.strip():
            continue
        try:
            value = loads_line(line)
        except ValueError:
            dropped += 1
            continue
        if isinstance(value, dict) and isinstance(value.get("id"), str) and value.get("type") != "session":
            out.append(value)
        else:
            dropped += 1
    last = data[: end_rel - 1].rsplit(b"\n", 1)[-1] if end_rel else b""
    result = ReadResult(None, out, offset + end_rel, line_hash(last) if end_rel else "", dropped=dropped)
    result.extra["last_len"] = len(last) + 1 if end_rel else 0
    return result


def _current(header: dict[str, Any]) -> bool:
    version = header.get("version")
    return (
        isinstance(version, int | float)
        and not isinstance(version, bool)
        and version >= CURRENT_SESSION_VERSION
    )


#: agent name -> reader of its files (path, offset, expected tail) -> entries (pi-shaped).
READERS: dict[str, Callable[[str, int, tuple[int, str] | None], ReadResult | None]] = {"pi": read_pi}


def read_entries(
    file: SessionFile, offset: int = 0, expect_tail: tuple[int, str] | None = None
) -> ReadResult | None:
    """The entries of ``file`` from ``offset``, by its agent's reader (None: unreadable)."""
    reader = READERS.get(file.agent)
    if reader is None:
        return None
    return reader(file.path, offset, expect_tail)
