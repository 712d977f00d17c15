"""The context of a node as pi 1.6 rebuilds it (`buildSessionContext`, session-manager.js).

pi's rules differ from xcsh's (`context.py`) in what follows; everything here works over
the root → leaf path (or the part of it `session.context_walk` materializes: the state
entries and the last assistant message before a compaction's kept range are enough).

* settings over the whole path: the thinking level starts ``"off"`` and each
  ``thinking_level_change`` sets its value as stored (null stays null); the model is the
  later of the last ``model_change {provider, modelId}`` and the last assistant message's
  ``{provider, model}`` (no roles);
* the context entries: the path, or with a compaction on it the last one, then the path
  entries from its ``firstKeptEntryId`` up to it except ``system`` messages, then the rest;
* ``context_edit {targetId, replacement}``: the latest edit of an entry among the context
  entries replaces its messages' content (``null`` removes them; a string for an assistant
  or tool result becomes one text block); only user, assistant, toolResult and custom
  messages are edited;
* the compaction gives its ``systemMessage`` (when it has one) before its summary message
  ``{role, summary, tokensBefore, timestamp}``; an older compaction kept in its range gives
  nothing; custom messages carry no attribution; a null message content is ``""`` (system)
  or ``[]`` (user, assistant, toolResult).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..format.jscompat import UNDEFINED, date_ms, js_get, js_string

__all__ = ["current_system_message", "pi_context_from_path"]


def _defined(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` without its undefined values (``JSON.stringify`` leaves them out)."""
    return {k: v for k, v in obj.items() if v is not UNDEFINED}


_EDITABLE_ROLES = frozenset({"user", "assistant", "toolResult", "custom"})
_ARRAY_CONTENT_ROLES = frozenset({"user", "assistant", "toolResult"})


def _settings(path: Sequence[Mapping[str, Any]]) -> tuple[Any, dict[str, Any] | None]:
    thinking: Any = "off"
    model: dict[str, Any] | None = None
    for entry in path:
        etype = entry.get("type")
        if etype == "thinking_level_change":
            thinking = js_get(entry, "thinkingLevel")
        elif etype == "model_change":
            model = _defined({"provider": js_get(entry, "provider"), "modelId": js_get(entry, "modelId")})
        elif etype == "message":
            message = entry.get("message")
            if isinstance(message, Mapping) and message.get("role") == "assistant":
                model = _defined(
                    {"provider": js_get(message, "provider"), "modelId": js_get(message, "model")}
                )
    return thinking, model


