"""Following a session file that other processes write to.

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

Nothing here writes. The manager folds the parsed entries into its index
(`SessionManager.ingest_external_entries`) and the daemon announces them.
"""

from __future__ import annotations

import enum
import os
from dataclasses import dataclass, field
from typing import Any

from .guard import PathGuard, open_checked

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
    tail). `head` is the first bytes of the file and `tail` the bytes just before
    `offset`; both are compared on every look to notice in-place rewrites.
    """

    offset: int
    size: int
    inode: int
    dev: int
    mtime_ns: int
    head: bytes = field(repr=False)
    tail: bytes = field(repr=False)

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
        if not _fingerprints_match(fd, mark):
            return TailRead(ChangeKind.REWRITTEN, b"", 0, _mark_from_fd(fd, st, _end_of_last_line(fd, size)))
        if size == mark.offset:
            return TailRead(ChangeKind.UNCHANGED, b"", 0, _with_stat(mark, st))
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
            return TailRead(ChangeKind.UNCHANGED, b"", pending, _with_stat(mark, st))
        new_mark = _mark_from_fd(fd, st, mark.offset + cut, tail_hint=data)
        return TailRead(ChangeKind.APPENDED, data, pending, new_mark)
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
    from .jsonl import loads_line

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


def _mark_from_fd(fd: int, st: os.stat_result, offset: int, tail_hint: bytes = b"") -> FileMark:
    head = _pread_all(fd, min(FINGERPRINT_BYTES, offset), 0)
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
    )


def _with_stat(mark: FileMark, st: os.stat_result) -> FileMark:
    return FileMark(
        offset=mark.offset,
        size=st.st_size,
        inode=mark.inode,
        dev=mark.dev,
        mtime_ns=st.st_mtime_ns,
        head=mark.head,
        tail=mark.tail,
    )


def _fingerprints_match(fd: int, mark: FileMark) -> bool:
    if mark.head and _pread_all(fd, len(mark.head), 0) != mark.head:
        return False
    return not (mark.tail and _pread_all(fd, len(mark.tail), mark.offset - len(mark.tail)) != mark.tail)


@dataclass(slots=True)
class SyncResult:
    """What folding a file's changes into an open session did (`SessionManager.sync_with_file`)."""

    kind: ChangeKind
    #: Ids of the entries another process appended, in file order (own entries read
    #: back from the file are not listed).
    appended: list[str] = field(default_factory=list)
    old_leaf_id: str | None = None
    leaf_id: str | None = None
    #: `(target_id, label or None)` for each label entry among `appended`.
    labels: list[tuple[str, str | None]] = field(default_factory=list)
    #: Appended lines that were not entries (dropped and logged).
    dropped: int = 0
    #: For reloads: "replaced", "truncated", "rewritten" or "deleted".
    reason: str | None = None


# -- folding changes into a SessionManager ------------------------------------------------
#
# These functions work on a `SessionManager` (core/manager.py) and are called through its
# methods `sync_with_file`, `_live_before_write`, `_live_after_append` and
# `_live_guard_rewrite`. They use the manager's `file_state` (where the index ends in the
# file) and keep a `FileMark` beside it (`_live_mark`) for the fingerprints.

#: How many folded-in changes a manager keeps for the daemon to announce.
MAX_LIVE_EVENTS = 256

#: Reasons a session is detached from its file (writes refused until it comes back).
DETACHED_REASONS = ("deleted", "invalid")


def _guard_of(m: Any) -> PathGuard | None:
    """The access guard of the manager's storage (the daemon's allowed roots), if any."""
    return getattr(getattr(m, "_storage", None), "guard", None)


def detach(m: Any, reason: str) -> SyncResult:
    """Detach the manager from its file (it keeps what it holds, writes are refused until the
    file is readable again), e.g. when the path now names a file the guard refuses."""
    return _detach(m, reason, m.get_leaf_id())


