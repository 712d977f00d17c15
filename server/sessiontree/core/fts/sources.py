"""The one seam the index takes sessions from: which files, of which agent, and their entries.

`enumerate_sessions(roots)` lists the session files under the sessions roots with the agent
that wrote them; `read_entries(file, offset)` reads one file's entries as pi-shaped dicts
from a byte offset. Both take the reader's guard (`core.store.guard.PathGuard`, the daemon's
allowed roots; None: the library's behaviour): with one, a file the session listing would
skip (a symlink that leads outside, a file with another hard link, not a regular file) is
neither listed nor read, and every read goes through a descriptor the guard opened
(`discovery.files.open_listed`, the listing's own opener). A reader of another agent's transcripts plugs in by adding its files to
`enumerate_sessions` and its reader to `READERS` (its entries mapped into pi's shape: ``id``,
``parentId``, ``timestamp``, ``type: "message"`` with ``message.role`` and ``content``).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from ..discovery.files import open_listed
from ..format.jsonl import is_session_header, loads_line, parse_jsonl_lenient
from ..format.migrations import CURRENT_SESSION_VERSION, fill_missing_ids, migrate_session_entries
from ..format.title_slot import fold_into_header, split_slot
from ..store.guard import PathGuard

__all__ = [
    "READERS",
    "NeedsWholeFile",
    "ReadResult",
    "SessionFile",
    "enumerate_sessions",
    "foreign_roots",
    "head_hash",
    "head_of",
    "identity_of",
    "read_entries",
    "read_head_line",
]

#: The header line hashed to tell a rewritten file from a grown one (at most this much of it).
HEAD_BYTES = 65536


@dataclass(frozen=True)
class SessionFile:
    """A session file found under a sessions root: its path, the agent, the root."""

    path: str
    agent: str
    root: str


class NeedsWholeFile(Exception):
    """Raised while streaming a file that can only be read whole (entries without ids, whose
    ids depend on their position in the whole file)."""


@dataclass
class ReadResult:
    """What `read_entries` reads: the header (None when reading on from an offset) and the
    entries in file order, in ``batches`` (an iterator, so that a big file is never held
    whole). Once they are consumed: ``end``, the byte offset just past the last complete line
    read, ``last_line_hash`` and ``last_len`` of that line. ``whole_file_only``: the file can
    only be read from the start (an old format version: an append is a re-index)."""

    header: dict[str, Any] | None
    batches: Iterator[list[dict[str, Any]]]
    end: int = 0
    last_line_hash: str = ""
    last_len: int = 0
    whole_file_only: bool = False
    head_hash: str = ""
    dropped: int = 0
    #: the file starts with oh-my-pi's title slot (its dialect is omp's)
    has_slot: bool = False


def line_hash(line: bytes) -> str:
    return hashlib.sha256(line).hexdigest()[:32]


def head_hash(data: bytes) -> str:
    """The hash of the first line (the header) of a file's first bytes."""
    nl = data.find(b"\n")
    return line_hash(data if nl < 0 else data[:nl])


def read_head_line(f: Any) -> tuple[int, bytes]:
    """``(offset, line)``: the header line of the open file ``f`` (read from its start) and
    where it begins: after oh-my-pi's title slot when the file has one (the slot is
    rewritten in place when the title changes, so it is no part of the head's identity)."""
    first = f.readline(HEAD_BYTES)
    if first.startswith(b"{") and split_slot(first)[0] is not None:
        return len(first), f.readline(HEAD_BYTES)
    return 0, first


def _is_session_name(name: str) -> bool:
    return name.endswith(".jsonl") and not name.startswith(".") and _utf8(name)


def _utf8(name: str) -> bool:
    """Whether a file name is UTF-8 (one that is not decodes with lone surrogates, which
    neither the index nor the wire can hold as a path)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def foreign_roots() -> list[str]:
    """The other agents' transcript roots that exist (Claude Code's projects, Codex's
    sessions; `core.sources.foreign`), for a caller to index beside pi's sessions root."""
    from ..sources.foreign import FOREIGN_AGENTS, root_of

    return [r for r in (root_of(agent) for agent in sorted(FOREIGN_AGENTS)) if os.path.isdir(r)]


