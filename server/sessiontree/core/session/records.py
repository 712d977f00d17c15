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

    def __init__(self, entry: dict[str, Any], children: list[SessionTreeNode], label: str | None) -> None:
        self.entry = entry
        self.children = children
        self.label = label

    def __repr__(self) -> str:
        return f"SessionTreeNode(id={self.entry.get('id')!r}, children={len(self.children)}, label={self.label!r})"
