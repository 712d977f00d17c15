"""A conversation as Markdown: a heading per message, tool calls and results folded in
``<details>`` (GitHub and most viewers render them), images referenced by type and size.

Every session-supplied string goes through `core.format.markup`: titles, labels, ids and
notes as inline text or code spans (no raw HTML, no link or image), message text as the
Markdown it is with raw HTML and images neutralized outside code, tool arguments and
results in fences longer than any run of backticks they hold."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..format.markup import html, md_body, md_code_span, md_inline
from .conversation import Branch, Folded, Image, Item, Message, Note, Text, Thinking, ToolCall

__all__ = ["MarkdownDocument", "render_markdown"]


def _fence(text: str, lang: str = "") -> str:
    longest = max((len(m) for m in re.findall(r"`{3,}", text)), default=2) if "```" in text else 2
    bar = "`" * (longest + 1)
    return f"{bar}{lang}\n{text.rstrip()}\n{bar}"


def _summary_text(s: str) -> str:
    # A <summary> is raw HTML (Markdown is not read inside it): one line, HTML-escaped.
    one = " ".join(s.split())
    return html(one if len(one) <= 160 else one[:159] + "…")


def _image(img: Image) -> str:
    if img.data is not None:
        return f"*[image: {md_inline(img.mime)}, {img.size // 1024} KB, not embedded]*"
    return f"*[image: {md_inline(img.mime)}{', ' + md_inline(img.ref) if img.ref else ''}]*"


def _details(summary: str, body: str) -> str:
    # `body` is Markdown made here (fences) or already neutralized (`md_body`).
    return f"<details>\n<summary>{_summary_text(summary)}</summary>\n\n{body.rstrip()}\n\n</details>"


def _call(call: ToolCall) -> str:
    body = ["**Arguments**", "", _fence(call.arguments, "json")]
    if call.result is not None:
        body += [
            "",
            "**Result" + (" (error)**" if call.result.is_error else "**"),
            "",
            _fence(call.result.text or "(empty)"),
        ]
        body += [_image(i) for i in call.result.images]
    else:
        body += ["", "*(no result on this path)*"]
    mark = "✗ " if call.result is not None and call.result.is_error else ""
    return _details(f"🔧 {mark}{call.summary}", "\n".join(body))


def _message(m: Message) -> str:
    head = f"## {md_inline(m.title)}"
    if m.label:
        head += f" 🏷 {md_code_span(m.label)}"
    out = [head]
    meta = " · ".join(
        x for x in (md_inline(m.timestamp or ""), md_code_span(m.entry_id) if m.entry_id else None) if x
    )
    if meta:
        out.append(f"<sub>{meta}</sub>")
    for p in m.parts:
        out.append("")
        if isinstance(p, Text):
            out.append(
                md_body(p.text.rstrip()) if m.role in ("user", "assistant", "custom") else _fence(p.text)
            )
        elif isinstance(p, Thinking):
            out.append(_details("Thinking", md_body(p.text)))
        elif isinstance(p, Image):
            out.append(_image(p))
        elif isinstance(p, ToolCall):
            out.append(_call(p))
    return "\n".join(out)


def _item(item: Item) -> str:
    if isinstance(item, Message):
        return _message(item)
    if isinstance(item, Note):
        return f"*{md_inline(item.text)}*"
    if isinstance(item, Folded):
        lab = f" 🏷 {md_code_span(item.label)}" if item.label else ""
        eid = f" <sub>{md_code_span(item.entry_id)}</sub>" if item.entry_id else ""
        return f"> **{md_inline(item.title)}**{lab}{eid}\n\n" + _details(item.title, md_body(item.text))
    if isinstance(item, Branch):
        return f"---\n\n### ↳ {md_inline(item.title)}"
    return ""


class MarkdownDocument:
    """The document a part at a time: `head`, then `items` as they come, then `end`.

    The parts joined are `render_markdown`'s document: the whitespace that ends a part is
    held back until something follows it (the document ends with one newline)."""

    def __init__(self) -> None:
        self._pending = ""

    def _out(self, text: str) -> str:
        text = self._pending + text if self._pending else text
        body = text.rstrip()
        self._pending = text[len(body) :]
        return body

    def head(self, title: str, meta: Sequence[tuple[str, str]]) -> str:
        """The title and the list of facts."""
        out = [f"# {md_inline(title)}", ""]
        out += [f"- **{md_inline(k)}:** {md_inline(v)}" for k, v in meta]
        return self._out("\n".join(out))

    def items(self, items: Sequence[Item]) -> str:
        """Items, each after a blank line."""
        return self._out("".join("\n\n" + _item(item) for item in items))

    def end(self, footer: str = "") -> str:
        """The footer and the last newline."""
        tail = f"\n\n---\n\n{md_inline(footer)}" if footer else ""
        return self._out(tail) + "\n"


def render_markdown(
    items: Sequence[Item], title: str, meta: Sequence[tuple[str, str]], footer: str = ""
) -> str:
    """The whole document."""
    doc = MarkdownDocument()
    return doc.head(title, meta) + doc.items(items) + doc.end(footer)