def enumerate_sessions(roots: Iterable[str], guard: PathGuard | None = None) -> list[SessionFile]:
    """Every session file under each sessions root (recursive), with its agent: files under
    another agent's transcript root are that agent's (Claude Code's subagent transcripts
    are read with their session, not on their own). With ``guard``, only the files it
    accepts (what `session/list` lists: no link leading outside, one name, a regular file);
    directory links are never followed."""
    from ..sources.foreign import agent_root_containing

    out: list[SessionFile] = []
    for root in roots:
        agent = agent_root_containing(root) or "pi"
        for directory, _dirs, files in os.walk(root):
            if agent == "claude" and os.path.basename(directory) == "subagents":
                continue
            for name in files:
                if _is_session_name(name):
                    path = os.path.join(directory, name)
                    if guard is None or guard.accept(path):
                        out.append(SessionFile(path, agent, root))
    return out


def _open_regular(path: str, guard: PathGuard | None) -> int | None:
    opened = open_listed(path, guard)
    if opened is None:
        return None
    return opened[0]


CHUNK_BYTES = 4 * 1024 * 1024


def read_pi(
    path: str,
    offset: int = 0,
    expect_tail: tuple[int, str] | None = None,
    whole: bool = False,
    guard: PathGuard | None = None,
) -> ReadResult | None:
    """A pi-family session file's entries from ``offset`` (0: from the header on).

    Only complete lines are read (a torn last line waits for its newline). With
    ``expect_tail`` (the length and hash of the line ending at ``offset``), None is returned
    when the bytes there differ: the file was rewritten, not grown. None too for a file
    that is gone or has no session header. A current-version file is read 4 MB at a time;
    an older one (migrated) or ``whole=True`` whole, through the lenient parser. With
    ``guard``, the file is read through a descriptor the guard opened (None when refused).
    """
    fd = _open_regular(path, guard)
    if fd is None:
        return None
    f = os.fdopen(fd, "rb")
    try:
        if offset == 0:
            skip, first = read_head_line(f)
            hh = head_hash(first)
            try:
                header = loads_line(first) if first.endswith(b"\n") else None
            except ValueError:
                header = None
            if skip and isinstance(header, dict):
                # the title oh-my-pi keeps in its slot, folded in as omp reads it
                f.seek(0)
                header = fold_into_header(header, split_slot(f.read(skip))[0])
                f.seek(skip + len(first))
            if whole or not isinstance(header, dict) or not is_session_header(header) or not _current(header):
                f.seek(skip)
                data = f.read()
                if not skip and (not isinstance(header, dict) or not is_session_header(header)):
                    # another agent's transcript among pi's sessions: its reader's entries
                    found = _foreign_agent(data)
                    if found is not None:
                        return _read_foreign(found, data, hh)
                whole_res = _read_whole(data, hh, skip)
                if whole_res is not None:
                    whole_res.has_slot = skip > 0
                return whole_res
            res = ReadResult(header, iter(()), head_hash=hh, has_slot=skip > 0)
            res.batches = _stream(f, skip + len(first), res, strict_ids=True)
            f = None  # type: ignore[assignment]  # the generator owns it now
            return res
        if expect_tail is not None:
            n, want = expect_tail
            if n > offset or n <= 0:
                return None
            f.seek(offset - n)
            prev = f.read(n)
            if not prev.endswith(b"\n") or line_hash(prev[:-1]) != want:
                return None
        else:
            f.seek(offset)
        res = ReadResult(None, iter(()))
        res.batches = _stream(f, offset, res, strict_ids=False)
        f = None  # type: ignore[assignment]
        return res
    finally:
        if f is not None:
            f.close()


def _stream(f: Any, start: int, res: ReadResult, strict_ids: bool) -> Iterator[list[dict[str, Any]]]:
    pos = start
    carry = b""
    last = b""
    with f:
        while True:
            chunk = f.read(CHUNK_BYTES)
            if not chunk:
                break
            data = carry + chunk
            cut = data.rfind(b"\n") + 1
            carry = data[cut:]
            if not cut:
                continue
            out: list[dict[str, Any]] = []
            lines = data[: cut - 1].split(b"\n")
            for line in lines:
                if not line.strip():
                    continue
                try:
                    value = loads_line(line)
                except ValueError:
                    res.dropped += 1
                    continue
                if not isinstance(value, dict) or value.get("type") == "session":
                    res.dropped += 1
                    continue
                if not isinstance(value.get("id"), str):
                    if strict_ids:
                        raise NeedsWholeFile(value)
                    res.dropped += 1
                    continue
                out.append(value)
            last = lines[-1]
            pos += cut
            res.end = pos
            res.last_line_hash = line_hash(last)
            res.last_len = len(last) + 1
            if out:
                yield out
    if res.end == 0:
        res.end = start
        if start:
            # nothing new: the line that ended the indexed part stays the last one
            res.last_len = 0


