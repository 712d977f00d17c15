"""A conversation as one self-contained HTML page: no network, inline styles, tool calls and
results folded in ``<details>``, inline images embedded as data URLs."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..format.markup import css_class
from ..format.markup import html as escape
from .conversation import Branch, Folded, Image, Item, Message, Note, Text, Thinking, ToolCall

__all__ = ["HtmlDocument", "render_html"]

_STYLE = """
body { max-width: 60em; margin: 2em auto; padding: 0 1em; font: 15px/1.5 system-ui, sans-serif; color: #222; background: #fff; }
@media (prefers-color-scheme: dark) { body { color: #ddd; background: #1e1e1e; } .msg { border-color: #444; } pre { background: #2a2a2a; } }
h1 { font-size: 1.4em; } .meta { color: #777; font-size: .85em; }
.msg { border-left: 4px solid #ccc; padding: .2em 1em; margin: 1.2em 0; }
.msg.user { border-color: #2e7d32; } .msg.assistant { border-color: #7b1fa2; } .msg.toolResult, .msg.bashExecution { border-color: #999; }
.msg h2 { font-size: 1em; margin: .4em 0; } .label { background: #f9e79f; color: #333; border-radius: 3px; padding: 0 .4em; font-size: .85em; }
pre { white-space: pre-wrap; word-break: break-word; background: #f5f5f5; padding: .5em; border-radius: 4px; font-size: 13px; }
.text { white-space: pre-wrap; } details { margin: .4em 0; } summary { cursor: pointer; font-family: ui-monospace, monospace; font-size: 13px; }
.note { color: #777; font-style: italic; } .folded { border-left: 4px solid #ef6c00; padding: .2em 1em; }
.branch { border-top: 2px dashed #999; margin-top: 2em; padding-top: .5em; font-weight: bold; }
img { max-width: 100%; } .error { color: #c62828; }
"""


# An inline image is embedded only when its type and data are what they claim to be.
_MIME = re.compile(r"image/[A-Za-z0-9.+\-]{1,40}")
_BASE64 = re.compile(r"[A-Za-z0-9+/=\s]*")

# Nothing loads but data: images and the inline style; no script at all; no `<base>` or form
# target (neither is covered by default-src).
CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"


def _image(img: Image) -> str:
    if img.data is not None and _MIME.fullmatch(img.mime) and _BASE64.fullmatch(img.data):
        return f'<img alt="image" src="data:{escape(img.mime)};base64,{escape(img.data)}">'
    return f'<p class="note">[image: {escape(img.mime)}{", " + escape(img.ref) if img.ref else ""}]</p>'


def _call(call: ToolCall) -> str:
    err = call.result is not None and call.result.is_error
    body = f"<div>Arguments</div><pre>{escape(call.arguments)}</pre>"
    if call.result is not None:
        body += f'<div class="{"error" if err else ""}">Result{" (error)" if err else ""}</div>'
        body += f"<pre>{escape(call.result.text or '(empty)')}</pre>" + "".join(
            _image(i) for i in call.result.images
        )
    else:
        body += '<p class="note">(no result on this path)</p>'
    return f"<details><summary>🔧 {'✗ ' if err else ''}{escape(call.summary)}</summary>{body}</details>"


def _message(m: Message) -> str:
    lab = f' <span class="label">{escape(m.label)}</span>' if m.label else ""
    meta = " · ".join(x for x in (m.timestamp, m.entry_id) if x)
    out = [
        f'<section class="msg {css_class(m.role)}" id="e-{escape(m.entry_id or "")}">',
        f"<h2>{escape(m.title)}{lab}</h2>",
    ]
    if meta:
        out.append(f'<div class="meta">{escape(meta)}</div>')
    for p in m.parts:
        if isinstance(p, Text):
            cls = "text" if m.role in ("user", "assistant", "custom") else ""
            out.append(f'<div class="text">{escape(p.text)}</div>' if cls else f"<pre>{escape(p.text)}</pre>")
        elif isinstance(p, Thinking):
            out.append(
                f'<details><summary>Thinking</summary><div class="text">{escape(p.text)}</div></details>'
            )
        elif isinstance(p, Image):
            out.append(_image(p))
        elif isinstance(p, ToolCall):
            out.append(_call(p))
    out.append("</section>")
    return "".join(out)


def _item(item: Item) -> str:
    if isinstance(item, Message):
        return _message(item)
    if isinstance(item, Note):
        return f'<p class="note">{escape(item.text)}</p>'
    if isinstance(item, Folded):
        lab = f' <span class="label">{escape(item.label)}</span>' if item.label else ""
        return (
            f'<div class="folded" id="e-{escape(item.entry_id or "")}"><details><summary>{escape(item.title)}</summary>'
            f'<div class="text">{escape(item.text)}</div></details>{lab}</div>'
        )
    if isinstance(item, Branch):
        return f'<div class="branch">↳ {escape(item.title)}</div>'
    return ""


class HtmlDocument:
    """The page a part at a time: `head`, then `items` as they come, then `end` (the parts
    joined are `render_html`'s page)."""

    def head(self, title: str, meta: Sequence[tuple[str, str]]) -> str:
        """Everything before the first item."""
        return "\n".join(
            [
                "<!DOCTYPE html>",
                '<html lang="en"><head><meta charset="utf-8">',
                f'<meta http-equiv="Content-Security-Policy" content="{escape(CSP)}">',
                '<meta name="referrer" content="no-referrer">',
                f"<title>{escape(title)}</title><style>{_STYLE}</style></head><body>",
                f"<h1>{escape(title)}</h1>",
                '<ul class="meta">'
                + "".join(f"<li><b>{escape(k)}:</b> {escape(v)}</li>" for k, v in meta)
                + "</ul>",
            ]
        )

    def items(self, items: Sequence[Item]) -> str:
        """Items, a line each."""
        return "".join("\n" + _item(item) for item in items)

    def end(self, footer: str = "") -> str:
        """The footer and the end of the page."""
        tail = f'\n<hr><p class="meta">{escape(footer)}</p>' if footer else ""
        return tail + "\n</body></html>\n"


def render_html(items: Sequence[Item], title: str, meta: Sequence[tuple[str, str]], footer: str = "") -> str:
    """The whole page."""
    doc = HtmlDocument()
    return doc.head(title, meta) + doc.items(items) + doc.end(footer)
