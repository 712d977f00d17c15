"""`EntrySummary`: one entry in a line (its display text, label, type), one or all at once."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import EntryNotFoundError
from ..format.jscompat import js_get, js_string, js_truthy
from ..format.jsonl import scrub_text
from ..index import gc_paused
from .adapters import as_tree_source
from .cache import cache_of
from .display import display_text, format_tool_call
from .flatten import Flat, flatten
from .source import TreeSource
from .tool_calls import LazyToolCalls, calls_of

__all__ = ["EntrySummary", "entry_summaries_bulk", "entry_summary"]


@dataclass(frozen=True, slots=True)
class EntrySummary:
    """One entry in a line (docs/protocol.md ``EntrySummary``)."""

    id: str
    parent_id: str | None
    type: str
    timestamp: Any
    role: str | None
    custom_type: str | None
    text: str
    label: str | None


def _summary(eid: str, entry: Mapping[str, Any], role: Any, text: str, label: str | None) -> EntrySummary:
    """The one place an `EntrySummary` is made, from its entry and its resolved text."""
    return EntrySummary(
        id=eid,
        parent_id=entry.get("parentId"),
        type=entry.get("type"),  # type: ignore[arg-type]
        timestamp=entry.get("timestamp"),
        role=role,
        custom_type=entry.get("customType"),
        text=scrub_text(text),
        label=scrub_text(label) if label else None,
    )


def entry_summary(source: Any, entry_id: str, home: str | None = None) -> EntrySummary:
    """The one-line summary of an entry (raises ``EntryNotFoundError`` when unknown)."""
    src = as_tree_source(source)
    entry = src.get_entry(entry_id)
    if entry is None:
        raise EntryNotFoundError(entry_id)
    sk = src.skeleton(entry_id)
    version = src.version()
    cache = cache_of(src)

    def order() -> Flat:
        leaf = src.get_leaf_id()
        flat = cache.flat.get((version, leaf))
        return flat or flatten(src, leaf)

    tool_calls = LazyToolCalls(src, cache, order, version)
    tool_calls.start = sk.parent_id if sk is not None else entry.get("parentId")
    msg = entry.get("message") if entry.get("type") == "message" else None
    label = src.labels.get(entry_id)
    role = msg.get("role") if isinstance(msg, Mapping) else None
    return _summary(entry_id, entry, role, display_text(entry, tool_calls, home), label)


def entry_summaries_bulk(source: Any, home: str | None = None) -> dict[str, EntrySummary]:
    """`entry_summary` of every entry of the tree, keyed by id, from one sequential read.

    Equal to ``{i: entry_summary(source, i, home) for i in every tree id}`` but without
    materializing entries one by one: a manager's entries are parsed in file order span by
    span (nothing is kept in its entry cache), each assistant message's tool calls are
    formatted once, and tool results are resolved afterwards exactly as `LazyToolCalls`
    does (the map of every call in flattened order, later ones winning).
    """
    src = as_tree_source(source)
    index = src.bulk_index()
    if index is None:
        roots, kids = _tree_ids(src)
        return {i: entry_summary(src, i, home) for i in _walk(roots, kids)}
    labels = src.labels
    by_id = index.ids()
    out: dict[str, EntrySummary] = {}
    calls: dict[str, dict[Hashable, str]] = {}  # assistant id -> {call id: formatted call}
    # tool results: (id, call id, text when the call is not found)
    results: list[tuple[str, Any, str]] = []
    with gc_paused():
        for sk, entry in index.stream_entries(list(by_id.values())):
            eid = sk.id
            etype = entry.get("type")
            msg = entry.get("message") if etype == "message" else None
            role = msg.get("role") if type(msg) is dict or isinstance(msg, Mapping) else None
            text: str | None = None
            if role == "toolResult":
                assert isinstance(msg, Mapping)
                call_id = msg.get("toolCallId")
                tool_name = msg.get("toolName")
                fallback = f"[{js_string(tool_name)}]" if js_truthy(tool_name) else "[tool]"
                if type(call_id) is str or isinstance(call_id, Hashable):
                    results.append((eid, call_id, fallback))
                else:
                    text = fallback
            else:
                if role == "assistant":
                    found = calls_of(entry)
                    if found:
                        mine: dict[Hashable, str] = {}
                        for call in found:
                            cid = call.get("id")
                            if type(cid) is str or isinstance(cid, Hashable):
                                mine[cid] = format_tool_call(
                                    js_get(call, "name"), js_get(call, "arguments"), home
                                )
                        calls[eid] = mine
                text = display_text(entry, None, home)
            label = labels.get(eid)
            out[eid] = _summary(eid, entry, role, text if text is not None else "", label)
    if not results:
        return out
    # The selector's map: the calls of every assistant message in flattened order, a later
    # duplicate id overwriting an earlier one. Unless an id occurs in two messages the order
    # does not matter (every tree entry is in the flattened order), so the flattening is
    # only needed then.
    full: dict[Hashable, str] = {}
    duplicated = False
    for mine in calls.values():
        if not duplicated and not full.keys().isdisjoint(mine):
            duplicated = True
        full.update(mine)
    if duplicated:
        full = {}
        leaf = src.get_leaf_id()
        flat = cache_of(src).flat.get((src.version(), leaf))
        for i in (flat or flatten(src, leaf)).ids:
            more = calls.get(i)
            if more:
                full.update(more)
    for eid, call_id, fallback in results:
        hit = full.get(call_id)
        out[eid] = dataclasses.replace(out[eid], text=scrub_text(hit if hit is not None else fallback))
    return out


def _tree_ids(src: TreeSource) -> tuple[Sequence[str], Callable[[str], Sequence[str]]]:
    return src.children(None), src.children


def _walk(roots: Sequence[str], kids: Callable[[str], Sequence[str]]) -> Iterator[str]:
    stack = list(reversed(roots))
    while stack:
        i = stack.pop()
        yield i
        stack.extend(reversed(kids(i)))
