"""Claude Code transcripts (`~/.claude/projects/<encoded cwd>/<session id>.jsonl`) as pi entries.

Claude Code writes one JSON object a line. Conversation lines (`user`, `assistant`,
`system`, `progress`, `attachment`) carry `uuid` and `parentUuid`, so they form a tree like
pi's: a rewind leaves a branch, a compaction starts a new root (`parentUuid: null`) that
names its predecessor in `logicalParentUuid`. Other lines (`summary`, `ai-title`,
`custom-title`, `file-history-snapshot`, `last-prompt`, `permission-mode`, ...) have no
uuid. The mapping (docs/other-agents.md):

- a user line with text (or images) is a pi user message; each `tool_result` block a
  `toolResult` message (several blocks: a chain, the line's uuid on its last entry); the
  line's `toolUseResult` keys that tell a file's content (`_FILE_KEYS`: Edit's and Write's
  `originalFile`, Read's `file`, ...) are its `details`, for `core/checkpoints`;
- an assistant line (Claude Code writes one line per content block) is a pi assistant
  message: text, thinking, `tool_use` as a `toolCall` (Claude's tool names shown as pi's:
  Bash as bash, Read as read, ...);
- a `compact_boundary` is a custom entry under the entry it logically follows, and the
  compact summary user line after it a pi `compaction` (the context starts there);
- `isMeta` user lines, `system`, `progress`, `attachment` lines and the lines without a
  uuid are custom entries (`claude:<kind>`): hidden by the default filter, shown by `all`.
  Such a line is put in the chain (a line without a uuid after the entry before it, one
  with a uuid under its parent, the later children of that parent under it), so that it
  never makes a branch of its own (hook progress lines hang beside the tool result);
- sidechain lines (`isSidechain`, a subagent) keep their own parents: a separate branch.

The leaf is the one Claude Code resumes: the last user or assistant line of the main
chain (not a sidechain) in file order. The title is the last `custom-title`, else the last
`ai-title`, else the last `summary` whose `leafUuid` is in this file (a resumed session's
file starts with summaries of other files' leaves), else the last `summary`, else (in
listings) the first user text.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from datetime import datetime
from typing import Any

import orjson

from ..format import jsonl
from .model import Damage, Translation, pi_tool

__all__ = ["ClaudeReader", "merge_split_messages", "read_claude", "summarize_claude"]

#: The `toolUseResult` keys kept as a tool result's `details`: what Edit, Write and Read
#: say of a file's whole content (core/checkpoints/replay.py reads them).
_FILE_KEYS = ("type", "filePath", "content", "originalFile", "oldString", "newString", "replaceAll", "file")

#: Line types without a uuid that still say something worth keeping in `all`.
_TITLE_TYPES = ("custom-title", "ai-title", "summary")
#: The key of each of them that holds the title.
_TITLE_KEYS = {"custom-title": "customTitle", "ai-title": "aiTitle", "summary": "summary"}


def _ms(ts: Any) -> int | None:
    if not isinstance(ts, str):
        return None
    try:
        return int(datetime.fromisoformat(ts).timestamp() * 1000)
    except ValueError:
        return None


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for b in content:
            if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str):
                parts.append(b["text"])
            elif isinstance(b, str):
                parts.append(b)
        return "\n".join(parts)
    return ""


def _user_blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    out: list[dict[str, Any]] = []
    if isinstance(content, list):
        for b in content:
            if not isinstance(b, dict):
                continue
            t = b.get("type")
            if t == "text":
                out.append({"type": "text", "text": str(b.get("text", ""))})
            elif t == "image":
                raw = b.get("source")
                src: dict[str, Any] = raw if isinstance(raw, dict) else {}
                out.append(
                    {"type": "image", "data": src.get("data", ""), "mimeType": src.get("media_type", "")}
                )
    return out


def _usage(u: Any) -> dict[str, Any] | None:
    if not isinstance(u, dict):
        return None

    inp, out, cr, cw = (
        v if type(v) is int or type(v) is float else 0
        for v in (
            u.get("input_tokens"),
            u.get("output_tokens"),
            u.get("cache_read_input_tokens"),
            u.get("cache_creation_input_tokens"),
        )
    )
    zero = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}
    return {
        "input": inp,
        "output": out,
        "cacheRead": cr,
        "cacheWrite": cw,
        "totalTokens": inp + out + cr + cw,
        "cost": zero,
    }


class ClaudeReader:
    """Maps Claude Code lines to pi entries one line at a time (appends keep working)."""

    agent = "claude"

    def __init__(self, sink: Callable[[dict[str, Any]], None] | None = None) -> None:
        self.t = Translation(agent="claude")
        #: Where the entries go (default: `t.entries`); a session streams them to bytes.
        self.sink = sink if sink is not None else self.t.entries.append
        #: The prefix of the ids of lines without a uuid (default: the session id's first 8
        #: characters); a subagent's file has its own, so that its ids stay apart.
        self.id_prefix: str | None = None
        self._tool_names: dict[str, str] = {}
        #: parent id -> the uuid-less entry put in the chain below it (followed repeatedly).
        self._redirect: dict[str | None, str] = {}
        self._last_main: str | None = None
        self._last_id: str | None = None
        self._ids: set[str] = set()
        self._titles: dict[str, str] = {}
        #: `summary` lines: (leafUuid, text); one whose leaf is in this file names it.
        self._summaries: list[tuple[Any, str]] = []
        #: The tokens before the last compaction (its boundary line says, its summary follows).
        self._pending_tokens = 0

    # -- helpers ----------------------------------------------------------------------
    def _parent(self, pid: Any, sidechain: bool) -> str | None:
        p: str | None = pid if isinstance(pid, str) else None
        if p is None and sidechain:
            return None
        seen = 0
        while p in self._redirect and seen < 10000:
            p = self._redirect[p]
            seen += 1
        return p

    def _emit(self, entry: dict[str, Any]) -> None:
        eid = entry["id"]
        if eid in self._ids:
            return  # Claude Code writes some lines twice (a resumed session): the first wins
        self._ids.add(eid)
        self.sink(entry)
        self._last_id = eid

    def _custom(self, eid: str, pid: str | None, ts: Any, kind: str, value: dict[str, Any]) -> None:
        self._emit(
            {
                "type": "custom",
                "id": eid,
                "parentId": pid,
                "timestamp": ts if isinstance(ts, str) else "",
                "customType": f"claude:{kind}",
                "data": value,
            }
        )

    # -- lines ------------------------------------------------------------------------
    def feed(self, v: Any, lineno: int, offset: int) -> None:
        t = self.t
        t.lines += 1
        if not isinstance(v, dict):
            t.damage.append(Damage(lineno, offset, "not a JSON object"))
            return
        _take_session_facts(t, v)
        kind = v.get("type")
        uuid = v.get("uuid")
        if not isinstance(uuid, str) or not uuid:
            self._uuidless(v, kind, lineno)
            return
        sidechain = v.get("isSidechain") is True
        ts = v.get("timestamp")
        if kind == "system" and v.get("subtype") == "compact_boundary":
            pid = self._parent(v.get("parentUuid") or v.get("logicalParentUuid"), False)
            self._custom(uuid, pid, ts, "compact_boundary", v)
            self._redirect[pid] = uuid
            self._pending_tokens = _tokens_before(v)
            return
        pid = self._parent(v.get("parentUuid"), sidechain)
        msg = v.get("message") if isinstance(v.get("message"), dict) else None
        if kind == "user" and msg is not None and not v.get("isMeta"):
            if v.get("isCompactSummary"):
                self._emit(
                    {
                        "type": "compaction",
                        "id": uuid,
                        "parentId": pid,
                        "timestamp": ts if isinstance(ts, str) else "",
                        "summary": _text_of(msg.get("content")),
                        "tokensBefore": _tokens_before(v) or self._pending_tokens,
                    }
                )
                self._main(uuid, sidechain)
                return
            self._user(v, msg, uuid, pid, ts, sidechain)
            return
        if kind == "assistant" and msg is not None:
            self._assistant(msg, uuid, pid, ts, sidechain)
            return
        sub = v.get("subtype")
        label = f"{kind}:{sub}" if kind == "system" and isinstance(sub, str) else str(kind)
        if kind == "user":
            label = "meta"
        self._custom(uuid, pid, ts, label, v)
        # Hook progress lines hang beside the tool result that follows them: put them in
        # the chain instead, so that they never show as a branch of their own.
        self._redirect[pid] = uuid

    def _main(self, eid: str, sidechain: bool) -> None:
        if not sidechain:
            self._last_main = eid

    def _user(
        self, v: dict[str, Any], msg: dict[str, Any], uuid: str, pid: str | None, ts: Any, side: bool
    ) -> None:
        content = msg.get("content")
        stamp = _ms(ts)
        results = (
            [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]
            if isinstance(content, list)
            else []
        )
        blocks = _user_blocks(content)
        parts: list[dict[str, Any]] = []
        if blocks or not results:
            m: dict[str, Any] = {"role": "user", "content": blocks}
            if stamp is not None:
                m["timestamp"] = stamp
            parts.append(m)
            if self.t.first_user_text is None and not side:
                text = _text_of(content).strip()
                if text and not text.startswith("<"):
                    self.t.first_user_text = text
        for r in results:
            cid = r.get("tool_use_id")
            rc = r.get("content")
            rblocks = _user_blocks(rc) if not isinstance(rc, str) else [{"type": "text", "text": rc}]
            m = {
                "role": "toolResult",
                "toolCallId": cid,
                "toolName": self._tool_names.get(cid, "") if isinstance(cid, str) else "",
                "content": rblocks,
                "isError": r.get("is_error") is True,
            }
            tur = v.get("toolUseResult")
            if len(results) == 1 and isinstance(tur, dict) and ("filePath" in tur or "file" in tur):
                m["details"] = {k: tur[k] for k in _FILE_KEYS if k in tur}
            if stamp is not None:
                m["timestamp"] = stamp
            parts.append(m)
        for i, m in enumerate(parts):
            eid = uuid if i == len(parts) - 1 else f"{uuid}~{i}"
            self._emit(
                {
                    "type": "message",
                    "id": eid,
                    "parentId": pid,
                    "timestamp": ts if isinstance(ts, str) else "",
                    "message": m,
                }
            )
            pid = eid
        self.t.message_count += len(parts)
        self._main(uuid, side)

    def _assistant(self, msg: dict[str, Any], uuid: str, pid: str | None, ts: Any, side: bool) -> None:
        out: list[dict[str, Any]] = []
        calls = False
        content = msg.get("content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        for b in content if isinstance(content, list) else []:
            if not isinstance(b, dict):
                continue
            bt = b.get("type")
            if bt == "text":
                out.append({"type": "text", "text": str(b.get("text", ""))})
            elif bt == "thinking":
                out.append({"type": "thinking", "thinking": str(b.get("thinking", ""))})
            elif bt == "redacted_thinking":
                out.append({"type": "thinking", "thinking": "", "redacted": True})
            elif bt in ("tool_use", "server_tool_use"):
                cid = b.get("id")
                name, args = pi_tool(b.get("name"), b.get("input"))
                if isinstance(cid, str):
                    self._tool_names[cid] = name
                out.append({"type": "toolCall", "id": cid, "name": name, "arguments": args})
                calls = True
        stop = msg.get("stop_reason")
        if calls:
            reason = "toolUse"
        elif stop in ("max_tokens",):
            reason = "length"
        else:
            reason = "stop"
        m: dict[str, Any] = {
            "role": "assistant",
            "content": out,
            "api": "anthropic-messages",
            "provider": "anthropic",
            "model": msg.get("model") if isinstance(msg.get("model"), str) else "",
        }
        if isinstance(msg.get("id"), str):
            # Claude Code writes one line per content block of an API message: the id
            # joins them again in the context (`merge_split_messages`).
            m["responseId"] = msg["id"]
        usage = _usage(msg.get("usage"))
        if usage is not None:
            m["usage"] = usage
        m["stopReason"] = reason
        stamp = _ms(ts)
        if stamp is not None:
            m["timestamp"] = stamp
        self._emit(
            {
                "type": "message",
                "id": uuid,
                "parentId": pid,
                "timestamp": ts if isinstance(ts, str) else "",
                "message": m,
            }
        )
        self.t.message_count += 1
        self._main(uuid, side)

    def _uuidless(self, v: dict[str, Any], kind: Any, lineno: int) -> None:
        if isinstance(kind, str) and kind in _TITLE_KEYS:
            title = v.get(_TITLE_KEYS[kind])
            if isinstance(title, str) and title.strip():
                self._titles[kind] = title.strip()
                if kind == "summary":
                    self._summaries.append((v.get("leafUuid"), title.strip()))
        eid = f"{self.id_prefix or self.t.session_id[:8] or 'claude'}-line{lineno}"
        pid = self._last_id
        self._custom(eid, pid, v.get("timestamp"), str(kind), v)
        self._redirect[pid] = eid

    # -- the result -----------------------------------------------------------------------
    def result(self) -> Translation:
        t = self.t
        t.leaf_id = self._last_main if self._last_main is not None else self._last_id
        titles = dict(self._titles)
        own = _own_summary(self._summaries, self._ids)
        if own is not None:
            titles["summary"] = own
        t.title = next((titles[k] for k in _TITLE_TYPES if k in titles), None)
        return t


def _own_summary(summaries: list[tuple[Any, str]], ids: Any) -> str | None:
    """The last `summary` whose `leafUuid` is an entry of this file (a resumed session's
    file starts with the summaries of other files' leaves), else None."""
    for leaf, text in reversed(summaries):
        if isinstance(leaf, str) and leaf in ids:
            return text
    return None


def merge_split_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The context's messages with the assistant lines of one API message (consecutive, the
    same ``responseId``) joined into one message, as Claude Code sends them; the parallel
    tool results that follow stay as they are."""
    out: list[dict[str, Any]] = []
    for m in messages:
        prev = out[-1] if out else None
        rid = m.get("responseId") if m.get("role") == "assistant" else None
        if (
            rid is not None
            and prev is not None
            and prev.get("role") == "assistant"
            and prev.get("responseId") == rid
        ):
            joined = dict(m)
            joined["content"] = [*prev.get("content", []), *m.get("content", [])]
            if "usage" not in joined and "usage" in prev:
                joined["usage"] = prev["usage"]
            out[-1] = joined
            continue
        out.append(m)
    return out


def summarize_claude(data: bytes) -> Translation:
    """What a listing needs of a transcript (ids, cwd, title, first user text, message
    count, damage), without building its entries: the same rules as `ClaudeReader`."""
    t = Translation(agent="claude")
    titles: dict[str, str] = {}
    summaries: list[tuple[Any, str]] = []
    uuids: set[str] = set()
    lineno = 0
    for line in data.split(b"\n"):
        lineno += 1
        if not line.strip():
            continue
        try:
            v = orjson.loads(line)
        except orjson.JSONDecodeError:
            try:
                v = jsonl.loads_line(line)
            except ValueError:
                t.damage.append(Damage(lineno, 0, "not valid JSON"))
                continue
        t.lines += 1
        try:
            _summarize_line(t, v, titles, summaries, uuids)
        except Exception as exc:
            # as `feed_one`: the line is skipped and reported, the others are summarized
            t.damage.append(Damage(lineno, 0, f"could not be read ({type(exc).__name__}: {exc})"[:200]))
    own = _own_summary(summaries, uuids)
    if own is not None:
        titles["summary"] = own
    t.title = next((titles[k] for k in _TITLE_TYPES if k in titles), None)
    return t


def _take_session_facts(t: Translation, v: dict[str, Any]) -> None:
    """The session id, cwd and start time from the first line that has each (string-typed)."""
    if not t.session_id and isinstance(v.get("sessionId"), str):
        t.session_id = v["sessionId"]
    if not t.cwd and isinstance(v.get("cwd"), str):
        t.cwd = v["cwd"]
    if t.created is None and isinstance(v.get("timestamp"), str):
        t.created = v["timestamp"]


def _summarize_line(
    t: Translation, v: Any, titles: dict[str, str], summaries: list[tuple[Any, str]], uuids: set[str]
) -> None:
    """What one line adds to a listing's summary (`summarize_claude`)."""
    if not isinstance(v, dict):
        return
    _take_session_facts(t, v)
    kind = v.get("type")
    if isinstance(kind, str) and kind in _TITLE_KEYS:
        title = v.get(_TITLE_KEYS[kind])
        if isinstance(title, str) and title.strip():
            titles[kind] = title.strip()
            if kind == "summary":
                summaries.append((v.get("leafUuid"), title.strip()))
        return
    if isinstance(v.get("uuid"), str):
        uuids.add(v["uuid"])
    msg = v.get("message")
    if not isinstance(v.get("uuid"), str) or not isinstance(msg, dict):
        return
    if kind == "assistant":
        t.message_count += 1
    elif kind == "user" and not v.get("isMeta") and not v.get("isCompactSummary"):
        content = msg.get("content")
        results = (
            sum(1 for b in content if isinstance(b, dict) and b.get("type") == "tool_result")
            if isinstance(content, list)
            else 0
        )
        t.message_count += results + (1 if _user_blocks(content) or not results else 0)
        if t.first_user_text is None and v.get("isSidechain") is not True:
            text = _text_of(content).strip()
            if text and not text.startswith("<"):
                t.first_user_text = text


