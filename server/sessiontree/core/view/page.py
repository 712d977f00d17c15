"""`build_view`: a page of the tree as the selector renders it (rows, selection, footer)."""

from __future__ import annotations

import time
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import Any, Final, cast

from ..format.jsonl import scrub_text
from ..index import gc_paused
from ..tree.context import LAST_ENTRY, _LastEntry
from .adapters import as_tree_source
from .cache import ViewCache, cache_of, cache_put, views_to_keep
from .display import display_text, home_dir
from .filters import FILTER_MODES, FILTER_SUFFIXES, visible_rows, visible_rows_extended
from .flatten import Filtered, display_indent, extend, flatten, iter_active_path, prefix_of
from .lazy import LazyRows, lazy_flat
from .marks import hidden_heads, prefix_with_heads
from .opening import kept_page
from .progressive import PARTIAL_BUDGET, progressive_min, search_progress
from .search import current_search_cache, search_rows
from .source import TreeSource
from .tool_calls import LazyToolCalls, call_index
from .tree_art import SHORT_ART_WIDTH as _SHORT_ART_WIDTH
from .tree_art import short_prefix

__all__ = ["Row", "ViewPage", "build_view", "window_start"]


@dataclass(frozen=True, slots=True)
class Row:
    """One line of the rendered tree (docs/protocol.md ``Row``).

    ``depth`` is the display indent (the number of 3-character prefix cells). What a row
    the filter hides hands on (`marks`): ``marks_leaf`` is set on the leaf's row, or when the
    leaf is hidden on its nearest visible ancestor's, which names it in ``hidden_leaf`` (the
    leaf's display text); ``head_depth`` is the depth of the hidden first row of a branch
    whose connector this row draws in ``prefix`` (the row stands for it where rows nest).
    """

    id: str
    parent_id: str | None
    type: str
    role: str | None
    depth: int
    prefix: str
    on_active_path: bool
    is_leaf: bool
    label: str | None
    text: str
    timestamp: Any
    marks_leaf: bool = False
    hidden_leaf: str | None = None
    head_depth: int | None = None

    @property
    def short_prefix(self) -> str:
        """The art front ends show: `prefix`, cut behind a depth marker when deep (`tree_art`)."""
        return short_prefix(self.prefix)

    def line(self, full_art: bool = True) -> str:
        """The line: prefix (the full art, or the short form), active-path marker, label, text."""
        return (
            (self.prefix if full_art else self.short_prefix)
            + ("• " if self.on_active_path else "")
            + (f"[{self.label}] " if self.label else "")
            + self.text
        )

    def to_dict(self) -> dict[str, Any]:
        """The wire form (camelCase; absent optional fields left out)."""
        d: dict[str, Any] = {"id": self.id, "parentId": self.parent_id, "type": self.type}
        if self.role is not None:
            d["role"] = self.role
        d.update(depth=self.depth, prefix=self.prefix, onActivePath=self.on_active_path, isLeaf=self.is_leaf)
        if len(self.prefix) > _SHORT_ART_WIDTH:
            d["shortPrefix"] = self.short_prefix
        if self.label is not None:
            d["label"] = self.label
        d.update(text=self.text, timestamp=self.timestamp)
        if self.marks_leaf:
            d["marksLeaf"] = True
        if self.hidden_leaf is not None:
            d["hiddenLeaf"] = self.hidden_leaf
        if self.head_depth is not None:
            d["headDepth"] = self.head_depth
        return d


@dataclass(frozen=True, slots=True)
class ViewPage:
    """A page of the rendered tree.

    ``total`` counts all visible rows; ``selected_index`` is the absolute index (in the
    whole filtered list, not in this page) of the leaf's row or of its nearest visible
    ancestor, else of the last row; ``None`` when no row is visible. ``complete`` is False
    for a search answered in part (`build_view(..., partial=True)`): the rows matched so
    far, ``total`` their count, and no selected row yet.
    """

    rows: list[Row]
    total: int
    selected_index: int | None
    leaf_id: str | None
    offset: int = 0
    filter: str = "default"
    complete: bool = True

    def footer_suffix(self) -> str:
        """The selector's footer suffix for this page's filter mode."""
        return FILTER_SUFFIXES.get(self.filter, "")


