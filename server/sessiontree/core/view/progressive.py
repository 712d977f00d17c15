"""A search of a big session answered in steps: the first rows at once, the rest after.

A search must test the text of every visible row; when those texts are not known yet (a
session above `progressive_min` entries whose texts the idle time has not built, or one
too big to keep them: above `search.keep_texts_max()` they are read for each query and
let go), that means reading most of the file again. A `SearchProgress` tests the rows in
view order, `STEP_ROWS` at a time, and keeps the rows that matched so far:

- a request that accepts a partial answer (`build_view(..., partial=True)`) gets its page
  as soon as the rows matched so far fill it, or when its time budget is spent, with
  ``complete=False``: ``total`` is the count so far and there is no selected row yet;
- `continue_search` goes on in the caller's idle time (the daemon, a slice at a time,
  then it tells its client the search is complete);
- a request that wants the whole answer runs the steps to the end. Above
  `search.keep_texts_max()` the texts of each step are let go after it, so a search of a
  million entries holds one step's texts, not all of them.

The rows a progress matched are exactly those the one-pass search matches (the steps test
the same rows with the same rules, in order), so a completed progress becomes the
`Filtered` a complete search would have kept. A query typed on from one in progress (one
more character or word) starts from the rows that one matched so far for the part of the
view it tested, with its new tokens only, and tests the rest of the view whole.
"""

from __future__ import annotations

import time
from bisect import bisect_left
from typing import Any, Final, cast

from ..index import gc_paused
from ..tuning import bound
from .adapters import as_tree_source
from .cache import ViewCache, cache_of, cache_put
from .filters import hidden_ids, keeps
from .flatten import Filtered, Flat
from .search import forget_search_texts, keep_texts_max, search_rows
from .source import TreeSource

__all__ = [
    "PARTIAL_BUDGET",
    "PARTIAL_SEARCH_MIN",
    "STEP_ROWS",
    "SearchProgress",
    "continue_search",
    "progressive_min",
    "search_in_progress",
    "search_progress",
]

#: Sessions of at least this many entries are searched in steps while their texts are not
#: all known (``SESSIONTREE_PARTIAL_SEARCH_MIN`` sets another bound: `progressive_min`).
PARTIAL_SEARCH_MIN: Final = 50_000
#: Visible rows tested per step: below the size from which `search` builds its one buffer
#: of every text, which a step that changes the texts would make again each time.
STEP_ROWS: Final = 2000
#: The longest a partial answer goes on matching before it answers with what it has.
PARTIAL_BUDGET: Final = 0.12

#: A filtered list's key (`page._filtered`): version, leaf, mode, tokens, home.
Key = tuple[Any, Any, str, tuple[str, ...], str]


def progressive_min() -> int:
    """The entry count from which a search goes in steps (the environment's, when set)."""
    return bound("SESSIONTREE_PARTIAL_SEARCH_MIN", PARTIAL_SEARCH_MIN)


class SearchProgress:
    """One query's matching over one flattened view, done up to a point.

    ``cands`` are rows known to hold the tokens a query typed on from had (tested for
    ``cand_tokens`` only) up to flat position ``cand_end``; the rest of the view, from
    ``cand_end`` on, is tested whole for ``tokens``. ``matched`` are the rows that
    matched, ascending; ``pos`` is the flat position up to which rows were tested.
    """

    def __init__(
        self,
        key: Key,
        flat: Flat,
        leaf_id: str | None,
        mode: str,
        tokens: list[str],
        home: str,
        cands: list[int] | None = None,
        cand_tokens: list[str] | None = None,
        cand_end: int = 0,
    ) -> None:
        self.key = key
        self.flat = flat
        self.leaf_id = leaf_id
        self.mode = mode
        self.tokens = tokens
        self.home = home
        self.cands = cands if cands is not None else []
        self.cand_tokens = cand_tokens if cand_tokens is not None else tokens
        self.cand_end = cand_end if cands is not None else 0
        self.cand_i = 0
        self.pos = 0
        self.matched: list[int] = []
        self.done = False
        self.abandoned = False  # a newer query took its place (`continue_search` stops)

    def step(self, source: TreeSource, cache: ViewCache, rows: int = STEP_ROWS) -> None:
        """Test about ``rows`` more visible rows, in view order."""
        if self.done:
            return
        flat = self.flat
        keep_texts = source.entry_count() <= keep_texts_max()
        if self.cand_i < len(self.cands):
            chunk = self.cands[self.cand_i : self.cand_i + rows]
            self.cand_i += len(chunk)
            tokens = self.cand_tokens
            self.pos = self.cand_end if self.cand_i >= len(self.cands) else chunk[-1] + 1
        else:
            n = len(flat.ids)
            start = max(self.pos, self.cand_end)
            chunk = []
            end = start
            # at most ``rows`` positions in all, so never more than ``rows`` visible rows
            while end < n and len(chunk) < rows // 2:
                stop = min(n, end + rows - len(chunk))
                chunk += visible_in(source, cache, flat, self.leaf_id, self.mode, end, stop)
                end = stop
            self.pos = end
            tokens = self.tokens
        if chunk and tokens:
            found = search_rows(source, cache, flat, chunk, tokens, self.home)
            if not keep_texts:
                forget_search_texts(cache, [flat.ids[i] for i in chunk])
            self.matched += found
        elif chunk:
            self.matched += chunk
        if self.cand_i >= len(self.cands) and self.pos >= len(flat.ids):
            self.done = True

    def advance(self, source: TreeSource, cache: ViewCache, need: int | None, deadline: float | None) -> None:
        """Step until ``need`` rows matched (None: until done), or until ``deadline``
        (`time.perf_counter`) has passed after a step."""
        while not self.done and (need is None or len(self.matched) < need):
            # no more rows than twice those still wanted: a page's first rows come soon
            rows = STEP_ROWS if need is None else min(STEP_ROWS, max(256, 2 * (need - len(self.matched))))
            self.step(source, cache, rows)
            if deadline is not None and time.perf_counter() >= deadline:
                break

    def filtered(self) -> Filtered:
        """The rows so far as a `Filtered` (its ``complete`` says whether they are all)."""
        filt = Filtered(self.flat, list(self.matched))
        if not self.done:
            filt.complete = False
            filt.selected = None
        return filt


