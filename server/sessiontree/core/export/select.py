"""Which entries an export holds: the path to a leaf, or a node's whole subtree; and their
reading, a page at a time.

A selection is skeletons (the index's, a few dozen bytes each), not entries: `read_pages`
reads the entries `PAGE` at a time, so what an export or a comparison holds is bounded by a
page, not by the branch (a 95,000-entry branch is about 1.2 GB of entry dicts).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import EntryNotFoundError
from ..index import Skeleton, gc_paused

__all__ = ["PAGE", "Selection", "read_page", "read_pages", "select_path", "select_subtree"]

#: Entries read (and rendered) at a time: about a megabyte of file for the common entries.
PAGE = 1000


@dataclass
class Selection:
    """Entries in the order they are written (their skeletons), and what was asked for."""

    skeletons: list[Skeleton]
    leaf_id: str | None
    subtree_id: str | None = None

    @property
    def ids(self) -> list[str]:
        """The entries' ids, in order."""
        return [sk.id for sk in self.skeletons if isinstance(sk.id, str)]

    def __len__(self) -> int:
        return len(self.skeletons)

    def pages(self, size: int | None = None) -> Iterator[list[Skeleton]]:
        """The skeletons, ``size`` (default `PAGE`) at a time."""
        sks = self.skeletons
        step = max(1, size or PAGE)
        for i in range(0, len(sks), step):
            yield sks[i : i + step]


def select_path(manager: Any, leaf_id: Any = ...) -> Selection:
    """The path from the root to ``leaf_id`` (default: the current leaf)."""
    leaf = manager.get_leaf_id() if leaf_id is ... else leaf_id
    if leaf is None:
        return Selection([], None)
    index = manager.index
    if not index.path_to_root(leaf):
        raise EntryNotFoundError(leaf)
    return Selection(index.path_skeletons(leaf), leaf)


def select_subtree(manager: Any, node_id: str) -> Selection:
    """The path to ``node_id`` and then every entry under it, in the tree's preorder."""
    index = manager.index
    path = index.path_to_root(node_id)
    if not path:
        raise EntryNotFoundError(node_id)
    _, children = index.child_map()
    below: list[str] = []
    stack = list(reversed(children.get(node_id, [])))
    while stack:
        eid = stack.pop()
        below.append(eid)
        stack.extend(reversed(children.get(eid, [])))
    ids = path + below
    skeleton = index.skeleton
    sks = [sk for sk in (skeleton(i) for i in ids) if sk is not None]
    return Selection(sks, ids[-1], node_id)


def read_page(manager: Any, sks: Sequence[Skeleton]) -> list[dict[str, Any]]:
    """The entries of ``sks``, in their order: one sequential read of their part of the file
    (`EntryIndex.entries_in_order`), the collector paused (parsing makes many containers,
    none of them cyclic)."""
    with gc_paused():
        return list(manager.index.entries_in_order(list(sks)))


def read_pages(manager: Any, selection: Selection, size: int | None = None) -> Iterator[list[dict[str, Any]]]:
    """The selection's entries, ``size`` (default `PAGE`) at a time, in order."""
    for sks in selection.pages(size):
        yield read_page(manager, sks)