def _read_whole(data: bytes, hh: str, base: int = 0) -> ReadResult | None:
    """The entries of the file's bytes ``data``, which start at offset ``base`` (after a title slot)."""
    end = data.rfind(b"\n") + 1
    body = data[:end]
    values = parse_jsonl_lenient(body).values
    if not values or not is_session_header(values[0]):
        return None
    entries: list[Any] = values
    version_was = migrate_session_entries(entries)
    filled = fill_missing_ids(entries)
    header = entries[0]
    rest = [
        e
        for e in entries[1:]
        if isinstance(e, dict) and e.get("type") != "session" and isinstance(e.get("id"), str)
    ]
    last = body[: end - 1].rsplit(b"\n", 1)[-1] if end else b""
    return ReadResult(
        header,
        iter([rest]),
        end=base + end,
        last_line_hash=line_hash(last),
        last_len=len(last) + 1 if end else 0,
        # migrated or without ids: the ids depend on the whole file
        whole_file_only=version_was is not None or not _current(header) or filled > 0,
        head_hash=hh,
    )


def _current(header: dict[str, Any]) -> bool:
    version = header.get("version")
    return (
        isinstance(version, int | float)
        and not isinstance(version, bool)
        and version >= CURRENT_SESSION_VERSION
    )


def _foreign_agent(data: bytes) -> str | None:
    from ..sources.foreign import SNIFF_BYTES, agent_of

    return agent_of(data[:SNIFF_BYTES])


def _read_foreign(agent: str, data: bytes, hh: str) -> ReadResult | None:
    """A whole Claude Code or Codex transcript mapped to pi entries by its reader (the same
    ids and texts the session opened in sessiontree has); an append re-reads it whole."""
    from ..sources.foreign import read

    t = read(agent, data)
    end = data.rfind(b"\n") + 1
    last = data[: end - 1].rsplit(b"\n", 1)[-1] if end else b""
    entries = [e for e in t.entries if isinstance(e.get("id"), str)]
    return ReadResult(
        t.header(),
        iter([entries]),
        end=end,
        last_line_hash=line_hash(last),
        last_len=len(last) + 1 if end else 0,
        whole_file_only=True,
        head_hash=hh,
    )


def read_foreign(
    path: str,
    offset: int = 0,
    expect_tail: tuple[int, str] | None = None,
    whole: bool = False,
    guard: PathGuard | None = None,
) -> ReadResult | None:
    """Another agent's transcript, read whole (its entries' ids depend on the whole file)."""
    fd = _open_regular(path, guard)
    if fd is None:
        return None
    with os.fdopen(fd, "rb") as f:
        data = f.read()
    agent = _foreign_agent(data)
    if agent is None:
        return None
    nl = data.find(b"\n")
    return _read_foreign(agent, data, line_hash(data if nl < 0 else data[:nl]))


#: agent name -> reader of its files (path, offset, expected tail, whole, guard) -> entries
#: (pi-shaped). A reader that can only read whole files sets ``whole_file_only`` (then it is
#: only ever called with offset 0); it opens the file through the guard (`_open_regular`).
READERS: dict[
    str, Callable[[str, int, tuple[int, str] | None, bool, PathGuard | None], ReadResult | None]
] = {
    "pi": read_pi,
    "claude": read_foreign,
    "codex": read_foreign,
}


def read_entries(
    file: SessionFile,
    offset: int = 0,
    expect_tail: tuple[int, str] | None = None,
    whole: bool = False,
    guard: PathGuard | None = None,
) -> ReadResult | None:
    """The entries of ``file`` from ``offset``, by its agent's reader (None: unreadable, or
    refused by ``guard``)."""
    reader = READERS.get(file.agent)
    if reader is None:
        return None
    return reader(file.path, offset, expect_tail, whole, guard)


def head_of(path: str, guard: PathGuard | None = None) -> str:
    """The hash of the header line of the file at ``path`` ("" when it cannot be read)."""
    fd = _open_regular(path, guard)
    if fd is None:
        return ""
    with os.fdopen(fd, "rb") as f:
        try:
            return head_hash(read_head_line(f)[1])
        except OSError:
            return ""


def identity_of(path: str, guard: PathGuard | None = None) -> tuple[int, int] | None:
    """(device, inode) of the file ``path`` names now, opened as a listing opens it (None:
    gone, not a regular file, or refused by ``guard``)."""
    opened = open_listed(path, guard)
    if opened is None:
        return None
    fd, st = opened
    os.close(fd)
    return st.st_dev, st.st_ino