def _manager_path(m: Any) -> str | None:
    if not getattr(m, "_persist", False) or not getattr(getattr(m, "_storage", None), "is_real_fs", False):
        return None
    path = getattr(m, "_session_file", None)
    return path if isinstance(path, str) else None


def _current_mark(m: Any, path: str) -> FileMark | ChangeKind | None:
    """The mark matching the manager's `file_state`, captured now when it is stale.

    Returns REPLACED when another file sits at the path, DELETED when nothing does,
    None when the manager has no file state (nothing written or read yet).
    """
    fs = m.file_state
    if fs is None:
        return None
    mark: FileMark | None = getattr(m, "_live_mark", None)
    if mark is not None and (mark.inode, mark.dev, mark.offset) == (fs.inode, fs.device, fs.end):
        return mark
    mark = FileMark.capture(path, fs.end, _guard_of(m))
    if mark is None:
        return ChangeKind.DELETED
    if (mark.inode, mark.dev) != (fs.inode, fs.device):
        return ChangeKind.REPLACED
    if mark.size < fs.end:
        return ChangeKind.TRUNCATED
    m._live_mark = mark
    return mark


def sync_manager(m: Any) -> SyncResult:
    """Fold what other processes did to the manager's file into it (see docs/live-sessions.md).

    Appended complete lines are indexed (entries whose id is already known, i.e. our own
    appends read back, are skipped) and the leaf moves to the last external entry. A
    replaced, truncated or rewritten file is reloaded (leaf = last entry, as on open). A
    deleted file (or one that no longer holds a readable session) detaches the session:
    it keeps what it holds and refuses writes until the file is back.
    """
    path = _manager_path(m)
    leaf = m.get_leaf_id()
    if path is None:
        return SyncResult(ChangeKind.UNCHANGED, old_leaf_id=leaf, leaf_id=leaf)
    detached = getattr(m, "_live_detached", None)
    if detached is not None:
        st = _stat_regular(path)
        if st is None or st.st_size == 0:
            return SyncResult(ChangeKind.UNCHANGED, old_leaf_id=leaf, leaf_id=leaf)
        return _reload(m, path, ChangeKind.REPLACED, leaf)
    cur = _current_mark(m, path)
    if cur is None:
        return SyncResult(ChangeKind.UNCHANGED, old_leaf_id=leaf, leaf_id=leaf)
    if isinstance(cur, ChangeKind):
        kind = cur
        if kind is ChangeKind.DELETED:
            return _detach(m, "deleted", leaf)
        return _reload(m, path, kind, leaf)
    tail = read_appended(path, cur, guard=_guard_of(m))
    if tail.kind is ChangeKind.DELETED:
        return _detach(m, "deleted", leaf)
    if tail.kind.needs_reload:
        return _reload(m, path, tail.kind, leaf)
    if tail.kind is ChangeKind.UNCHANGED:
        m._live_mark = tail.mark
        _note_size(m, tail.mark)
        return SyncResult(ChangeKind.UNCHANGED, old_leaf_id=leaf, leaf_id=leaf)
    appended, labels, dropped = _ingest(m, tail.data, tail.data_offset)
    fs = m.file_state
    fs.end = tail.mark.offset
    m._live_mark = tail.mark
    _note_size(m, tail.mark)
    if appended:
        m._leaf_id = appended[-1]
    return SyncResult(
        ChangeKind.APPENDED,
        appended=appended,
        old_leaf_id=leaf,
        leaf_id=m.get_leaf_id(),
        labels=labels,
        dropped=dropped,
    )


def _note_size(m: Any, mark: FileMark) -> None:
    fs = m.file_state
    fs.size = mark.size
    fs.mtime_ns = mark.mtime_ns


def _stat_regular(path: str) -> os.stat_result | None:
    import stat

    try:
        st = os.stat(path)
    except OSError:
        return None
    return st if stat.S_ISREG(st.st_mode) else None


