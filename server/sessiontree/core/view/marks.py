"""What a row hidden by the filter hands on: the one rule every front end draws (docs/tree-view.md,
"One face").

A filter mode or a search hides rows, but two things a hidden row carries must still be
seen, so each passes to the visible row that stands for it:

- **the leaf's mark goes up**: when the leaf is hidden (a ``model_change``, a label entry
  *Set Label* just wrote, a tool result in ``no-tools``), its nearest visible ancestor, the
  row the view selects, marks the leaf and names it (`Row.marks_leaf`, `Row.hidden_leaf`);
- **a branch's connector goes down**: when a branch's first row is hidden (the child of a
  branch point that carries ``├─``/``└─``: a tool result in ``no-tools``, an assistant
  message without text, a settings entry), its first visible descendant draws that
  connector in the cell where the hidden row had it (`Row.prefix`) and stands for it in
  views that nest rows (`Row.head_depth`). So the fan-out shows wherever the branch point
  is, hidden or not, and two branches never read as one list.

Everything else of the art is the agent's: rows keep their flattened indent and gutters.
"""

from __future__ import annotations

from typing import Final

from .flatten import Flat, display_indent, prefix_of

__all__ = ["LEAF_NOTE", "hidden_heads", "prefix_with_heads"]

LEAF_NOTE: Final = "leaf: "
"""What goes before a hidden leaf's text where the row that marks it names it."""

_LAST: Final = "└─ "
_MORE: Final = "├─ "


def hidden_heads(flat: Flat, prev: int, at: int) -> list[int]:
    """The hidden rows that begin a branch and hand their connector to row ``at`` (flat
    indices, outermost first).

    ``prev`` is the flat index of the visible row before ``at`` (``-1`` for none), so every
    row between them is hidden. A row there begins a branch when it has a connector (a
    child of a branch point, or a root of several); it hands it to ``at`` when ``at`` is in
    its subtree, which in the flattened order is: every row after it up to ``at`` is indented
    deeper (a branch's rows are indented deeper than its first row, and the first row after
    the branch is not).
    """
    indent = flat.indent
    connector = flat.show_connector
    lowest = indent[at]
    floor = 1 if flat.multiple_roots else 0
    found: list[int] = []
    k = at - 1
    while k > prev and lowest > floor:
        i = indent[k]
        if i < lowest:
            if connector[k]:
                found.append(k)
            lowest = i
        k -= 1
    found.reverse()
    return found


def prefix_with_heads(flat: Flat, at: int, heads: list[int]) -> str:
    """The art of row ``at`` with the connectors of the hidden branch heads it stands for
    drawn in their cells (a root of several draws none: its rows start the line)."""
    text = prefix_of(flat, at)
    cells = [text[c : c + 3] for c in range(0, len(text), 3)]
    changed = False
    for h in heads:
        if flat.virtual_root[h]:
            continue
        cell = max(0, display_indent(flat, h) - 1)
        if cell < len(cells):
            cells[cell] = _LAST if flat.is_last[h] else _MORE
            changed = True
    return "".join(cells) if changed else text
