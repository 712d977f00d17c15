"""The display text of an entry: the one line the agent's ``/tree`` selector shows for it.

`display_text` follows the agent's selector by entry type (a user message's first 200
characters, an assistant's text or its stop reason, a tool result as the tool call it
answers, ``[compaction: 12k tokens]``, ...); `format_tool_call` is the display of one tool
call (paths shortened against the home directory). Every JavaScript rule they follow
(``String()``, ``trim()``, UTF-16 lengths, ``JSON.stringify``) is `format.jscompat`'s.
"""

from __future__ import annotations

import math
import os
from collections.abc import Hashable, Mapping
from typing import Any, Final, Protocol

from ..format.content import content_text
from ..format.jscompat import (
    UNDEFINED,
    js_get,
    js_number,
    js_or,
    js_round,
    js_string,
    js_trim,
    js_truthy,
    json_stringify,
    utf16_length,
    utf16_slice,
)

__all__ = ["ToolCallMap", "display_text", "extract_content", "format_tool_call", "home_dir", "normalize"]

_EXTRACT_LIMIT: Final = 200


def normalize(s: Any) -> str:
    """Newlines and tabs to spaces, then JS ``trim()``."""
    if not isinstance(s, str):
        s = "" if s is None else js_string(s)
    return js_trim(s.replace("\n", " ").replace("\t", " "))


def extract_content(content: Any) -> str:
    """The first 200 characters of a string, or of the concatenated text blocks."""
    if isinstance(content, str):
        return utf16_slice(content, _EXTRACT_LIMIT)
    if isinstance(content, list):
        out = ""
        for block in content:
            if isinstance(block, Mapping) and block.get("type") == "text":
                text = block.get("text")
                if isinstance(text, str):
                    out += text
                    if utf16_length(out) >= _EXTRACT_LIMIT:
                        return utf16_slice(out, _EXTRACT_LIMIT)
        return out
    return ""


def _join_text(content: Any) -> str:
    return content_text(content)


def home_dir() -> str:
    """The home directory paths are shortened against (``$HOME``, else ``%USERPROFILE%``)."""
    return os.environ.get("HOME") or os.environ.get("USERPROFILE") or ""


def format_tool_call(name: Any, args: Any, home: str | None = None) -> str:
    """The tree selector's one-line display of a tool call (docs/tree-view.md)."""
    home = home_dir() if home is None else home
    a: Mapping[str, Any] = args if isinstance(args, Mapping) else {}

    def shorten(p: str) -> str:
        return "~" + p[len(home) :] if home and p.startswith(home) else p

    if name == "read":
        display = shorten(js_string(js_or(a.get("path"), a.get("file_path"), "")))
        if "offset" in a or "limit" in a:
            offset = a.get("offset")
            start: Any = offset if offset is not None else 1
            end: Any = ""
            if "limit" in a:
                limit = a.get("limit")
                lim = 0 if limit is None else limit
                if isinstance(start, int | float) and isinstance(lim, int | float):
                    end = start + lim - 1
                else:
                    end = math.nan
            display += ":" + js_string(start) + (f"-{js_string(end)}" if js_truthy(end) else "")
        return f"[read: {display}]"
    if name in ("write", "edit"):
        return f"[{name}: {shorten(js_string(js_or(a.get('path'), a.get('file_path'), '')))}]"
    if name == "bash":
        raw = a.get("command")
        cmd = js_string(js_or(raw, ""))
        cmd = utf16_slice(js_trim(cmd.replace("\n", " ").replace("\t", " ")), 50)
        more = isinstance(raw, str) and utf16_length(raw) > 50
        return f"[bash: {cmd}{'...' if more else ''}]"
    if name == "grep":
        pattern = js_string(js_or(a.get("pattern"), ""))
        return f"[grep: /{pattern}/ in {shorten(js_string(js_or(a.get('path'), '.')))}]"
    if name == "find":
        pattern = js_string(js_or(a.get("pattern"), ""))
        return f"[find: {pattern} in {shorten(js_string(js_or(a.get('path'), '.')))}]"
    if name == "ls":
        return f"[ls: {shorten(js_string(js_or(a.get('path'), '.')))}]"
    raw_json = json_stringify(args if args is not None and args is not UNDEFINED else {})
    cut = utf16_slice(raw_json, 40)
    return f"[{js_string(name)}: {cut}{'...' if utf16_length(raw_json) > 40 else ''}]"


def _model_change_name(entry: Mapping[str, Any]) -> str:
    # DIVERGENCE 8: older pi writes `provider` and `modelId` instead of `model`; the
    # reference prints `undefined` for those, sessiontree names the model.
    if "model" not in entry:
        model_id = entry.get("modelId")
        provider = entry.get("provider")
        if isinstance(model_id, str) and model_id:
            return f"{provider}/{model_id}" if isinstance(provider, str) and provider else model_id
    return js_string(js_get(entry, "model"))