def window_start(selected: int, count: int, max_rows: int) -> int:
    """The selector's scroll window: ``max(0, min(sel - floor(max/2), count - max))``."""
    return max(0, min(selected - max_rows // 2, count - max_rows))


def _filtered(
    source: TreeSource,
    leaf_id: str | None,
    mode: str,
    search: str | None,
    home: str | None = None,
    partial: tuple[int | None, float] | None = None,
) -> tuple[Filtered, ViewCache, Hashable]:
    """The visible rows for this leaf, mode and search. ``partial`` (rows wanted, deadline):
    a search that goes in steps may answer with the rows matched so far (`progressive`)."""
    cache = cache_of(source)
    version = source.version()
    current_search_cache(source, cache)
    content_version = source.content_version()
    fkey = (version, leaf_id)
    flat = cache.flat.get(fkey)
    if flat is None:
        prev = next(reversed(cache.flat.values()), None)
        if prev is not None and prev.content_version == content_version:
            flat = extend(source, prev, leaf_id)
        if flat is None:
            lazy = lazy_flat(source, cache, leaf_id)
            if lazy is not None:
                flat = lazy.as_flat()  # the walk around the leaf, completed
            else:
                if cache.chains_version != version:
                    cache.chains = {}
                    cache.chains_version = version
                flat = flatten(source, leaf_id, cache.chains)
        flat.version = version
        flat.content_version = content_version
        flat.count = source.entry_count()
        flat.distinct = source.distinct_count()
        cache_put(cache.flat, fkey, flat, 4)
        views_to_keep(cache, len(flat.ids))
    tokens = [t for t in scrub_text(search or "").lower().split() if t]
    # A search also matches tool-call displays, whose paths are shortened against home.
    shome = (home_dir() if home is None else home) if tokens else ""
    key = (version, leaf_id, mode, tuple(tokens), shome)
    filt = cache.filtered.get(key)
    if filt is None:
        rows: list[int] | None = None
        if flat.extended_from is not None:
            prev_version, prev_leaf, _, _ = flat.extended_from
            prev_filt = cache.filtered.get((prev_version, prev_leaf, mode, tuple(tokens), shome))
            if prev_filt is not None:
                rows = visible_rows_extended(source, cache, flat, prev_filt, mode, tokens, shome)
        if rows is None and tokens and _stepwise(source, cache):
            prog = search_progress(source, cache, flat, key, leaf_id, mode, tokens, shome)
            if partial is not None:
                prog.advance(source, cache, partial[0], partial[1])
            else:
                prog.advance(source, cache, None, None)
            if not prog.done:
                return prog.filtered(), cache, version
            cache.search_progress.pop(key, None)
            rows = prog.matched
        if rows is None and tokens:
            # Typing on: a query whose every earlier token is inside one of its tokens
            # matches a subset of that query's rows, so only those are matched again.
            for prev_key, prev_filt in reversed(cache.filtered.items()):
                v, lf, md, prev_tokens, ph = cast(tuple[Any, Any, str, tuple[str, ...], str], prev_key)
                if (v, lf, md, ph) == (version, leaf_id, mode, shome) and all(
                    any(p in t for t in tokens) for p in prev_tokens
                ):
                    # (its rows hold the tokens it had: only the others are looked for)
                    new = [t for t in tokens if t not in prev_tokens]
                    rows = (
                        search_rows(source, cache, flat, prev_filt.rows, new, shome)
                        if new
                        else prev_filt.rows
                    )
                    break
        if rows is None:
            rows = visible_rows(source, cache, flat, leaf_id, mode, tokens, shome)
        filt = Filtered(flat, rows)
        cache_put(cache.filtered, key, filt, 8)
    return filt, cache, version


_ROW_PARTS_MAX = 20_000  # rows whose entry's parts are kept (a few MB); then they start over


def _row_parts(cache: ViewCache, src: TreeSource, home: str | None, flat: Any) -> dict[str, tuple[Any, ...]]:
    """What rows showed of their entries, by id: (file order, parent id, type, role,
    timestamp, display text). The next page of any leaf, filter or search takes them
    instead of reading and parsing the entries again. Valid for the source's stored
    content, the home paths are shortened against and the call index's generation (a tool
    result shows its call); an id a later entry took (another file order) is read again."""
    ci = cache.call_index
    if ci is not None:
        ci = call_index(src, cache, flat)  # with the entries appended since (a generation more)
    key = (
        src.content_version(),
        home_dir() if home is None else home,
        id(ci),
        ci.gen if ci is not None else -1,
    )
    if cache.row_parts_key != key:
        cache.row_parts = {}
        cache.row_parts_key = key
    return cache.row_parts


def _keepable(cache: ViewCache, sk: Any) -> bool:
    """Whether a row's parts hold whatever the leaf and later appends: a tool result's only
    when one message has its call (a call not found yet may be appended; of an id several
    messages have, the last in the flattened order wins, `tool_calls`; a second one or a
    removal bumps the call index's generation, which ends every kept part)."""
    if sk.role != "toolResult":
        return True
    ci = cache.call_index
    if ci is None:
        return True  # no call looked up: an id that is not hashable shows the tool's name
    try:
        return sk.tool_call_id in ci.owner
    except TypeError:
        return True


def _stepwise(source: TreeSource, cache: ViewCache) -> bool:
    """Whether a search of ``source`` goes in steps: a big session whose searchable texts
    are not all known (`progressive`)."""
    count = source.entry_count()
    return count >= progressive_min() and cache.search_all_at != count


def _lazy_rows(src: TreeSource, leaf: str | None, mode: str, search: str | None) -> LazyRows | None:
    """The lazily walked rows for this request, when it can use them (see `lazy`)."""
    if mode == "labeled-only" or scrub_text(search or "").split():
        return None
    cache = cache_of(src)
    flat = lazy_flat(src, cache, leaf)
    if flat is None:
        return None
    key = (flat.version, leaf, mode)
    rows = cache.lazy_rows.get(key)
    if rows is None or rows.flat is not flat:
        rows = LazyRows(src, cache, flat, mode)
        cache_put(cache.lazy_rows, key, rows, 8)
    return rows


def _selected(filt: Filtered, source: TreeSource, leaf_id: str | None) -> int | None:
    if filt.selected != -1:
        return filt.selected
    sel: int | None = None
    if filt.rows:
        sel = len(filt.rows) - 1
        for eid in iter_active_path(source, leaf_id):
            pos = filt.position(eid)
            if pos is not None:
                sel = pos
                break
    filt.selected = sel
    return sel


def _leaf_text(src: TreeSource, leaf: str, tool_calls: LazyToolCalls, home: str | None) -> str:
    """The display text of a leaf the filter hides (the row that marks it names it)."""
    entry = src.get_entry(leaf)
    if entry is None:
        return ""
    sk = src.skeleton(leaf)
    tool_calls.start = sk.parent_id if sk is not None else None
    return scrub_text(display_text(entry, tool_calls, home))


_CURRENT: Final = LAST_ENTRY


def build_view(
    source: Any,
    *,
    filter: str = "default",
    search: str | None = None,
    offset: int = 0,
    limit: int | None = None,
    leaf_id: str | _LastEntry | None = _CURRENT,
    home: str | None = None,
    partial: bool = False,
) -> ViewPage:
    """The tree as the selector renders it, one page at a time.

    ``source`` is a `TreeSource`, a ``SessionManager`` or a list of entry dicts. The leaf
    defaults to the source's current leaf; pass ``leaf_id`` to view from another node
    (``None``: no leaf, nothing reordered). ``offset``/``limit`` select the page.
    With ``partial``, a search of a big session whose texts are not all known answers
    with the rows matched so far once they fill the page or `PARTIAL_BUDGET` is spent
    (``complete`` False); `progressive.continue_search` goes on with it.
    """
    if filter not in FILTER_MODES:
        raise ValueError(f"unknown filter mode {filter!r}; expected one of {', '.join(FILTER_MODES)}")
    src = as_tree_source(source)
    leaf = src.get_leaf_id() if isinstance(leaf_id, _LastEntry) else leaf_id
    # The first build of a large view allocates a container or two per row; the cyclic
    # collector's passes over a heap of 100,000 skeletons would cost more than the build.
    steps: tuple[int | None, float] | None = None
    if partial:
        steps = (
            None if limit is None else max(0, offset) + max(0, limit),
            time.perf_counter() + PARTIAL_BUDGET,
        )
    with gc_paused():
        return _build_view(src, leaf, filter, search, offset, limit, home, steps)


def _build_view(
    src: TreeSource,
    leaf: str | None,
    filter: str,
    search: str | None,
    offset: int,
    limit: int | None,
    home: str | None,
    steps: tuple[int | None, float] | None = None,
) -> ViewPage:
    if not scrub_text(search or "").split():
        kept = kept_page(src, leaf, filter, offset, limit, home)
        if kept is not None:
            # the first pages of a session reopened unchanged, as they were kept (`opening`)
            kept_rows, kept_total, kept_selected, kept_start = kept
            return ViewPage([Row(*r) for r in kept_rows], kept_total, kept_selected, leaf, kept_start, filter)
    lazy = _lazy_rows(src, leaf, filter, search)
    flat: Any
    if lazy is not None:
        # The rows around the leaf without walking the whole tree (`lazy`).
        flat = lazy.flat
        cache = cache_of(src)
        version = src.version()
        total = lazy.total()
        selected = lazy.selected
        row_at = lazy.row
        complete = True
    else:
        filt, cache, version = _filtered(src, leaf, filter, search, home, steps)
        flat = filt.flat
        total = len(filt.rows)
        selected = _selected(filt, src, leaf)
        complete = filt.complete
        flat_rows = filt.rows
        row_at = lambda r: flat_rows[r]  # noqa: E731
    start = max(0, offset)
    end = total if limit is None else min(total, start + max(0, limit))
    labels = src.labels
    tool_calls = LazyToolCalls(src, cache, lambda: flat, version)
    rows: list[Row] = []
    page_fis = [row_at(r) for r in range(start, end)]
    page_ids = [flat.ids[fi] for fi in page_fis]
    skeleton = src.skeleton
    page_sks = [skeleton(eid) for eid in page_ids]
    # what a row shows of its entry, kept from earlier pages (`_row_parts`): only the
    # entries no page showed are read
    kept_parts = _row_parts(cache, src, home, flat)
    parts: list[tuple[Any, ...] | None] = []
    for eid, sk in zip(page_ids, page_sks, strict=True):
        got = kept_parts.get(eid)
        parts.append(got if got is not None and sk is not None and got[0] == sk.order else None)
    missing = [i for i, got in enumerate(parts) if got is None]
    if missing:
        read = src.get_entries([page_ids[i] for i in missing])
        for i, entry_or_none in zip(missing, read, strict=True):
            sk = page_sks[i]
            entry = entry_or_none or {}
            tool_calls.start = sk.parent_id if sk is not None else None
            got = (
                sk.order if sk is not None else None,
                entry.get("parentId"),
                entry.get("type") or (sk.type if sk is not None else ""),
                _role_of(entry),
                entry.get("timestamp"),
                scrub_text(display_text(entry, tool_calls, home)),
            )
            parts[i] = got
            if entry_or_none is not None and sk is not None and _keepable(cache, sk):
                kept_parts[page_ids[i]] = got
        if len(kept_parts) > _ROW_PARTS_MAX:
            kept_parts.clear()
    active_path = flat.active_path
    # The row that marks the leaf: its own, or when the filter hides it the nearest visible
    # ancestor's, the row the view selects (`marks`); a search answered in part has none yet.
    mark_at = selected if complete and selected is not None and start <= selected < end else None
    if mark_at is not None and flat.ids[row_at(mark_at)] not in active_path:
        mark_at = None  # no ancestor of the leaf is visible: the selection is the last row
    hidden_leaf: str | None = None
    if mark_at is not None and leaf is not None and flat.ids[row_at(mark_at)] != leaf:
        hidden_leaf = _leaf_text(src, leaf, tool_calls, home)
    prev_fi = row_at(start - 1) if 0 < start < end else -1
    for r, (fi, eid, got) in enumerate(zip(page_fis, page_ids, parts, strict=True), start):
        assert got is not None
        label = labels.get(eid)
        heads = hidden_heads(flat, prev_fi, fi) if fi - prev_fi > 1 else []
        prev_fi = fi
        marks = r == mark_at
        rows.append(
            Row(
                id=eid,
                parent_id=got[1],
                type=got[2],
                role=got[3],
                depth=display_indent(flat, fi),
                prefix=prefix_with_heads(flat, fi, heads) if heads else prefix_of(flat, fi),
                on_active_path=eid in active_path,
                is_leaf=eid == leaf,
                label=scrub_text(label) if label else None,
                text=got[5],
                timestamp=got[4],
                marks_leaf=marks,
                hidden_leaf=hidden_leaf if marks else None,
                head_depth=display_indent(flat, heads[0]) if heads else None,
            )
        )
    if not complete:
        return ViewPage(rows, total, None, leaf, start, filter, complete=False)
    return ViewPage(rows, total, selected, leaf, start, filter)


def _role_of(entry: Mapping[str, Any]) -> Any:
    """A message entry's role (None for another entry, or a message that is no object)."""
    message = entry.get("message") if entry.get("type") == "message" else None
    return message.get("role") if isinstance(message, Mapping) else None
