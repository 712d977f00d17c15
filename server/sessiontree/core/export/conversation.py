"""An exported path read as a conversation: messages with their parts, tool calls paired
with their results, state changes as notes. Markdown and HTML both draw this."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..view.display import format_tool_call

__all__ = ["Branch", "Folded", "Image", "Message", "Note", "Part", "Text", "ToolCall", "build_conversation"]


@dataclass
class Text:
    text: str


@dataclass
class Thinking:
    text: str


@dataclass
class Image:
    mime: str
    data: str | None
    """Inline base64 data, or None when the image is only referenced."""
    ref: str | None = None
    size: int = 0


@dataclass
class ToolResult:
    text: str
    is_error: bool = False
    images: list[Image] = field(default_factory=list)


@dataclass
class ToolCall:
    name: str
    summary: str
    arguments: str
    call_id: str | None
    result: ToolResult | None = None


Part = Text | Thinking | Image | ToolCall


@dataclass
class Message:
    role: str
    title: str
    entry_id: str | None
    timestamp: str | None
    parts: list[Part] = field(default_factory=list)
    label: str | None = None


@dataclass
class Note:
    """A state change (model, thinking level, mode) or a label, in one line."""

    text: str
    entry_id: str | None


@dataclass
class Folded:
    """A compaction or branch summary: a title and the folded text."""

    title: str
    text: str
    entry_id: str | None
    label: str | None = None


@dataclass
class Branch:
    """In a subtree export: the next entries continue from ``parent_id``, not the previous one."""

    parent_id: str | None
    title: str


Item = Message | Note | Folded | Branch


def _s(v: Any) -> str:
    return v if isinstance(v, str) else ("" if v is None else json.dumps(v, ensure_ascii=False))


def _image(block: Mapping[str, Any]) -> Image:
    data = block.get("data")
    mime = _s(block.get("mimeType")) or "image"
    if isinstance(data, str) and not data.startswith("blob:"):
        return Image(mime, data, None, len(data) * 3 // 4)
    return Image(mime, None, _s(data) or None)


def _content_parts(content: Any) -> list[Part]:
    if isinstance(content, str):
        return [Text(content)] if content else []
    parts: list[Part] = []
    if not isinstance(content, list):
        return parts
    for b in content:
        if not isinstance(b, Mapping):
            continue
        t = b.get("type")
        if t == "text" and _s(b.get("text")).strip():
            parts.append(Text(_s(b.get("text"))))
        elif t == "thinking" and _s(b.get("thinking")).strip():
            parts.append(Thinking(_s(b.get("thinking"))))
        elif t == "image":
            parts.append(_image(b))
        elif t == "toolCall":
            args = b.get("arguments")
            parts.append(
                ToolCall(
                    name=_s(b.get("name")) or "(no name)",
                    summary=format_tool_call(
                        b.get("name"), args if isinstance(args, Mapping) else {}, home=""
                    ),
                    arguments=json.dumps(args, ensure_ascii=False, indent=2),
                    call_id=b.get("id") if isinstance(b.get("id"), str) else None,
                )
            )
    return parts


def _result_of(msg: Mapping[str, Any]) -> ToolResult:
    content = msg.get("content")
    texts = [p.text for p in _content_parts(content) if isinstance(p, Text)]
    images = [p for p in _content_parts(content) if isinstance(p, Image)]
    return ToolResult("\n".join(texts), bool(msg.get("isError")), images)


def _assistant_title(msg: Mapping[str, Any]) -> str:
    model = "/".join(_s(x) for x in (msg.get("provider"), msg.get("model")) if x)
    return f"Assistant ({model})" if model else "Assistant"


def build_conversation(
    entries: Sequence[Mapping[str, Any]], labels: Mapping[str, str] | None = None
) -> list[Item]:
    """The items of ``entries`` (already redacted), in order."""
    labels = labels or {}
    items: list[Item] = []
    calls: dict[str, ToolCall] = {}
    prev: str | None = None
    for e in entries:
        eid = e.get("id") if isinstance(e.get("id"), str) else None
        pid = e.get("parentId")
        if items and pid != prev:
            items.append(Branch(pid if isinstance(pid, str) else None, f"Branch from {pid}"))
        prev = eid
        label = labels.get(eid) if eid else None
        et = e.get("type")
        ts = _s(e.get("timestamp")) or None
        if et == "message":
            msg = e.get("message")
            if not isinstance(msg, Mapping):
                continue
            role = _s(msg.get("role"))
            if role == "toolResult":
                cid = msg.get("toolCallId")
                call = calls.get(cid) if isinstance(cid, str) else None
                if call is not None and call.result is None:
                    call.result = _result_of(msg)
                    continue
                res = _result_of(msg)
                m = Message(
                    "toolResult", f"Tool result ({_s(msg.get('toolName')) or '?'})", eid, ts, label=label
                )
                m.parts.append(Text(res.text))
                m.parts.extend(res.images)
                items.append(m)
                continue
            if role == "user":
                m = Message("user", "User", eid, ts, _content_parts(msg.get("content")), label)
            elif role == "assistant":
                m = Message(
                    "assistant", _assistant_title(msg), eid, ts, _content_parts(msg.get("content")), label
                )
                if msg.get("errorMessage"):
                    m.parts.append(Text(f"error: {_s(msg.get('errorMessage'))}"))
                for p in m.parts:
                    if isinstance(p, ToolCall) and p.call_id:
                        calls[p.call_id] = p
            elif role == "bashExecution":
                call = ToolCall("bash", f"$ {_s(msg.get('command'))}", _s(msg.get("command")), None)
                call.result = ToolResult(_s(msg.get("output")), bool(msg.get("exitCode")))
                m = Message("bashExecution", "User ran a command", eid, ts, [call], label)
            elif role in ("custom", "hookMessage"):
                m = Message(
                    role,
                    _s(msg.get("customType")) or role,
                    eid,
                    ts,
                    _content_parts(msg.get("content")),
                    label,
                )
            elif role == "branchSummary":
                items.append(Folded("Branch summary", _s(msg.get("summary")), eid, label))
                continue
            elif role == "compactionSummary":
                items.append(Folded("Compaction summary", _s(msg.get("summary")), eid, label))
                continue
            else:
                m = Message(
                    role or "message", role or "message", eid, ts, _content_parts(msg.get("content")), label
                )
            items.append(m)
        elif et == "custom_message":
            m = Message(
                "custom",
                _s(e.get("customType")) or "custom message",
                eid,
                ts,
                _content_parts(e.get("content")),
                label,
            )
            items.append(m)
        elif et == "compaction":
            before = e.get("tokensBefore")
            title = "Compaction" + (f" ({_s(before)} tokens before)" if before is not None else "")
            items.append(Folded(title, _s(e.get("summary")), eid, label))
        elif et == "branch_summary":
            items.append(Folded("Branch summary", _s(e.get("summary")), eid, label))
        elif et == "model_change":
            model = "/".join(_s(x) for x in (e.get("provider"), e.get("modelId") or e.get("model")) if x)
            items.append(Note(f"model: {model}", eid))
        elif et == "thinking_level_change":
            items.append(Note(f"thinking level: {_s(e.get('thinkingLevel'))}", eid))
        elif et == "mode_change":
            items.append(Note(f"mode: {_s(e.get('mode'))}", eid))
        elif et == "label":
            lab = e.get("label")
            items.append(
                Note(
                    f"label {lab!s} on {_s(e.get('targetId'))}"
                    if lab
                    else f"label cleared on {_s(e.get('targetId'))}",
                    eid,
                )
            )
        # other entries (custom state, session info) carry nothing a reader follows
    return items
