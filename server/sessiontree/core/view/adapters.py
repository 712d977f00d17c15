"""Tree sources over what the core has: a ``SessionManager`` (`ManagerTreeSource`) and a
list of entry dicts (`EntriesTreeSource`); `as_tree_source` picks one."""

from __future__ import annotations

import weakref
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from ..index import EntryIndex
from ..tree.context import LAST_ENTRY, _LastEntry
from .source import Lookups, TreeSource

__all__ = ["EntriesTreeSource", "ManagerTreeSource", "as_tree_source"]


class ManagerTreeSource:
    """A `TreeSource` over a ``SessionManager`` (through ``manager.index``).

    With ``weak=True`` (the adapters `as_tree_source` keeps) the source refers to its
    manager and index only weakly: the cache maps manager -> source weakly, and a source
    that held its manager (or the index, whose loaders are the manager's bound methods)
    would keep every closed session alive for good.
    """

    def __init__(self, manager: Any, *, weak: bool = False) -> None:
        self._strong: Any = None if weak else manager
        self._ref: weakref.ReferenceType[Any] | None = weakref.ref(manager) if weak else None
        self._index_seen: Callable[[], Any] | None = None
        self._generation = 0

    @property
    def manager(self) -> Any:
        """The adapted manager (``ReferenceError`` once a weakly held one was freed)."""
        m = self._strong
        if m is None:
            m = self._ref() if self._ref is not None else None
            if m is None:
                raise ReferenceError("the session manager of this tree source was freed")
        return m

    @property
    def labels(self) -> Mapping[str, str]:
        return self.manager.index.labels  # type: ignore[no-any-return]

    def skeleton(self, entry_id: str) -> Any:
        return self.manager.index.skeleton(entry_id)

    def children(self, parent_id: str | None) -> Sequence[str]:
        return self.manager.index.children(parent_id)  # type: ignore[no-any-return]

    def lookups(self) -> Lookups:
        """`skeleton` and `children` bound to the current index, for one pass over a version."""
        return _index_lookups(self.manager.index)

    def get_entry(self, entry_id: str) -> Mapping[str, Any] | None:
        return self.manager.get_entry(entry_id)  # type: ignore[no-any-return]

    def get_leaf_id(self) -> str | None:
        return self.manager.get_leaf_id()  # type: ignore[no-any-return]

    def get_entries(self, ids: Sequence[str]) -> list[Mapping[str, Any] | None]:
        return _index_entries(self.manager.index, ids)

    def version(self) -> Hashable:
        index = self.manager.index
        seen = self._index_seen
        if seen is None or seen() is not index:
            # A rebuilt index (new session, branched session, reload) is a new tree. The
            # identity check goes through a weak reference: comparing ids could mistake a
            # new index for a freed old one, and a strong one would keep the manager alive.
            try:
                self._index_seen = weakref.ref(index)
            except TypeError:  # an index type without weak references: hold it
                self._index_seen = lambda: index
            self._generation += 1
        # Labels and entries only change by appending, which changes the length.
        return (self._generation, len(index), len(index.labels))

    def content_version(self) -> Hashable:
        """Changes when stored entries may have changed (not on appends)."""
        self.version()
        return self._generation

    def entry_count(self) -> int:
        """Entries in file order (duplicated ids counted each time)."""
        return len(self.manager.index)

    def distinct_count(self) -> int:
        """Distinct entry ids."""
        return len(self.manager.index.ids())

    def appended_since(self, count: int) -> list[str]:
        """Ids of the entries after the first ``count`` (file order)."""
        return [sk.id for sk in self.manager.index.skeletons_since(count)]

    def bulk_index(self) -> EntryIndex:
        return self.manager.index  # type: ignore[no-any-return]