def _tokens_before(v: dict[str, Any]) -> int:
    meta = v.get("compactMetadata")
    if isinstance(meta, dict) and isinstance(meta.get("preTokens"), int):
        return int(meta["preTokens"])
    return 0


def read_claude(data: bytes) -> Translation:
    """The pi entries of a whole Claude Code transcript (damaged lines reported, skipped)."""
    reader = ClaudeReader()
    feed_lines(reader, data)
    return reader.result()


def feed_lines(reader: Any, data: bytes, base: int = 0, lineno: int = 0) -> int:
    """Feed the complete lines of ``data`` (at file offset ``base``) to ``reader``.

    Returns the offset just after the last complete line; a last line without a newline
    that does not parse is left for later (an agent still writing it).
    """
    t = reader.t
    # Many small objects and none of them cyclic: the collector would only slow this down.
    enabled = gc.isenabled()
    gc.disable()
    try:
        _feed(reader, t, data, base, lineno)
    finally:
        if enabled:
            gc.enable()
    return t.end


def feed_one(reader: Any, t: Translation, value: Any, lineno: int, offset: int) -> None:
    """One parsed line to ``reader``. A line whose values the reader cannot take (a field of
    a type no agent writes: ``"type": {...}``) is skipped and reported in `damage`, as the
    pi loader skips a line it cannot read: one such line never hides the rest of the file,
    nor the other files of a listing."""
    try:
        reader.feed(value, lineno, offset)
    except Exception as exc:
        t.damage.append(Damage(lineno, offset, f"could not be read ({type(exc).__name__}: {exc})"[:200]))


def _feed(reader: Any, t: Translation, data: bytes, base: int, lineno: int) -> None:
    pos = 0
    n = len(data)
    while pos < n:
        nl = data.find(b"\n", pos)
        end = n if nl < 0 else nl
        line = data[pos:end]
        lineno += 1
        if line.strip():
            try:
                try:
                    value = orjson.loads(line)
                except orjson.JSONDecodeError:
                    value = jsonl.loads_line(line)  # the lenient rules (lone surrogates, ...)
            except ValueError:
                if nl < 0:
                    t.torn_tail = True
                    break
                t.damage.append(Damage(lineno, base + pos, "not valid JSON"))
                t.lines += 1
            else:
                feed_one(reader, t, value, lineno, base + pos)
        pos = n if nl < 0 else nl + 1
        t.end = base + pos
        t.lineno = lineno
