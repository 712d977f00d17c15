"""Codex CLI rollouts (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`) as pi entries.

A rollout is one linear thread: each line `{timestamp, type, payload}` follows the one
before it. `session_meta` opens it (id, cwd, `forked_from_id` for a fork,
`parent_thread_id` / `source.subagent.thread_spawn` for a subagent thread);
`response_item` lines are the conversation the model saw (messages, reasoning,
function and custom tool calls and their outputs); `event_msg` lines are what the UI showed
(mostly copies of the response items) and `turn_context` the settings of a turn;
`compacted` replaces the history before it. The mapping (docs/other-agents.md):

- `message` items: user and assistant messages (developer messages, the instructions
  Codex sends, are custom entries `codex:developer`);
- `reasoning` with readable summary text: an assistant message with thinking blocks (only
  encrypted content: custom `codex:reasoning`);
- `function_call`, `custom_tool_call`, `local_shell_call`, `tool_search_call`,
  `web_search_call`: assistant messages with one toolCall (exec_command and shell shown as
  bash), their `*_output` items toolResult messages;
- `compacted`: a pi compaction; `session_meta`, `turn_context`, every `event_msg` and
  anything unknown: custom entries (`codex:<type>`), hidden by the default filter.

Entry ids are `<session id prefix>-<line number>`, so appended lines get new ids and a
reread gives the same ones. The leaf is the last message (Codex resumes a rollout at its end; what follows the last
message are event and context lines).
Older rollouts (before `session_meta`) hold the items without a `payload` wrapper, after a
first line `{id, timestamp, instructions}`; they are read the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from .claude import _ms, feed_lines
from .model import Damage, Translation, pi_tool

__all__ = ["CodexReader", "read_codex"]

_ITEM_TYPES = frozenset(
    {
        "message",
        "reasoning",
        "function_call",
        "function_call_output",
        "custom_tool_call",
        "custom_tool_call_output",
        "local_shell_call",
        "tool_search_call",
        "tool_search_output",
        "web_search_call",
    }
)
_CALLS = frozenset(
    {"function_call", "custom_tool_call", "local_shell_call", "tool_search_call", "web_search_call"}
)
_OUTPUTS = frozenset({"function_call_output", "custom_tool_call_output", "tool_search_output"})


def _text_blocks(content: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    for b in content if isinstance(content, list) else []:
        if not isinstance(b, dict):
            continue
        t = b.get("type")
        if t in ("input_text", "output_text", "text") and isinstance(b.get("text"), str):
            out.append({"type": "text", "text": b["text"]})
        elif t == "input_image":
            url = b.get("image_url")
            out.append({"type": "text", "text": f"[image {url[:40] if isinstance(url, str) else ''}]"})
    return out


def _args(raw: Any) -> Any:
    if isinstance(raw, str):
        try:
            v = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return {"input": raw}
        return v if isinstance(v, dict) else {"input": v}
    return raw if isinstance(raw, dict) else {}


def _output_text(out: Any) -> str:
    if isinstance(out, str):
        return out
    if isinstance(out, dict) and isinstance(out.get("content"), str):
        return str(out["content"])
    if isinstance(out, list):
        return "\n".join(
            b.get("text", "") for b in out if isinstance(b, dict) and isinstance(b.get("text"), str)
        )
    return orjson.dumps(out).decode() if out is not None else ""


class CodexReader:
    """Maps rollout lines to pi entries one line at a time, each under the one before."""

    agent = "codex"

    def __init__(self, sink: Callable[[dict[str, Any]], None] | None = None) -> None:
        self.t = Translation(agent="codex")
        self.sink = sink if sink is not None else self.t.entries.append
        self._last: str | None = None
        self._tool_names: dict[str, str] = {}
        self._prefix = ""
        self._last_ts: str = ""

    def _id(self, lineno: int) -> str:
        return f"{self._prefix or 'codex'}-{lineno}"

    def _emit(self, lineno: int, ts: str, body: dict[str, Any]) -> None:
        eid = self._id(lineno)
        entry = {"type": body.pop("type"), "id": eid, "parentId": self._last, "timestamp": ts}
        entry.update(body)
        self.sink(entry)
        self._last = eid

    def _custom(self, lineno: int, ts: str, kind: str, v: Any) -> None:
        self._emit(lineno, ts, {"type": "custom", "customType": f"codex:{kind}", "data": v})

    def _message(self, lineno: int, ts: str, m: dict[str, Any]) -> None:
        stamp = _ms(ts)
        if stamp is not None:
            m["timestamp"] = stamp
        self._emit(lineno, ts, {"type": "message", "message": m})
        self.t.message_count += 1
        self._last_message = self._last

    _last_message: str | None = None

    def _assistant(self, content: list[dict[str, Any]], stop: str) -> dict[str, Any]:
        return {
            "role": "assistant",
            "content": content,
            "api": "openai-responses",
            "provider": "openai",
            "model": self._model,
            "stopReason": stop,
        }

    _model = ""

    def feed(self, v: Any, lineno: int, offset: int) -> None:
        t = self.t
        t.lines += 1
        if not isinstance(v, dict):
            t.damage.append(Damage(lineno, offset, "not a JSON object"))
            return
        raw_ts = v.get("timestamp")
        ts: str = raw_ts if isinstance(raw_ts, str) else self._last_ts
        self._last_ts = ts
        # a type no rollout writes (an object, a list, a number) is an unknown line kind
        kind = _kind(v.get("type"))
        payload = v.get("payload")
        if not isinstance(payload, dict):
            if kind in _ITEM_TYPES:  # an older rollout: the item itself
                payload, kind = v, "response_item"
            elif lineno == 1 and isinstance(v.get("id"), str):
                payload, kind = v, "session_meta"
            else:
                self._custom(lineno, ts, str(kind), v)
                return
        if kind == "session_meta":
            self._meta(payload, ts)
            self._custom(lineno, ts, "session_meta", payload)
            return
        if kind == "turn_context":
            if isinstance(payload.get("model"), str):
                self._model = payload["model"]
            self._custom(lineno, ts, "turn_context", payload)
            return
        if kind == "compacted":
            msg = payload.get("message")
            self._emit(
                lineno,
                ts,
                {"type": "compaction", "summary": msg if isinstance(msg, str) else "", "tokensBefore": 0},
            )
            return
        if kind == "event_msg":
            sub = _kind(payload.get("type"))
            self._custom(lineno, ts, f"event:{sub}", payload)
            return
        if kind == "response_item":
            self._item(payload, lineno, ts)
            return
        self._custom(lineno, ts, str(kind), payload)

    def _meta(self, p: dict[str, Any], ts: str) -> None:
        t = self.t
        sid = p.get("id") if isinstance(p.get("id"), str) else p.get("session_id")
        if isinstance(sid, str) and not t.session_id:
            t.session_id = sid
            self._prefix = sid[:8]
        if isinstance(p.get("cwd"), str) and not t.cwd:
            t.cwd = p["cwd"]
        if t.created is None:
            t.created = p.get("timestamp") if isinstance(p.get("timestamp"), str) else ts
        parent = p.get("parent_thread_id")
        src = p.get("source")
        if not isinstance(parent, str) and isinstance(src, dict):
            sub = src.get("subagent")
            spawn = sub.get("thread_spawn") if isinstance(sub, dict) else None
            if isinstance(spawn, dict) and isinstance(spawn.get("parent_thread_id"), str):
                parent = spawn["parent_thread_id"]
        if isinstance(parent, str) and t.parent_id is None:
            t.parent_id, t.parent_kind = parent, "subagent"
        elif isinstance(p.get("forked_from_id"), str) and t.parent_id is None:
            t.parent_id, t.parent_kind = p["forked_from_id"], "fork"

    def _item(self, p: dict[str, Any], lineno: int, ts: str) -> None:
        it = _kind(p.get("type"))
        if it == "message":
            role = p.get("role")
            blocks = _text_blocks(p.get("content"))
            if role == "user":
                text = "\n".join(b["text"] for b in blocks if b.get("type") == "text").strip()
                if self.t.first_user_text is None and text and not _boilerplate(text):
                    self.t.first_user_text = text
                self._message(lineno, ts, {"role": "user", "content": blocks})
            elif role == "assistant":
                self._message(lineno, ts, self._assistant(blocks, "stop"))
            else:
                self._custom(lineno, ts, str(role or "message"), p)
            return
        if it == "reasoning":
            summary = p.get("summary")
            texts = (
                [s.get("text") for s in summary if isinstance(s, dict) and isinstance(s.get("text"), str)]
                if isinstance(summary, list)
                else []
            )
            if texts:
                blocks = [{"type": "thinking", "thinking": x} for x in texts]
                self._message(lineno, ts, self._assistant(blocks, "stop"))
            else:
                self._custom(lineno, ts, "reasoning", p)
            return
        if it in _CALLS:
            cid = p.get("call_id") or p.get("id")
            if it == "local_shell_call":
                action = p.get("action") if isinstance(p.get("action"), dict) else {}
                name, args = pi_tool("local_shell", action)
            elif it == "custom_tool_call":
                name, args = pi_tool(p.get("name"), {"input": p.get("input")})
            elif it == "web_search_call":
                name, args = "web_search", p.get("action") or {}
            else:
                raw_name = p.get("name") or ("tool_search" if it == "tool_search_call" else it)
                name, args = pi_tool(raw_name, _args(p.get("arguments")))
            if isinstance(cid, str):
                self._tool_names[cid] = name
            block = {"type": "toolCall", "id": cid, "name": name, "arguments": args}
            self._message(lineno, ts, self._assistant([block], "toolUse"))
            return
        if it in _OUTPUTS:
            cid = p.get("call_id")
            out = p.get("output") if "output" in p else p.get("tools")
            self._message(
                lineno,
                ts,
                {
                    "role": "toolResult",
                    "toolCallId": cid,
                    "toolName": self._tool_names.get(cid, "") if isinstance(cid, str) else "",
                    "content": [{"type": "text", "text": _output_text(out)}],
                    "isError": False,
                },
            )
            return
        self._custom(lineno, ts, str(it), p)

    def result(self) -> Translation:
        # The entry a resume continues from, as the view marks it: the last message (the
        # event and context lines after it carry nothing the context holds).
        self.t.leaf_id = self._last_message or self._last
        return self.t


def _kind(value: Any) -> str | None:
    """A line's or item's ``type`` when it is a string (anything else names no kind)."""
    return value if isinstance(value, str) else None


def _boilerplate(text: str) -> bool:
    return text.startswith(("<", "# AGENTS.md", "<environment_context>", "<user_instructions>"))


def read_codex(data: bytes) -> Translation:
    """The pi entries of a whole Codex rollout (damaged lines reported, skipped)."""
    reader = CodexReader()
    feed_lines(reader, data)
    return reader.result()
