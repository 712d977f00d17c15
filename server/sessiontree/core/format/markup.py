"""The one rule for writing session-supplied strings into HTML, SVG and Markdown.

A session file is written by an agent, by the tools it runs and by whatever text reached
the model, so every string in it (roles, entry types, custom types, labels, titles, ids,
message text) is data, never markup. The graph page (`core/graph/render.py`) and the
exports (`core/export/html.py`, `markdown.py`) put such strings into documents only through
the functions here:

- `html`: text and quoted attribute values in HTML and SVG (``& < > " '`` as entities, and
  characters XML cannot hold as U+FFFD, so a standalone SVG still parses);
- `css_class`: a class name made of ``[A-Za-z0-9_-]`` only (nothing to break out of an
  attribute or to match another rule's selector by accident);
- `json_script`: JSON inside a ``<script type="application/json">`` element, with no ``<``,
  ``>`` or ``&`` left to close it or open a comment;
- `md_inline`: a Markdown title, heading, label or list item: one line, HTML special
  characters as entities, no link, image or autolink syntax;
- `md_code_span`: an inline code span that the text cannot close, whatever its backticks;
- `md_body`: message text as the Markdown it is, with raw HTML tags, images and
  ``javascript:``-style links neutralized outside code (fenced blocks and code spans are
  kept byte for byte).

Each is linear in its input.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = [
    "css_class",
    "html",
    "json_script",
    "md_body",
    "md_code_span",
    "md_inline",
]

# Characters XML 1.0 cannot hold (C0 controls but tab/newline/CR, lone surrogates, U+FFFE/F).
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
_HTML_SPECIAL = {
    ord("&"): "&amp;",
    ord("<"): "&lt;",
    ord(">"): "&gt;",
    ord('"'): "&quot;",
    ord("'"): "&#x27;",
}


def html(value: Any) -> str:
    """``value`` as text for HTML or SVG content or a double- or single-quoted attribute."""
    s = value if isinstance(value, str) else str(value)
    return _NOT_XML.sub("\ufffd", s).translate(_HTML_SPECIAL)


_NOT_CLASS = re.compile(r"[^A-Za-z0-9_\-]")
_CLASS_MAX = 64


def css_class(value: Any) -> str:
    """``value`` as one class-name token: every other character becomes ``_``, at most 64."""
    s = value if isinstance(value, str) else str(value)
    return _NOT_CLASS.sub("_", s[:_CLASS_MAX]) or "_"


def json_script(value: Any) -> str:
    """``value`` as JSON safe inside a ``<script>`` element (``< > &`` and the line
    separators as ``\\u`` escapes, which JSON.parse reads back as they were)."""
    text = json.dumps(value, ensure_ascii=False)
    return (
        text.replace("&", "\\u0026")
        .replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


# --- Markdown ---------------------------------------------------------------------------

# In inline text: `[` `]` (links, images, reference definitions), `\` (so that our own
# escapes cannot be undone), and the HTML specials as entities.
_MD_INLINE = {
    ord("&"): "&amp;",
    ord("<"): "&lt;",
    ord(">"): "&gt;",
    ord("["): "\\[",
    ord("]"): "\\]",
    ord("\\"): "\\\\",
}
_SPACES = re.compile(r"\s+")


def md_inline(value: Any) -> str:
    """``value`` as one line of Markdown inline text that renders as the text itself: no
    raw HTML, no link or image, no line break that would start another block."""
    s = value if isinstance(value, str) else str(value)
    if s.isprintable():
        # nothing XML refuses, no whitespace but the space (the common case, without a regex)
        if "  " in s:
            s = _SPACES.sub(" ", s)
    else:
        s = _SPACES.sub(" ", _NOT_XML.sub("\ufffd", s))
    return s.strip().translate(_MD_INLINE)


_TICKS = re.compile(r"`+")


def md_code_span(value: Any) -> str:
    """``value`` as an inline code span (one line): the fence is one backtick longer than
    the longest run inside, so nothing in it can end the span; code spans render their
    content literally (no HTML, no links)."""
    s = _SPACES.sub(" ", value if isinstance(value, str) else str(value)).strip()
    longest = max((len(m) for m in _TICKS.findall(s)), default=0) if "`" in s else 0
    bar = "`" * (longest + 1)
    pad = " " if s.startswith("`") or s.endswith("`") or not s else ""
    return f"{bar}{pad}{s}{pad}{bar}"


# Outside code: `<` that opens a tag, a comment or a declaration; an image `![`; a link
# or reference whose target is a script or data URL.
_RAW = re.compile(
    r"<(?=[A-Za-z/!?])|!\[|\]\(\s*(?=(?:javascript|vbscript|data|file):)|\]:\s*(?=(?:javascript|vbscript|data|file):)",
    re.I,
)
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")


def _neutralize(text: str) -> str:
    def fix(m: re.Match[str]) -> str:
        s = m.group(0)
        if s == "<":
            return "&lt;"
        if s == "![":
            return "!\\["
        return "\\" + s  # `](javascript:` -> `\](javascript:`: not a link any more

    return _RAW.sub(fix, text)


def _prose_line(line: str) -> str:
    """One line outside a fence: code spans kept, the rest neutralized."""
    if "`" not in line:
        return _neutralize(line)
    runs = [(m.start(), m.end()) for m in _TICKS.finditer(line)]
    # For each run length, the runs of that length in order: an opener's closer is the next
    # one of the same length (CommonMark), found by one pointer per length (linear).
    by_len: dict[int, list[int]] = {}
    for i, (a, b) in enumerate(runs):
        by_len.setdefault(b - a, []).append(i)
    next_of: dict[int, int] = {}
    for idxs in by_len.values():
        for k in range(len(idxs) - 1):
            next_of[idxs[k]] = idxs[k + 1]
    out: list[str] = []
    pos = 0
    i = 0
    while i < len(runs):
        j = next_of.get(i)
        if j is None:
            i += 1
            continue
        a, _ = runs[i]
        _, d = runs[j]
        out.append(_neutralize(line[pos:a]))
        out.append(line[a:d])  # the code span, as written
        pos = d
        i = j + 1
    out.append(_neutralize(line[pos:]))
    return "".join(out)


def md_body(text: str) -> str:
    """Message text as Markdown: fenced code blocks and code spans as written; elsewhere raw
    HTML tags, comments and images shown as text and script/data links not made links."""
    if not any(c in text for c in "<![]"):
        return text
    out: list[str] = []
    fence: str | None = None
    for line in text.split("\n"):
        m = _FENCE.match(line)
        if fence is not None:
            out.append(line)
            if (
                m
                and m.group(1)[0] == fence[0]
                and len(m.group(1)) >= len(fence)
                and not line[m.end() :].strip()
            ):
                fence = None
            continue
        if m:
            fence = m.group(1)
            out.append(line)
            continue
        out.append(_prose_line(line))
    return "\n".join(out)