def visible_in(
    source: TreeSource, cache: ViewCache, flat: Flat, leaf_id: str | None, mode: str, start: int, stop: int
) -> list[int]:
    """The rows of flat positions ``start`` to ``stop`` that ``mode`` shows (no search):
    those of `filters.visible_rows` in that range."""
    ids = flat.ids
    if mode == "labeled-only":
        labels = source.labels
        skeleton = source.lookups()[0]
        out = []
        for i in range(start, stop):
            eid = ids[i]
            sk = skeleton(eid)
            if sk is not None and keeps(sk, eid, leaf_id, mode, labels):
                out.append(i)
        return out
    hidden = hidden_ids(source, cache, mode)
    out = [i for i in range(start, stop) if ids[i] not in hidden]
    if leaf_id is not None and leaf_id in hidden:
        pos = flat.index(leaf_id)
        if pos is not None and start <= pos < stop:
            sk = source.skeleton(leaf_id)
            if sk is not None and keeps(sk, leaf_id, leaf_id, mode, source.labels):
                out.insert(bisect_left(out, pos), pos)  # the leaf is exempt from the assistant rule
    return out


def search_progress(
    source: TreeSource,
    cache: ViewCache,
    flat: Flat,
    key: Key,
    leaf_id: str | None,
    mode: str,
    tokens: list[str],
    home: str,
) -> SearchProgress:
    """The progress of this query over this view: the one kept, or a new one (from the
    rows of a query it types on from, complete or in progress, when there is one)."""
    kept: dict[Key, SearchProgress] = cache.search_progress
    prog = kept.get(key)
    if prog is not None and prog.flat is flat:
        return prog
    version, leaf, md, _, hm = key
    prog = None

    def types_on(prev_tokens: tuple[str, ...]) -> bool:
        return all(any(p in t for t in tokens) for p in prev_tokens)

    for prev_key, prev_filt in reversed(cache.filtered.items()):
        v, lf, m, prev_tokens, h = cast(Key, prev_key)
        if (v, lf, m, h) == (version, leaf, md, hm) and prev_filt.flat is flat and types_on(prev_tokens):
            new = [t for t in tokens if t not in prev_tokens]
            prog = SearchProgress(
                key, flat, leaf_id, mode, tokens, home, list(prev_filt.rows), new, len(flat.ids)
            )
            break
    if prog is None:
        for prev in reversed(kept.values()):
            v, lf, m, prev_tokens, h = prev.key
            if (v, lf, m, h) == (version, leaf, md, hm) and prev.flat is flat and types_on(prev_tokens):
                new = [t for t in tokens if t not in prev_tokens]
                # the rows it tested (up to `pos`) narrow to its matches; the rest is new
                prog = SearchProgress(
                    key, flat, leaf_id, mode, tokens, home, list(prev.matched), new, prev.pos
                )
                break
    if prog is None:
        prog = SearchProgress(key, flat, leaf_id, mode, tokens, home)
    for old in kept.values():
        old.abandoned = True
    kept.clear()  # one query in progress per source: the newest
    kept[key] = prog
    return prog


def search_in_progress(source: Any) -> bool:
    """Whether the source has a search in progress for its current version."""
    src = as_tree_source(source)
    kept: dict[Key, SearchProgress] = cache_of(src).search_progress
    version = src.version()
    return any(not (prog.abandoned or prog.done) and key[0] == version for key, prog in kept.items())


def continue_search(source: Any, rows: int = STEP_ROWS) -> tuple[bool, dict[str, Any] | None]:
    """One more step of the source's search in progress, for idle time.

    Returns (more to do, what completed): the second item, once the search completes in
    this step, is ``{"search": tokens joined by spaces, "filter": mode, "leafId": leaf,
    "total": rows}``; (False, None) when there is none in progress or it was replaced.
    """
    src = as_tree_source(source)
    cache = cache_of(src)
    kept: dict[Key, SearchProgress] = cache.search_progress
    if not kept:
        return False, None
    key, prog = next(reversed(kept.items()))
    if prog.abandoned or prog.done:
        return False, None
    if key[0] != src.version():
        prog.abandoned = True
        kept.clear()
        return False, None
    with gc_paused():
        prog.step(src, cache, rows)
    if not prog.done:
        return True, None
    kept.pop(key, None)
    filt = Filtered(prog.flat, prog.matched)
    cache_put(cache.filtered, key, filt, 8)
    return False, {
        "search": " ".join(prog.tokens),
        "filter": prog.mode,
        "leafId": prog.leaf_id,
        "total": len(filt.rows),
    }
