"""`SessionManager`: the session store (reference sections 5, 7, 10-12, 15, 16, 17).

The manager mirrors the reference agent's SessionManager in Python naming. Entries are
dicts exactly as they are (or would be) written to the file. Internally it keeps an
`EntryIndex` of skeletons; full entries of a big file are parsed on demand (see
`core/index.py`), so opening a 100,000-entry file costs a fraction of a second.

Persistence follows the reference pipeline: nothing is written until the session has an
assistant message (or `ensure_on_disk()`), then one atomic full rewrite, then incremental
appends of whole lines. The first persistence error is latched and re-raised by later
writes as `PersistError`; memory is updated first, like the reference.

Deliberate divergences (DIVERGENCES.md): a non-empty file without a valid header is
refused (1); what the lenient loader dropped is reported in `load_report` and a quarantine
copy is kept before any rewrite (2); parent loops cannot hang anything (3); migrations are
written atomically when they run (4, 6); `create_branched_session` writes through the
normal persistence path (7).
"""

from __future__ import annotations

import builtins
import os
import re
import stat as _stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import orjson

from . import index as _index_mod
from .discovery import RecentSessionInfo, SessionInfo
from .errors import (
    AccessDeniedError,
    ConflictError,
    EntryNotFoundError,
    InvalidSessionFileError,
    PersistError,
    SessionTreeError,
)
from .ids import Clock, IdSource, session_file_name
from .index import STATE_ENTRY_TYPES, EntryIndex, IndexCache, Skeleton, scan_clean
from .live import FileState, Follower, SyncResult

if TYPE_CHECKING:
    from .context import SessionContext

__all__ = [
    "CURRENT_SESSION_VERSION",
    "FileState",
    "LoadReport",
    "RecentSessionInfo",
    "SessionInfo",
    "SessionManager",
    "SessionTreeNode",
]

CURRENT_SESSION_VERSION = 3
_BLOB_MARK = b"blob:sha256:"
# Files at least this big get a sidecar index cache for fast reopening.
CACHE_MIN_BYTES = 1 << 20
# Batched reads of file-backed entries: join ranges closer than this, up to this size.
_BATCH_GAP = 256 * 1024
_BATCH_MAX = 8 << 20
# Bulk (sequential) reads of many entries: spans of up to this many bytes at a time.
_STREAM_MAX = 16 << 20
#: Files larger than this are indexed chunk by chunk (never held whole in memory).
_CHUNKED_LOAD_MIN = 32 << 20
_LOAD_CHUNK = 16 << 20
#: A cache hit on a grown file is saved again once this many bytes (or 1/16) were appended.
_CACHE_RESAVE_MIN = 1 << 20


def _jsonl() -> Any:
    from . import jsonl

    return jsonl


def _migrations() -> Any:
    from . import migrations

    return migrations


def _persistence() -> Any:
    from . import persistence

    return persistence


def _paths() -> Any:
    from . import paths

    return paths


def _storage_mod() -> Any:
    from . import storage

    return storage


@dataclass
class LoadReport:
    """What the lenient loader dropped when the file was opened (DIVERGENCES 2).

    `skipped_lines` counts dropped regions other than a torn tail, `torn_tail` is true when
    the file ended inside an incomplete line, `dropped` lists the regions
    (`jsonl.DroppedLine`), `quarantined_copy` is the path of the copy of the original bytes
    kept before the first rewrite, `migrated_from` the file's version when a migration ran,
    `backup_copy` the copy of the original bytes kept before the migration was written.
    """

    skipped_lines: int = 0
    torn_tail: bool = False
    dropped: builtins.list[Any] = field(default_factory=list)
    quarantined_copy: str | None = None
    migrated_from: int | None = None
    backup_copy: str | None = None
    fast_path: bool = False
    from_cache: bool = False

    @property
    def recovered(self) -> bool:
        """True when the loader dropped anything."""
        return self.skipped_lines > 0 or self.torn_tail

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"skippedLines": self.skipped_lines, "tornTail": self.torn_tail}
        if self.quarantined_copy:
            out["quarantinedCopy"] = self.quarantined_copy
        return out


class SessionTreeNode:
    """One node of `SessionManager.get_tree()`: the entry, its children and its label."""

    __slots__ = ("children", "entry", "label")

    def __init__(
        self, entry: dict[str, Any], children: builtins.list[SessionTreeNode], label: str | None
    ) -> None:
        self.entry = entry
        self.children = children
        self.label = label

    def __repr__(self) -> str:
        return f"SessionTreeNode(id={self.entry.get('id')!r}, children={len(self.children)}, label={self.label!r})"


_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
_SPACES = re.compile(" +")


def sanitize_session_name(name: str) -> str:
    """Control characters become spaces, runs of spaces collapse, the result is trimmed."""
    return _SPACES.sub(" ", _CONTROL.sub(" ", name)).strip()


def _clean_openai_replay(entry: dict[str, Any]) -> bool:
    """The reference's in-memory cleanup of OpenAI-Responses replay metadata (§5)."""
    if entry.get("type") != "message":
        return False
    msg = entry.get("message")
    if not isinstance(msg, dict) or msg.get("role") != "assistant":
        return False
    payload = msg.get("providerPayload")
    if not isinstance(payload, dict):
        return False
    ptype = payload.get("type")
    if not (isinstance(ptype, str) and ptype.startswith("openaiResponses")):
        return False
    del msg["providerPayload"]
    content = msg.get("content")
    if isinstance(content, list):
        for block in content:
            if isinstance(block, dict) and block.get("type") == "thinking" and "thinkingSignature" in block:
                del block["thinkingSignature"]
    return True


def _stat_of(storage: Any, path: str) -> Any:
    """An `os.stat_result`-like object (st_size, st_ino, st_dev, st_mtime_ns) or None."""
    try:
        if getattr(storage, "is_real_fs", False):
            return os.stat(path)
        fs = storage.stat(path)
    except FileNotFoundError:
        return None
    return SimpleNamespace(st_size=fs.size, st_ino=0, st_dev=0, st_mtime_ns=fs.mtime_ns)


def _st(st: Any, name: str, default: int = 0) -> int:
    v = getattr(st, name, None)
    if v is None and isinstance(st, dict):
        v = st.get(name)
    return int(v) if v is not None else default


