"""`TreeSource`: what the view reads, the one interface every tree it shows implements.

A source gives skeletons (`core.index.Skeleton`), children in ``getTree()`` order, labels,
full entries on demand, the current leaf and versions; `adapters` adapts a
``SessionManager`` and a list of entry dicts. A reader of another agent's format plugs in
here by implementing this protocol.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from ..index import EntryIndex

__all__ = ["Lookups", "TreeSource"]

#: `skeleton` and `children` bound for one pass over a version (results are read-only).
Lookups = tuple[Callable[[str], Any], Callable[[str | None], Sequence[str]]]


@runtime_checkable
class TreeSource(Protocol):
    """What the view reads; `adapters` gives one for a ``SessionManager`` or entry dicts.

    ``skeleton(id)`` returns a `core.index.Skeleton` (or an object with its attributes);
    ``children(None)`` gives the roots. ``version()`` changes whenever the tree or the
    labels change (the leaf is passed separately); ``content_version()`` only when stored
    entries may have changed (not on appends).
    """

    @property
    def labels(self) -> Mapping[str, str]: ...

    def skeleton(self, entry_id: str) -> Any: ...

    def children(self, parent_id: str | None) -> Sequence[str]: ...

    def lookups(self) -> Lookups:
        """`skeleton` and `children` bound for one pass over the current version."""
        ...

    def get_entry(self, entry_id: str) -> Mapping[str, Any] | None: ...

    def get_entries(self, ids: Sequence[str]) -> list[Mapping[str, Any] | None]:
        """Many entries at once (a source may read them in batches)."""
        ...

    def get_leaf_id(self) -> str | None: ...

    def version(self) -> Hashable: ...

    def content_version(self) -> Hashable: ...

    def entry_count(self) -> int:
        """Entries in file order (duplicated ids counted each time)."""
        ...

    def distinct_count(self) -> int:
        """Distinct entry ids."""
        ...

    def appended_since(self, count: int) -> list[str]:
        """Ids of the entries after the first ``count`` (file order)."""
        ...

    def bulk_index(self) -> EntryIndex | None:
        """The index to read every entry from in one sequential pass (None: read one by one)."""
        ...