def _context_entries(path: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    compaction_index = -1
    for i, entry in enumerate(path):
        if entry.get("type") == "compaction":
            compaction_index = i
    if compaction_index < 0:
        return list(path)
    comp = path[compaction_index]
    first_kept = comp.get("firstKeptEntryId")
    out: list[Mapping[str, Any]] = [comp]
    found = False
    for entry in path[:compaction_index]:
        if entry.get("id") == first_kept:
            found = True
        if found and not _is_system_message(entry):
            out.append(entry)
    out.extend(path[compaction_index + 1 :])
    return out


def _is_system_message(entry: Mapping[str, Any]) -> bool:
    message = entry.get("message")
    return entry.get("type") == "message" and isinstance(message, Mapping) and message.get("role") == "system"


def _entry_messages(entry: Mapping[str, Any]) -> list[dict[str, Any]]:
    etype = entry.get("type")
    if etype == "message":
        message = entry.get("message")
        if not isinstance(message, Mapping):
            return [message] if message is not None else []  # type: ignore[list-item]
        role = message.get("role")
        if message.get("content") is None:  # null or missing (`content == null`)
            if role == "system":
                return [{**message, "content": ""}]
            if role in _ARRAY_CONTENT_ROLES:
                return [{**message, "content": []}]
        return [message]  # type: ignore[list-item]
    if etype == "custom_message":
        content = entry.get("content")
        return [
            _defined(
                {
                    "role": "custom",
                    "customType": js_get(entry, "customType"),
                    "content": content if content is not None else [],
                    "display": js_get(entry, "display"),
                    "details": js_get(entry, "details"),
                    "timestamp": date_ms(entry.get("timestamp")),
                }
            )
        ]
    if etype == "branch_summary":
        summary = entry.get("summary")
        if summary:
            return [
                _defined(
                    {
                        "role": "branchSummary",
                        "summary": summary,
                        "fromId": js_get(entry, "fromId"),
                        "timestamp": date_ms(entry.get("timestamp")),
                    }
                )
            ]
        return []
    if etype == "compaction":
        summary_msg = _defined(
            {
                "role": "compactionSummary",
                "summary": js_get(entry, "summary"),
                "tokensBefore": js_get(entry, "tokensBefore"),
                "timestamp": date_ms(entry.get("timestamp")),
            }
        )
        system = entry.get("systemMessage")
        return [system, summary_msg] if system else [summary_msg]
    return []


def _edited(messages: list[dict[str, Any]], edit: Mapping[str, Any]) -> list[dict[str, Any]]:
    replacement = js_get(edit, "replacement")
    if replacement is None:
        return []
    out: list[dict[str, Any]] = []
    for message in messages:
        role = message.get("role") if isinstance(message, Mapping) else None
        if role not in _EDITABLE_ROLES:
            out.append(message)
            continue
        content = js_get(replacement, "content") if isinstance(replacement, Mapping) else UNDEFINED
        if role in ("assistant", "toolResult") and isinstance(content, str):
            content = [{"type": "text", "text": content}]
        out.append(_defined({**message, "content": content}))
    return out


def pi_context_from_path(
    path: Sequence[Mapping[str, Any]],
) -> tuple[list[dict[str, Any]], Any, dict[str, Any] | None]:
    """``(messages, thinking level, model)`` of a root → leaf path, as pi 1.6 builds them."""
    thinking, model = _settings(path)
    entries = _context_entries(path)
    edits: dict[Any, Mapping[str, Any]] = {}
    for entry in entries:
        if entry.get("type") == "context_edit":
            edits[entry.get("targetId")] = entry
    messages: list[dict[str, Any]] = []
    for index, entry in enumerate(entries):
        if entry.get("type") == "compaction" and index > 0:
            continue  # an older compaction inside the kept range: only the newest counts
        got = _entry_messages(entry)
        edit = edits.get(entry.get("id"))
        if edit is not None:
            got = _edited(got, edit)
        messages.extend(got)
    return messages, thinking, model


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            js_string(js_get(b, "text"))
            for b in content
            if isinstance(b, Mapping) and b.get("type") == "text"
        )
    return ""


def current_system_message(messages: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """pi-ai's ``getCurrentSystemMessage``: every system message replayed into one (their
    contents joined, ``sections`` patched by name with null removing one, the tools added
    and removed in order); None when there is no system message and no tool."""
    content: list[str] = []
    sections: dict[str, Any] = {}
    tools: dict[Any, Any] = {}
    timestamp: Any = UNDEFINED
    for message in messages:
        if not isinstance(message, Mapping) or message.get("role") != "system":
            continue
        if timestamp is UNDEFINED or timestamp is None:
            timestamp = js_get(message, "timestamp")
        text = _content_text(message.get("content"))
        if text:
            content.append(text)
        patch = message.get("sections")
        if isinstance(patch, Mapping):
            for name, value in patch.items():
                if value is None:
                    sections.pop(name, None)
                else:
                    sections[name] = value
        for tool in message.get("toolsRemoved") or []:
            if isinstance(tool, Mapping):
                tools.pop(tool.get("name"), None)
        for tool in message.get("toolsAdded") or []:
            if isinstance(tool, Mapping):
                tools[tool.get("name")] = tool
    if (timestamp is UNDEFINED or timestamp is None) and not tools:
        return None
    out: dict[str, Any] = {"role": "system", "content": "\n\n".join(content)}
    if sections:
        out["sections"] = sections
    if tools:
        out["toolsAdded"] = list(tools.values())
    out["timestamp"] = 0 if timestamp is UNDEFINED or timestamp is None else timestamp
    return out