class EntriesTreeSource:
    """A `TreeSource` built from a list of entry dicts (a header dict is skipped).

    ``leaf_id`` defaults to the last entry, like a freshly opened session.
    """

    def __init__(
        self, entries: Iterable[Mapping[str, Any]], leaf_id: str | _LastEntry | None = LAST_ENTRY
    ) -> None:
        self.index = EntryIndex()
        last: str | None = None
        for e in entries:
            if not isinstance(e, Mapping) or e.get("type") == "session":
                continue
            self.index.add_held(e, count_usage=False)  # type: ignore[arg-type]
            eid = e.get("id")
            last = eid if isinstance(eid, str) else last
        self.leaf_id: str | None = last if isinstance(leaf_id, _LastEntry) else leaf_id
        self._version = 0

    @property
    def labels(self) -> Mapping[str, str]:
        return self.index.labels

    def skeleton(self, entry_id: str) -> Any:
        return self.index.skeleton(entry_id)

    def children(self, parent_id: str | None) -> Sequence[str]:
        return self.index.children(parent_id)

    def lookups(self) -> Lookups:
        return _index_lookups(self.index)

    def get_entry(self, entry_id: str) -> Mapping[str, Any] | None:
        return self.index.get(entry_id)

    def get_entries(self, ids: Sequence[str]) -> list[Mapping[str, Any] | None]:
        return _index_entries(self.index, ids)

    def get_leaf_id(self) -> str | None:
        return self.leaf_id

    def bulk_index(self) -> EntryIndex:
        return self.index

    def version(self) -> Hashable:
        return (len(self.index), len(self.index.labels))

    def content_version(self) -> Hashable:
        """Entries are only ever added to this source."""
        return 0

    def entry_count(self) -> int:
        """Entries in file order (duplicated ids counted each time)."""
        return len(self.index)

    def distinct_count(self) -> int:
        """Distinct entry ids."""
        return len(self.index.ids())

    def appended_since(self, count: int) -> list[str]:
        """Ids of the entries after the first ``count`` (file order)."""
        return [sk.id for sk in self.index.skeletons()[count:]]

    def append(self, entry: Mapping[str, Any], move_leaf: bool = True) -> None:
        """Add an entry (and by default make it the leaf)."""
        self.index.add_held(entry, count_usage=False)  # type: ignore[arg-type]
        if move_leaf and isinstance(entry.get("id"), str):
            self.leaf_id = entry["id"]


def _index_lookups(index: EntryIndex) -> Lookups:
    roots, kids = index.child_map()
    kids_get = kids.get
    empty: tuple[str, ...] = ()

    def children(parent_id: str | None) -> Sequence[str]:
        return roots if parent_id is None else kids_get(parent_id, empty)

    return index.ids().get, children


def _index_entries(index: EntryIndex, ids: Sequence[str]) -> list[Mapping[str, Any] | None]:
    sks = [index.skeleton(i) for i in ids]
    found = iter(index.entries_of([sk for sk in sks if sk is not None]))
    return [next(found) if sk is not None else None for sk in sks]


@runtime_checkable
class _IndexedSession(Protocol):
    """What `ManagerTreeSource` reads of a session (a ``SessionManager`` has it)."""

    @property
    def index(self) -> EntryIndex: ...

    def get_entry(self, entry_id: str) -> dict[str, Any] | None: ...

    def get_leaf_id(self) -> str | None: ...


_ADAPTERS: weakref.WeakKeyDictionary[Any, ManagerTreeSource] = weakref.WeakKeyDictionary()


def as_tree_source(obj: Any) -> TreeSource:
    """A `TreeSource` for a manager, a list of entry dicts, or a source (returned as is).

    The adapter of a manager is kept (weakly, and it holds the manager weakly) so that
    its caches live as long as the manager does, and no longer.
    """
    if isinstance(obj, ManagerTreeSource | EntriesTreeSource):
        return obj
    try:
        # a known manager first: a runtime protocol check costs milliseconds
        known = _ADAPTERS.get(obj)
    except TypeError:
        known = None
    if known is not None:
        return known
    if isinstance(obj, _IndexedSession):
        try:
            src = _ADAPTERS.get(obj)
        except TypeError:
            return ManagerTreeSource(obj)
        if src is None:
            src = ManagerTreeSource(obj, weak=True)
            _ADAPTERS[obj] = src
        return src
    if isinstance(obj, TreeSource):
        return obj
    if isinstance(obj, list | tuple):
        return EntriesTreeSource(obj)
    raise TypeError(f"not a tree source: {type(obj).__name__}")
