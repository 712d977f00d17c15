"""The state the parts of a session share (`SessionBase`), and the helpers they use.

`SessionManager` (`session/manager.py`) is put together from parts, one job each:
`writing.Writing` (the persistence pipeline), `loading.Loading` (a file read into the
index), `entries.Entries` (the entry constructors), `moves.Moves` (fork, branch into a new
session, move to another cwd); `context_walk` holds the walk the context needs, `reader`
the reads of file-backed entries, `sidecar` the use of the index cache. Each part reads and
writes the fields declared here; `SessionManager.__init__` sets them.
"""

from __future__ import annotations

import os
from types import SimpleNamespace
from typing import Any

from .. import paths
from ..errors import PersistError
from ..format.dialects import Dialect, Evidence, home_dialect
from ..format.title_slot import TitleSlot, fold_into_header
from ..ids import Clock, IdSource
from ..index import EntryIndex
from ..live import FileState, Follower
from ..store.blobs import BlobStore
from .reader import FileEntries
from .records import LoadReport
from .sidecar import Sidecar

__all__ = ["SessionBase", "st_int", "stat_of"]


class SessionBase:
    """The fields of a session, declared once for every part that uses them."""

    # Where the session lives.
    _cwd: str
    _session_dir: str
    #: The session file (None in memory, or before a persistent session is named).
    _session_file: str | None
    #: False for `in_memory` sessions: nothing is ever written.
    _persist: bool
    #: Opened for inspection: never written.
    _read_only: bool
    #: Opened for viewing (DIVERGENCES 11): nothing is written until a change is asked for.
    _viewing: bool
    _breadcrumbs: bool
    _agent_dir: str | None
    _penv: Any

    # Injected (CONVENTIONS 14).
    _clock: Clock
    _ids: IdSource
    _storage: Any
    _blobs: BlobStore | None
    _sidecar: Sidecar
    _parallel_scan: bool

    # What the session holds.
    _header: dict[str, Any]
    #: oh-my-pi's title slot, the line before the header (None: the file has none).
    _title_slot: TitleSlot | None
    #: What tells the file's dialect (`dialect`), counted lazily, entry by entry, for the
    #: index `_evidence_of` up to its `_evidence_seen` first entries.
    _evidence: Evidence | None
    _evidence_of: EntryIndex | None
    _evidence_seen: int
    _index: EntryIndex
    _leaf_id: str | None
    load_report: LoadReport

    # The file on disk and the writing of it.
    _follower: Follower
    _reader: FileEntries
    _writer: Any
    #: The first persistence error, re-raised by every later write.
    _persist_error: PersistError | None
    #: The file holds every entry (later entries are appended, not rewritten).
    _flushed: bool
    _needs_full_rewrite: bool
    _ensured_on_disk: bool

    def _blob_store(self) -> BlobStore:
        if self._blobs is None:
            self._blobs = BlobStore(self._blobs_dir())
        return self._blobs

    def _blobs_dir(self) -> str:
        """Where the file's agent keeps blobs: an oh-my-pi file's are in the data dir its
        ``sessions/`` lives in (``~/.omp/agent/blobs``), where omp looks for them; any other
        file's are in the configured agent dir's (sessiontree's and xcsh's)."""
        f = self._session_file
        if f is not None and home_dialect(f) is Dialect.OMP:
            d = os.path.dirname(os.path.abspath(f))
            while True:
                parent = os.path.dirname(d)
                if os.path.basename(d) == "sessions":
                    return os.path.join(parent, "blobs")
                if parent == d:
                    break
                d = parent
        return str(paths.blobs_dir(self._agent_dir, self._penv))

    @property
    def dialect(self) -> Dialect:
        """The agent whose words the file uses (`format.dialects`): detected from what the
        file holds, else the dialect of the agent directory it lives in."""
        evidence = self._dialect_evidence()
        return evidence.dialect(home_dialect(self._session_file or self._session_dir, self._agent_dir))

    def _dialect_evidence(self) -> Evidence:
        idx = self._index
        ev = self._evidence
        if ev is None or self._evidence_of is not idx or ev.has_slot != (self._title_slot is not None):
            ev = self._evidence = Evidence(self._title_slot is not None, self._header)
            self._evidence_of = idx
            self._evidence_seen = 0
        if self._evidence_seen < len(idx):
            # (a cache hit brings what its entries told: only those added since are looked at,
            # without decoding the hit's skeletons)
            ev.see_skeletons(idx.skeletons_since(self._evidence_seen), idx.entry_of)
            self._evidence_seen = len(idx)
        return ev

    def get_header(self) -> dict[str, Any] | None:
        """The session header as the file's agent reads it: oh-my-pi's title slot folded in."""
        if self._title_slot is not None and self._header:
            return fold_into_header(dict(self._header), self._title_slot)
        return self._header or None

    def get_title_slot(self) -> TitleSlot | None:
        """oh-my-pi's title slot, the line before the header; None when the file has none."""
        return self._title_slot

    def get_session_name(self) -> str | None:
        """The session's name by the rule of the file's agent: pi's latest ``session_info``
        name; oh-my-pi's title (its title slot); xcsh's header title."""
        if self.dialect is Dialect.PI:
            return self._dialect_evidence().info_name
        t = (self.get_header() or {}).get("title")
        return t if isinstance(t, str) else None

    def get_title_source(self) -> str | None:
        s = (self.get_header() or {}).get("titleSource")
        return s if s in ("auto", "user") else None

    def _take_cached_evidence(self, state: Any, count: int) -> None:
        """A cache hit's evidence of the file's dialect, for its first `count` entries."""
        ev = Evidence.from_state(state, self._title_slot is not None, self._header)
        if ev is not None:
            self._evidence, self._evidence_of, self._evidence_seen = ev, self._index, count

    def _make_index(self) -> EntryIndex:
        reader = self._reader
        idx = EntryIndex(reader.one)
        idx.batch_loader = reader.many
        idx.stream_loader = reader.stream
        idx.raw_loader = reader.stream_raw
        return idx

    @property
    def file_state(self) -> FileState | None:
        """The file as last read or written (`live.FileState`), None before either."""
        return self._follower.state

    def _set_file_state(self, st: Any, end: int) -> None:
        if st is None:
            self._follower.set_state(None)
            return
        self._follower.set_state(
            FileState(
                size=st_int(st, "st_size"),
                inode=st_int(st, "st_ino"),
                device=st_int(st, "st_dev"),
                mtime_ns=st_int(st, "st_mtime_ns"),
                end=end,
            )
        )

    def _forget_file_state(self) -> None:
        """The session is about to use another file: nothing is known of it yet."""
        self._follower.forget()


def stat_of(storage: Any, path: str) -> Any:
    """An `os.stat_result`-like object (st_size, st_ino, st_dev, st_mtime_ns) or None."""
    try:
        if getattr(storage, "is_real_fs", False):
            return os.stat(path)
        fs = storage.stat(path)
    except FileNotFoundError:
        return None
    # A followable backend's identity tells a rewrite from an append (core/live).
    ino = fs.inode if getattr(storage, "followable", False) else 0
    return SimpleNamespace(st_size=fs.size, st_ino=ino, st_dev=0, st_mtime_ns=fs.mtime_ns)


def st_int(st: Any, name: str, default: int = 0) -> int:
    v = getattr(st, name, None)
    if v is None and isinstance(st, dict):
        v = st.get(name)
    return int(v) if v is not None else default
