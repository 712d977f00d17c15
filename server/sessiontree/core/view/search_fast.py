"""The searchable text of the common messages straight from their lines (no dicts).

A first search needs the searchable text of every entry; building an entry dict per line
and walking it costs about ten times parsing the file. User messages, assistant messages
with text and tool results (most of a session) have a text that depends on a few fields
only: the role, the first 200 characters of the text blocks, and for a tool result its
call id. Those are decoded with msgspec into small structs (the rest of the line is
skipped by the C decoder), and the text is built exactly as `search.fill_search_text`
builds it from the entry; every other line, and any line that does not decode into
those shapes, is left to it.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator
from typing import Any, Final

import msgspec

from ..format.jscompat import js_trim, utf16_length, utf16_slice
from ..format.jsonl import scrub_text
from ..index import Skeleton

__all__ = ["FAST_ROLES", "fast_search_texts"]

FAST_ROLES: Final = frozenset({"user", "assistant", "toolResult"})
_LIMIT: Final = 200  # display.extract_content's


class _Block(msgspec.Struct, gc=False):
    type: Any = None
    text: Any = None


class _Message(msgspec.Struct, gc=False):
    role: Any = None
    content: str | list[_Block] | None = None
    toolCallId: Any = None


class _Entry(msgspec.Struct, gc=False):
    type: Any = None
    id: Any = None
    message: _Message | None = None


_DECODER = msgspec.json.Decoder(_Entry)


def _extract(content: str | list[_Block] | None) -> str:
    """`display.extract_content` of decoded content."""
    if isinstance(content, str):
        return utf16_slice(content, _LIMIT)
    if isinstance(content, list):
        out = ""
        for block in content:
            if block.type == "text":
                text = block.text
                if isinstance(text, str):
                    out += text
                    if utf16_length(out) >= _LIMIT:
                        return utf16_slice(out, _LIMIT)
        return out
    return ""


def fast_search_texts(
    lines: Iterator[tuple[Skeleton, memoryview]],
) -> Iterator[tuple[Skeleton, str | None, Any]]:
    """(skeleton, lowercased searchable text, tool-call id or None) per line; the text is
    None for a line this cannot do (the caller builds it from the entry)."""
    decode = _DECODER.decode
    for sk, line in lines:
        try:
            e = decode(line)
        except msgspec.DecodeError:
            yield sk, None, None
            continue
        m = e.message
        if e.id != sk.id or e.type != "message" or m is None or m.role != sk.role:
            yield sk, None, None
            continue
        role = m.role
        content = m.content
        shown_text = _extract(content) if (content or isinstance(content, list)) else None
        call = None
        if role == "user":
            shown = "user:"
        elif role == "assistant":
            if not js_trim(_extract(content)):
                yield sk, None, None  # its display is the full rule's
                continue
            shown = "assistant:"
        elif role == "toolResult":
            call = m.toolCallId
            if not isinstance(call, Hashable):
                yield sk, None, None
                continue
            shown = ""
        else:
            yield sk, None, None
            continue
        parts = [role] if shown_text is None else [role, shown_text]
        if shown:
            parts.append(shown)
        yield sk, scrub_text(" ".join(parts)).lower(), call
