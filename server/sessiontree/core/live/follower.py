"""The follower: what a session knows of its file on disk, and the folding in of what
other processes wrote to it (see docs/live-sessions.md).

A `SessionManager` owns one `Follower`. Loading and writing tell it how far the index
covers the file (`FileState`); before every write (`before_write`) and when the daemon's
watcher asks (`sync`), it looks at the file once (`tail.read_appended`): lines appended
by others are indexed and the leaf moves to the last of them, a replaced, truncated or
rewritten file is reloaded, a deleted one detaches the session (it keeps what it holds
and refuses writes until the file is back). What a write folded in is queued in `events`
for the daemon to announce.

The follower reaches its session only through `FollowedSession`, so this module imports
nothing of the manager.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..errors import ConflictError, InvalidSessionFileError
from ..format.jsonl import loads_line
from ..index import EntryIndex, scan_clean
from ..store.guard import PathGuard
from .tail import ChangeKind, FileMark, end_of_first_line, parse_appended, read_appended, stat_regular

__all__ = [
    "DETACHED_REASONS",
    "MAX_LIVE_EVENTS",
    "FileState",
    "FollowedSession",
    "Follower",
    "SyncResult",
]

#: How many folded-in changes a session keeps for the daemon to announce.
MAX_LIVE_EVENTS = 256

#: Reasons a session is detached from its file (writes refused until it comes back).
DETACHED_REASONS = ("deleted", "invalid")


@dataclass
class FileState:
    """The session file as last read or written: size, inode, device, mtime (ns).

    `end` is the offset up to which the file's lines are in the index; bytes after it were
    appended by someone else (see `SessionManager.ingest_appended_bytes`).
    """

    size: int
    inode: int
    device: int
    mtime_ns: int
    end: int


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
    #: oh-my-pi rewrote the file's title slot in place: the session's title changed.
    retitled: bool = False


class FollowedSession(Protocol):
    """What the follower asks of the session that owns it (`SessionManager` provides it)."""

    @property
    def index(self) -> EntryIndex: ...

    def get_leaf_id(self) -> str | None: ...

    def get_session_file(self) -> str | None: ...

    def branch(self, entry_id: str) -> None: ...

    def reload_file(self) -> None:
        """Load the session file again in place; raises `InvalidSessionFileError`."""
        ...

    def drop_writer(self) -> None: ...

    def prepare_loaded_entry(self, entry: dict[str, Any]) -> None:
        """What loading does to an entry held in memory (blob references, replay metadata)."""
        ...

    def set_title_slot_line(self, line: bytes) -> None:
        """Take the title slot another process wrote in place (oh-my-pi's title change)."""
        ...


class Follower:
    """A session's view of its file: the `FileState`, a `FileMark` of it, and a detach."""

    def __init__(self, session: FollowedSession, storage: Any) -> None:
        self._session = session
        self._real_fs = bool(getattr(storage, "is_real_fs", False))
        # A backend that is no file system but can be followed through its own stat and
        # read_range (the shared store): `sync` reads appends through it.
        self._storage = storage
        self._store_follow = not self._real_fs and bool(getattr(storage, "followable", False))
        #: The access guard of the storage (the daemon's allowed roots), if any.
        self._guard: PathGuard | None = getattr(storage, "guard", None)
        self.state: FileState | None = None
        #: The mark matching `state` (fingerprints of the bytes read), taken lazily.
        self.mark: FileMark | None = None
        #: Why the session is detached from its file (`DETACHED_REASONS`), or None.
        self.detached: str | None = None
        #: Changes folded in by writes, not yet announced.
        self.events: list[SyncResult] = []
        self._guarding = False

    # -- the file state, as loading and writing leave it ----------------------------------
    def set_state(self, state: FileState | None) -> None:
        """The file was read or written: how far it is indexed, and its identity then."""
        self.state = state

    def forget(self) -> None:
        """The session is about to use another file: nothing is known of it yet."""
        self.state = None
        self.mark = None
        self.detached = None

    def _path(self) -> str | None:
        if not self._real_fs and not self._store_follow:
            return None
        return self._session.get_session_file()

    # -- looking at the file --------------------------------------------------------------
    def _current_mark(self, path: str) -> FileMark | ChangeKind | None:
        """The mark matching `state`, captured now when it is stale.

        Returns REPLACED when another file sits at the path, DELETED when nothing does,
        None when there is no file state (nothing written or read yet).
        """
        fs = self.state
        if fs is None:
            return None
        mark = self.mark
        if mark is not None and (mark.inode, mark.dev, mark.offset) == (fs.inode, fs.device, fs.end):
            return mark
        mark = FileMark.capture(path, fs.end, self._guard)
        if mark is None:
            return ChangeKind.DELETED
        if (mark.inode, mark.dev) != (fs.inode, fs.device):
            return ChangeKind.REPLACED
        if mark.size < fs.end:
            return ChangeKind.TRUNCATED
        self.mark = mark
        return mark

    def sync(self) -> SyncResult:
        """Fold what other processes did to the file into the session.

        Appended complete lines are indexed (entries whose id is already known, i.e. our own
        appends read back, are skipped) and the leaf moves to the last external entry. A
        replaced, truncated or rewritten file is reloaded (leaf = last entry, as on open). A
        deleted file (or one that no longer holds a readable session) detaches the session.
        """
        session = self._session
        path = self._path()
        leaf = session.get_leaf_id()
        if path is None:
            return SyncResult(ChangeKind.UNCHANGED, old_leaf_id=leaf, leaf_id=leaf)
        if self._store_follow:
            return self._sync_through_storage(path, leaf)
        if self.detached is not None:
            st = stat_regular(path)
            if st is None or st.st_size == 0:
                return SyncResult(ChangeKind.UNCHANGED, old_leaf_id=leaf, leaf_id=leaf)
            return self._reload(path, ChangeKind.REPLACED, leaf)
        cur = self._current_mark(path)
        if cur is None:
            return SyncResult(ChangeKind.UNCHANGED, old_leaf_id=leaf, leaf_id=leaf)
        if isinstance(cur, ChangeKind):
            if cur is ChangeKind.DELETED:
                return self._detach("deleted", leaf)
            return self._reload(path, cur, leaf)
        tail = read_appended(path, cur, guard=self._guard)
        if tail.kind is ChangeKind.DELETED:
            return self._detach("deleted", leaf)
        if tail.kind.needs_reload:
            return self._reload(path, tail.kind, leaf)
        fs = self.state
        assert fs is not None
        if tail.retitled:
            session.set_title_slot_line(tail.mark.slot)
        if tail.kind is ChangeKind.UNCHANGED:
            self.mark = tail.mark
            fs.size = tail.mark.size
            fs.mtime_ns = tail.mark.mtime_ns
            return SyncResult(ChangeKind.UNCHANGED, old_leaf_id=leaf, leaf_id=leaf, retitled=tail.retitled)
        appended, labels, dropped = self._ingest(tail.data, tail.data_offset)
        fs.end = tail.mark.offset
        self.mark = tail.mark
        fs.size = tail.mark.size
        fs.mtime_ns = tail.mark.mtime_ns
        if appended:
            session.branch(appended[-1])
        return SyncResult(
            ChangeKind.APPENDED,
            appended=appended,
            old_leaf_id=leaf,
            leaf_id=session.get_leaf_id(),
            labels=labels,
            dropped=dropped,
            retitled=tail.retitled,
        )

    def _sync_through_storage(self, path: str, leaf: str | None) -> SyncResult:
        """`sync` for a followable backend: its stat gives identity and size, appended
        complete lines come from its read_range; anything else reloads."""
        fs = self.state
        try:
            st = self._storage.stat(path)
        except FileNotFoundError:
            return self._detach("deleted", leaf)
        if fs is None:
            return SyncResult(ChangeKind.UNCHANGED, old_leaf_id=leaf, leaf_id=leaf)
        if st.inode != fs.inode or st.size < fs.end or self.detached is not None:
            try:
                self._session.reload_file()
            except InvalidSessionFileError:
                return self._detach("invalid", leaf)
            self.detached = None
            kind = ChangeKind.TRUNCATED if st.inode == fs.inode else ChangeKind.REPLACED
            return SyncResult(kind, old_leaf_id=leaf, leaf_id=self._session.get_leaf_id(), reason=str(kind))
        if st.size == fs.end:
            fs.size, fs.mtime_ns = st.size, st.mtime_ns
            return SyncResult(ChangeKind.UNCHANGED, old_leaf_id=leaf, leaf_id=leaf)
        data = self._storage.read_range(path, fs.end, st.size - fs.end)
        cut = data.rfind(b"\n") + 1
        if cut == 0:
            return SyncResult(ChangeKind.UNCHANGED, old_leaf_id=leaf, leaf_id=leaf)
        appended, labels, dropped = self._ingest(data[:cut], fs.end)
        fs.end += cut
        fs.size, fs.mtime_ns = st.size, st.mtime_ns
        if not appended:
            # Only our own lines read back.
            return SyncResult(ChangeKind.UNCHANGED, old_leaf_id=leaf, leaf_id=leaf, dropped=dropped)
        self._session.branch(appended[-1])
        return SyncResult(
            ChangeKind.APPENDED,
            appended=appended,
            old_leaf_id=leaf,
            leaf_id=self._session.get_leaf_id(),
            labels=labels,
            dropped=dropped,
        )

    def detach(self, reason: str) -> SyncResult:
        """Detach the session from its file (it keeps what it holds, writes are refused until
        the file is readable again), e.g. when the path now names a file the guard refuses."""
        return self._detach(reason, self._session.get_leaf_id())

    def _detach(self, reason: str, leaf: str | None) -> SyncResult:
        if self.detached == reason:
            return SyncResult(ChangeKind.UNCHANGED, old_leaf_id=leaf, leaf_id=leaf)
        self.detached = reason
        self.mark = None
        try:
            self._session.drop_writer()
        except Exception:
            pass
        return SyncResult(ChangeKind.DELETED, old_leaf_id=leaf, leaf_id=leaf, reason=reason)

    def _reload(self, path: str, kind: ChangeKind, leaf: str | None) -> SyncResult:
        """Load the file again in place (same session, same path)."""
        st = stat_regular(path)
        if st is None:
            return self._detach("deleted", leaf)
        if st.st_size == 0 or end_of_first_line(path, self._guard) is None:
            # Being rewritten in place (truncated, not yet written): look again later rather
            # than starting a new session over it.
            self.mark = None
            return SyncResult(ChangeKind.UNCHANGED, old_leaf_id=leaf, leaf_id=leaf)
        try:
            self._session.reload_file()
        except InvalidSessionFileError:
            return self._detach("invalid", leaf)
        self.detached = None
        fs = self.state
        self.mark = FileMark.capture(path, fs.end, self._guard) if fs is not None else None
        return SyncResult(kind, old_leaf_id=leaf, leaf_id=self._session.get_leaf_id(), reason=str(kind))

    def _ingest(self, data: bytes, base: int) -> tuple[list[str], list[tuple[str, str | None]], int]:
        """Index the complete lines `data` (starting at file offset `base`), skipping known ids."""
        index = self._session.index
        appended: list[str] = []
        labels: list[tuple[str, str | None]] = []
        dropped = 0
        scan = scan_clean(data, 0, len(index), allow_torn_tail=False)
        if scan is not None:
            fresh = [sk for sk in scan.skeletons if sk.id not in index]
            if len(fresh) == len(scan.skeletons):
                index.usage.add_totals(scan.usage)
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
            try:
                self._session.prepare_loaded_entry(entry)
            except Exception:
                pass
            sk = index.add_held(entry)
            appended.append(eid)
            if sk.type == "label" and isinstance(sk.target_id, str):
                labels.append((sk.target_id, sk.label or None))
        return appended, labels, dropped

    # -- around writes --------------------------------------------------------------------
    def before_write(self) -> SyncResult | None:
        """Called before the session appends or rewrites: fold in what others wrote first.

        Raises `ConflictError` when the session is detached from its file (deleted, or no
        longer a readable session) or the file lost its header (`check_still_a_session`).
        The result (if anything changed) is queued in `events`.
        """
        path = self._path()
        if path is None:
            return None
        if self._store_follow:
            # A backend that keeps what it read (the shared store in the daemon) answers
            # looks from it; a write asks it for what others added first.
            refresh = getattr(self._storage, "refresh", None)
            if refresh is not None:
                refresh(path)
        if self._unchanged_since_known(path):
            # The file is as last read, header and all: the fast path's one stat suffices.
            leaf = self._session.get_leaf_id()
            return SyncResult(ChangeKind.UNCHANGED, old_leaf_id=leaf, leaf_id=leaf)
        res = self.sync()
        if res.kind is not ChangeKind.UNCHANGED or res.appended or res.retitled:
            events = self.events
            events.append(res)
            # The daemon drains these; a library user may never look: keep the newest only.
            if len(events) > MAX_LIVE_EVENTS:
                del events[:-MAX_LIVE_EVENTS]
        detached = self.detached
        if detached is not None:
            raise ConflictError(
                f"Session file {path} was {'deleted' if detached == 'deleted' else 'replaced by an unreadable file'}; "
                "nothing was written",
                path,
            )
        self.check_still_a_session(path)
        return res

    def _unchanged_since_known(self, path: str) -> bool:
        """One `stat`: the file is exactly as the session last saw it (the write fast path).

        True when the session holds the whole file (no torn tail, nothing detached) and the
        path's identity, size and mtime are those of `state`, which is only updated after a
        full look (`sync`) or after our own append when the file grew by exactly our line.
        Anything else takes the full look with fingerprints. An in-place rewrite of the
        same size within one mtime tick is only caught by `sync` (the watcher's path).
        """
        fs = self.state
        if fs is None or fs.end != fs.size or self.detached is not None:
            return False
        st = stat_regular(path)
        return (
            st is not None
            and st.st_size == fs.size
            and st.st_mtime_ns == fs.mtime_ns
            and st.st_ino == fs.inode
            and st.st_dev == fs.device
        )

    def after_append(self, nbytes: int) -> None:
        """After our own append of `nbytes`: advance the indexed end only when nobody else wrote.

        When the file grew by more than our line, the end stays: the next sync reads the other
        writer's lines and ours back (ours are skipped by id).
        """
        fs = self.state
        path = self._path()
        if fs is None or path is None:
            return
        st = stat_regular(path)
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
            self.mark = None

    def after_retitle(self, slot: bytes) -> None:
        """After our own rewrite of the file's title slot in place: the file is as known,
        with this slot and a new mtime (no other writer's change is taken for ours)."""
        fs = self.state
        path = self._path()
        if fs is None or path is None:
            return
        st = stat_regular(path)
        if st is None or (st.st_ino, st.st_dev) != (fs.inode, fs.device) or st.st_size != fs.size:
            return
        fs.mtime_ns = st.st_mtime_ns
        if self.mark is not None and self.mark.slot and len(self.mark.slot) == len(slot):
            self.mark = dataclasses.replace(self.mark, slot=slot, mtime_ns=st.st_mtime_ns)

    def guard_rewrite(self) -> None:
        """Before a full rewrite: the file must hold nothing the session has not read.

        External appends are ingested first (so the rewrite keeps them). A file that was
        replaced, truncated or rewritten is reloaded and the rewrite refused with
        `ConflictError` (the caller may retry on the reloaded state).
        """
        path = self._path()
        if path is None or self.state is None or self._guarding:
            return
        self._guarding = True
        try:
            res = self.before_write()
        finally:
            self._guarding = False
        if res is not None and (res.kind.needs_reload or res.kind is ChangeKind.DELETED):
            raise ConflictError(
                f"Session file {path} was {res.reason or res.kind} by another process; it was reloaded and nothing was written",
                path,
            )

    @property
    def guarding(self) -> bool:
        """True while `guard_rewrite` looks at the file (its own look must not recurse)."""
        return self._guarding

    def check_still_a_session(self, path: str) -> None:
        """Refuse an append to a file that lost its header since it was read.

        Another program truncated (or deleted) the file: an appended line would be an entry
        without a header, which no reader accepts. Not latched: nothing was written, and the
        watcher reloads the file once it holds a session again.
        """
        if not self._real_fs:
            return
        try:
            size = os.stat(path).st_size
        except FileNotFoundError:
            raise ConflictError(f"Session file {path} was deleted; nothing was written", path) from None
        except OSError:
            return  # the write itself reports what is wrong
        if size == 0:
            raise ConflictError(
                f"Session file {path} is empty now (truncated by another program); nothing was written", path
            )


def _line_entry(data: bytes, offset: int, length: int) -> dict[str, Any]:
    try:
        v = loads_line(data[offset : offset + length])
    except ValueError:
        return {}
    return v if isinstance(v, dict) else {}
