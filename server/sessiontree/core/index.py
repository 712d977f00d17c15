"""The entry index: a small skeleton record per entry, built without materializing entries.

A session file of 100,000 entries is about 120 MB of JSON. Parsing every line into dicts
costs about a second and 600 MB, so the manager never does that up front. Instead it keeps,
for every entry, a `Skeleton` with the few fields that the tree, the view and the context
code need (ids, type, role, label, byte range in the file, ...). Full entries are parsed on
demand from their byte range and kept in a bounded LRU; entries created in this process, and
entries of files that had to go through the lenient parser, are held in memory.

A clean v3 file is indexed with `msgspec.json.Decoder(...).decode_lines` over its bytes
(`scan_clean`). Anything that does not decode cleanly falls back to the caller's lenient path
(`skeleton_from_dict` over parsed dicts).

The tree structure (children in `getTree()` order, roots, effective parents) is built lazily
on the first tree query and then maintained incrementally on every append, so an append is
O(1) (plus a sorted insert among siblings).
"""

from __future__ import annotations

import gc
import hashlib
import math
import os
import threading
from bisect import bisect_right
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from functools import cmp_to_key
from typing import Any

import msgspec
import orjson

from .format.jscompat import JS_WHITESPACE, date_ms, js_trim

__all__ = [
    "STATE_ENTRY_TYPES",
    "CleanScan",
    "EntryIndex",
    "IndexCache",
    "Skeleton",
    "UsageTotals",
    "compute_has_text",
    "gc_paused",
    "scan_clean",
    "skeleton_from_dict",
]

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
    the header).
    """

    id: Any
    parent_id: Any
    type: Any
    timestamp: Any
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


class UsageTotals(msgspec.Struct):
    """Usage statistics summed over every assistant message and task tool result (§15)."""

    input: float = 0
    output: float = 0
    cacheRead: float = 0
    cacheWrite: float = 0
    premiumRequests: float = 0
    cost: float = 0

    def as_dict(self) -> dict[str, float]:
        return {
            "input": self.input,
            "output": self.output,
            "cacheRead": self.cacheRead,
            "cacheWrite": self.cacheWrite,
            "premiumRequests": self.premiumRequests,
            "cost": self.cost,
        }

    def add_totals(self, other: UsageTotals) -> None:
        """Add another set of totals (a scan of appended lines, a chunk of a file)."""
        self.input += other.input
        self.output += other.output
        self.cacheRead += other.cacheRead
        self.cacheWrite += other.cacheWrite
        self.premiumRequests += other.premiumRequests
        self.cost += other.cost

    def add_usage(self, usage: Any) -> None:
        """Add one `usage` object (a dict, or a decoded `_JUsage`)."""
        if usage is None:
            return
        if isinstance(usage, dict):
            get = usage.get
            cost = get("cost")
            self.input += _num(get("input"))
            self.output += _num(get("output"))
            self.cacheRead += _num(get("cacheRead"))
            self.cacheWrite += _num(get("cacheWrite"))
            self.premiumRequests += _num(get("premiumRequests"))
            self.cost += _num(cost.get("total")) if isinstance(cost, dict) else 0
        else:
            self.input += _num(usage.input)
            self.output += _num(usage.output)
            self.cacheRead += _num(usage.cacheRead)
            self.cacheWrite += _num(usage.cacheWrite)
            self.premiumRequests += _num(usage.premiumRequests)
            cost = usage.cost
            self.cost += _num(cost.total) if cost is not None else 0

    def add_entry(self, entry: Any) -> None:
        """Fold one entry dict into the totals (assistant usage, task tool-result usage)."""
        if not isinstance(entry, dict) or entry.get("type") != "message":
            return
        msg = entry.get("message")
        if not isinstance(msg, dict):
            return
        role = msg.get("role")
        if role == "assistant":
            usage = msg.get("usage")
            if isinstance(usage, dict):
                self.add_usage(usage)
        elif role == "toolResult" and msg.get("toolName") == "task":
            details = msg.get("details")
            if isinstance(details, dict) and isinstance(details.get("usage"), dict):
                self.add_usage(details["usage"])


def _num(v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float):
        return 0
    return v


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
    timestamp: Any = None
    message: _JMessage | None = None
    targetId: Any = None
    label: Any = None
    customType: Any = None


_ENTRY_DECODER = msgspec.json.Decoder(_JEntry)


class _JBlock(msgspec.Struct, gc=False):
    type: Any = None
    text: msgspec.Raw = _EMPTY_RAW


_CONTENT_DECODER = msgspec.json.Decoder(list[_JBlock] | str | None)
# The ASCII part of JS whitespace: a first byte outside it starts visible text.
_WS = frozenset(c for c in JS_WHITESPACE.encode() if c < 128)


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


def skeleton_from_dict(entry: dict[str, Any], order: int) -> Skeleton:
    """The skeleton of an entry held in memory (offset -1)."""
    etype = entry.get("type")
    role = stop = tool_call_id = None
    has_text = False
    if etype == "message":
        msg = entry.get("message")
        if isinstance(msg, dict):
            role = msg.get("role")
            stop = msg.get("stopReason")
            tool_call_id = msg.get("toolCallId")
            if role == "assistant":
                has_text = compute_has_text(msg.get("content"))
    eid = entry.get("id")
    return Skeleton(
        eid if isinstance(eid, str) else None,
        entry.get("parentId"),
        etype,
        entry.get("timestamp"),
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
    )


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
    find = data.find
    b = start  # start of the next line
    for e in decoded:
        a = b
        q = find(b"\n", a, n)
        if q < 0:
            q = n  # a complete last line without its newline
        b = q + 1
        etype = e.type
        m = e.message
        if m is not None and etype == "message":
            role = m.role
            stop = m.stopReason
            tcid = m.toolCallId
            if role == "assistant":
                has_text = raw_has_text(m.content)
                uu = m.usage
                if uu is not None:
                    u_in += uu.input
                    u_out += uu.output
                    u_cr += uu.cacheRead
                    u_cw += uu.cacheWrite
                    u_pr += uu.premiumRequests
                    if uu.cost is not None:
                        u_cost += uu.cost.total
            else:
                has_text = False
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
            role = stop = tcid = None
            has_text = False
            if etype == "label":
                label_target = e.targetId
                label = e.label
            else:
                label_target = label = None
        if surrogate_lines and a in surrogate_lines:
            sk = skeleton_from_dict(surrogate_lines[a], order)
            sk.offset = a + base
            sk.length = q - a
            append(sk)
            order += 1
            continue
        eid = e.id
        append(
            Skeleton(
                eid if type(eid) is str else None,
                e.parentId,
                etype,
                e.timestamp,
                order,
                role,
                stop,
                has_text,
                tcid,
                label_target,
                label,
                e.customType,
                a + base,
                q - a,
            )
        )
        order += 1
    usage = UsageTotals(u_in, u_out, u_cr, u_cw, u_pr, u_cost)
    return CleanScan(out, usage, end, torn)


def _mask_surrogates(data: bytes, start: int, stop: int, lines: dict[int, Any]) -> bytes | None:
    """`data[start:stop]` with lone surrogate escapes masked for msgspec, which refuses them
    (same length, so offsets hold), or None when there are none. The lines that had one
    are parsed with the lenient parser into `lines` (line start -> value): their skeletons
    must hold the real strings, the ones `_entry_from_line` materializes."""
    from sessiontree.core.format.jsonl import mask_lone_surrogate_escapes, parse_jsonl_lenient

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


# --- timestamps ----------------------------------------------------------------------------


def _cmp_pair(a: tuple[float, str], b: tuple[float, str]) -> int:
    return _cmp_ts(a[0], b[0])


def _cmp_ts(a: float, b: float) -> int:
    d = a - b
    if d != d or d == 0:  # NaN compares as equal, like a JS comparator returning NaN
        return 0
    return -1 if d < 0 else 1


# --- bulk materialization -------------------------------------------------------------------

_gc_lock = threading.Lock()
_gc_depth = 0
_gc_was_enabled = False


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while many entries are materialized.

    Parsing 100,000 entries allocates millions of (acyclic) containers; with the collector
    on, its generation-2 passes over the growing heap cost more than the parsing itself.
    Nested and concurrent uses are counted: the collector is re-enabled (if it was enabled)
    when the last one ends. Nothing is freed later than it would be by reference counting.
    """
    global _gc_depth, _gc_was_enabled
    with _gc_lock:
        if _gc_depth == 0:
            _gc_was_enabled = gc.isenabled()
            gc.disable()
        _gc_depth += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_depth -= 1
            if _gc_depth == 0 and _gc_was_enabled:
                gc.enable()


