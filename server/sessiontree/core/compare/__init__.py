"""Comparing two nodes of a session tree (docs/graph-export-compare.md)."""

from __future__ import annotations

from .diff import Comparison, Side, compare_nodes, render_side, side_parts
from .effects import CodeEffects, Command, FileChange, FileEffect, Hunk, code_effects

__all__ = [
    "CodeEffects",
    "Command",
    "Comparison",
    "FileChange",
    "FileEffect",
    "Hunk",
    "Side",
    "code_effects",
    "compare_nodes",
    "render_side",
    "side_parts",
]
