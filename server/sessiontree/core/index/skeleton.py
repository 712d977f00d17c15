"""The skeleton of an entry: the few fields the tree, the view and the context read.

A session file of 100,000 entries is about 120 MB of JSON; parsing every line into dicts
costs about a second and 600 MB. The index keeps a `Skeleton` per entry instead (ids,
type, role, label, the byte range of its line, ...), and full entries are parsed on demand.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import msgspec

from ..format.jscompat import js_trim

__all__ = ["STATE_ENTRY_TYPES", "Skeleton", "call_ids_of", "compute_has_text", "skeleton_from_dict"]

# Entry types that only change the context's state (they matter on the whole path, even
# before a compaction's kept range).
STATE_ENTRY_TYPES = frozenset(
    {
        "thinking_level_change",
        "model_change",
        "context_change",
        "service_tier_change",
        "ttsr_injection",
        "mcp_tool_selection",
        "mode_change",
    }
)


class Skeleton(msgspec.Struct, array_like=True, gc=False):
    """The skeleton of one entry: what tree, view and context code need, without content.

    `offset`/`length` give the entry's line in the session file, or `offset == -1` when the
    entry is held in memory. `order` is the position in file order (0 = first entry after
    the header). The timestamp is not kept (73 MB for a million entries): only siblings are
    ordered by it, and the index reads theirs when it sorts them (`EntryIndex._ts_of`).
    """

    id: Any
    parent_id: Any
    type: Any
    order: int
    role: Any = None
    stop_reason: Any = None
    has_text: bool = False
    tool_call_id: Any = None
    target_id: Any = None
    label: Any = None
    custom_type: Any = None
    offset: int = -1
    length: int = 0
    # the ids of an assistant message's toolCall blocks in content order (a toolResult
    # row shows its call from them without reading every message); None for others
    call_ids: tuple[Any, ...] | None = None  # distinct, in content order


def compute_has_text(content: Any) -> bool:
    """Whether assistant content has a text block with non-whitespace text."""
    if isinstance(content, str):
        return bool(js_trim(content))
    if isinstance(content, list):
        for block in content:
            if isinstance(block, dict) and block.get("type") == "text":
                text = block.get("text")
                if isinstance(text, str) and js_trim(text):
                    return True
    return False


def skeleton_from_dict(entry: dict[str, Any], order: int) -> Skeleton:
    """The skeleton of an entry held in memory (offset -1)."""
    etype = entry.get("type")
    role = stop = tool_call_id = call_ids = None
    has_text = False
    if etype == "message":
        msg = entry.get("message")
        if isinstance(msg, dict):
            role = msg.get("role")
            stop = msg.get("stopReason")
            tool_call_id = msg.get("toolCallId")
            if role == "assistant":
                content = msg.get("content")
                has_text = compute_has_text(content)
                call_ids = call_ids_of(content)
    eid = entry.get("id")
    return Skeleton(
        eid if isinstance(eid, str) else None,
        entry.get("parentId"),
        etype,
        order,
        role,
        stop,
        has_text,
        tool_call_id,
        entry.get("targetId") if etype == "label" else None,
        entry.get("label") if etype == "label" else None,
        entry.get("customType"),
        -1,
        0,
        call_ids,
    )


def call_ids_of(content: Any) -> tuple[Any, ...]:
    """The hashable ids of the toolCall blocks of assistant content, in order, each once."""
    if not isinstance(content, list):
        return ()
    out = []
    for block in content:
        if isinstance(block, dict) and block.get("type") == "toolCall":
            cid = block.get("id")
            if isinstance(cid, Hashable):
                out.append(cid)
    return tuple(dict.fromkeys(out))