# --- the index ------------------------------------------------------------------------------


class EntryIndex:
    """Skeletons of every entry, in file order, with lazy full entries.

    `loader(skeleton) -> dict` materializes a file-backed entry (the manager reads the byte
    range, parses it and resolves blob references). Entries held in memory are stored by
    their `order`.
    """

    def __init__(
        self, loader: Callable[[Skeleton], dict[str, Any]] | None = None, cache_size: int = 2000
    ) -> None:
        self._order: list[Skeleton] = []
        self._by_id: dict[str, Skeleton] = {}
        self._held: dict[int, dict[str, Any]] = {}
        self._lru: OrderedDict[int, dict[str, Any]] = OrderedDict()
        self._cache_size = cache_size
        self.loader = loader
        self.batch_loader: Callable[[list[Skeleton]], list[dict[str, Any]]] | None = None
        # stream_loader(skeletons sorted by offset) yields their entries in that order,
        # reading the file sequentially in big chunks (bulk materialization).
        self.stream_loader: Callable[[list[Skeleton]], Iterator[dict[str, Any]]] | None = None
        self.labels: dict[str, str] = {}
        self.usage = UsageTotals()
        self._has_assistant = False
        # lazily built tree structure
        self._tree_ready = False
        self._children: dict[str, list[str]] = {}
        self._roots: list[str] = []
        self._parent: dict[str, str | None] = {}  # effective parent (None: root)
        self._orphans: dict[str, list[str]] = {}  # missing parent id -> orphan ids
        self._ts: dict[str, float] = {}

    # -- building ---------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._order)

    def add_skeletons(self, skeletons: Iterable[Skeleton]) -> None:
        """Add file-backed skeletons (already carrying offset/length and order)."""
        sks = skeletons if isinstance(skeletons, list) else list(skeletons)
        if self._order or self._tree_ready:
            for sk in sks:
                self._add(sk)
            return
        # Bulk load into an empty index: comprehensions instead of a call per entry.
        self._order = list(sks)
        by_id = {sk.id: sk for sk in sks if sk.id is not None}
        self._by_id = by_id
        self._has_assistant = any(sk.role == "assistant" and sk.type == "message" for sk in sks)
        labels = self.labels
        for sk in [sk for sk in sks if sk.type == "label"]:
            tid = sk.target_id
            if tid is None:
                continue
            if sk.label:
                labels[tid] = sk.label
            else:
                labels.pop(tid, None)

    def add_held(self, entry: dict[str, Any]) -> Skeleton:
        """Add an entry held in memory (appended in this process or leniently loaded)."""
        sk = skeleton_from_dict(entry, len(self._order))
        self._held[sk.order] = entry
        self.usage.add_entry(entry)
        self._add(sk)
        return sk

    def _add(self, sk: Skeleton) -> None:
        self._order.append(sk)
        if sk.type == "message" and sk.role == "assistant":
            self._has_assistant = True
        if sk.type == "label" and sk.target_id is not None:
            tid = sk.target_id
            if sk.label:
                self.labels[tid] = sk.label
            else:
                self.labels.pop(tid, None)
        eid = sk.id
        if eid is None:
            return
        dup = eid in self._by_id
        self._by_id[eid] = sk
        if dup:
            self._ts.pop(eid, None)  # the cached timestamp was the earlier entry's
        if self._tree_ready:
            if dup:
                self._tree_ready = False  # pathological: rebuild on the next query
            else:
                self._link(sk)

    # -- lookups ----------------------------------------------------------------------------
    def skeleton(self, entry_id: str | None) -> Skeleton | None:
        """The skeleton of an entry by id (the last one in file order for duplicate ids)."""
        if entry_id is None:
            return None
        return self._by_id.get(entry_id)

    def __contains__(self, entry_id: object) -> bool:
        return entry_id in self._by_id

    def ids(self) -> dict[str, Skeleton]:
        """The id map (read-only by convention)."""
        return self._by_id

    def order(self) -> list[str]:
        """Entry ids in file order."""
        return [sk.id for sk in self._order]

    def skeletons(self) -> list[Skeleton]:
        """Skeletons in file order (the live list; do not mutate)."""
        return self._order

    def last(self) -> Skeleton | None:
        return self._order[-1] if self._order else None

    @property
    def has_assistant(self) -> bool:
        """Whether any entry of the session is an assistant message."""
        return self._has_assistant

    # -- full entries -----------------------------------------------------------------------
    def entry_of(self, sk: Skeleton) -> dict[str, Any]:
        """Materialize the entry of a skeleton."""
        if sk.offset < 0:
            return self._held[sk.order]
        lru = self._lru
        e = lru.get(sk.order)
        if e is not None:
            lru.move_to_end(sk.order)
            return e
        if self.loader is None:
            raise RuntimeError("entry index has no loader for file-backed entries")
        e = self.loader(sk)
        lru[sk.order] = e
        if len(lru) > self._cache_size:
            lru.popitem(last=False)
        return e

    def entries_of(self, sks: list[Skeleton]) -> list[dict[str, Any]]:
        """Materialize many entries at once (file-backed ones are read in batches)."""
        lru = self._lru
        missing = [sk for sk in sks if sk.offset >= 0 and sk.order not in lru]
        loaded: dict[int, dict[str, Any]] = {}
        if missing:
            if self.batch_loader is not None and len(missing) > 1:
                for sk, e in zip(missing, self.batch_loader(missing), strict=True):
                    loaded[sk.order] = e
            else:
                for sk in missing:
                    loaded[sk.order] = self.entry_of(sk)
        out: list[dict[str, Any]] = []
        for sk in sks:
            if sk.offset < 0:
                out.append(self._held[sk.order])
                continue
            got = loaded.get(sk.order)
            if got is None:
                got = self.entry_of(sk)
            else:
                lru[sk.order] = got
                if len(lru) > self._cache_size:
                    lru.popitem(last=False)
            out.append(got)
        return out

    def stream_entries(self, sks: list[Skeleton]) -> Iterator[tuple[Skeleton, dict[str, Any]]]:
        """Every entry of `sks` as `(skeleton, entry)`, in file order, for bulk reads.

        Entries already cached or held in memory are used as they are; the others are read
        with one sequential pass over their part of the file (`stream_loader`) and are NOT
        added to the LRU, so a bulk read leaves the cache as it was. Only the chunk being
        parsed plus what the caller keeps is alive at any time. Skeletons are yielded in
        file order (held entries by `order`, after the file-backed ones).
        """
        lru = self._lru
        if self.stream_loader is None or len(sks) <= 256:
            yield from zip(sks, self.entries_of(sks), strict=True)
            return
        backed = sorted((sk for sk in sks if sk.offset >= 0), key=lambda sk: sk.offset)
        pending: list[Skeleton] = []

        def flush() -> Iterator[tuple[Skeleton, dict[str, Any]]]:
            assert self.stream_loader is not None
            yield from zip(pending, self.stream_loader(pending), strict=True)
            pending.clear()

        for sk in backed:
            e = lru.get(sk.order)
            if e is None:
                pending.append(sk)
                continue
            if pending:
                yield from flush()
            yield sk, e
        if pending:
            yield from flush()
        held = self._held
        for sk in sorted((sk for sk in sks if sk.offset < 0), key=lambda sk: sk.order):
            yield sk, held[sk.order]

    def entries_bulk(self, sks: list[Skeleton]) -> list[dict[str, Any]]:
        """`entries_of(sks)` for many entries: one sequential read, the LRU left as it was."""
        if self.stream_loader is None or len(sks) <= 256:
            return self.entries_of(sks)
        got = {id(sk): e for sk, e in self.stream_entries(sks)}
        return [got[id(sk)] for sk in sks]

    def get(self, entry_id: str | None) -> dict[str, Any] | None:
        sk = self.skeleton(entry_id)
        return None if sk is None else self.entry_of(sk)

    def iter_entries(self, chunk: int = 1000) -> Iterator[dict[str, Any]]:
        order = self._order
        for i in range(0, len(order), chunk):
            yield from self.entries_of(order[i : i + chunk])

    def held_entries(self) -> dict[int, dict[str, Any]]:
        return self._held

    def is_file_backed(self) -> bool:
        return any(sk.offset >= 0 for sk in self._order)

    def rebase(self, new_ranges: list[tuple[int, int] | None]) -> None:
        """After a full rewrite: file-backed skeletons get their new byte ranges."""
        self._lru.clear()
        for sk, rng in zip(self._order, new_ranges, strict=True):
            if sk.offset >= 0 and rng is not None:
                sk.offset, sk.length = rng

    def drop_cache(self) -> None:
        self._lru.clear()

    # -- tree -------------------------------------------------------------------------------
    def _ts_of(self, eid: str) -> float:
        v = self._ts.get(eid)
        if v is None:
            ms = date_ms(self._by_id[eid].timestamp)
            v = math.nan if ms is None else float(ms)
            self._ts[eid] = v
        return v

    def _build_tree(self) -> None:
        children: dict[str, list[str]] = {}
        parent: dict[str, str | None] = {}
        self._children = children
        self._roots = []
        self._parent = parent
        self._orphans = {}
        by_id = self._by_id
        for sk in self._order:
            eid = sk.id
            if eid is None or by_id[eid] is not sk or eid in parent:
                continue  # no id, or an earlier duplicate (the later entry stands for the id)
            pid = sk.parent_id
            if (
                pid is not None
                and pid != eid
                and type(pid) is str
                and pid in by_id
                and eid not in children
                and not self._orphans
            ):
                # common case: a parent that exists, no children yet, so no loop possible
                parent[eid] = pid
                kids = children.get(pid)
                if kids is None:
                    children[pid] = [eid]
                else:
                    kids.append(eid)
            else:
                self._link(sk, sort=False)
        ts_of = self._ts_of
        for kids in children.values():
            if len(kids) > 1:
                self._sort_children(kids, ts_of)
        self._tree_ready = True

    @staticmethod
    def _sort_children(kids: list[str], ts_of: Callable[[str], float]) -> None:
        keys = [ts_of(k) for k in kids]
        if any(k != k for k in keys):
            pairs = sorted(zip(keys, kids, strict=True), key=cmp_to_key(_cmp_pair))
        else:
            pairs = sorted(zip(keys, kids, strict=True), key=lambda p: p[0])
        kids[:] = [k for _, k in pairs]

    def _would_cycle(self, eid: str, pid: str) -> bool:
        # Walk up from pid through already linked parents; reaching eid closes a loop.
        parent = self._parent
        cur: str | None = pid
        steps = 0
        limit = len(parent) + 1
        while cur is not None and steps <= limit:
            if cur == eid:
                return True
            cur = parent.get(cur)
            steps += 1
        return False

    def _link(self, sk: Skeleton, sort: bool = True) -> None:
        eid = sk.id
        pid = sk.parent_id
        # Entries that named this id as parent before it existed come earlier in the file,
        # so they are linked first, as a build from scratch links in file order; only then
        # does this entry link to its own parent, and it is the one that becomes a root when
        # that would close a loop (the same tree however the entries arrived).
        waiting = self._orphans.pop(eid, None)
        if waiting:
            for oid in waiting:
                if self._would_cycle(oid, eid):
                    continue
                self._roots.remove(oid)
                self._parent[oid] = eid
                adopted = self._children.setdefault(eid, [])
                if sort:
                    self._insert_child(adopted, oid)
                else:
                    adopted.append(oid)
        if pid is None or pid == eid or not isinstance(pid, str):
            self._parent[eid] = None
            self._roots.append(eid)
        elif pid not in self._by_id:
            self._parent[eid] = None
            self._roots.append(eid)
            self._orphans.setdefault(pid, []).append(eid)
        elif eid in self._children and self._would_cycle(eid, pid):
            self._parent[eid] = None  # the entry that closes a loop becomes a root
            self._roots.append(eid)
        else:
            self._parent[eid] = pid
            kids = self._children.get(pid)
            if kids is None:
                self._children[pid] = [eid]
            elif sort:
                self._insert_child(kids, eid)
            else:
                kids.append(eid)

    def _insert_child(self, kids: list[str], eid: str) -> None:
        t = self._ts_of(eid)
        if not kids:
            kids.append(eid)
            return
        if t != t:
            kids.append(eid)
            self._sort_children(kids, self._ts_of)
            return
        last_t = self._ts_of(kids[-1])
        if last_t == last_t and last_t <= t:
            kids.append(eid)
            return
        keys = [self._ts_of(k) for k in kids]
        if any(k != k for k in keys):
            kids.append(eid)
            self._sort_children(kids, self._ts_of)
            return
        # stable: after every sibling with an equal timestamp (file order among equals)
        kids.insert(bisect_right(keys, t), eid)

    def _ensure_tree(self) -> None:
        if not self._tree_ready:
            self._build_tree()

    def children(self, parent_id: str | None) -> list[str]:
        """Child ids in `getTree()` order; `None` gives the roots in file order."""
        self._ensure_tree()
        if parent_id is None:
            return list(self._roots)
        return list(self._children.get(parent_id, ()))

    def roots(self) -> list[str]:
        self._ensure_tree()
        return list(self._roots)

    def child_map(self) -> tuple[list[str], dict[str, list[str]]]:
        """The roots and every children list, uncopied: read-only, valid until the next change."""
        self._ensure_tree()
        return self._roots, self._children

    def effective_parent(self, entry_id: str) -> str | None:
        """The parent in the tree (None for roots, orphans and loop closers)."""
        self._ensure_tree()
        return self._parent.get(entry_id)

    def path_to_root(self, entry_id: str | None) -> list[str]:
        """Ids from the root down to `entry_id` (cycle-safe); [] for an unknown id."""
        if entry_id is None or entry_id not in self._by_id:
            return []
        if not self._tree_ready:
            # Walk the stored parent ids; without a loop this is exactly the tree's path.
            by_id = self._by_id
            seen: set[str] = set()
            out: list[str] = []
            cur: Any = entry_id
            while cur is not None and cur in by_id:
                if cur in seen:
                    break
                seen.add(cur)
                out.append(cur)
                cur = by_id[cur].parent_id
            else:
                out.reverse()
                return out
            # a loop: the tree decides which entry closes it
        self._ensure_tree()
        parent = self._parent
        out = []
        cur = entry_id
        guard = len(parent) + 1
        while cur is not None and guard > 0:
            out.append(cur)
            cur = parent.get(cur)
            guard -= 1
        out.reverse()
        return out

    def raw_children(self, parent_id: str) -> list[str]:
        """Every id whose stored parentId is `parent_id`, in id-map order (getChildren)."""
        return [eid for eid, sk in self._by_id.items() if sk.parent_id == parent_id]