def _detach(m: Any, reason: str, leaf: str | None) -> SyncResult:
    if getattr(m, "_live_detached", None) == reason:
        return SyncResult(ChangeKind.UNCHANGED, old_leaf_id=leaf, leaf_id=leaf)
    m._live_detached = reason
    m._live_mark = None
    try:
        m._close_writer()
    except Exception:
        pass
    return SyncResult(ChangeKind.DELETED, old_leaf_id=leaf, leaf_id=leaf, reason=reason)


def _reload(m: Any, path: str, kind: ChangeKind, leaf: str | None) -> SyncResult:
    """Load the file again in place (same manager, same path)."""
    from .errors import InvalidSessionFileError

    st = _stat_regular(path)
    if st is None:
        return _detach(m, "deleted", leaf)
    if st.st_size == 0 or _end_of_first_line(path, _guard_of(m)) is None:
        # Being rewritten in place (truncated, not yet written): look again later rather
        # than starting a new session over it.
        m._live_mark = None
        return SyncResult(ChangeKind.UNCHANGED, old_leaf_id=leaf, leaf_id=leaf)
    try:
        m._set_session_file(path)
    except InvalidSessionFileError:
        return _detach(m, "invalid", leaf)
    m._live_detached = None
    fs = m.file_state
    m._live_mark = FileMark.capture(path, fs.end, _guard_of(m)) if fs is not None else None
    return SyncResult(kind, old_leaf_id=leaf, leaf_id=m.get_leaf_id(), reason=str(kind))


def _end_of_first_line(path: str, guard: PathGuard | None = None) -> int | None:
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


def _ingest(m: Any, data: bytes, base: int) -> tuple[list[str], list[tuple[str, str | None]], int]:
    """Index the complete lines `data` (starting at file offset `base`), skipping known ids."""
    from .index import scan_clean

    index = m.index
    appended: list[str] = []
    labels: list[tuple[str, str | None]] = []
    dropped = 0
    scan = scan_clean(data, 0, len(index), allow_torn_tail=False)
    if scan is not None:
        fresh = [sk for sk in scan.skeletons if sk.id not in index]
        if len(fresh) == len(scan.skeletons):
            u = index.usage
            for name in ("input", "output", "cacheRead", "cacheWrite", "premiumRequests", "cost"):
                if hasattr(u, name) and hasattr(scan.usage, name):
                    setattr(u, name, getattr(u, name) + getattr(scan.usage, name))
        seen: set[str] = set()
        kept: list[Any] = []
        for sk in fresh:
            if sk.id in seen:
                continue
            seen.add(sk.id)
            sk.offset += base
            sk.order = len(index) + len(kept)
            kept.append(sk)
        if len(kept) != len(scan.skeletons):
            # Own entries were among the lines: count usage of the new ones only.
            for sk in kept:
                index.usage.add_entry(_line_entry(data, sk.offset - base, sk.length))
        index.add_skeletons(kept)
        for sk in kept:
            appended.append(sk.id)
            if sk.type == "label" and isinstance(sk.target_id, str):
                labels.append((sk.target_id, sk.label or None))
        return appended, labels, dropped
    parsed = parse_appended(data)
    dropped = len(parsed.dropped)
    for entry in parsed.entries:
        eid = entry.get("id")
        if not isinstance(eid, str) or eid in index or entry.get("type") == "session":
            if entry.get("type") == "session" or not isinstance(eid, str):
                dropped += 1
            continue
        _prepare_loaded(m, entry)
        sk = index.add_held(entry)
        appended.append(eid)
        if sk.type == "label" and isinstance(sk.target_id, str):
            labels.append((sk.target_id, sk.label or None))
    return appended, labels, dropped


def _line_entry(data: bytes, offset: int, length: int) -> dict[str, Any]:
    from .jsonl import loads_line

    try:
        v = loads_line(data[offset : offset + length])
    except ValueError:
        return {}
    return v if isinstance(v, dict) else {}


