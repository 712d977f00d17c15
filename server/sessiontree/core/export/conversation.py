"""An exported path read as a conversation: messages with their parts, tool calls paired
with their results, state changes as notes. Markdown and HTML both draw this."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from ..view.display import format_tool_call

__all__ = [
    "Branch",
    "ConversationStream",
    "Folded",
    "Image",
    "Message",
    "Note",
    "Part",
    "Text",
    "ToolCall",
    "build_conversation",
    "hold_points",
    "plan_agrees",
]


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


def _plain(v: Any) -> bool:
    """Whether ``v`` holds only what orjson writes as `json.dumps` does: strings, ints,
    booleans, null, lists and string-keyed objects (a float may be written otherwise)."""
    t = type(v)
    if t is str or t is int or t is bool or v is None:
        return True
    if t is dict:
        return all(type(k) is str and _plain(x) for k, x in v.items())
    if t is list:
        return all(_plain(x) for x in v)
    return False


def pretty_json(v: Any) -> str:
    """``json.dumps(v, ensure_ascii=False, indent=2)``, made by orjson when that is the same
    text (Python's indenting encoder is slow and leaves reference cycles behind)."""
    if _plain(v):
        try:
            return orjson.dumps(v, option=orjson.OPT_INDENT_2).decode("utf-8")
        except TypeError:  # an int past 64 bits, a lone surrogate
            pass
    return json.dumps(v, ensure_ascii=False, indent=2)


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
                    arguments=pretty_json(args),
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


class ConversationStream:
    """`build_conversation` fed an entry at a time: the items ready to be written come out
    as soon as nothing later can change them.

    A tool call's result is drawn inside the call, and a result may come long after its
    message (or never). ``holds`` (`hold_points`) says, for an assistant message, the last
    position whose entry may still be one of its calls' results: the message, and what
    follows it, wait until that entry has been fed. Without ``holds`` nothing waits (the
    caller keeps every item until the end, as `build_conversation` does).
    """

    def __init__(
        self, labels: Mapping[str, str] | None = None, holds: Mapping[int, int] | None = None
    ) -> None:
        self.labels: Mapping[str, str] = labels or {}
        self.holds = holds
        self.calls: dict[str, ToolCall] = {}
        self.prev: str | None = None
        self.started = False
        self.pos = -1
        self.until = -1
        self.queue: list[Item] = []

    def hold_all(self) -> None:
        """Keep every item until `finish` (a plan that cannot be trusted)."""
        self.until = _FOREVER

    def feed(self, e: Mapping[str, Any]) -> list[Item]:
        """The items of entry ``e`` (already redacted) and of those before it that are ready."""
        self.pos += 1
        if self._add(e) and self.holds is not None:
            until = self.holds.get(self.pos)
            if until is not None and until > self.until:
                self.until = until
        if self.pos < self.until:
            return []
        out, self.queue = self.queue, []
        if self.holds is not None:
            # Released: no later entry can be a result of these calls (the plan says so),
            # so they are let go (a call a result was given to is found by no later one).
            calls = self.calls
            for item in out:
                if isinstance(item, Message) and item.role == "assistant":
                    for p in item.parts:
                        if isinstance(p, ToolCall) and p.call_id and calls.get(p.call_id) is p:
                            del calls[p.call_id]
        return out

    def finish(self) -> list[Item]:
        """Every item still waiting."""
        out, self.queue = self.queue, []
        return out

    def _add(self, e: Mapping[str, Any]) -> bool:
        """Queue the items of ``e``; True when it is an assistant message."""
        items = self.queue
        labels = self.labels
        calls = self.calls
        eid = e.get("id") if isinstance(e.get("id"), str) else None
        pid = e.get("parentId")
        if self.started and pid != self.prev:
            items.append(Branch(pid if isinstance(pid, str) else None, f"Branch from {pid}"))
        self.prev = eid
        label = labels.get(eid) if eid else None
        et = e.get("type")
        ts = _s(e.get("timestamp")) or None
        n = len(items)
        assistant = False
        if et == "message":
            msg = e.get("message")
            if not isinstance(msg, Mapping):
                return False
            role = _s(msg.get("role"))
            if role == "toolResult":
                cid = msg.get("toolCallId")
                call = calls.get(cid) if isinstance(cid, str) else None
                if call is not None and call.result is None:
                    call.result = _result_of(msg)
                    return False
                res = _result_of(msg)
                m = Message(
                    "toolResult", f"Tool result ({_s(msg.get('toolName')) or '?'})", eid, ts, label=label
                )
                m.parts.append(Text(res.text))
                m.parts.extend(res.images)
                items.append(m)
                self.started = True
                return False
            if role == "user":
                m = Message("user", "User", eid, ts, _content_parts(msg.get("content")), label)
            elif role == "assistant":
                assistant = True
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
                self.started = True
                return False
            elif role == "compactionSummary":
                items.append(Folded("Compaction summary", _s(msg.get("summary")), eid, label))
                self.started = True
                return False
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
        if len(items) > n:
            self.started = True
        return assistant


_FOREVER = 1 << 62


def hold_points(skeletons: Sequence[Any], changed: Callable[[str], bool] | None = None) -> dict[int, int]:
    """For each position of ``skeletons`` (an export's entries, in order) holding an assistant
    message whose calls may get a result further on: the last position such a result may be
    at (`ConversationStream`). Read from the skeletons' call ids and result ids alone.

    ``changed(id)``: whether redaction may change that id (then the ids it pairs with
    cannot be told beforehand: such a message waits for the last result with such an id).
    """
    latest: dict[str, int] = {}
    holds: dict[int, int] = {}
    unsure: list[int] = []
    last_unsure = -1
    for pos, sk in enumerate(skeletons):
        if sk.type != "message":
            continue
        role = sk.role
        if role == "toolResult":
            tid = sk.tool_call_id
            if not isinstance(tid, str):
                continue
            if changed is not None and changed(tid):
                last_unsure = pos
                continue
            at = latest.get(tid)
            if at is not None:
                holds[at] = pos
        elif role == "assistant" and sk.call_ids:
            for cid in sk.call_ids:
                if not isinstance(cid, str) or not cid:
                    continue
                if changed is not None and changed(cid):
                    unsure.append(pos)
                else:
                    latest[cid] = pos
    for pos in unsure:
        if last_unsure > pos and holds.get(pos, -1) < last_unsure:
            holds[pos] = last_unsure
    return holds


def plan_agrees(sk: Any, e: Mapping[str, Any]) -> bool:
    """Whether entry ``e`` (as read, before redaction) has the call and result ids its
    skeleton told `hold_points`."""
    if e.get("type") != "message":
        return True
    msg = e.get("message")
    if not isinstance(msg, Mapping):
        return True
    role = msg.get("role")
    if role == "toolResult":
        tid = msg.get("toolCallId")
        return not isinstance(tid, str) or (sk.role == "toolResult" and tid == sk.tool_call_id)
    if role == "assistant":
        content = msg.get("content")
        if not isinstance(content, list):
            return True
        known = sk.call_ids or ()
        for b in content:
            if isinstance(b, Mapping) and b.get("type") == "toolCall":
                cid = b.get("id")
                if isinstance(cid, str) and cid and (sk.role != "assistant" or cid not in known):
                    return False
    return True


def build_conversation(
    entries: Sequence[Mapping[str, Any]], labels: Mapping[str, str] | None = None
) -> list[Item]:
    """The items of ``entries`` (already redacted), in order."""
    stream = ConversationStream(labels)
    items: list[Item] = []
    for e in entries:
        items += stream.feed(e)
    return items + stream.finish()
