"""Idle-time work ahead of a first search: the searchable text of every entry, the calls tool
results show, and their displays folded in (`warm_search`, run by the daemon in slices);
ahead of a first filter change, the rows each filter mode hides and shows (`warm_filters`);
ahead of the first pages of either, what the rows near the view's head and its leaf show
(`warm_rows`); and ahead of the next open, the first pages kept on disk
(`save_opening_view`, `opening`)."""

from __future__ import annotations

from typing import Any, Final

from ..index import gc_paused
from .adapters import as_tree_source
from .cache import cache_of
from .display import home_dir
from .filters import hidden_ids
from .flatten import flatten
from .lazy import lazy_flat
from .opening import keep_due as opening_view_due
from .opening import keep_pages
from .page import build_view
from .search import current_search_cache, fill_search_text, fold_calls, keep_texts_max
from .source import TreeSource
from .tool_calls import call_index

__all__ = [
    "WARM_FILTER_MODES",
    "WARM_ROWS",
    "opening_view_due",
    "save_opening_view",
    "warm_filters",
    "warm_rows",
    "warm_search",
]


def warm_search(source: Any, budget: int = 4096) -> bool:
    """Build the searchable texts of up to ``budget`` more entries (file order), ahead of a
    first search; True when every entry has one. For a daemon's idle time, in slices."""
    src = as_tree_source(source)
    cache = cache_of(src)
    current_search_cache(src, cache)
    index = src.bulk_index()
    if index is None:
        return True
    texts = cache.search_text
    sks = index.skeletons()
    pos = cache.warm_pos
    todo: list[str] = []
    while pos < len(sks) and len(todo) < budget:
        eid = sks[pos].id
        pos += 1
        if eid is not None and eid not in texts:
            todo.append(eid)
    cache.warm_pos = pos
    if todo:
        with gc_paused():
            fill_search_text(src, cache, todo)
        return False
    if pos < len(sks):
        return False
    # Then the display of the call each tool result shows is folded into its text, as a
    # first query would (the calls read from the file a slice at a time), then, in a slice
    # of its own, one search that matches nothing makes the buffer of every text.
    if cache.search_call:
        ci = call_index(src, cache, _flat_for(src))
        with gc_paused():
            if fold_calls(src, cache, ci, home_dir(), budget):
                return False
    if not cache.warm_done:
        # every entry has its text now: a query need not check each row's (nor go in steps,
        # `progressive`: this one makes the buffer of every text the next queries use)
        cache.search_all_at = src.entry_count()
        build_view(src, search="\x01", limit=0)
        cache.warm_done = True
    return True


def _flat_for(src: TreeSource) -> Any:
    """The source's flattened tree for its leaf (the call index resolves shared call ids by it)."""
    lazy = lazy_flat(src, cache_of(src), src.get_leaf_id())
    return lazy if lazy is not None else flatten(src, src.get_leaf_id())


#: The filter modes whose hidden sets a click does not make (it makes its own mode's).
WARM_FILTER_MODES = ("no-tools", "user-only", "all", "default")


def warm_filters(source: Any, mode: str, rows: bool = False) -> None:
    """Make the hidden set of ``mode`` (a filter change then only picks its rows); one mode
    per call, for a daemon's idle time. With ``rows``, also the mode's rows for the current
    leaf (the walk of the leaf's path a first filter change makes): a filter change then
    only builds its pages. They hold an int per row, so the daemon asks for them only below
    a size (`lsp/features/warm.py`)."""
    src = as_tree_source(source)
    if src.bulk_index() is None:
        return
    with gc_paused():
        hidden_ids(src, cache_of(src), mode)
        if rows:
            build_view(src, filter=mode, limit=0)


#: Rows of the default view, from its head and around its leaf, whose parts `warm_rows` reads.
WARM_ROWS: Final = 3000


def warm_rows(source: Any, budget: int = 1000) -> bool:
    """Read what up to ``budget`` more rows of the default view show (`page._row_parts`),
    from the first `WARM_ROWS` rows and the `WARM_ROWS` around the leaf; True when done.

    A search or another filter mode shows rows of the same entries in the same order, and
    its first pages (its head and the rows around its selected row) come mostly from those
    parts of the tree: they are then built without reading their entries from the file.
    For a daemon's idle time, in slices. Nothing above `search.keep_texts_max()` entries:
    the rows around the leaf of a lazily walked view that big would need the whole walk."""
    src = as_tree_source(source)
    if src.entry_count() > keep_texts_max():
        return True
    cache = cache_of(src)
    kept = cache.warm_rows_todo
    content = src.content_version()  # (what the parts are kept for: read again after a reload)
    todo = kept[1] if kept is not None and kept[0] == content else None
    with gc_paused():
        if todo is None:
            view = build_view(src, limit=0)
            total, sel = view.total, view.selected_index
            spans = [(0, min(total, WARM_ROWS))]
            if sel is not None:
                lo = max(spans[0][1], sel - WARM_ROWS // 2)
                spans.append((lo, min(total, max(lo, sel + WARM_ROWS // 2))))
            todo = [
                (start, min(end, start + budget))
                for a, end in spans
                for start in range(a, end, max(1, budget))
            ]
            cache.warm_rows_todo = (content, todo)
        if not todo:
            return True
        start, end = todo.pop(0)
        build_view(src, offset=start, limit=end - start)
    return not todo


def save_opening_view(manager: Any) -> bool:
    """Keep the first pages of the session's view for its next open, unchanged (`opening`):
    the head of the view and the rows around the leaf, default filter. False when there is
    nothing to keep (a small session, a file changed since it was read, no cache directory)
    or they are kept already."""
    return keep_pages(manager, lambda offset, limit: build_view(manager, offset=offset, limit=limit))
