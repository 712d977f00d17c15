"""The fast path of indexing: whole lines of a clean file decoded straight into skeletons.

A clean current-version file is decoded with `msgspec.json.Decoder(...).decode_lines` over
its bytes into small structs that keep only what a `Skeleton` needs (`scan_clean`); the
rest of every line is skipped by the C decoder. Whether an assistant message has text is
decided from the first bytes of its content when it starts with a non-blank text block.
Anything that does not decode cleanly is the caller's to read with the lenient parser.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import msgspec
import orjson

from ..format.jscompat import JS_WHITESPACE, js_trim
from .skeleton import Skeleton, call_ids_of, compute_has_text, skeleton_from_dict
from .usage import USAGE_ENTRY_TYPES, UsageTotals

__all__ = ["CleanScan", "scan_clean"]

# --- the msgspec structs the fast path decodes each line into -------------------------------

_EMPTY_RAW = msgspec.Raw(b"")


class _JCost(msgspec.Struct, gc=False):
    total: int | float = 0


class _JUsage(msgspec.Struct, gc=False):
    input: int | float = 0
    output: int | float = 0
    cacheRead: int | float = 0
    cacheWrite: int | float = 0
    premiumRequests: int | float = 0
    cost: _JCost | None = None


class _JMessage(msgspec.Struct, gc=False):
    role: Any = None
    stopReason: Any = None
    toolCallId: Any = None
    toolName: Any = None
    content: msgspec.Raw = _EMPTY_RAW
    usage: _JUsage | None = None
    details: msgspec.Raw = _EMPTY_RAW


class _JEntry(msgspec.Struct, gc=False):
    type: Any = None
    id: Any = None
    parentId: Any = None
    message: _JMessage | None = None
    targetId: Any = None
    label: Any = None
    customType: Any = None
    #: pi's ``usage`` entries, oh-my-pi's ``model_usage``, and the usage of generating a
    #: compaction's or branch summary's text (pi): usage outside the messages
    usage: _JUsage | None = None


_ENTRY_DECODER = msgspec.json.Decoder(_JEntry)


class _JBlock(msgspec.Struct, gc=False):
    type: Any = None
    text: msgspec.Raw = _EMPTY_RAW


_CONTENT_DECODER = msgspec.json.Decoder(list[_JBlock] | str | None)


class _JCallBlock(msgspec.Struct, gc=False):
    type: Any = None
    id: Any = None


_CALLS_DECODER = msgspec.json.Decoder(list[_JCallBlock] | str | None)
_TOOL_CALL = b'"toolCall"'


def _raw_call_ids(raw: msgspec.Raw) -> tuple[Any, ...]:
    """`call_ids_of` from the raw JSON of assistant content (the caller decodes only the
    content of a line that holds `"toolCall"` somewhere)."""
    if not len(raw):
        return ()
    try:
        content = _CALLS_DECODER.decode(raw)
    except msgspec.DecodeError:
        try:
            return call_ids_of(orjson.loads(memoryview(raw)))
        except orjson.JSONDecodeError:
            return ()
    if not isinstance(content, list):
        return ()
    out = []
    for block in content:
        if block.type == "toolCall":
            cid = block.id
            if type(cid) is str or isinstance(cid, Hashable):
                out.append(cid)
    return tuple(out) if len(out) < 2 else tuple(dict.fromkeys(out))


# The ASCII part of JS whitespace: a first byte outside it starts visible text.
_WS = frozenset(c for c in JS_WHITESPACE.encode() if c < 128)


_TEXT_FIRST = b'[{"type":"text","text":"'
_TEXT_FIRST_LEN = len(_TEXT_FIRST)


def _raw_has_text(raw: msgspec.Raw) -> bool:
    n = len(raw)
    if not n:
        return False
    if n > _TEXT_FIRST_LEN + 1:
        # The common shape (compact JSON, a text block first): decided from its first
        # character without decoding the rest of the content.
        mv = memoryview(raw)
        if mv[:_TEXT_FIRST_LEN] == _TEXT_FIRST:
            c = mv[_TEXT_FIRST_LEN]
            if c < 128 and c not in _WS and c != 92 and c != 34:
                return True
    try:
        content = _CONTENT_DECODER.decode(raw)
    except msgspec.DecodeError:
        return _slow_has_text(raw)
    if isinstance(content, str):
        return bool(js_trim(content))
    if not content:
        return False
    for block in content:
        if block.type != "text":
            continue
        t = memoryview(block.text)
        if len(t) < 3 or t[0] != 34:  # "" or not a JSON string
            continue
        c = t[1]
        if c < 128 and c not in _WS and c != 92:  # plain non-space first char
            return True
        try:
            text = orjson.loads(t)
        except orjson.JSONDecodeError:
            continue
        if isinstance(text, str) and js_trim(text):
            return True
    return False


def _slow_has_text(raw: msgspec.Raw) -> bool:
    try:
        content = orjson.loads(memoryview(raw))
    except orjson.JSONDecodeError:
        return False
    return compute_has_text(content)


class CleanScan(msgspec.Struct):
    """Result of `scan_clean`: skeletons of whole lines, usage, and where scanning stopped."""

    skeletons: list[Skeleton]
    usage: UsageTotals
    end: int  # offset just past the last whole line that was indexed
    torn_tail: bool  # bytes after the last newline that do not form a complete entry


def scan_clean(
    data: bytes,
    start: int,
    first_order: int,
    allow_torn_tail: bool = True,
    *,
    stop: int | None = None,
    base: int = 0,
) -> CleanScan | None:
    """Index the whole lines of `data[start:stop]` with the fast decoder.

    Returns None when the bytes are not "clean" (a line that does not decode as one JSON
    object, blank or whitespace lines, CR characters, values spanning lines, non-object
    lines); the caller then uses the lenient parser. Bytes after the last newline that do
    not decode as a complete entry are reported as a torn tail (when allowed). `base` is
    the file offset of `data[0]` (for files indexed chunk by chunk): it is added to the
    skeletons' offsets, while `end` stays relative to `data`.
    """
    n = len(data) if stop is None else stop
    if start >= n:
        return CleanScan([], UsageTotals(), start, False)
    if data.find(b"\r", start, n) >= 0:
        return None
    nlines = data.count(b"\n", start, n)
    last = data.rfind(b"\n", start, n) + 1 if nlines else start
    mv = memoryview(data)
    # Lines whose skeleton is taken from the lenient parser (start offset -> value): those
    # with a lone surrogate escape, which msgspec refuses.
    surrogate_lines: dict[int, Any] = {}
    try:
        decoded = _ENTRY_DECODER.decode_lines(mv[start:last]) if nlines else []
    except msgspec.DecodeError:
        masked = _mask_surrogates(data, start, last, surrogate_lines)
        if masked is None:
            return None
        try:
            decoded = _ENTRY_DECODER.decode_lines(masked)
        except msgspec.DecodeError:
            return None
        del masked
    if len(decoded) != nlines:
        return None  # blank lines (decode_lines skips them) or the like
    torn = False
    end = last
    if last < n:
        try:
            tail = _ENTRY_DECODER.decode(mv[last:n])
        except msgspec.DecodeError:
            tail = None
            masked = _mask_surrogates(data, last, n, surrogate_lines)
            if masked is not None:
                try:
                    tail = _ENTRY_DECODER.decode(masked)
                except msgspec.DecodeError:
                    surrogate_lines.pop(last, None)
            if tail is None:
                if not allow_torn_tail:
                    return None
                torn = True
        if tail is not None:
            decoded.append(tail)
            end = n
    u_in: float = 0
    u_out: float = 0
    u_cr: float = 0
    u_cw: float = 0
    u_pr: float = 0
    u_cost: float = 0
    out: list[Skeleton] = []
    append = out.append
    order = first_order
    raw_has_text = _raw_has_text
    raw_call_ids = _raw_call_ids
    find = data.find
    b = start  # start of the next line
    # The decoder makes a new string of every value. The common ones are replaced by one
    # shared object each (the type, role and stop reason of most entries, and a parent id
    # equal to the previous entry's id, the parent of most entries): a comparison each,
    # and about 200 MB less for a million entries.
    prev_id: Any = None
    for e in decoded:
        a = b
        q = find(b"\n", a, n)
        if q < 0:
            q = n  # a complete last line without its newline
        b = q + 1
        etype = e.type
        m = e.message
        if m is not None and etype == "message":
            etype = "message"
            role = m.role
            reason = m.stopReason
            if reason is not None:
                if reason == "toolUse":
                    reason = "toolUse"
                elif reason == "stop":
                    reason = "stop"
            tcid = m.toolCallId
            if role == "assistant":
                role = "assistant"
                has_text = raw_has_text(m.content)
                # a line without the word has no call (no copy of the content to look)
                calls = raw_call_ids(m.content) if find(_TOOL_CALL, a, q) >= 0 else ()
                uu = m.usage
            else:
                has_text = False
                calls = None
                uu = None
                if role == "toolResult":
                    role = "toolResult"
                elif role == "user":
                    role = "user"
                if role == "toolResult" and m.toolName == "task" and len(m.details):
                    try:
                        details = orjson.loads(memoryview(m.details))
                    except orjson.JSONDecodeError:
                        details = None
                    if isinstance(details, dict) and isinstance(details.get("usage"), dict):
                        extra = UsageTotals()
                        extra.add_usage(details["usage"])
                        u_in += extra.input
                        u_out += extra.output
                        u_cr += extra.cacheRead
                        u_cw += extra.cacheWrite
                        u_pr += extra.premiumRequests
                        u_cost += extra.cost
            label_target = label = None
        else:
            role = reason = tcid = calls = None
            has_text = False
            uu = e.usage if etype in USAGE_ENTRY_TYPES else None
            if etype == "label":
                label_target = e.targetId
                label = e.label
            else:
                label_target = label = None
        if uu is not None:
            u_in += uu.input
            u_out += uu.output
            u_cr += uu.cacheRead
            u_cw += uu.cacheWrite
            u_pr += uu.premiumRequests
            if uu.cost is not None:
                u_cost += uu.cost.total
        if surrogate_lines and a in surrogate_lines:
            sk = skeleton_from_dict(surrogate_lines[a], order)
            sk.offset = a + base
            sk.length = q - a
            append(sk)
            order += 1
            continue
        eid = e.id
        pid = e.parentId
        if pid == prev_id and pid is not None:
            pid = prev_id
        prev_id = eid
        append(
            Skeleton(
                eid if type(eid) is str else None,
                pid,
                etype,
                order,
                role,
                reason,
                has_text,
                tcid,
                label_target,
                label,
                e.customType,
                a + base,
                q - a,
                calls,
            )
        )
        order += 1
    usage = UsageTotals(u_in, u_out, u_cr, u_cw, u_pr, u_cost)
    return CleanScan(out, usage, end, torn)


def _mask_surrogates(data: bytes, start: int, stop: int, lines: dict[int, Any]) -> bytes | None:
    """`data[start:stop]` with lone surrogate escapes masked for msgspec, which refuses them
    (same length, so offsets hold), or None when there are none. The lines that had one
    are parsed with the lenient parser into `lines` (line start -> value): their skeletons
    must hold the real strings, the ones `session.reader.FileEntries` materializes."""
    from ..format.jsonl import mask_lone_surrogate_escapes, parse_jsonl_lenient

    found: list[int] = []
    masked = mask_lone_surrogate_escapes(memoryview(data)[start:stop], found)
    if masked is None:
        return None
    for pos in found:
        a = max(start, data.rfind(b"\n", start, start + pos) + 1)
        if a in lines:
            continue
        q = data.find(b"\n", a, stop)
        values = parse_jsonl_lenient(data[a : stop if q < 0 else q]).values
        if len(values) != 1 or not isinstance(values[0], dict):
            return None  # not one clean entry after all: the lenient path decides
        lines[a] = values[0]
    return masked
