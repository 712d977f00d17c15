"""`SessionManager`: the session store, the reference agent's SessionManager in Python naming.

Entries are dicts exactly as they are (or would be) written to the file. The manager keeps
an `EntryIndex` of skeletons; full entries of a big file are parsed on demand (see
`core/index/`), so opening a 100,000-entry file costs a fraction of a second.

The class is put together from parts, one job each (see `session/base.py`): loading,
writing, the entry constructors, moves to other files, the context walk. This module holds
the constructors (`create`, `open`, ...), the reading API and the leaf.
"""

from __future__ import annotations

import builtins
import os
import re
from collections.abc import Callable, Iterator
from typing import Any

from .. import paths
from ..discovery import (
    RecentSessionInfo,
    SessionInfo,
    find_most_recent_session_of_dirs,
    list_all_sessions,
    list_sessions,
    list_sessions_of_dirs,
)
from ..errors import EntryNotFoundError, PersistError
from ..format.dialects import Dialect
from ..format.jscompat import js_trim
from ..format.persistence import clean_openai_replay, has_blob_ref, resolve_blob_refs
from ..format.title_slot import SLOT_BYTES, TitleSlot, serialize_slot, split_slot
from ..ids import Clock, IdSource
from ..index import EntryIndex, gc_paused
from ..live import Follower, SyncResult
from ..store import FileSessionStorage, MemorySessionStorage
from ..tree.context import SessionContext, context_from_path
from .context_walk import injected_ttsr_rules, last_model_change_role, materialize_context_path
from .entries import Entries
from .moves import Moves, deep_copy
from .reader import FileEntries
from .records import LoadReport, SessionTreeNode, TreeBodies
from .sidecar import CACHE_MIN_BYTES, Sidecar

__all__ = [
    "LoadReport",
    "RecentSessionInfo",
    "SessionInfo",
    "SessionManager",
    "SessionTreeNode",
    "sanitize_session_name",
]

#: Openers of other agents' transcripts (`session/foreign.py` registers its own when the
#: package is imported): ``opener(path, storage, kw)`` gives a read-only session, or None
#: when the file is not such a transcript.
FOREIGN_OPENERS: builtins.list[Callable[[str, Any, dict[str, Any]], Any]] = []

_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
_SPACES = re.compile(" +")
_LINE_BREAKS = re.compile("[\r\n]+")


def sanitize_session_name(name: str) -> str:
    """Control characters become spaces, runs of spaces collapse, the result is trimmed."""
    return js_trim(_SPACES.sub(" ", _CONTROL.sub(" ", name)))


def _file_order(sk: Any) -> tuple[bool, int]:
    """The order `EntryIndex.stream_entries` yields in: file-backed by offset, then held."""
    return (sk.offset < 0, sk.offset if sk.offset >= 0 else sk.order)


