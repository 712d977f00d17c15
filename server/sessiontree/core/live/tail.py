"""Looking at a followed session file: what changed since the last look.

A session file is append-only in normal use: the reference agent (and every other
writer) adds whole JSON lines at the end. This module gives the pieces needed to follow
such a file cheaply and safely:

- `FileMark`: what we know of the file as last read (identity, how far we ingested, and
  small fingerprints of the bytes at the start and just before that point);
- `read_appended(path, mark)`: one consistent look at the file through a single file
  descriptor: it classifies the change (`ChangeKind`) and, for a plain append, returns
  only the *complete* new lines (a torn last line is left for later, the mark stays at
  its start, so it is read again once its newline arrives);
- `parse_appended(data)`: the lenient parse of those lines (the same rules as loading).

Nothing here writes, and nothing here knows a session: `follower.Follower` folds what
these functions read into the session it belongs to.
"""

from __future__ import annotations

import dataclasses
import enum
import os
from dataclasses import dataclass, field
from typing import Any

from ..format.title_slot import split_slot
from ..store.guard import PathGuard, open_checked

#: O_NONBLOCK: opening a FIFO put where a session file was must not hang the reader (the
#: descriptor is then refused as not a regular file); it changes nothing for files.
_READ_FLAGS = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0)

#: How many bytes of the file start and of the bytes before the ingested end are kept to
#: notice a rewrite in place (same inode, the known bytes changed).
FINGERPRINT_BYTES = 256


class ChangeKind(enum.StrEnum):
    """How a followed file changed since its mark was taken."""

    UNCHANGED = "unchanged"
    #: Bytes were added after the mark (possibly only a partial line so far).
    APPENDED = "appended"
    #: Another file now sits at the path (atomic rewrite by rename, or delete + create).
    REPLACED = "replaced"
    #: Same file, but shorter than what was already ingested.
    TRUNCATED = "truncated"
    #: Same file, but bytes that were already ingested are different.
    REWRITTEN = "rewritten"
    #: Nothing at the path any more (or no longer a regular file).
    DELETED = "deleted"

    @property
    def needs_reload(self) -> bool:
        """True when the ingested state no longer matches the file and it must be reloaded."""
        return self in (ChangeKind.REPLACED, ChangeKind.TRUNCATED, ChangeKind.REWRITTEN)


@dataclass(frozen=True, slots=True)
class FileMark:
    """The state of a session file as last ingested.

    `offset` is the number of bytes ingested: it always sits at the start of a line (just
    after a newline, or 0), so a torn last line is never consumed. `size` and `mtime_ns`
    are the file's values when the mark was taken (`size` may exceed `offset` by a torn
    tail). `head` is the first bytes of the file after its title slot and `tail` the bytes
    just before `offset`; both are compared on every look to notice in-place rewrites.
    `slot` is oh-my-pi's title slot line as read (empty without one): a new slot of the
    same width there is a title change, not a rewrite.
    """

    offset: int
    size: int
    inode: int
    dev: int
    mtime_ns: int
    head: bytes = field(repr=False)
    tail: bytes = field(repr=False)
    slot: bytes = field(default=b"", repr=False)

    @classmethod
    def capture(
        cls, path: str | os.PathLike[str], offset: int | None = None, guard: PathGuard | None = None
    ) -> FileMark | None:
        """Take a mark of the file at `path` (None when it does not exist).

        Without `offset` the mark is put after the last complete line of the file. With a
        `guard` the file is opened through it (`AccessDeniedError` when it now lies outside).
        """
        try:
            fd = open_checked(guard, os.fspath(path), _READ_FLAGS)
        except (FileNotFoundError, NotADirectoryError):
            return None
        try:
            st = os.fstat(fd)
            if not _is_regular(st.st_mode):
                return None
            if offset is None:
                offset = _end_of_last_line(fd, st.st_size)
            offset = min(offset, st.st_size)
            return _mark_from_fd(fd, st, offset)
        finally:
            os.close(fd)