def _prepare_loaded(m: Any, entry: dict[str, Any]) -> None:
    """What loading does to an entry held in memory: blob refs resolved, replay payload cleaned."""
    try:
        from . import manager as mm

        if mm._has_blob_ref(entry):
            mm._persistence().resolve_blob_refs(entry, m._blob_store())
        mm._clean_openai_replay(entry)
    except Exception:
        pass


def before_write(m: Any) -> SyncResult | None:
    """Called before the manager appends or rewrites: fold in what others wrote first.

    Raises `ConflictError` when the session is detached from its file (deleted, or no
    longer a readable session). The result (if anything changed) is queued on the
    manager (`live_events`) for the daemon to announce.
    """
    from .errors import ConflictError

    path = _manager_path(m)
    if path is None:
        return None
    if _unchanged_since_known(m, path):
        leaf = m.get_leaf_id()
        return SyncResult(ChangeKind.UNCHANGED, old_leaf_id=leaf, leaf_id=leaf)
    res = sync_manager(m)
    if res.kind is not ChangeKind.UNCHANGED or res.appended:
        events = m.live_events
        events.append(res)
        # The daemon drains these; a library user may never look: keep the newest only.
        if len(events) > MAX_LIVE_EVENTS:
            del events[:-MAX_LIVE_EVENTS]
    detached = getattr(m, "_live_detached", None)
    if detached is not None:
        raise ConflictError(
            f"Session file {m._session_file} was {'deleted' if detached == 'deleted' else 'replaced by an unreadable file'}; "
            "nothing was written",
            m._session_file,
        )
    return res


def _unchanged_since_known(m: Any, path: str) -> bool:
    """One `stat`: the file is exactly as the manager last saw it (the write fast path).

    True when the manager holds the whole file (no torn tail, nothing detached) and the
    path's identity, size and mtime are those of `file_state`, which is only updated after
    a full look (`sync_manager`) or after our own append when the file grew by exactly our
    line. Anything else takes the full look with fingerprints. An in-place rewrite of the
    same size within one mtime tick is only caught by `sync_with_file` (the watcher's path).
    """
    fs = m.file_state
    if fs is None or fs.end != fs.size or getattr(m, "_live_detached", None) is not None:
        return False
    try:
        st = os.stat(path)
    except OSError:
        return False
    return (
        st.st_size == fs.size
        and st.st_mtime_ns == fs.mtime_ns
        and st.st_ino == fs.inode
        and st.st_dev == fs.device
        and _is_regular(st.st_mode)
    )


def after_append(m: Any, nbytes: int) -> None:
    """After our own append of `nbytes`: advance the ingested end only when nobody else wrote.

    When the file grew by more than our line, the end stays: the next sync reads the other
    writer's lines and ours back (ours are skipped by id).
    """
    fs = m.file_state
    path = _manager_path(m)
    if fs is None or path is None:
        return
    st = _stat_regular(path)
    if st is None:
        return
    if (
        (st.st_ino, st.st_dev) == (fs.inode, fs.device)
        and fs.end == fs.size
        and st.st_size == fs.size + nbytes
    ):
        fs.size = st.st_size
        fs.end = st.st_size
        fs.mtime_ns = st.st_mtime_ns
        m._live_mark = None


def guard_rewrite(m: Any) -> None:
    """Before a full rewrite: the file must hold nothing the manager has not read.

    External appends are ingested first (so the rewrite keeps them). A file that was
    replaced, truncated or rewritten is reloaded and the rewrite refused with
    `ConflictError` (the caller may retry on the reloaded state).
    """
    from .errors import ConflictError

    path = _manager_path(m)
    if path is None or m.file_state is None or getattr(m, "_live_guarding", False):
        return
    m._live_guarding = True
    try:
        res = before_write(m)
    finally:
        m._live_guarding = False
    if res is not None and (res.kind.needs_reload or res.kind is ChangeKind.DELETED):
        raise ConflictError(
            f"Session file {path} was {res.reason or res.kind} by another process; it was reloaded and nothing was written",
            path,
        )
