"""What a session reports of itself: the load report, and the nodes of `get_tree()`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["LoadReport", "SessionTreeNode"]


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
    dropped: list[Any] = field(default_factory=list)
    quarantined_copy: str | None = None
    migrated_from: int | None = None
    backup_copy: str | None = None
    fast_path: bool = False
    from_cache: bool = False
    #: the file was scanned in two halves on two cores (`split_scan`)
    split_scan: bool = False
    #: entries of a current-version file that had no id and got one derived from the file
    #: (`migrations.fill_missing_ids`): the first write puts them in the file, like a
    #: migration, so that the agents see the tree sessiontree shows
    ids_derived: int = 0

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
    """One node of `SessionManager.get_tree()`: the entry, its children and its label.

    The nodes of `get_tree()` read their entries on first access (`entry`): building the
    tree costs a node per entry, not a parse of the whole file. Reading one node's entry
    reads it and the nodes after it in file order (`TreeBodies`), so a walk over every
    node still reads the file sequentially once.
    """

    __slots__ = ("_bodies", "_entry", "_pos", "children", "label")

    def __init__(self, entry: dict[str, Any], children: list[SessionTreeNode], label: str | None) -> None:
        self._entry: dict[str, Any] | None = entry
        self.children = children
        self.label = label
        self._bodies: TreeBodies | None = None
        self._pos = -1

    @classmethod
    def deferred(cls, bodies: TreeBodies, pos: int, label: str | None) -> SessionTreeNode:
        """A node whose entry is the skeleton at ``bodies.skeletons[pos]``, read when asked."""
        node = cls.__new__(cls)
        node._entry = None
        node.children = []
        node.label = label
        node._bodies = bodies
        node._pos = pos
        return node

    @property
    def entry(self) -> dict[str, Any]:
        if self._entry is None:
            assert self._bodies is not None
            self._bodies.fill(self._pos)
        assert self._entry is not None
        return self._entry

    @entry.setter
    def entry(self, value: dict[str, Any]) -> None:
        self._entry = value

    def __repr__(self) -> str:
        return f"SessionTreeNode(id={self.entry.get('id')!r}, children={len(self.children)}, label={self.label!r})"


class TreeBodies:
    """The entries of one `get_tree()` result, read in file-order batches on demand."""

    __slots__ = ("index", "nodes", "skeletons")

    BATCH = 4096

    def __init__(self, index: Any, skeletons: list[Any]) -> None:
        self.index = index
        self.skeletons = skeletons  # in file order
        self.nodes: list[SessionTreeNode] = []

    def fill(self, pos: int) -> None:
        """Read the entry of node ``pos`` and of the unread nodes after it (one batch)."""
        end = min(len(self.nodes), pos + self.BATCH)
        todo = [i for i in range(pos, end) if self.nodes[i]._entry is None]
        sks = [self.skeletons[i] for i in todo]
        for i, (_, entry) in zip(todo, self.index.stream_entries(sks), strict=True):
            node = self.nodes[i]
            node._entry = entry
            node._bodies = None