class ToolCallMap(Protocol):
    """The selector's tool-call map: a call id to ``{"name", "arguments"}``."""

    def get(self, key: Any, /) -> Any: ...


def display_text(
    entry: Mapping[str, Any], tool_calls: ToolCallMap | None = None, home: str | None = None
) -> str:
    """The one-line text of an entry as the tree selector shows it (without label/marker).

    ``tool_calls`` maps a toolCallId to ``{"name", "arguments"}`` (the selector's tool-call
    map); ``home`` overrides ``$HOME`` for path shortening.
    """
    etype = entry.get("type")
    if etype == "message":
        msg = entry.get("message")
        if not isinstance(msg, Mapping):
            msg = {}
        role = msg.get("role")
        if role == "user":
            return "user: " + normalize(extract_content(msg.get("content")))
        if role == "assistant":
            text = normalize(extract_content(msg.get("content")))
            if text:
                return "assistant: " + text
            if msg.get("stopReason") == "aborted":
                return "assistant: (aborted)"
            err = msg.get("errorMessage")
            if js_truthy(err):
                return "assistant: " + utf16_slice(normalize(err), 80)
            return "assistant: (no content)"
        if role == "toolResult":
            call_id = msg.get("toolCallId")
            tc = tool_calls.get(call_id) if tool_calls is not None and isinstance(call_id, Hashable) else None
            if tc:
                return format_tool_call(js_get(tc, "name"), js_get(tc, "arguments"), home)
            tool_name = msg.get("toolName")
            return f"[{js_string(tool_name)}]" if js_truthy(tool_name) else "[tool]"
        if role == "bashExecution":
            return "[bash]: " + normalize(msg.get("command"))
        return f"[{js_string(js_get(msg, 'role'))}]"
    if etype == "custom_message":
        return f"[{js_string(js_get(entry, 'customType'))}]: " + normalize(_join_text(entry.get("content")))
    if etype == "compaction":
        tokens = entry.get("tokensBefore")
        if isinstance(tokens, int | float) and not isinstance(tokens, bool):
            n = js_number(js_round(tokens / 1000))
        else:
            n = "NaN"  # Math.round(undefined / 1000)
        return f"[compaction: {n}k tokens]"
    if etype == "branch_summary":
        return "[branch summary]: " + normalize(entry.get("summary"))
    if etype == "model_change":
        return f"[model: {_model_change_name(entry)}]"
    if etype == "thinking_level_change":
        level = entry.get("thinkingLevel")
        return f"[thinking: {'off' if level is None else js_string(level)}]"
    if etype == "custom":
        return f"[custom: {js_string(js_get(entry, 'customType'))}]"
    if etype == "label":
        label = entry.get("label")
        return f"[label: {js_string(label) if js_truthy(label) else '(cleared)'}]"
    return _bookkeeping_text(entry, etype)


def _bookkeeping_text(entry: Mapping[str, Any], etype: Any) -> str:
    """The row of an entry beyond the reference's selector, in the words of the agent that
    writes it (pi 1.6, oh-my-pi 18), and ``[its type]`` for any other: a row that says
    nothing draws as a gap no one can explain (docs/divergences.md, "Every row says what
    it is")."""
    if etype == "session_info":  # pi
        name = entry.get("name")
        return f"[title: {normalize(name) if js_truthy(name) else 'empty'}]"
    if etype == "title_change":  # oh-my-pi
        return f"[title: {normalize(entry.get('title'))}]"
    if etype == "context_edit":  # pi
        verb = "omit" if entry.get("replacement") is None else "replace"
        return f"[context {verb}: {js_string(js_get(entry, 'targetId'))}]"
    if etype == "usage":  # pi
        return f"[usage: {js_string(js_get(entry, 'kind'))}]"
    if etype == "model_usage":  # oh-my-pi
        role = entry.get("role")
        role_part = f"{js_string(role)} " if js_truthy(role) else ""
        return (
            f"[model usage: {js_string(js_get(entry, 'purpose'))} {role_part}"
            f"{js_string(js_get(entry, 'provider'))}/{js_string(js_get(entry, 'model'))}]"
        )
    if etype == "credential_pin":  # oh-my-pi
        return f"[credential pin: {js_string(js_get(entry, 'provider'))}]"
    if etype == "service_tier_change":
        tier = entry.get("serviceTier")
        if isinstance(tier, Mapping):
            shown = " ".join(f"{k}:{js_string(v)}" for k, v in tier.items()) or "(default)"
        else:
            shown = js_string(tier) if js_truthy(tier) else "(default)"
        return f"[service tier: {shown}]"
    if etype == "mode_change":
        return f"[mode: {js_string(js_get(entry, 'mode'))}]"
    if isinstance(etype, str) and etype:
        return f"[{normalize(etype.replace('_', ' '))}]"
    return "[entry]"
