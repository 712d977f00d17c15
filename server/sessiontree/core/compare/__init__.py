"""Comparing two nodes of a session tree (docs/graph-export-compare.md)."""

from __future__ import annotations

from .diff import Comparison, Side, compare_nodes, render_side
from .effects import Command, FileChange, FileEffect, Hunk, code_effects

__all__ = [
    "Command",
    "Comparison",
    "FileChange",
    "FileEffect",
    "Hunk",
    "Side",
    "code_effects",
    "compare_nodes",
    "render_side",
]
