"""The short connector art of a deep row: one rule for the CLI, VS Code and Neovim.

The agent's /tree draws one 3-column cell per level (`│  `, `├─ `, `└─ `, or blank), so a
row 64 levels deep starts its text near column 192: in a 50-column sidebar every visible row
is connector art only. The view keeps that art (`Row.prefix`, what the reference draws) and
adds a short form (`Row.short_prefix`, wire `shortPrefix`) that every front end shows:

- art of at most :data:`SHORT_ART_WIDTH` columns is kept as it is;
- deeper art keeps its last :data:`KEPT_CELLS` cells (where the row's own connector and its
  nearest gutters are) behind a depth marker ``‹N›`` (N = the row's depth in cells), so the
  text of every row starts within ``len("‹N› ") + 3 * KEPT_CELLS`` columns however deep it is.

The marker tells how deep the row is and that the art is cut; rows of one chain keep their
marker width, so a run of deep rows still lines up. The full art stays available:
`sessiontree tree --full-art`, the wire `prefix`.
"""

from __future__ import annotations

__all__ = ["CELL", "KEPT_CELLS", "SHORT_ART_WIDTH", "short_prefix"]

#: Columns of one level of connector art.
CELL = 3
#: Art up to this many columns (8 levels) is shown in full.
SHORT_ART_WIDTH = 24
#: Cells of art kept behind the depth marker of a deeper row.
KEPT_CELLS = 4


def short_prefix(prefix: str) -> str:
    """The art a front end shows for a row whose full art is ``prefix``."""
    if len(prefix) <= SHORT_ART_WIDTH:
        return prefix
    depth = len(prefix) // CELL
    return f"‹{depth}› " + prefix[-KEPT_CELLS * CELL :]
