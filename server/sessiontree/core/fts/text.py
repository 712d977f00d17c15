"""The searchable text of an entry, by the rules of in-session search (core/view/search.py).

The text is the entry's searchable parts and the part of its display text they do not
already hold (`search_display`), that part first; a toolResult shows the call it answers (``[read:
src/x.py]``), found by its call id among the calls indexed before it. Capped at
`MAX_TEXT_CHARS` so that one huge tool output does not dominate the index's size.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any

from ..format.jsonl import scrub_text
from ..view.display import display_text, format_tool_call
from ..view.search import search_display, searchable_parts
from ..view.tool_calls import calls_of

__all__ = ["MAX_TEXT_CHARS", "entry_calls", "entry_role", "entry_text"]

MAX_TEXT_CHARS = 32768

_TOOL_ROLES = {"toolResult", "bashExecution"}


def entry_role(entry: Mapping[str, Any]) -> str:
    """``user``, ``assistant``, ``tool`` (tool results, bash executions) or ``other``."""
    if entry.get("type") == "message":
        msg = entry.get("message")
        role = msg.get("role") if isinstance(msg, Mapping) else None
        if role == "user" or role == "assistant":
            return str(role)
        if role in _TOOL_ROLES:
            return "tool"
    return "other"


def entry_calls(entry: Mapping[str, Any], home: str | None) -> dict[str, str]:
    """The calls an assistant message makes: call id -> the display a result shows."""
    out: dict[str, str] = {}
    for call in calls_of(entry):
        cid = call.get("id")
        if isinstance(cid, str):
            out[cid] = format_tool_call(call.get("name"), call.get("arguments"), home)
    return out


def entry_text(entry: Mapping[str, Any], call_shown: str | None = None) -> str:
    """The text the index holds for ``entry`` (``call_shown``: the display of the call a
    toolResult answers, when known)."""
    parts = searchable_parts(entry)
    shown = search_display(entry)
    if not shown and entry.get("type") == "message":
        msg = entry.get("message")
        if isinstance(msg, Mapping) and isinstance(msg.get("toolCallId"), Hashable):
            shown = call_shown if call_shown is not None else display_text(entry)
    if shown:
        # What the row shows first (a snippet then reads like the row: "user: ..."); the
        # role word alone goes when the shown prefix is that word ("user:" holds "user").
        if parts and shown.rstrip(":") == parts[0]:
            parts = parts[1:]
        parts.insert(0, shown)
    text = scrub_text(" ".join(p for p in parts if p))
    return text if len(text) <= MAX_TEXT_CHARS else text[:MAX_TEXT_CHARS]