@dataclass(frozen=True, slots=True)
class TailRead:
    """The result of one look at a followed file (`read_appended`)."""

    kind: ChangeKind
    #: The complete lines appended after the old mark (each ending in a newline); empty
    #: unless `kind` is APPENDED.
    data: bytes
    #: Bytes of an incomplete last line that were seen but left for later.
    pending: int
    #: The mark to keep after ingesting `data` (for DELETED: the old mark; for a change
    #: that needs a reload: a mark of the new file at its last complete line).
    mark: FileMark
    #: oh-my-pi's title slot was rewritten in place (a new title; the rest is as before).
    retitled: bool = False

    @property
    def data_offset(self) -> int:
        """File offset of the first byte of `data`."""
        return self.mark.offset - len(self.data)


def read_appended(
    path: str | os.PathLike[str], mark: FileMark, max_bytes: int | None = None, guard: PathGuard | None = None
) -> TailRead:
    """Look at `path` once and say what changed since `mark`.

    Everything is read through one file descriptor, so the identity check, the
    fingerprints and the appended bytes all belong to the same file even when another
    process renames a new file over it meanwhile. `max_bytes` bounds how much is read in
    one call (the rest is left for the next call; the cut is put at a line end). With a
    `guard` the file is opened through it (`AccessDeniedError` when it now lies outside).
    """
    try:
        fd = open_checked(guard, os.fspath(path), _READ_FLAGS)
    except (FileNotFoundError, NotADirectoryError, PermissionError):
        return TailRead(ChangeKind.DELETED, b"", 0, mark)
    try:
        st = os.fstat(fd)
        if not _is_regular(st.st_mode):
            return TailRead(ChangeKind.DELETED, b"", 0, mark)
        if (st.st_ino, st.st_dev) != (mark.inode, mark.dev):
            return TailRead(
                ChangeKind.REPLACED, b"", 0, _mark_from_fd(fd, st, _end_of_last_line(fd, st.st_size))
            )
        size = st.st_size
        if size < mark.offset:
            return TailRead(ChangeKind.TRUNCATED, b"", 0, _mark_from_fd(fd, st, _end_of_last_line(fd, size)))
        # The fingerprints are checked even when size and mtime look unchanged: mtime has
        # coarse granularity and a same-size rewrite within one tick would go unseen.
        match = _fingerprints_match(fd, mark)
        if match is None:
            return TailRead(ChangeKind.REWRITTEN, b"", 0, _mark_from_fd(fd, st, _end_of_last_line(fd, size)))
        retitled = match != mark.slot
        if retitled:
            mark = _with_slot(mark, match)
        if size == mark.offset:
            return TailRead(ChangeKind.UNCHANGED, b"", 0, _with_stat(mark, st), retitled)
        want = size - mark.offset
        if max_bytes is not None:
            want = min(want, max_bytes)
        raw = _pread_all(fd, want, mark.offset)
        cut = raw.rfind(b"\n") + 1
        data = raw[:cut]
        pending = size - mark.offset - cut
        if not data:
            # Only a partial line so far: keep the old offset, remember the size seen so
            # an unchanged file is cheap to check again.
            return TailRead(ChangeKind.UNCHANGED, b"", pending, _with_stat(mark, st), retitled)
        new_mark = _mark_from_fd(fd, st, mark.offset + cut, tail_hint=data)
        return TailRead(ChangeKind.APPENDED, data, pending, new_mark, retitled)
    finally:
        os.close(fd)


@dataclass(slots=True)
class ParsedLines:
    """Entries parsed from appended bytes, with what was dropped."""

    entries: list[dict[str, Any]]
    #: Byte offset (relative to the parsed data) and length of each entry's line, in the
    #: same order as `entries`.
    spans: list[tuple[int, int]]
    dropped: list[tuple[int, int, str]]  # (offset, length, reason)


def parse_appended(data: bytes) -> ParsedLines:
    """Parse complete appended lines the way loading does, one JSON value per line.

    Blank lines are skipped; a line that is not a JSON object with a string `type` is
    dropped and reported (never guessed at). Multi-line values are not produced by any
    writer of session files; a line that does not parse alone is dropped.
    """
    from ..format.jsonl import loads_line

    entries: list[dict[str, Any]] = []
    spans: list[tuple[int, int]] = []
    dropped: list[tuple[int, int, str]] = []
    pos = 0
    n = len(data)
    while pos < n:
        end = data.find(b"\n", pos)
        if end < 0:
            end = n
        line = data[pos:end]
        length = end - pos
        start = pos
        pos = end + 1
        if not line.strip():
            continue
        if start == 0 and line.startswith(b"\xef\xbb\xbf"):
            line = line[3:]
        try:
            value = loads_line(line)  # lone surrogate escapes included
        except ValueError as exc:
            dropped.append((start, length, f"invalid JSON: {exc}"))
            continue
        if not isinstance(value, dict) or not isinstance(value.get("type"), str):
            dropped.append((start, length, "not an entry object"))
            continue
        entries.append(value)
        spans.append((start, length))
    return ParsedLines(entries, spans, dropped)


