"""Which entries an export holds: the path to a leaf, or a node's whole subtree."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import EntryNotFoundError

__all__ = ["Selection", "select_path", "select_subtree"]

_BULK_ABOVE = 2000


@dataclass
class Selection:
    """Entries in the order they are written, and what was asked for."""

    entries: list[dict[str, Any]]
    leaf_id: str | None
    subtree_id: str | None = None

    @property
    def ids(self) -> list[str]:
        """The entries' ids, in order."""
        return [e["id"] for e in self.entries if isinstance(e.get("id"), str)]


def _read(manager: Any, ids: list[str]) -> list[dict[str, Any]]:
    out = []
    for i in ids:
        entry = manager.get_entry(i)
        if entry is not None:
            out.append(entry)
    return out


def select_path(manager: Any, leaf_id: Any = ...) -> Selection:
    """The path from the root to ``leaf_id`` (default: the current leaf)."""
    leaf = manager.get_leaf_id() if leaf_id is ... else leaf_id
    if leaf is None:
        return Selection([], None)
    if not manager.index.path_to_root(leaf):
        raise EntryNotFoundError(leaf)
    # get_branch reads a long path sequentially, not entry by entry
    return Selection(list(manager.get_branch(leaf)), leaf)


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
    leaf = ids[-1]
    if len(ids) > _BULK_ABOVE:
        # one sequential read of the file beats as many random reads as there are entries
        by_id = {e.get("id"): e for e in manager.iter_entries()}
        entries = [by_id[i] for i in ids if i in by_id]
    else:
        entries = _read(manager, ids)
    return Selection(entries, leaf, node_id)