class SessionManager(Moves, Entries):
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
        defer_index_cache: bool = False,
        parallel_scan: bool = False,
    ) -> None:
        self._read_only = read_only
        # A big clean file is scanned on two cores (a forked child takes the second half).
        self._parallel_scan = parallel_scan
        # Opened for viewing (DIVERGENCES 11): nothing is written until a change is asked
        # for; the first change writes the pending migration, after a backup copy.
        self._viewing = viewing
        self._breadcrumbs = breadcrumbs
        self._penv = penv
        self._clock = clock or Clock()
        self._ids = ids or IdSource(clock=self._clock)
        if storage is None:
            storage = FileSessionStorage() if persist else MemorySessionStorage()
        self._storage = storage
        self._cwd = cwd
        self._session_dir = session_dir
        self._persist = persist
        self._agent_dir = agent_dir
        self._blobs = blobs
        # With `defer_index_cache` an open does not wait for the index cache to be written:
        # the caller writes it in idle time (`save_index_cache`; the daemon's warm-up).
        self._sidecar = Sidecar(storage, cache_dir, cache_min_bytes, defer=defer_index_cache)
        self._writer: Any = None
        self._persist_error: PersistError | None = None
        self.load_report = LoadReport()
        # What is known of the file on disk, and the folding in of other writers' lines.
        self._follower = Follower(self, storage)
        self._reader = FileEntries(storage, lambda: self._session_file, self._blob_store)
        self._header: dict[str, Any] = {}
        self._title_slot: TitleSlot | None = None
        self._evidence = None
        self._evidence_of = None
        self._evidence_seen = 0
        self._index = EntryIndex()
        self._leaf_id: str | None = None
        self._flushed = False
        self._needs_full_rewrite = False
        self._ensured_on_disk = False
        self._session_file: str | None = None
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
        if cls is SessionManager:
            # Another agent's transcript (Claude Code, Codex): read-only, through its reader.
            for opener in FOREIGN_OPENERS:
                foreign = opener(path, storage, kw)
                if foreign is not None:
                    return foreign  # type: ignore[no-any-return]
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
        guard = getattr(storage, "guard", None)
        cwd = os.path.abspath(cwd)
        if session_dir is not None:
            dirs = [os.path.abspath(session_dir)]
        else:
            # Every encoding the agents use for this cwd (nothing renamed: DIVERGENCES 11).
            dirs = paths.session_dirs_of(cwd, kw.get("agent_dir"), kw.get("penv"))
        sdir = dirs[0] if dirs else cls.get_default_session_dir(cwd, kw.get("agent_dir"), kw.get("penv"))
        crumb = None
        try:
            crumb_file = paths.breadcrumb_path(kw.get("agent_dir"), kw.get("penv"), terminal_id)
            if crumb_file is not None and (guard is None or guard.accept(crumb_file)):
                crumb = paths.read_breadcrumb(
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
            storage = MemorySessionStorage()
        mgr = cls(os.path.abspath(cwd) if cwd else os.getcwd(), "", None, False, storage, **kw)
        return mgr

    @classmethod
    def fork_from(
        cls, source_path: str, cwd: str, session_dir: str | None = None, storage: Any = None, **kw: Any
    ) -> SessionManager:
        """Copy another session's entries (ids kept) into a new file, written at once."""
        source = cls.open(source_path, storage=storage, **{k: v for k, v in kw.items() if k != "cache_dir"})
        try:
            entries = [deep_copy(e) for e in source._index.iter_entries()]
            src_header = source.get_header() or {}
            dialect = source.dialect
            src_file = source.get_session_file()
        finally:
            source.close_quietly()
        mgr = cls.create(cwd, session_dir, storage, **kw)
        if dialect is Dialect.PI:
            # pi's forkFrom: the parent is the source file, no title (pi names by entries)
            mgr._new_session_state(os.path.abspath(src_file or source_path), dialect)
        else:
            mgr._new_session_state(src_header.get("id"), dialect)
            if "title" in src_header:
                mgr._header = _header_with_title(
                    mgr._header, src_header.get("title"), src_header.get("titleSource")
                )
                if mgr._title_slot is not None:
                    mgr._title_slot = TitleSlot(
                        str(src_header.get("title") or ""),
                        src_header.get("titleSource"),
                        mgr._header["timestamp"],
                    )
        for e in entries:
            clean_openai_replay(e)
            mgr._index.add_held(e)
        last = mgr._index.last()
        mgr._leaf_id = last.id if last else None
        mgr._rewrite_file_guarded()
        return mgr

    @classmethod
    def list(cls, cwd: str, session_dir: str | None = None, **kw: Any) -> builtins.list[SessionInfo]:
        """Sessions of one directory, newest first."""
        if session_dir is not None:
            return list_sessions(session_dir, **kw)
        dirs = paths.session_dirs_of(os.path.abspath(cwd), kw.get("agent_dir"), kw.get("penv"))
        return list_sessions_of_dirs(dirs, **kw)

    @classmethod
    def list_all(cls, agent_dir: str | None = None, **kw: Any) -> builtins.list[SessionInfo]:
        """Sessions of every project under the sessions root, newest first."""
        return list_all_sessions(agent_dir, **kw)

    @staticmethod
    def get_default_session_dir(cwd: str, agent_dir: str | None = None, penv: Any = None) -> str:
        """The per-cwd sessions directory new sessions go to (computed, not created: the
        first write creates it; an existing directory of the cwd in any encoding wins)."""
        return str(paths.get_default_session_dir(cwd, agent_dir, penv))

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

    def save_index_cache(self, background: bool = False) -> bool:
        """Write the index cache an open deferred (`defer_index_cache`); False when none was
        due or the file changed meanwhile in a way the cache cannot describe (a torn tail).
        With `background`, a forked copy of the process encodes and writes it, so the caller
        is not held for the encoding (about a second for a million entries)."""
        if not self._sidecar.take_pending() or self._session_file is None:
            return False
        return self._save_cache_after_ingest(self._session_file, now=True, background=background)

    def cache_companion(self, suffix: str) -> str | None:
        """The file kept beside this session's index cache under `suffix` (the view's first
        pages, `view.opening`); None for a session without a file or without caches."""
        if self._session_file is None:
            return None
        return self._sidecar.companion(self._session_file, suffix)

    def drop_writer(self) -> None:
        """Close the append writer without flushing (the file is gone or detached)."""
        self._close_writer()

    def prepare_loaded_entry(self, entry: dict[str, Any]) -> None:
        """What loading does to an entry held in memory: blob refs resolved, replay payload cleaned."""
        if has_blob_ref(entry):
            resolve_blob_refs(entry, self._blob_store())
        clean_openai_replay(entry)

    def set_title_slot_line(self, line: bytes) -> None:
        """Take the title slot another process wrote in place (oh-my-pi's title change)."""
        slot, _start = split_slot(line)
        if slot is not None:
            self._title_slot = slot

    # ------------------------------------------------------------------ the leaf
    def branch(self, entry_id: str) -> None:
        """Move the leaf to an existing entry (writes nothing)."""
        if entry_id not in self._index:
            raise EntryNotFoundError(entry_id)
        self._leaf_id = entry_id

    def reset_leaf(self) -> None:
        """Leaf = None: the next append starts a new root."""
        self._leaf_id = None

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

    def get_leaf_id(self) -> str | None:
        return self._leaf_id

    def get_leaf_entry(self) -> dict[str, Any] | None:
        return self._index.get(self._leaf_id) if self._leaf_id is not None else None

    def get_branch(self, from_id: str | None = None) -> builtins.list[dict[str, Any]]:
        """Entries from the root to `from_id` (default: the leaf); [] for unknown ids."""
        start = from_id if from_id is not None else self._leaf_id
        idx = self._index
        sks = idx.path_skeletons(start)
        with gc_paused():
            return idx.entries_bulk(sks)

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
        # Every id of the map is in the tree (orphans and loop closers are roots). The
        # entries are read when a node's is first asked for, in file-order batches without
        # churning the entry cache (`TreeBodies`).
        with gc_paused():
            sks = sorted(by_id.values(), key=_file_order)
            bodies = TreeBodies(idx, sks)
            deferred = SessionTreeNode.deferred
            bodies.nodes = [deferred(bodies, i, labels.get(sk.id)) for i, sk in enumerate(sks)]
            nodes = {sk.id: node for sk, node in zip(sks, bodies.nodes, strict=True)}
            for pid, kids in child_map.items():
                parent = nodes.get(pid)
                if parent is not None:
                    parent.children = [nodes[c] for c in kids]
            return [nodes[r] for r in roots_ids]

    def build_session_context(self, leaf_id: Any = ...) -> SessionContext:
        """The context of the path to the leaf (or to `leaf_id`, any node)."""
        target = self._leaf_id if leaf_id is ... else leaf_id
        if target is None:
            return SessionContext()
        idx = self._index
        # (a context kept for the last entry needs no decode of a cache hit's skeletons)
        if idx.deferred_context(target) is None and target not in idx:
            last = idx.last()
            if last is None:
                return SessionContext()
            target = last.id
        return context_from_path(materialize_context_path(idx, target), self.dialect)

    def materialize_context_path(self, leaf_id: str) -> builtins.list[dict[str, Any]]:
        """The path entries that matter for the context, root first (`context_walk`)."""
        return materialize_context_path(self._index, leaf_id)

    def get_injected_ttsr_rules(self) -> builtins.list[str]:
        """Unique rule names of the ttsr_injection entries on the current branch."""
        return injected_ttsr_rules(self._index, self._leaf_id)

    def get_last_model_change_role(self) -> str | None:
        """The role of the nearest model_change above the leaf ("default" when unset)."""
        return last_model_change_role(self._index, self._leaf_id)

    def get_usage_statistics(self) -> dict[str, float]:
        """Usage summed over every assistant message and task result of the session (`index.usage`)."""
        return self._index.usage.as_dict()

    def get_session_file(self) -> str | None:
        return self._session_file if self._persist else None

    def get_session_id(self) -> str:
        return str(self._header.get("id", ""))

    def get_session_dir(self) -> str:
        return self._session_dir

    def get_cwd(self) -> str:
        return self._cwd

    def is_persisted(self) -> bool:
        return self._persist

    def get_artifacts_dir(self) -> str | None:
        f = self.get_session_file()
        return f[: -len(".jsonl")] if f and f.endswith(".jsonl") else None

    def put_blob(self, data: bytes) -> Any:
        """Store raw bytes in the blob store; returns `BlobPut(hash, path, ref)`."""
        return self._blob_store().put(data)

    # ------------------------------------------------------------------ the title
    def set_session_name(self, name: str, source: str = "auto") -> bool:
        """Set the session's name (sanitized) in the words of the file's agent; an automatic
        name never replaces a user's. False when nothing changed.

        pi: a ``session_info {name}`` entry is appended (pi has no sources: an automatic
        name does not replace any name). oh-my-pi: a ``title_change`` entry is appended and
        the title slot rewritten in place, 256 bytes at the start of the file, as omp does;
        a file without a slot (or with a slot of another width) is rewritten whole with one.
        xcsh: the header's title, the file rewritten."""
        dialect = self.dialect
        if dialect is Dialect.PI:
            if source == "auto" and self.get_session_name() is not None:
                return False
            clean = js_trim(_LINE_BREAKS.sub(" ", name))
            if not clean:
                return False
            e = self._base("session_info")
            e["name"] = clean
            self._append(e)
            return True
        if self.get_title_source() == "user" and source == "auto":
            return False
        clean = sanitize_session_name(name)
        if not clean:
            return False
        if dialect is Dialect.OMP:
            self._retitle_omp(clean, source)
            return True
        self._header = _header_with_title(self._header, clean, source)
        if self._persist and self._session_file and self._storage.exists(self._session_file):
            self._rewrite_file_guarded()
        return True

    def _retitle_omp(self, title: str, source: str) -> None:
        previous = self.get_session_name()
        e = self._base("title_change")
        e["title"] = title
        e["source"] = source
        if previous:
            e["previousTitle"] = previous
        old = self._title_slot
        self._header = _header_with_title(self._header, title, source)
        self._title_slot = TitleSlot(title, source, e["timestamp"])
        path = self._session_file
        in_place = (
            self._persist
            and path is not None
            and old is not None
            and old.width == SLOT_BYTES
            and self._flushed
            and not self._needs_full_rewrite
            and hasattr(self._storage, "overwrite_head")
            and self._storage.exists(path)
        )
        if not in_place:
            # omp rewrites a file without a slot whole, with one (and the title in its header)
            self._index.add_held(e)
            self._leaf_id = e["id"]
            if self._persist and path is not None and self._storage.exists(path):
                self._rewrite_file_guarded()
            else:
                self._flushed = False
            return
        assert path is not None and old is not None
        self._append(e)
        before = bytes(self._storage.read_range(path, 0, SLOT_BYTES))
        if split_slot(before)[0] is None or len(before) != SLOT_BYTES or before[-1:] != b"\n":
            return  # no slot of omp's width there now: the appended entry still says it
        new = serialize_slot(title, source, e["timestamp"])
        if self._storage.overwrite_head(path, before, new):
            self._follower.after_retitle(new)


def _header_with_title(header: dict[str, Any], title: Any, source: Any) -> dict[str, Any]:
    h = dict(header)
    h["title"] = title
    if source is not None:
        h["titleSource"] = source
    return h


# keep a reference for tools that introspect the module