class SessionManager:
    """A session: header, entries (a tree by `parentId`), the leaf, and their persistence.

    Construct it with the classmethods (`create`, `open`, `continue_recent`, `in_memory`,
    `fork_from`). Entries are JSON-compatible dicts as stored in the file.
    """

    def __init__(
        self,
        cwd: str,
        session_dir: str,
        session_file: str | None,
        persist: bool,
        storage: Any = None,
        *,
        clock: Clock | None = None,
        ids: IdSource | None = None,
        blobs: Any = None,
        agent_dir: str | None = None,
        cache_dir: str | None = None,
        read_only: bool = False,
        viewing: bool = False,
        breadcrumbs: bool = True,
        penv: Any = None,
        cache_min_bytes: int = CACHE_MIN_BYTES,
    ) -> None:
        self._cache_min_bytes = cache_min_bytes
        self._read_only = read_only
        # Opened for viewing (DIVERGENCES 11): nothing is written until a change is asked
        # for; the first change writes the pending migration, after a backup copy.
        self._viewing = viewing
        self._breadcrumbs = breadcrumbs
        self._penv = penv
        self._clock = clock or Clock()
        self._ids = ids or IdSource(clock=self._clock)
        if storage is None:
            sm = _storage_mod()
            storage = sm.FileSessionStorage() if persist else sm.MemorySessionStorage()
        self._storage = storage
        self._cwd = cwd
        self._session_dir = session_dir
        self._persist = persist
        self._agent_dir = agent_dir
        self._blobs = blobs
        self._cache_dir = cache_dir
        self._writer: Any = None
        self._persist_error: PersistError | None = None
        self.load_report = LoadReport()
        # What is known of the file on disk, and the folding in of other writers' lines.
        self._follower = Follower(self, storage)
        self._header: dict[str, Any] = {}
        self._index = EntryIndex()
        self._leaf_id: str | None = None
        self._flushed = False
        self._needs_full_rewrite = False
        self._ensured_on_disk = False
        self._session_file: str | None = None
        self._quarantine_pending = False
        if session_file is not None:
            self._set_session_file(session_file)
        else:
            self._new_session_state(None)

    # ------------------------------------------------------------------ constructors
    @classmethod
    def create(
        cls, cwd: str, session_dir: str | None = None, storage: Any = None, **kw: Any
    ) -> SessionManager:
        """A new persistent session; the file is written once an assistant message exists."""
        cwd = os.path.abspath(cwd)
        sdir = (
            session_dir
            if session_dir is not None
            else cls.get_default_session_dir(cwd, kw.get("agent_dir"), kw.get("penv"))
        )
        mgr = cls(cwd, os.path.abspath(sdir), None, True, storage, **kw)
        mgr._new_session_state(None)
        return mgr

    @classmethod
    def open(
        cls, path: str, session_dir: str | None = None, storage: Any = None, **kw: Any
    ) -> SessionManager:
        """Open a session file (migrating it and resolving blobs).

        Raises `InvalidSessionFileError` for a non-empty file without a valid header; a
        missing or empty path starts a new session there.
        """
        path = os.path.abspath(path)
        sdir = os.path.abspath(session_dir) if session_dir is not None else os.path.dirname(path)
        mgr = cls(os.getcwd(), sdir, None, True, storage, **kw)
        mgr._set_session_file(path, cwd_from_header=True)
        return mgr

    @classmethod
    def continue_recent(
        cls,
        cwd: str,
        session_dir: str | None = None,
        storage: Any = None,
        *,
        terminal_id: str | None = None,
        **kw: Any,
    ) -> SessionManager:
        """The terminal's breadcrumb session, else the newest in the directory, else new.

        The terminal is this process's unless ``terminal_id`` names another one (``pts-3``,
        ``tmux-%1``, ...), as a daemon does for the terminal the agent runs in.

        With a guarded storage (``storage.guard``, the daemon's allowed roots) a breadcrumb
        outside the roots is not read, a breadcrumb naming a file outside them raises
        `AccessDeniedError` before that file is opened (nothing loaded, locked or written),
        and only files inside count as the newest.
        """
        from .discovery import find_most_recent_session_of_dirs

        guard = getattr(storage, "guard", None)
        cwd = os.path.abspath(cwd)
        if session_dir is not None:
            dirs = [os.path.abspath(session_dir)]
        else:
            # Every encoding the agents use for this cwd (nothing renamed: DIVERGENCES 11).
            dirs = _paths().session_dirs_of(cwd, kw.get("agent_dir"), kw.get("penv"))
        sdir = dirs[0] if dirs else cls.get_default_session_dir(cwd, kw.get("agent_dir"), kw.get("penv"))
        crumb = None
        try:
            crumb_file = _paths().breadcrumb_path(kw.get("agent_dir"), kw.get("penv"), terminal_id)
            if crumb_file is not None and (guard is None or guard.accept(crumb_file)):
                crumb = _paths().read_breadcrumb(
                    cwd, agent_dir=kw.get("agent_dir"), penv=kw.get("penv"), terminal_id=terminal_id
                )
        except Exception:
            crumb = None
        if crumb and os.path.exists(crumb):
            if guard is not None:
                guard.check(os.path.abspath(crumb))
            return cls.open(crumb, sdir, storage, **kw)
        newest = find_most_recent_session_of_dirs(dirs, guard)
        if newest is not None:
            return cls.open(newest[0], newest[1], storage, **kw)
        return cls.create(cwd, sdir, storage, **kw)

    @classmethod
    def in_memory(cls, cwd: str | None = None, **kw: Any) -> SessionManager:
        """A session that is never written (MemorySessionStorage, no file)."""
        storage = kw.pop("storage", None)
        if storage is None:
            storage = _storage_mod().MemorySessionStorage()
        mgr = cls(os.path.abspath(cwd) if cwd else os.getcwd(), "", None, False, storage, **kw)
        return mgr

    @classmethod
    def fork_from(
        cls, source_path: str, cwd: str, session_dir: str | None = None, storage: Any = None, **kw: Any
    ) -> SessionManager:
        """Copy another session's entries (ids kept) into a new file, written at once."""
        source = cls.open(source_path, storage=storage, **{k: v for k, v in kw.items() if k != "cache_dir"})
        try:
            entries = [_deep_copy(e) for e in source._index.iter_entries()]
            src_header = source.get_header() or {}
        finally:
            source.close_quietly()
        mgr = cls.create(cwd, session_dir, storage, **kw)
        mgr._new_session_state(src_header.get("id"))
        if "title" in src_header:
            mgr._header = _header_with_title(
                mgr._header, src_header.get("title"), src_header.get("titleSource")
            )
        for e in entries:
            _clean_openai_replay(e)
            mgr._index.add_held(e)
        last = mgr._index.last()
        mgr._leaf_id = last.id if last else None
        mgr._rewrite_file_guarded()
        return mgr

    @classmethod
    def list(cls, cwd: str, session_dir: str | None = None, **kw: Any) -> builtins.list[SessionInfo]:
        """Sessions of one directory, newest first."""
        from .discovery import list_sessions, list_sessions_of_dirs

        if session_dir is not None:
            return list_sessions(session_dir, **kw)
        dirs = _paths().session_dirs_of(os.path.abspath(cwd), kw.get("agent_dir"), kw.get("penv"))
        return list_sessions_of_dirs(dirs, **kw)

    @classmethod
    def list_all(cls, agent_dir: str | None = None, **kw: Any) -> builtins.list[SessionInfo]:
        """Sessions of every project under the sessions root, newest first."""
        from .discovery import list_all_sessions

        return list_all_sessions(agent_dir, **kw)

    @staticmethod
    def get_default_session_dir(cwd: str, agent_dir: str | None = None, penv: Any = None) -> str:
        """The per-cwd sessions directory new sessions go to (computed, not created: the
        first write creates it; an existing directory of the cwd in any encoding wins)."""
        return str(_paths().get_default_session_dir(cwd, agent_dir, penv))

    # ------------------------------------------------------------------ state setup
    def _blob_store(self) -> Any:
        if self._blobs is None:
            from .blobs import BlobStore

            self._blobs = BlobStore(str(_paths().blobs_dir(self._agent_dir, self._penv)))
        return self._blobs

    def _new_session_state(self, parent_session: str | None) -> None:
        self._close_writer()
        sid = self._ids.new_session_id()
        header: dict[str, Any] = {
            "type": "session",
            "version": CURRENT_SESSION_VERSION,
            "id": sid,
            "timestamp": self._clock.now_iso(),
            "cwd": self._cwd,
        }
        if parent_session is not None:
            header["parentSession"] = parent_session
        self._header = header
        self._index = self._make_index()
        self._leaf_id = None
        self._flushed = False
        self._needs_full_rewrite = False
        self._ensured_on_disk = False
        self._persist_error = None
        self.load_report = LoadReport()
        self._forget_file_state()
        self._quarantine_pending = False
        if self._persist and self._session_dir:
            name = session_file_name(header["timestamp"], sid)
            self._session_file = os.path.join(self._session_dir, name)
            self._write_breadcrumb()
        else:
            self._session_file = None

    def _write_breadcrumb(self) -> None:
        if not self._persist or not self._session_file or self._read_only:
            return
        if self._viewing or not self._breadcrumbs:
            return
        try:
            _paths().write_breadcrumb(
                self._cwd, self._session_file, agent_dir=self._agent_dir, penv=self._penv
            )
        except Exception:
            pass  # fire and forget, like the reference

    def _set_session_file(self, path: str, cwd_from_header: bool = False) -> None:
        self._close_writer()
        self._persist_error = None
        path = os.path.abspath(path)
        storage = self._storage
        st = _stat_of(storage, path)
        mode = getattr(st, "st_mode", None)
        if isinstance(mode, int) and not _stat.S_ISREG(mode):
            # A FIFO or a device reports size 0: never mistake it for an empty file and
            # rename a new session over it (nor block reading it).
            raise InvalidSessionFileError(path, "not a regular file")
        size = _st(st, "st_size") if st is not None else 0
        if self._read_only and st is None:
            raise FileNotFoundError(path)
        if st is None or size == 0:
            # A missing or empty file: a brand-new session at that path, header written now.
            self._new_session_state(None)
            self._session_file = path
            self._write_breadcrumb()
            self._flushed = True
            self._ensured_on_disk = True
            self._rewrite_file_guarded()
            return
        self._session_file = path
        self._index = self._make_index()
        self.load_report = LoadReport()
        loaded = self._load_from_cache(path, st)
        if not loaded and size >= _CHUNKED_LOAD_MIN:
            loaded = self._load_chunked(path, st)
        if not loaded:
            self._index = self._make_index()
            self.load_report = LoadReport()
            data = storage.read_bytes(path)
            self._load_bytes(path, data, st)
        header = self._header
        if cwd_from_header and isinstance(header.get("cwd"), str) and header.get("cwd"):
            self._cwd = header["cwd"]
        last = self._index.last()
        self._leaf_id = last.id if last else None
        self._flushed = True
        self._ensured_on_disk = True
        self._write_breadcrumb()
        if self.load_report.migrated_from is not None:
            self._needs_full_rewrite = True
            if not self._viewing:
                self._rewrite_file_guarded()  # DIVERGENCE 4: written when it runs
        # A load that dropped lines does not make the next write a rewrite: a rename would
        # pull the file from under an agent that keeps it open, and its next line would be
        # lost. Appends go after the damage instead (the dropped lines stay dropped; a torn
        # tail gets a separator once it is certainly torn: `storage.settled_tail`).

    def _load_bytes(self, path: str, data: bytes, st: Any) -> None:
        nl = data.find(b"\n")
        header_line = data[: nl if nl >= 0 else len(data)]
        header = None
        if header_line[:3] != b"\xef\xbb\xbf":
            try:
                header = _jsonl().loads_line(header_line)  # a lone surrogate keeps the fast path
            except ValueError:
                header = None
        fast = None
        if (
            nl >= 0
            and isinstance(header, dict)
            and header.get("type") == "session"
            and isinstance(header.get("id"), str)
            and _is_current_version(header.get("version"))
        ):
            fast = scan_clean(data, nl + 1, 0)
            if fast is not None and any(type(sk.id) is not str for sk in fast.skeletons):
                fast = None  # entries without ids get derived ones on the lenient path
        if fast is not None:
            self._header = header  # type: ignore[assignment]
            self._index.add_skeletons(fast.skeletons)
            self._index.usage = fast.usage
            self.load_report = LoadReport(torn_tail=fast.torn_tail, fast_path=True)
            if fast.torn_tail:
                jl = _jsonl()
                self.load_report.dropped = [
                    jl.DroppedLine(data.count(b"\n", 0, fast.end) + 1, fast.end, len(data) - fast.end, "torn")
                ]
            self._set_file_state(st, fast.end)
            if len(data) >= self._cache_min_bytes and not fast.torn_tail:
                self._save_cache(path, st, data)
            return
        # The lenient path: the reference's parser, migrations and blobs; held in memory.
        jl = _jsonl()
        report = jl.parse_jsonl_lenient(data)
        values = report.values
        if not values or not jl.is_session_header(values[0]):
            reason = "no valid session header: no line is parsable JSON"
            if values:
                first = values[0]
                if isinstance(first, dict) and first.get("type") == "session":
                    reason = "no valid session header: the header has no string id"
                else:
                    reason = "no valid session header: the first JSON line is not a session header"
            from .doctor import not_a_session_reason

            foreign = not_a_session_reason(bytes(data), values)
            if foreign is not None and foreign.startswith("not a pi session"):
                reason = foreign  # another agent's transcript: say so (one rule, doctor's)
            raise InvalidSessionFileError(path, reason)
        dropped = list(report.dropped)
        skipped = report.skipped_lines
        entries: builtins.list[Any] = [values[0]]
        for v in values[1:]:
            if isinstance(v, dict):
                entries.append(v)
            else:
                skipped += 1  # a non-object line cannot be an entry
        # No id source: ids of a v1 file are derived from the file (DIVERGENCES 10), so
        # every read, in every process, gives the ids the migration writes.
        migrated = _migrations().migrate_session_entries(entries)
        if migrated is None:
            # A current-version file whose entries have no ids (written by hand or by a
            # third-party tool): ids derived like a v1 file's, in memory only.
            _migrations().fill_missing_ids(entries)
        header = entries[0]
        self._header = header
        resolve = _persistence().resolve_blob_refs
        blobs = None
        for e in entries[1:]:
            if _has_blob_ref(e):
                if blobs is None:
                    blobs = self._blob_store()
                resolve(e, blobs)
            _clean_openai_replay(e)
            self._index.add_held(e)
        self.load_report = LoadReport(
            skipped_lines=skipped,
            torn_tail=report.torn_tail,
            dropped=dropped,
            migrated_from=migrated,
        )
        # A torn last line is not in the index: the file state ends before it, so that it
        # is read (`Follower.sync`) once another writer completes it.
        self._set_file_state(st, data.rfind(b"\n") + 1 if report.torn_tail else len(data))

    def _load_chunked(self, path: str, st: Any) -> bool:
        """The fast path of `_load_bytes` for a big clean file, read `_LOAD_CHUNK` at a time.

        Peak memory is one chunk plus the skeletons instead of the whole file. Returns
        False (nothing kept) when the file is not a clean current-version file, so the
        caller reads it whole through the lenient path.
        """
        storage = self._storage
        size = _st(st, "st_size")
        first = bytes(storage.read_range(path, 0, min(size, _LOAD_CHUNK)))
        nl = first.find(b"\n")
        if nl < 0 or first[:3] == b"\xef\xbb\xbf":
            return False
        try:
            header = _jsonl().loads_line(first[:nl])
        except ValueError:
            return False
        if not (
            isinstance(header, dict)
            and header.get("type") == "session"
            and isinstance(header.get("id"), str)
            and _is_current_version(header.get("version"))
        ):
            return False
        skeletons: builtins.list[Skeleton] = []
        usage = None
        # `buf` holds the file from offset `base`; lines are indexed from `buf[bstart:]`.
        # Each read starts at a line start, so chunks are never glued together.
        buf = first
        del first
        base = 0
        bstart = nl + 1
        end = bstart
        torn = False
        while True:
            blen = len(buf)
            last = base + blen >= size
            stop = blen if last else buf.rfind(b"\n", bstart) + 1
            if stop <= bstart:
                # No complete line in this chunk: read a bigger one from the line start.
                if blen >= 4 * _LOAD_CHUNK:
                    return False  # one enormous line: let the whole-file path decide
                base += bstart
                buf = bytes(storage.read_range(path, base, min(size - base, 2 * max(blen, 1))))
                bstart = 0
                if not buf:
                    return False  # the file shrank underneath
                continue
            scan = scan_clean(buf, bstart, len(skeletons), allow_torn_tail=last, stop=stop, base=base)
            if scan is None:
                return False
            skeletons.extend(scan.skeletons)
            if usage is None:
                usage = scan.usage
            else:
                usage.add_totals(scan.usage)
            end = base + scan.end
            if last:
                torn = scan.torn_tail
                break
            base += stop
            bstart = 0
            buf = b""  # free the chunk before reading the next
            buf = bytes(storage.read_range(path, base, min(size - base, _LOAD_CHUNK)))
            if not buf:
                return False  # the file shrank underneath
        del buf
        self._header = header
        self._index.add_skeletons(skeletons)
        if usage is not None:
            self._index.usage = usage
        self.load_report = LoadReport(torn_tail=torn, fast_path=True)
        if torn:
            self.load_report.dropped = [_jsonl().DroppedLine(len(skeletons) + 2, end, size - end, "torn")]
        self._set_file_state(st, end)
        if not torn and end == size and size >= self._cache_min_bytes and self._cache_usable():
            try:
                self._cache().save_skeletons(path, st, self._header, self._index)
            except Exception:
                pass  # a cache is an optimisation
        return True

    def _migration_id_source(self) -> Any:
        ids = self._ids

        def new_id(existing: Any = ()) -> str:
            return ids.new_entry_id(existing)

        return new_id

    @property
    def file_state(self) -> FileState | None:
        """The file as last read or written (`live.FileState`), None before either."""
        return self._follower.state

    def _set_file_state(self, st: Any, end: int) -> None:
        self._follower.set_state(st, end)

    def _forget_file_state(self) -> None:
        """The manager is about to use another file: nothing is known of it yet."""
        self._follower.forget()

    # -- loading file-backed entries
    def _make_index(self) -> EntryIndex:
        idx = EntryIndex(self._load_skeleton)
        idx.batch_loader = self._load_many
        idx.stream_loader = self._stream_many
        return idx

    def _stream_many(self, sks: builtins.list[Skeleton]) -> Iterator[dict[str, Any]]:
        """Entries of file-backed skeletons sorted by offset, read span by span.

        Neighbouring lines are read together (spans of up to `_STREAM_MAX` bytes), each line
        is parsed from a view of the span (no per-line copy or read), and the results are
        yielded in the order of `sks`; the same checks as `_entry_from_line` apply (the id
        must match, blob references are resolved, replay metadata is cleaned).
        """
        path = self._session_file
        assert path is not None
        n = len(sks)
        i = 0
        loads = orjson.loads
        read_range = self._storage.read_range
        while i < n:
            first = sks[i]
            start = first.offset
            end = start + first.length
            j = i + 1
            while j < n:
                sk = sks[j]
                if sk.offset - end > _BATCH_GAP or sk.offset + sk.length - start > _STREAM_MAX:
                    break
                if sk.offset + sk.length > end:
                    end = sk.offset + sk.length
                j += 1
            buf = read_range(path, start, end - start)
            if not isinstance(buf, bytes | bytearray):
                buf = bytes(buf)
            mv = memoryview(buf)
            blobs = _BLOB_MARK in buf
            for k in range(i, j):
                sk = sks[k]
                a = sk.offset - start
                line = mv[a : a + sk.length]
                try:
                    entry = loads(line)
                except orjson.JSONDecodeError:
                    entry = None
                if (
                    type(entry) is not dict
                    or entry.get("id") != sk.id
                    or (blobs and buf.find(_BLOB_MARK, a, a + sk.length) >= 0)
                ):
                    entry = self._entry_from_line(bytes(line), sk)
                elif sk.role == "assistant" and sk.type == "message":
                    _clean_openai_replay(entry)
                yield entry
            del mv
            i = j

    def _load_many(self, sks: builtins.list[Skeleton]) -> builtins.list[dict[str, Any]]:
        """Read many file-backed entries with few reads (neighbouring lines together)."""
        path = self._session_file
        assert path is not None
        order = sorted(range(len(sks)), key=lambda i: sks[i].offset)
        out: builtins.list[dict[str, Any] | None] = [None] * len(sks)
        i = 0
        n = len(order)
        while i < n:
            first = sks[order[i]]
            start = first.offset
            end = start + first.length
            j = i + 1
            while j < n:
                sk = sks[order[j]]
                if sk.offset - end > _BATCH_GAP or sk.offset + sk.length - start > _BATCH_MAX:
                    break
                end = max(end, sk.offset + sk.length)
                j += 1
            buf = bytes(self._storage.read_range(path, start, end - start))
            for k in range(i, j):
                sk = sks[order[k]]
                a = sk.offset - start
                out[order[k]] = self._entry_from_line(buf[a : a + sk.length], sk)
            i = j
        return out  # type: ignore[return-value]

    def _load_skeleton(self, sk: Skeleton) -> dict[str, Any]:
        path = self._session_file
        assert path is not None
        line = self._storage.read_range(path, sk.offset, sk.length)
        return self._entry_from_line(bytes(line), sk)

    def _entry_from_line(self, line: bytes, sk: Skeleton | None) -> dict[str, Any]:
        try:
            entry = orjson.loads(line)
        except orjson.JSONDecodeError:
            vals = _jsonl().parse_jsonl_lenient(line).values
            entry = vals[0] if vals else None
        if not isinstance(entry, dict) or (sk is not None and entry.get("id") != sk.id):
            from .errors import ConflictError

            raise ConflictError(
                f"Session file {self._session_file} changed underneath: entry {sk.id if sk else '?'} moved",
                self._session_file,
            )
        if _BLOB_MARK in line:
            _persistence().resolve_blob_refs(entry, self._blob_store())
        _clean_openai_replay(entry)
        return entry

    # -- sidecar cache
    def _cache(self) -> Any:
        return IndexCache(self._cache_dir)

    def _cache_usable(self) -> bool:
        return (
            bool(getattr(self._storage, "is_real_fs", False))
            and os.environ.get("SESSIONTREE_NO_INDEX_CACHE") != "1"
        )

    def _save_cache(self, path: str, st: Any, data: bytes) -> None:
        if not self._cache_usable():
            return
        try:
            self._cache().save(path, st, data, self._header, self._index)
        except Exception:
            pass  # a cache is an optimisation; failing to write it changes nothing

    def _load_from_cache(self, path: str, st: Any) -> bool:
        if not self._cache_usable():
            return False
        try:
            hit = self._cache().load(path, st)
        except Exception:
            return False
        if hit is None:
            return False
        header, skeletons, usage, cached_size = hit
        self._header = header
        self._index.add_skeletons(skeletons)
        self._index.usage = usage
        self.load_report = LoadReport(fast_path=True, from_cache=True)
        size = _st(st, "st_size")
        self._set_file_state(st, cached_size)
        if size > cached_size:
            # Appended since the cache was written: index only the new bytes.
            tail = bytes(self._storage.read_range(path, cached_size, size - cached_size))
            tail = tail[: tail.rfind(b"\n") + 1]  # a torn last line waits for its writer
            if not self._ingest_bytes(tail, cached_size):
                self._index = self._make_index()
                return False
            if size - cached_size >= max(_CACHE_RESAVE_MIN, cached_size // 16):
                # Re-encoding every skeleton costs more than indexing a short tail
                # again on the next open: the cache is refreshed once the tail is big.
                self._save_cache_after_ingest(path)
        return True

    def _save_cache_after_ingest(self, path: str) -> None:
        fs = self.file_state
        if fs is None or fs.end != fs.size:
            return
        try:
            st = self._storage.stat(path)
            self._cache().save_skeletons(path, st, self._header, self._index)
        except Exception:
            pass

    # ------------------------------------------------------------------ external appends
    def ingest_appended_bytes(self) -> builtins.list[str]:
        """Fold in whole lines that another process appended since the last read.

        Returns the ids of the new entries (the leaf moves to the last one). A partial last
        line stays unread until it is complete.
        """
        fs = self.file_state
        path = self._session_file
        if fs is None or path is None:
            return []
        st = _stat_of(self._storage, path)
        if st is None:
            return []
        size = _st(st, "st_size")
        if size <= fs.end:
            return []
        data = bytes(self._storage.read_range(path, fs.end, size - fs.end))
        cut = data.rfind(b"\n") + 1
        if cut <= 0:
            return []
        before = len(self._index)
        if not self._ingest_bytes(data[:cut], fs.end):
            return []
        self._set_file_state(st, fs.end + cut)
        new = self._index.skeletons()[before:]
        if new:
            self._leaf_id = new[-1].id
        return [sk.id for sk in new]

    def _ingest_bytes(self, data: bytes, base: int) -> bool:
        """Index the whole lines of `data`, which start at file offset `base`."""
        order0 = len(self._index)
        scan = scan_clean(data, 0, order0, allow_torn_tail=False)
        if scan is not None:
            for sk in scan.skeletons:
                sk.offset += base
            self._index.add_skeletons(scan.skeletons)
            self._index.usage.add_totals(scan.usage)
        else:
            report = _jsonl().parse_jsonl_lenient(data)
            for v in report.values:
                if isinstance(v, dict):
                    if _has_blob_ref(v):
                        _persistence().resolve_blob_refs(v, self._blob_store())
                    self._index.add_held(v)
            if report.recovered:
                self.load_report.skipped_lines += report.skipped_lines
                self.load_report.dropped.extend(report.dropped)
        if self.file_state is not None:
            self.file_state.end = base + len(data)
        return True

    # ------------------------------------------------------------------ persistence
    def _close_writer(self) -> None:
        w = self._writer
        self._writer = None
        if w is not None:
            try:
                w.close()
            except Exception:
                pass

    def _latch(self, exc: BaseException) -> PersistError:
        err = exc if isinstance(exc, PersistError) else PersistError(self._session_file, exc)
        if self._persist_error is None:
            self._persist_error = err
        return self._persist_error

    def _persist_entry(self, entry: dict[str, Any]) -> None:
        if not self._persist or not self._session_file or self._read_only:
            return
        if self._persist_error is not None:
            raise self._persist_error
        if not self._ensured_on_disk and not self._index.has_assistant:
            self._flushed = False
            return
        if self._needs_full_rewrite or not self._flushed:
            self._rewrite_file_guarded()
        else:
            self._append_line(entry)

    def _prepare(self, entry: dict[str, Any]) -> dict[str, Any]:
        return _persistence().prepare_entry_for_persistence(entry, self._blob_store())  # type: ignore[no-any-return]

    def _append_line(self, entry: dict[str, Any]) -> None:
        path = self._session_file
        assert path is not None
        try:
            line = _jsonl().dumps_line(self._prepare(entry)) + b"\n"
            with self._live_lock(shared=True):
                self._live_check_writer()
                self._follower.check_still_a_session(path)
                if self._writer is None:
                    self._writer = self._storage.open_writer(path)
                self._writer.write_line(line)
            err = self._writer.get_error()
            if err is not None:
                raise err
        except (ConflictError, AccessDeniedError):
            raise  # nothing was written: not a persistence failure, later writes may succeed
        except SessionTreeError as exc:
            if isinstance(exc, PersistError):
                raise self._latch(exc) from None
            raise self._latch(exc) from exc
        except Exception as exc:
            raise self._latch(exc) from exc
        self._follower.after_append(len(line))

    def _rewrite_file_guarded(self) -> None:
        if self._read_only:
            return  # opened for inspection: never write
        if self._persist_error is not None:
            raise self._persist_error
        with self._live_lock(shared=False):
            self._follower.guard_rewrite()  # may raise ConflictError (not latched: nothing was written)
            try:
                self._rewrite_file()
            except PersistError as exc:
                raise self._latch(exc) from None
            except InvalidSessionFileError:
                raise
            except Exception as exc:
                raise self._latch(exc) from exc

    def _rewrite_file(self) -> None:
        """Full atomic rewrite of header + entries through the persistence transform."""
        if not self._persist or not self._session_file:
            return
        path = self._session_file
        self._close_writer()
        self._quarantine_if_needed(path)
        jl = _jsonl()
        prepare = self._prepare
        parts: builtins.list[bytes] = [jl.dumps_line(prepare(self._header)) + b"\n"]
        pos = len(parts[0])
        ranges: builtins.list[tuple[int, int] | None] = []
        idx = self._index
        for entry in idx.iter_entries():
            line = jl.dumps_line(prepare(entry))
            parts.append(line)
            parts.append(b"\n")
            ranges.append((pos, len(line)))
            pos += len(line) + 1
        data = b"".join(parts)
        del parts
        self._storage.write_atomic(path, data)
        idx.rebase(ranges)
        self._needs_full_rewrite = False
        self._flushed = True
        st = _stat_of(self._storage, path)
        self._set_file_state(st, len(data))

    def _quarantine_if_needed(self, path: str) -> None:
        """Keep the original bytes beside the file before the first rewrite that changes
        them: a quarantine copy when the load dropped lines, a backup before a migration."""
        rep = self.load_report
        if rep.recovered:
            if rep.quarantined_copy:
                return
            kind = "quarantine"
        elif rep.migrated_from is not None:
            if rep.backup_copy:
                return
            kind = f"backup-v{rep.migrated_from}"
        else:
            return
        if not self._storage.exists(path):
            return
        from .backups import copy_path

        original = self._storage.read_bytes(path)
        qpath = copy_path(path, kind, self._clock.now_iso())
        self._storage.write_atomic(qpath, bytes(original))
        if kind == "quarantine":
            rep.quarantined_copy = qpath
        else:
            rep.backup_copy = qpath

    def flush(self) -> None:
        """Flush and fsync the append writer; re-raise a latched persistence error."""
        w = self._writer
        if w is not None:
            try:
                w.flush()
                w.fsync()
                err = w.get_error()
                if err is not None:
                    raise err
            except Exception as exc:
                raise self._latch(exc) from exc
        if self._persist_error is not None:
            raise self._persist_error

    def close(self) -> None:
        """Close the append writer; re-raise a latched persistence error."""
        w = self._writer
        if w is None:
            return
        self._writer = None
        try:
            w.flush()
            w.fsync()
            w.close()
        except Exception as exc:
            self._latch(exc)
        self._flushed = True
        if self._persist_error is not None:
            raise self._persist_error

    def close_quietly(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def ensure_on_disk(self) -> None:
        """Write the file now (full rewrite) unless it is already up to date."""
        if not self._persist or not self._session_file:
            return
        if self._flushed and not self._needs_full_rewrite and self._storage.exists(self._session_file):
            self._ensured_on_disk = True
            return
        self._rewrite_file_guarded()
        self._ensured_on_disk = True

    def rewrite_entries(self) -> None:
        """Unconditional full atomic rewrite (after in-place edits of entries)."""
        if not self._persist or not self._session_file:
            return
        self._rewrite_file_guarded()

    # ------------------------------------------------------------------ live sessions
    # Other processes write the same file: see core/live/ and docs/live-sessions.md.
    @property
    def live_events(self) -> builtins.list[SyncResult]:
        """`live.SyncResult`s of changes folded in by writes (not yet announced by the daemon)."""
        return self._follower.events

    def sync_with_file(self) -> SyncResult:
        """Fold in what other processes did to the file since it was last read.

        Returns a `core.live.SyncResult`: appended entries (the leaf moves to the last
        one), or a reload (file replaced, truncated or rewritten), or a detach (deleted).
        """
        return self._follower.sync()

    def sync_before_write(self) -> None:
        """Fold in external changes now, as every write does first.

        Results are queued in `live_events`; raises `ConflictError` when the file was
        deleted (or replaced by an unreadable one). Callers that check the leaf before
        writing (`expectedLeafId`) call this first, so the check sees external appends.
        """
        self._live_before_write()

    def detach_from_file(self, reason: str) -> SyncResult:
        """Stop following the file (writes refused until it is readable again), e.g. when its
        path now names a file outside the allowed roots; the session keeps what it holds."""
        return self._follower.detach(reason)

    # What the follower asks of its session (`live.FollowedSession`).
    def reload_file(self) -> None:
        """Load the session file again in place (another process replaced or rewrote it)."""
        assert self._session_file is not None
        self._set_session_file(self._session_file)

    def drop_writer(self) -> None:
        """Close the append writer without flushing (the file is gone or detached)."""
        self._close_writer()

    def prepare_loaded_entry(self, entry: dict[str, Any]) -> None:
        """What loading does to an entry held in memory: blob refs resolved, replay payload cleaned."""
        if _has_blob_ref(entry):
            _persistence().resolve_blob_refs(entry, self._blob_store())
        _clean_openai_replay(entry)

    def _live_before_write(self) -> None:
        follower = self._follower
        if self._persist and self._session_file and follower.state is not None and not follower.guarding:
            follower.before_write()
            # Before the entry is added in memory: a file that lost its header refuses.
            follower.check_still_a_session(self._session_file)

    def _live_lock(self, shared: bool) -> Any:
        import contextlib

        path = self._session_file
        storage = self._storage
        if not (
            self._persist
            and path
            and getattr(storage, "is_real_fs", False)
            and os.path.isdir(os.path.dirname(path))
        ):
            return contextlib.nullcontext()
        return storage.lock(path, shared=shared)

    def _live_check_writer(self) -> None:
        """Reopen the append writer when another file now sits at the path (renamed over)."""
        w = self._writer
        fd = getattr(w, "_fd", None)
        if w is None or fd is None or not self._session_file:
            return
        try:
            same = os.path.samestat(os.fstat(fd), os.stat(self._session_file))
        except OSError:
            same = False
        if not same:
            self._close_writer()

    # ------------------------------------------------------------------ appending
    def _new_id(self) -> str:
        self._live_before_write()
        return self._ids.new_entry_id(self._index.ids())

    def _base(self, etype: str) -> dict[str, Any]:
        return {
            "type": etype,
            "id": self._new_id(),
            "parentId": self._leaf_id,
            "timestamp": self._clock.now_iso(),
        }

    def _append(self, entry: dict[str, Any]) -> str:
        self._index.add_held(entry)
        self._leaf_id = entry["id"]
        self._persist_entry(entry)
        return entry["id"]  # type: ignore[no-any-return]

    def append_message(self, message: dict[str, Any]) -> str:
        """Append a `message` entry; returns its id."""
        e = self._base("message")
        e["message"] = message
        return self._append(e)

    def append_thinking_level_change(self, level: str | None = None) -> str:
        e = self._base("thinking_level_change")
        e["thinkingLevel"] = level
        return self._append(e)

    def append_model_change(self, model: str, role: str | None = None) -> str:
        e = self._base("model_change")
        e["model"] = model
        if role is not None:
            e["role"] = role
        return self._append(e)

    def append_mode_change(self, mode: str, data: dict[str, Any] | None = None) -> str:
        e = self._base("mode_change")
        e["mode"] = mode
        if data is not None:
            e["data"] = data
        return self._append(e)

    def append_compaction(
        self,
        summary: str,
        short_summary: str | None,
        first_kept_entry_id: str | None,
        tokens_before: int,
        details: Any = None,
        from_extension: bool | None = None,
        preserve_data: Any = None,
    ) -> str:
        e = self._base("compaction")
        e["summary"] = summary
        if short_summary is not None:
            e["shortSummary"] = short_summary
        if first_kept_entry_id is not None:
            e["firstKeptEntryId"] = first_kept_entry_id
        e["tokensBefore"] = tokens_before
        if details is not None:
            e["details"] = details
        if from_extension is not None:
            e["fromExtension"] = from_extension
        if preserve_data is not None:
            e["preserveData"] = preserve_data
        return self._append(e)

    def append_custom_entry(self, custom_type: str, data: Any = None) -> str:
        self._live_before_write()
        e: dict[str, Any] = {"type": "custom", "customType": custom_type}
        if data is not None:
            e["data"] = data
        e["id"] = self._new_id()
        e["parentId"] = self._leaf_id
        e["timestamp"] = self._clock.now_iso()
        return self._append(e)

    def append_custom_message_entry(
        self,
        custom_type: str,
        content: Any,
        display: bool,
        details: Any = None,
        attribution: str | None = "agent",
    ) -> str:
        self._live_before_write()
        e: dict[str, Any] = {
            "type": "custom_message",
            "customType": custom_type,
            "content": content,
            "display": display,
        }
        if details is not None:
            e["details"] = details
        e["attribution"] = attribution if attribution is not None else "agent"
        e["id"] = self._new_id()
        e["parentId"] = self._leaf_id
        e["timestamp"] = self._clock.now_iso()
        return self._append(e)

    def append_label_change(self, target_id: str, label: str | None) -> str:
        """Set (or, with a falsy label, clear) a label; the label entry becomes the leaf."""
        self._live_before_write()
        if target_id not in self._index:
            raise EntryNotFoundError(target_id)
        e = self._base("label")
        e["targetId"] = target_id
        if label is not None:
            e["label"] = label
        return self._append(e)

    def append_ttsr_injection(self, rule_names: builtins.list[str]) -> str:
        e = self._base("ttsr_injection")
        e["injectedRules"] = list(rule_names)
        return self._append(e)

    def append_session_init(self, init: dict[str, Any]) -> str:
        e = self._base("session_init")
        e.update(init)
        return self._append(e)

    def append_context_change(self, context_name: str, tenant: str | None, namespace: str | None) -> str:
        e = self._base("context_change")
        e["contextName"] = context_name
        if tenant is not None:
            e["tenant"] = tenant
        if namespace is not None:
            e["namespace"] = namespace
        return self._append(e)

    def append_service_tier_change(self, service_tier: str | None) -> str:
        e = self._base("service_tier_change")
        e["serviceTier"] = service_tier
        return self._append(e)

    def append_mcp_tool_selection(self, names: builtins.list[str]) -> str:
        e = self._base("mcp_tool_selection")
        e["selectedToolNames"] = list(names)
        return self._append(e)

    # ------------------------------------------------------------------ tree and leaf
    def branch(self, entry_id: str) -> None:
        """Move the leaf to an existing entry (writes nothing)."""
        if entry_id not in self._index:
            raise EntryNotFoundError(entry_id)
        self._leaf_id = entry_id

    def reset_leaf(self) -> None:
        """Leaf = None: the next append starts a new root."""
        self._leaf_id = None

    def branch_with_summary(
        self,
        branch_from_id: str | None,
        summary: str,
        details: Any = None,
        from_extension: bool | None = None,
    ) -> str:
        """Move the leaf to `branch_from_id` and append a `branch_summary` there."""
        self._live_before_write()  # external appends first, so they cannot move the leaf below
        if branch_from_id is not None and branch_from_id not in self._index:
            raise EntryNotFoundError(branch_from_id)
        self._leaf_id = branch_from_id
        e = self._base("branch_summary")
        e["fromId"] = branch_from_id if branch_from_id is not None else "root"
        e["summary"] = summary
        if details is not None:
            e["details"] = details
        if from_extension is not None:
            e["fromExtension"] = from_extension
        return self._append(e)

    def create_branched_session(self, leaf_id: str) -> str | None:
        """A new session holding the path to `leaf_id` (labels re-created); returns its path."""
        path_ids = self._index.path_to_root(leaf_id)
        if not path_ids:
            raise EntryNotFoundError(leaf_id)
        idx = self._index
        path_entries: builtins.list[dict[str, Any]] = []
        for i in path_ids:
            pe = idx.get(i)
            if pe is not None and pe.get("type") != "label":
                path_entries.append(pe)
        on_path = {e.get("id") for e in path_entries}
        now = self._clock.now_iso()
        taken: set[str] = {i for i in on_path if isinstance(i, str)}
        labels: builtins.list[dict[str, Any]] = []
        parent = path_entries[-1].get("id") if path_entries else None
        for target, label in idx.labels.items():
            if target not in on_path:
                continue
            lid = self._ids.new_entry_id(taken)
            taken.add(lid)
            labels.append(
                {
                    "type": "label",
                    "id": lid,
                    "parentId": parent,
                    "timestamp": now,
                    "targetId": target,
                    "label": label,
                }
            )
            parent = lid
        previous_file = self._session_file if self._persist else None
        entries = [_deep_copy(e) for e in path_entries] + labels
        self._close_writer()
        self._new_session_state(previous_file)
        self._header.pop("parentSession", None) if previous_file is None else None
        for e in entries:
            self._index.add_held(e)
        last = self._index.last()
        self._leaf_id = last.id if last else None
        if self._persist and self._session_file:
            self._rewrite_file_guarded()  # DIVERGENCE 7: through the persistence path
            self._ensured_on_disk = False
            return self._session_file
        return None

    def fork(self) -> tuple[str, str] | None:
        """Copy this session into a new file (same entries, new id); returns (old, new)."""
        if not self._persist or not self._session_file:
            return None
        old_file = self._session_file
        old_id = self._header.get("id")
        self._close_writer()
        self._persist_error = None
        sid = self._ids.new_session_id()
        ts = self._clock.now_iso()
        header: dict[str, Any] = {"type": "session", "version": CURRENT_SESSION_VERSION, "id": sid}
        if "title" in self._header:
            header["title"] = self._header.get("title")
        if "titleSource" in self._header:
            header["titleSource"] = self._header.get("titleSource")
        header["timestamp"] = ts
        header["cwd"] = self._cwd
        header["parentSession"] = old_id
        # file-backed entries must be read from the old file before switching paths
        self._hold_all_entries()
        self._header = header
        self._session_file = os.path.join(self._session_dir, session_file_name(ts, sid))
        self.load_report = LoadReport()
        self._forget_file_state()
        self._flushed = False
        self._rewrite_file_guarded()
        return old_file, self._session_file

    def _hold_all_entries(self) -> None:
        """Turn every file-backed entry into a held one (before the file path changes)."""
        idx = self._index
        if not idx.is_file_backed():
            return
        new = self._make_index()
        for entry in idx.iter_entries():
            new.add_held(entry)
        self._index = new

    def new_session(self, parent_session: str | None = None) -> str | None:
        """Start an empty session (new id; a new file path that is written lazily)."""
        self._close_writer()
        self._new_session_state(parent_session)
        return self._session_file

    # ------------------------------------------------------------------ reading
    @property
    def index(self) -> EntryIndex:
        """The skeleton index (see architecture.md)."""
        return self._index

    def get_entries(self) -> builtins.list[dict[str, Any]]:
        """Every entry (not the header), in file order."""
        return list(self._index.iter_entries())

    def iter_entries(self) -> Iterator[dict[str, Any]]:
        return self._index.iter_entries()

    def get_entry(self, entry_id: str) -> dict[str, Any] | None:
        return self._index.get(entry_id)

    def get_header(self) -> dict[str, Any] | None:
        return self._header or None

    def get_leaf_id(self) -> str | None:
        return self._leaf_id

    def get_leaf_entry(self) -> dict[str, Any] | None:
        return self._index.get(self._leaf_id) if self._leaf_id is not None else None

    def get_branch(self, from_id: str | None = None) -> builtins.list[dict[str, Any]]:
        """Entries from the root to `from_id` (default: the leaf); [] for unknown ids."""
        start = from_id if from_id is not None else self._leaf_id
        idx = self._index
        sks = [idx.skeleton(i) for i in idx.path_to_root(start)]
        with _index_mod.gc_paused():
            return idx.entries_bulk([sk for sk in sks if sk is not None])

    def get_children(self, parent_id: str) -> builtins.list[dict[str, Any]]:
        """Entries whose `parentId` is `parent_id`, in id-map order (not sorted)."""
        idx = self._index
        return [e for e in (idx.get(i) for i in idx.raw_children(parent_id)) if e is not None]

    def get_label(self, entry_id: str) -> str | None:
        return self._index.labels.get(entry_id)

    def get_tree(self) -> builtins.list[SessionTreeNode]:
        """The whole tree: roots in file order, children by timestamp (stable)."""
        idx = self._index
        labels = idx.labels
        roots_ids, child_map = idx.child_map()
        by_id = idx.ids()
        # Every id of the map is in the tree (orphans and loop closers are roots): read
        # them all in one sequential pass, without churning the entry cache.
        with _index_mod.gc_paused():
            nodes = {
                sk.id: SessionTreeNode(e, [], labels.get(sk.id))
                for sk, e in idx.stream_entries(builtins.list(by_id.values()))
            }
            for pid, kids in child_map.items():
                parent = nodes.get(pid)
                if parent is not None:
                    parent.children = [nodes[c] for c in kids]
            return [nodes[r] for r in roots_ids]

    def build_session_context(self, leaf_id: Any = ...) -> SessionContext:
        """The context of the path to the leaf (or to `leaf_id`, any node)."""
        from .context import SessionContext, context_from_path

        target = self._leaf_id if leaf_id is ... else leaf_id
        if target is None:
            return SessionContext()
        idx = self._index
        if target not in idx:
            last = idx.last()
            if last is None:
                return SessionContext()
            target = last.id
        return context_from_path(self.materialize_context_path(target))

    def materialize_context_path(self, leaf_id: str) -> builtins.list[dict[str, Any]]:
        """The path entries that matter for the context, root first.

        With a compaction on the path, entries before its kept range are left out except
        state changes, unknown types and the last assistant message (they still set
        thinking level, models, mode, ...). Leaving out the others does not change the
        context, and on a long session it saves parsing thousands of entries.
        """
        idx = self._index
        by_id = idx.ids()
        limit = len(idx) + 1
        # Walk up from the leaf to the last compaction on the path (a tight loop: the path
        # of a 100,000-entry session is that long).
        below: builtins.list[Skeleton] = []
        cur = by_id.get(leaf_id)
        comp: Skeleton | None = None
        steps = 0
        while cur is not None:
            if cur.type == "compaction":
                comp = cur
                break
            below.append(cur)
            pid = cur.parent_id
            cur = by_id.get(pid) if pid is not None else None
            steps += 1
            if steps > limit:
                return self._materialize_context_path_slow(leaf_id)
        if comp is None:
            below.reverse()
            return idx.entries_of(below)
        centry = idx.entry_of(comp)
        first_kept = centry.get("firstKeptEntryId")
        if first_kept is not None and not _has_provider_payload(centry):
            # One walk up from the compaction: the kept range (down from its parent to the
            # first kept entry), then only what `_context_selection` keeps before it.
            kept: builtins.list[Skeleton] = []
            wanted: builtins.list[Skeleton] = []  # before the kept range, nearest first
            assistant_taken = False
            known = _KNOWN_NON_STATE
            cur = by_id.get(comp.parent_id) if comp.parent_id is not None else None
            while cur is not None:
                kept.append(cur)
                pid = cur.parent_id
                steps += 1
                if cur.id == first_kept:
                    cur = by_id.get(pid) if pid is not None else None
                    break
                cur = by_id.get(pid) if pid is not None else None
                if steps > limit:
                    return self._materialize_context_path_slow(leaf_id)
            else:
                # The first kept entry is not on the path: nothing is kept.
                wanted, assistant_taken = _select_before_kept(kept, wanted, False)
                kept = []
            while cur is not None:
                t = cur.type
                if t not in known:  # state changes and unknown types
                    wanted.append(cur)
                elif not assistant_taken and t == "message" and cur.role == "assistant":
                    wanted.append(cur)  # the last assistant message before the kept range
                    assistant_taken = True
                pid = cur.parent_id
                cur = by_id.get(pid) if pid is not None else None
                steps += 1
                if steps > limit:
                    return self._materialize_context_path_slow(leaf_id)
            wanted.reverse()
            kept.reverse()
            wanted.extend(kept)
            wanted.append(comp)
            below.reverse()
            wanted.extend(below)
            return idx.entries_of(wanted)
        above: builtins.list[Skeleton] = []
        pid = comp.parent_id
        cur = by_id.get(pid) if pid is not None else None
        while cur is not None:
            above.append(cur)
            pid = cur.parent_id
            cur = by_id.get(pid) if pid is not None else None
            steps += 1
            if steps > limit:
                return self._materialize_context_path_slow(leaf_id)
        above.reverse()  # root first, up to (not including) the compaction
        below.reverse()
        return idx.entries_of(self._context_selection(above, comp, below))

    def _context_selection(
        self, above: builtins.list[Skeleton], comp: Skeleton, below: builtins.list[Skeleton]
    ) -> builtins.list[Skeleton]:
        centry = self._index.entry_of(comp)
        first_kept = centry.get("firstKeptEntryId")
        start = len(above)
        if first_kept is not None and not _has_provider_payload(centry):
            for i, sk in enumerate(above):
                if sk.id == first_kept:
                    start = i
                    break
        last_assistant = -1
        for i in range(start - 1, -1, -1):
            sk = above[i]
            if sk.type == "message" and sk.role == "assistant":
                last_assistant = i
                break
        wanted = [
            sk
            for i, sk in enumerate(above[:start])
            if sk.type in STATE_ENTRY_TYPES or sk.type not in _KNOWN_NON_STATE or i == last_assistant
        ]
        wanted.extend(above[start:])
        wanted.append(comp)
        wanted.extend(below)
        return wanted

    def _materialize_context_path_slow(self, leaf_id: str) -> builtins.list[dict[str, Any]]:
        # A parent loop: the tree decides where it closes (DIVERGENCE 3).
        idx = self._index
        sks = [sk for sk in (idx.skeleton(i) for i in idx.path_to_root(leaf_id)) if sk is not None]
        comp = -1
        for i in range(len(sks) - 1, -1, -1):
            if sks[i].type == "compaction":
                comp = i
                break
        if comp < 0:
            return idx.entries_of(sks)
        return idx.entries_of(self._context_selection(sks[:comp], sks[comp], sks[comp + 1 :]))

    def get_injected_ttsr_rules(self) -> builtins.list[str]:
        """Unique rule names of the ttsr_injection entries on the current branch."""
        idx = self._index
        seen: dict[str, None] = {}
        for i in idx.path_to_root(self._leaf_id):
            sk = idx.skeleton(i)
            if sk is not None and sk.type == "ttsr_injection":
                e = idx.entry_of(sk)
                rules = e.get("injectedRules")
                if isinstance(rules, list):
                    for r in rules:
                        seen.setdefault(r, None)
        return list(seen)

    def get_last_model_change_role(self) -> str | None:
        """The role of the nearest model_change above the leaf ("default" when unset)."""
        idx = self._index
        for i in reversed(idx.path_to_root(self._leaf_id)):
            sk = idx.skeleton(i)
            if sk is not None and sk.type == "model_change":
                role = idx.entry_of(sk).get("role")
                return role if role is not None else "default"
        return None

    def get_usage_statistics(self) -> dict[str, float]:
        """Usage summed over every assistant message and task result of the session (§15)."""
        return self._index.usage.as_dict()

    def get_session_file(self) -> str | None:
        return self._session_file if self._persist else None

    def get_session_id(self) -> str:
        return str(self._header.get("id", ""))

    def get_session_dir(self) -> str:
        return self._session_dir

    def get_cwd(self) -> str:
        return self._cwd

    def get_session_name(self) -> str | None:
        t = self._header.get("title")
        return t if isinstance(t, str) else None

    def get_title_source(self) -> str | None:
        s = self._header.get("titleSource")
        return s if s in ("auto", "user") else None

    def is_persisted(self) -> bool:
        return self._persist

    def get_artifacts_dir(self) -> str | None:
        f = self.get_session_file()
        return f[: -len(".jsonl")] if f and f.endswith(".jsonl") else None

    def put_blob(self, data: bytes) -> Any:
        """Store raw bytes in the blob store; returns `BlobPut(hash, path, ref)`."""
        return self._blob_store().put(data)

    # ------------------------------------------------------------------ name and moves
    def set_session_name(self, name: str, source: str = "auto") -> bool:
        """Set the title (sanitized); an automatic name never replaces a user's."""
        if self.get_title_source() == "user" and source == "auto":
            return False
        clean = sanitize_session_name(name)
        if not clean:
            return False
        self._header = _header_with_title(self._header, clean, source)
        if self._persist and self._session_file and self._storage.exists(self._session_file):
            self._rewrite_file_guarded()
        return True

    def move_to(self, new_cwd: str) -> None:
        """Move the session to another cwd's directory (file and artifacts dir renamed)."""
        new_cwd = os.path.abspath(new_cwd)
        if new_cwd == self._cwd:
            return
        new_dir = self._session_dir_for(new_cwd)
        if self._persist and self._session_file:
            self._close_writer()
            self._persist_error = None
            storage = self._storage
            old_file = self._session_file
            existed = storage.exists(old_file)
            new_file = os.path.join(new_dir, os.path.basename(old_file))
            old_art = old_file[:-6] if old_file.endswith(".jsonl") else None
            new_art = new_file[:-6] if new_file.endswith(".jsonl") else None
            storage.ensure_dir(new_dir)
            moved_file = moved_art = False
            try:
                if existed:
                    storage.rename(old_file, new_file)
                    moved_file = True
                if old_art and new_art and os.path.isdir(old_art):
                    os.rename(old_art, new_art)
                    moved_art = True
            except Exception:
                if moved_art and old_art and new_art:
                    try:
                        os.rename(new_art, old_art)
                    except OSError:
                        pass
                if moved_file:
                    try:
                        storage.rename(new_file, old_file)
                    except Exception:
                        pass
                raise
            self._session_file = new_file
            self._forget_file_state()
            self._cwd = new_cwd
            self._session_dir = new_dir
            self._header["cwd"] = new_cwd
            if existed or self._index.has_assistant:
                self._rewrite_file_guarded()
            self._write_breadcrumb()
        else:
            self._cwd = new_cwd
            self._session_dir = new_dir if self._session_dir else ""
            self._header["cwd"] = new_cwd

    def _session_dir_for(self, new_cwd: str) -> str:
        paths = _paths()
        try:
            root = str(paths.sessions_root(self._agent_dir, self._penv))
            cur = os.path.abspath(self._session_dir) if self._session_dir else ""
            names = {paths.encode_cwd(self._cwd)}
            if hasattr(paths, "encode_cwd_legacy"):
                names.add(paths.encode_cwd_legacy(self._cwd))
            if cur and os.path.basename(cur) in names:
                target = os.path.join(os.path.dirname(cur), paths.encode_cwd(new_cwd))
                return target
            del root
        except Exception:
            pass
        return self.get_default_session_dir(new_cwd, self._agent_dir, self._penv)


_KNOWN_NON_STATE = frozenset(
    {
        "message",
        "custom_message",
        "branch_summary",
        "compaction",
        "custom",
        "label",
        "session_init",
        "session",
    }
)


def _select_before_kept(
    sks: list[Skeleton], wanted: list[Skeleton], assistant_taken: bool
) -> tuple[list[Skeleton], bool]:
    """`_context_selection`'s rule before the kept range, over skeletons nearest first."""
    for sk in sks:
        t = sk.type
        if t not in _KNOWN_NON_STATE:
            wanted.append(sk)
        elif not assistant_taken and t == "message" and sk.role == "assistant":
            wanted.append(sk)
            assistant_taken = True
    return wanted, assistant_taken


def _has_provider_payload(comp: dict[str, Any]) -> bool:
    pd = comp.get("preserveData")
    if not isinstance(pd, dict):
        return False
    remote = pd.get("openaiRemoteCompaction")
    if not isinstance(remote, dict):
        return False
    provider = remote.get("provider")
    return isinstance(provider, str) and bool(provider) and isinstance(remote.get("replacementHistory"), list)


def _is_current_version(v: Any) -> bool:
    return not isinstance(v, bool) and isinstance(v, int | float) and v >= CURRENT_SESSION_VERSION


def _has_blob_ref(entry: Any) -> bool:
    # Cheap pre-check before walking an entry for blob references.
    try:
        return _BLOB_MARK in orjson.dumps(entry)
    except TypeError:
        return True


def _deep_copy(entry: dict[str, Any]) -> dict[str, Any]:
    try:
        return orjson.loads(orjson.dumps(entry))  # type: ignore[no-any-return]
    except TypeError:
        import copy

        return copy.deepcopy(entry)


def _header_with_title(header: dict[str, Any], title: Any, source: Any) -> dict[str, Any]:
    h = dict(header)
    h["title"] = title
    if source is not None:
        h["titleSource"] = source
    return h


# keep a reference for tools that introspect the module
_ = _index_mod
