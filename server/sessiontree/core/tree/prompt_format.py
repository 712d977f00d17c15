"""The reference's post-render prompt formatting, applied to every rendered template.

The reference builds the texts of ``branchSummary`` and ``compactionSummary`` messages with
``prompt.render(template, {summary})`` (its ``pi-utils`` ``prompt.ts``): Handlebars with
``noEscape`` inserts the value verbatim, then ``format(rendered, {renderPhase:
"post-render"})`` reshapes the *whole* text, summary included, line by line:

1. every line loses its trailing whitespace (JS ``trimEnd``), inside code blocks too;
2. a line whose indented start is ```` ``` ```` or ``~~~`` toggles a code block (any fence
   closes any other, as in the reference); fence lines and lines inside a block are kept
   as they are after step 1, and no later rule applies to them;
3. a table row (``|...|`` after the indent) has its cells trimmed, a separator row
   (``|`` then only ``-``, ``:``, whitespace and ``|``, then ``|``) becomes ``|---|:---|...|``
   (empty cells dropped), keeping the indent; a closing XML tag line is left alone;
4. a blank line is dropped when the next *raw* line is a list item (``- ``, ``* ``,
   ``1. ``), when the last kept line is an opening XML tag (``<summary>``), when the next
   raw line is a closing XML tag (``</summary>``), or when the last kept line is blank
   (which also drops leading blank lines);
5. before a closing XML tag line, the blank lines kept so far are removed;
6. trailing blank lines are removed.

The reference's other options (pre-render phase, ASCII symbol replacement, RFC 2119 bold)
are off for rendering and not ported. Matching follows JavaScript (`jscompat`): its
whitespace, ASCII ``\\d``, and ``.`` that stops at every line terminator.
"""

from __future__ import annotations

import re
from typing import Final

from sessiontree.core.format.jscompat import JS_LINE_TERMINATORS, JS_WHITESPACE, js_trim

__all__ = ["format_prompt"]

_S: Final = "[" + re.escape(JS_WHITESPACE) + "]"
_DOT: Final = "[^" + re.escape(JS_LINE_TERMINATORS) + "]"

_OPENING_XML: Final = re.compile(rf"<[a-z_-]+(?:{_S}+[^>]*)?>\Z")
_CLOSING_XML: Final = re.compile(r"</[a-z_-]+>\Z")
_LIST_ITEM: Final = re.compile(rf"(?:[-*]{_S}|[0-9]+\.{_S})")
_TABLE_ROW: Final = re.compile(rf"\|{_DOT}*\|\Z")
_TABLE_SEP: Final = re.compile(rf"\|[-:{re.escape(JS_WHITESPACE)}|]+\|\Z")


def _compact_table_row(line: str) -> str:
    return "|".join(js_trim(c) for c in line.split("|"))


def _compact_table_sep(line: str) -> str:
    cells = []
    for c in line.split("|"):
        t = js_trim(c)
        if not t:
            continue
        left, right = t.startswith(":"), t.endswith(":")
        cells.append(":---:" if left and right else ":---" if left else "---:" if right else "---")
    return "|" + "|".join(cells) + "|"


def format_prompt(content: str) -> str:
    """The reference's post-render ``format(content)``; see the module docstring for the rules."""
    lines = content.split("\n")
    result: list[str] = []
    in_code_block = False
    for i, raw in enumerate(lines):
        line = raw.rstrip(JS_WHITESPACE)
        start = line.lstrip(JS_WHITESPACE)
        if start.startswith(("```", "~~~")):
            in_code_block = not in_code_block
            result.append(line)
            continue
        if in_code_block:
            result.append(line)
            continue
        trimmed = js_trim(line)
        indent = line[: len(line) - len(start)]
        if _CLOSING_XML.match(start):
            pass
        elif _TABLE_SEP.match(start):
            line = indent + _compact_table_sep(start)
        elif _TABLE_ROW.match(start):
            line = indent + _compact_table_row(start)

        if not trimmed:
            prev_line = js_trim(result[-1]) if result else ""
            next_line = js_trim(lines[i + 1]) if i + 1 < len(lines) else ""
            if (
                _LIST_ITEM.match(next_line)
                or _OPENING_XML.match(prev_line)
                or _CLOSING_XML.match(next_line)
                or not prev_line
            ):
                continue

        if _CLOSING_XML.match(trimmed):
            while result and not js_trim(result[-1]):
                result.pop()
        result.append(line)

    while result and not js_trim(result[-1]):
        result.pop()
    return "\n".join(result)