# --- sidecar cache for warm reopens ---------------------------------------------------------

CACHE_FORMAT = 1
_TAIL_HASH_BYTES = 4096


class _CacheFile(msgspec.Struct, array_like=True):
    format: int
    path: str
    device: int
    inode: int
    size: int
    mtime_ns: int
    tail_hash: str
    header_json: bytes
    usage: UsageTotals
    skeletons: list[Skeleton]


_CACHE_DECODER = msgspec.msgpack.Decoder(_CacheFile)
_CACHE_ENCODER = msgspec.msgpack.Encoder()


def default_cache_dir() -> str:
    """`$SESSIONTREE_CACHE_DIR`, else `$XDG_CACHE_HOME/sessiontree/index`, else `~/.cache/...`."""
    env = os.environ.get("SESSIONTREE_CACHE_DIR")
    if env:
        return os.path.abspath(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = xdg if xdg and os.path.isabs(xdg) else os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "sessiontree", "index")


def _tail_hash(path: str, size: int, identity: tuple[int, int]) -> str:
    """The hash of the last bytes before `size`, read only from the file whose
    `(st_dev, st_ino)` is `identity` (the one the cache describes): a path swapped for a
    link to another file meanwhile is not read ("" never matches)."""
    import stat

    start = max(0, size - _TAIL_HASH_BYTES)
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if (st.st_dev, st.st_ino) != identity or not stat.S_ISREG(st.st_mode):
            return ""
        f.seek(start)
        data = f.read(size - start)
    if len(data) != size - start:
        return ""
    return hashlib.sha256(data).hexdigest()