# -- helpers ---------------------------------------------------------------------------


def _is_regular(mode: int) -> bool:
    import stat

    return stat.S_ISREG(mode)


def _pread_all(fd: int, length: int, offset: int) -> bytes:
    chunks: list[bytes] = []
    while length > 0:
        chunk = os.pread(fd, length, offset)
        if not chunk:
            break
        chunks.append(chunk)
        length -= len(chunk)
        offset += len(chunk)
    return b"".join(chunks)


def _end_of_last_line(fd: int, size: int) -> int:
    """Offset just after the last newline in the first `size` bytes (0 when none)."""
    block = 64 * 1024
    end = size
    while end > 0:
        start = max(0, end - block)
        chunk = _pread_all(fd, end - start, start)
        i = chunk.rfind(b"\n")
        if i >= 0:
            return start + i + 1
        end = start
    return 0


def _slot_of_fd(fd: int, offset: int) -> bytes:
    """The title slot line at the start of the file (empty without one), within `offset`."""
    first = _pread_all(fd, min(offset, 4096), 0)
    if not first.startswith(b"{"):
        return b""
    _slot, width = split_slot(first)
    return first[:width]


def _mark_from_fd(fd: int, st: os.stat_result, offset: int, tail_hint: bytes = b"") -> FileMark:
    slot = _slot_of_fd(fd, offset)
    head = _pread_all(fd, min(FINGERPRINT_BYTES, offset - len(slot)), len(slot))
    if len(tail_hint) >= FINGERPRINT_BYTES:
        tail = tail_hint[-FINGERPRINT_BYTES:]
    else:
        n = min(FINGERPRINT_BYTES, offset)
        tail = _pread_all(fd, n, offset - n)
    return FileMark(
        offset=offset,
        size=st.st_size,
        inode=st.st_ino,
        dev=st.st_dev,
        mtime_ns=st.st_mtime_ns,
        head=head,
        tail=tail,
        slot=slot,
    )


def _with_stat(mark: FileMark, st: os.stat_result) -> FileMark:
    return dataclasses.replace(mark, size=st.st_size, mtime_ns=st.st_mtime_ns)


def _with_slot(mark: FileMark, slot: bytes) -> FileMark:
    return dataclasses.replace(mark, slot=slot)


def _fingerprints_match(fd: int, mark: FileMark) -> bytes | None:
    """The file's title slot line now (``mark.slot`` when it did not change; empty without
    one) when the known bytes are as `mark` saw them, else None (rewritten in place).

    A title slot rewritten in place with the same width (omp's title change) is no rewrite:
    the rest of the file did not move."""
    slot = mark.slot
    if slot:
        now = _pread_all(fd, len(slot), 0)
        if now != slot:
            new_slot, width = split_slot(now)
            if new_slot is None or width != len(slot):
                return None
            slot = now
    if mark.head and _pread_all(fd, len(mark.head), len(slot)) != mark.head:
        return None
    if mark.tail and _pread_all(fd, len(mark.tail), mark.offset - len(mark.tail)) != mark.tail:
        return None
    return slot


def stat_regular(path: str) -> os.stat_result | None:
    """`os.stat(path)` when it names a regular file, else None."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st if _is_regular(st.st_mode) else None


def end_of_first_line(path: str, guard: PathGuard | None = None) -> int | None:
    """The length of the file's first line with its newline; None when it has no complete one."""
    try:
        fd = open_checked(guard, path, _READ_FLAGS)
    except OSError:
        return None
    try:
        if not _is_regular(os.fstat(fd).st_mode):
            return None
        with os.fdopen(os.dup(fd), "rb") as f:
            first = f.readline(1 << 24)
    except OSError:
        return None
    finally:
        os.close(fd)
    return len(first) if first.endswith(b"\n") else None
