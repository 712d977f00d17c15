"""What the view keeps per tree source: flattened trees, filtered row lists, search texts.

The flattened order and the prefix structure come from skeletons only and are kept per
(version, leaf); the filtered row list per (version, leaf, filter, search, home); the text a
search matches per entry until the source's stored entries change. `cache_of` gives a
source its cache, held as long as the source lives and no longer.
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from collections.abc import Hashable
from typing import Any

from .flatten import Filtered, Flat
from .tool_calls import CallIndex

__all__ = ["BIG_VIEW", "ViewCache", "cache_of", "cache_put", "views_to_keep"]

#: From this many rows a source keeps two flattened views instead of four (each holds a few
#: lists of one item per row: about 100 MB for a million entries), and the rows and search
#: results made from views it no longer keeps go with them.
BIG_VIEW = 200_000


class ViewCache:
    """Per-source caches of flattened trees, filtered lists and searchable text."""

    def __init__(self) -> None:
        self.flat: OrderedDict[Hashable, Flat] = OrderedDict()
        self.filtered: OrderedDict[Hashable, Filtered] = OrderedDict()
        self.search_version: Hashable = None
        self.search_text: dict[str, str] = {}  # lowercased, without label and tool-call display
        self.search_order: dict[str, Any] = {}  # the file order of the entry each text is of
        # toolResult entries: the call id whose display their searchable text also holds
        # (resolved at query time), the fallback display (no call found, lowercased) and
        # the length of the text without it
        self.search_call: dict[str, tuple[Hashable, str | None, int]] = {}
        # toolResult entries whose text holds their call's display (an id one message has),
        # valid for `search_tool_key`: (the call index, its generation, the home)
        self.search_folded: dict[str, tuple[Hashable, str | None, int]] = {}
        self.search_tool_key: Hashable = None
        # bumped whenever a kept text changes (`search.SearchBuffer` is valid for one value)
        self.search_gen = 0
        # every entry of this many had its text when it was last checked (-1: unknown), so
        # a query does not look up each row's entry to know its text is current
        self.search_all_at = -1
        self.search_buffer: Any = None
        # what page rows showed of their entries, and for what (`page._row_parts`)
        self.row_parts: dict[str, tuple[Any, ...]] = {}
        self.row_parts_key: Hashable = None
        # the spans of rows (offset, end) `warmup.warm_rows` has still to read ahead, and
        # for which stored content
        self.warm_rows_todo: tuple[Hashable, list[tuple[int, int]]] | None = None
        # the search in progress (`progressive`): at most one, by its filtered-list key
        self.search_progress: dict[Any, Any] = {}
        # the rows a search starts from: (flat ids, hidden set, (mode, leaf, sizes), rows)
        self.search_rows_of: tuple[Any, ...] | None = None
        # how far (file order) `search.warm_search` has built texts ahead of a search
        self.warm_pos = 0
        self.warm_done = False
        self.call_index: CallIndex | None = None
        # the runs of single children of one tree version (see `flatten`): the same for
        # every leaf, so a navigation does not walk them again
        self.chains: dict[str, list[str]] = {}
        self.chains_version: Hashable = None
        # per filter mode, the ids it hides when not the leaf (`filters.hidden_ids`), for
        # one stored content, and how many entries (file order) they cover
        self.hidden: dict[str, set[str]] = {}
        self.hidden_count: dict[str, int] = {}
        self.hidden_version: Hashable = None
        # what the modes' hidden sets are made of (`filters._mode_hidden`), for one entry count
        self.hidden_parts: dict[str, set[str]] = {}
        self.hidden_parts_count = -1
        # the views walked lazily from the leaf (`lazy`): per (version, leaf), and their
        # visible rows per (version, leaf, filter mode)
        self.lazy: OrderedDict[Hashable, Any] = OrderedDict()
        self.lazy_rows: OrderedDict[Hashable, Any] = OrderedDict()
        # the source's version when its kept first pages were read, and them (`opening`)
        self.opening: tuple[Hashable, Any] | None = None


_CACHES: weakref.WeakKeyDictionary[Any, ViewCache] = weakref.WeakKeyDictionary()


def cache_of(source: Any) -> ViewCache:
    """The cache of ``source`` (a new one for a source that cannot be weakly referenced)."""
    try:
        cache = _CACHES.get(source)
    except TypeError:
        return ViewCache()
    if cache is None:
        cache = _CACHES[source] = ViewCache()
    return cache


def views_to_keep(cache: ViewCache, rows: int) -> int:
    """How many flattened views a source of ``rows`` rows keeps; for a big one, the rows
    and results made from views it no longer keeps are dropped (`BIG_VIEW`)."""
    if rows < BIG_VIEW:
        return 4
    while len(cache.lazy) > 2:
        cache.lazy.popitem(last=False)
    while len(cache.flat) > 2:
        cache.flat.popitem(last=False)
    kept = {id(f) for f in cache.lazy.values()} | {id(f) for f in cache.flat.values()}
    for od in (cache.lazy_rows, cache.filtered):
        for key in [k for k, v in od.items() if id(v.flat) not in kept]:
            del od[key]
    return 2


def cache_put(od: OrderedDict[Hashable, Any], key: Hashable, value: Any, keep: int) -> None:
    """Put ``key`` last in ``od``, dropping the oldest entries beyond ``keep``."""
    od[key] = value
    od.move_to_end(key)
    while len(od) > keep:
        od.popitem(last=False)