class IndexCache:
    """Skeleton arrays of big session files, kept outside the sessions directories.

    Keyed by the file's real path; valid when device, inode, size, mtime and the hash of the
    last 4 KB match. A file that only grew (same device/inode, same hash at the old end)
    reuses the cache and indexes just the appended bytes. Anything else, including a cache
    file that does not decode, means a full index. Never named `*.jsonl`.
    """

    def __init__(self, cache_dir: str | None = None) -> None:
        self.dir = cache_dir or default_cache_dir()

    def file_for(self, path: str) -> str:
        key = hashlib.sha256(os.path.realpath(path).encode("utf-8", "surrogateescape")).hexdigest()[:40]
        return os.path.join(self.dir, key + ".idx")

    def load(self, path: str, st: Any) -> tuple[dict[str, Any], list[Skeleton], UsageTotals, int] | None:
        """`(header, skeletons, usage, indexed_size)` or None when there is no valid cache."""
        try:
            with open(self.file_for(path), "rb") as f:
                blob = f.read()
        except OSError:
            return None
        try:
            c = _CACHE_DECODER.decode(blob)
        except (msgspec.DecodeError, msgspec.ValidationError):
            return None
        if c.format != CACHE_FORMAT or c.device != st.st_dev or c.inode != st.st_ino:
            return None
        size = st.st_size
        if size < c.size:
            return None
        if size == c.size and st.st_mtime_ns != c.mtime_ns:
            return None
        if _tail_hash(path, c.size, (c.device, c.inode)) != c.tail_hash:
            return None
        try:
            header = orjson.loads(c.header_json)
        except orjson.JSONDecodeError:
            return None
        if not isinstance(header, dict):
            return None
        for i, sk in enumerate(c.skeletons):
            if sk.order != i:
                return None
        return header, c.skeletons, c.usage, c.size

    def save(self, path: str, st: Any, data: bytes, header: dict[str, Any], index: EntryIndex) -> None:
        """Write the cache for a file whose bytes (`data`) were just indexed."""
        size = len(data)
        tail = hashlib.sha256(data[max(0, size - _TAIL_HASH_BYTES) : size]).hexdigest()
        self._write(path, st, size, tail, header, index)

    def save_skeletons(self, path: str, st: Any, header: dict[str, Any], index: EntryIndex) -> None:
        """Write the cache from the index alone (the file is read only for its tail hash)."""
        size = st.st_size
        self._write(path, st, size, _tail_hash(path, size, (st.st_dev, st.st_ino)), header, index)

    def _write(
        self, path: str, st: Any, size: int, tail: str, header: dict[str, Any], index: EntryIndex
    ) -> None:
        sks = index.skeletons()
        if any(sk.offset < 0 for sk in sks):
            return  # only files whose every entry is file-backed
        c = _CacheFile(
            CACHE_FORMAT,
            os.path.realpath(path),
            st.st_dev,
            st.st_ino,
            size,
            st.st_mtime_ns,
            tail,
            orjson.dumps(header),
            index.usage,
            sks,
        )
        os.makedirs(self.dir, exist_ok=True)
        target = self.file_for(path)
        tmp = f"{target}.{os.getpid()}.tmp"
        with open(tmp, "wb") as f:
            f.write(_CACHE_ENCODER.encode(c))
        os.replace(tmp, target)
