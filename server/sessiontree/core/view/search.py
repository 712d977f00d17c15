"""Search: the text a row is matched against, and the matching of a query's tokens.

A node matches when every token of the query (lowercased, split on whitespace) is in its
searchable text: the reference's parts by entry type (docs/tree-view.md), then the row's
display text (DIVERGENCE 9: search finds what rows show). Texts are built once per entry
and kept until the source's stored entries change; a tool result's call display is
resolved at query time.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Hashable, Mapping
from itertools import accumulate, compress, filterfalse, islice, repeat
from operator import add, contains
from typing import Any

from ..format.jscompat import js_string, js_trim, js_truthy
from ..format.jsonl import scrub_text
from ..tuning import bound
from .cache import ViewCache
from .display import ToolCallMap, display_text, extract_content
from .flatten import Flat
from .search_fast import FAST_ROLES, fast_search_texts
from .source import TreeSource
from .tool_calls import CallIndex, call_index

__all__ = [
    "KEEP_TEXTS_MAX",
    "current_search_cache",
    "fill_search_text",
    "forget_search_texts",
    "keep_texts_max",
    "search_display",
    "search_rows",
    "searchable_parts",
    "searchable_text",
]


def searchable_parts(entry: Mapping[str, Any]) -> list[str]:
    etype = entry.get("type")
    parts: list[str] = []
    if etype == "message":
        msg = entry.get("message")
        if not isinstance(msg, Mapping):
            return parts
        role = msg.get("role")
        parts.append("" if role is None else js_string(role))
        content = msg.get("content")
        if js_truthy(content):
            parts.append(extract_content(content))
        if role == "bashExecution" and js_truthy(msg.get("command")):
            parts.append(js_string(msg.get("command")))
    elif etype == "custom_message":
        parts.append(js_string(entry.get("customType")))
        content = entry.get("content")
        parts.append(content if isinstance(content, str) else extract_content(content))
    elif etype == "compaction":
        parts.append("compaction")
    elif etype == "branch_summary":
        parts += ["branch summary", js_string(entry.get("summary") or "")]
    elif etype == "model_change":
        parts += ["model", js_string(entry.get("model") or "")]
    elif etype == "thinking_level_change":
        level = entry.get("thinkingLevel")
        parts += ["thinking", "off" if level is None else js_string(level)]
    elif etype == "custom":
        parts += ["custom", js_string(entry.get("customType") or "")]
    elif etype == "label":
        label = entry.get("label")
        parts += ["label", "" if label is None else js_string(label)]
    return parts


def _search_display(entry: Mapping[str, Any]) -> str:
    """What of the display text a search must also match, but for a toolResult's call.

    The tool-call display of a ``toolResult`` depends on which assistant message holds the
    call (`CallIndex`), so it is added at query time; its fallback (``[toolName]``) only
    when no call is found.

    A query token holds no whitespace, and the display of a user message, an assistant
    message with text and a bashExecution is a prefix (``user: ``) and then text the
    searchable parts already hold (`extract_content` of the content, the command) with
    newlines and tabs made spaces: a token found in that display is found in the prefix
    or in those parts. So for those only the prefix is kept, which matches alike and
    spares building the display of every entry at the first search.
    """
    if entry.get("type") == "message":
        msg = entry.get("message")
        if isinstance(msg, Mapping):
            role = msg.get("role")
            if role == "toolResult":
                if isinstance(msg.get("toolCallId"), Hashable):
                    return ""
            elif role == "user":
                return "user:"
            elif role == "assistant":
                if js_trim(extract_content(msg.get("content"))):
                    return "assistant:"
            elif role == "bashExecution":
                command = msg.get("command")
                if command is None or command == "" or js_truthy(command):
                    return "[bash]:"
    return display_text(entry)


#: What of the display text a search matches besides the searchable parts (the
#: cross-session index, core/fts, uses the same rule).
search_display = _search_display


def searchable_text(
    entry: Mapping[str, Any],
    label: str | None = None,
    tool_calls: ToolCallMap | None = None,
    home: str | None = None,
) -> str:
    """The text a search query is matched against (not lowercased).

    The reference's parts (the label, then the parts of ``docs/tree-view.md`` by entry
    type), then the row's display text (DIVERGENCES 9: search finds what rows show, e.g. a
    path shown as ``[read: src/x.py]``), so the matches are a superset of the reference's.
    ``tool_calls`` and ``home`` are those of `display_text`.
    """
    parts = [label] if label else []
    parts += searchable_parts(entry)
    shown = display_text(entry, tool_calls, home)
    if shown:
        parts.append(shown)
    return " ".join(parts)


_SEARCH_BATCH = 4096
_FAST_MIN = 512  # below this many texts, the per-entry path costs no more


def current_search_cache(source: TreeSource, cache: ViewCache) -> None:
    """Drop the kept searchable texts when the source says stored entries may have changed
    (the text of an entry does not change when others are appended)."""
    content_version = source.content_version()
    if cache.search_version != content_version:
        cache.search_text.clear()
        cache.search_order.clear()
        cache.search_call.clear()
        cache.search_folded.clear()
        cache.search_gen += 1
        cache.search_all_at = -1
        cache.search_buffer = None
        cache.search_version = content_version
        cache.warm_pos = 0
        cache.warm_done = False


def fill_search_text(source: TreeSource, cache: ViewCache, ids: list[str]) -> None:
    texts = cache.search_text
    orders = cache.search_order
    calls = cache.search_call
    folded = cache.search_folded
    skeleton = source.skeleton
    missing = []
    for eid in ids:
        if eid in texts:
            sk = skeleton(eid)
            # a later entry with the same id replaces the earlier one
            if sk is None or sk.order == orders.get(eid):
                continue
        missing.append(eid)
    if not missing:
        return
    cache.search_gen += 1
    index = source.bulk_index()
    if index is not None and index.raw_loader is not None and len(missing) >= _FAST_MIN:
        missing = _fill_fast(index.raw_loader, skeleton, missing, texts, orders, calls, folded)
    for start in range(0, len(missing), _SEARCH_BATCH):
        chunk = missing[start : start + _SEARCH_BATCH]
        entries = _read_many(source, index, chunk)
        for eid, entry in zip(chunk, entries, strict=True):
            # Matched as shown: a lone surrogate is U+FFFD (docs/storage-format.md).
            if entry is None:
                texts[eid] = ""
            else:
                parts = searchable_parts(entry)
                # DIVERGENCE 9: the display text too, so a search finds what the row shows.
                shown = _search_display(entry)
                if shown:
                    parts.append(shown)
                text = texts[eid] = scrub_text(" ".join(parts)).lower()
                calls.pop(eid, None)
                folded.pop(eid, None)
                if not shown and entry.get("type") == "message":
                    fallback = scrub_text(display_text(entry)).lower()
                    calls[eid] = (entry["message"].get("toolCallId"), fallback, len(text))
            sk = skeleton(eid)
            orders[eid] = sk.order if sk is not None else None


def forget_search_texts(cache: ViewCache, ids: list[str]) -> None:
    """Let go of the searchable texts of ``ids`` (a search too big to keep them)."""
    texts = cache.search_text
    orders = cache.search_order
    calls = cache.search_call
    folded = cache.search_folded
    shown: list[Hashable] = []
    for eid in ids:
        texts.pop(eid, None)
        orders.pop(eid, None)
        for kept in (calls.pop(eid, None), folded.pop(eid, None)):
            if kept is not None:
                shown.append(kept[0])
    if shown and cache.call_index is not None:
        cache.call_index.let_go(shown)
    cache.search_gen += 1
    cache.search_all_at = -1


def _read_many(source: TreeSource, index: Any, ids: list[str]) -> list[Mapping[str, Any] | None]:
    """The entries of ``ids``; many of an index's are streamed past its entry cache (a
    search reads every entry once: it must not evict what the pages keep reading)."""
    if index is None or len(ids) <= 256:
        return source.get_entries(ids)
    sks = [index.skeleton(eid) for eid in ids]
    got = {sk.id: e for sk, e in index.stream_entries([sk for sk in sks if sk is not None])}
    return [got.get(eid) if sk is not None else None for eid, sk in zip(ids, sks, strict=True)]


def _fill_fast(
    raw_loader: Any,
    skeleton: Any,
    missing: list[str],
    texts: dict[str, str],
    orders: dict[str, Any],
    calls: dict[str, tuple[Hashable, str | None, int]],
    folded: dict[str, Any],
) -> list[str]:
    """The texts `fast_search_texts` can build, from the raw lines; the ids it left."""
    rest: list[str] = []
    sks = []
    for eid in missing:
        sk = skeleton(eid)
        if sk is not None and sk.offset >= 0 and sk.type == "message" and sk.role in FAST_ROLES:
            sks.append(sk)
        else:
            rest.append(eid)
    sks.sort(key=lambda sk: sk.offset)
    for sk, text, call in fast_search_texts(raw_loader(sks)):
        eid = sk.id
        if text is None:
            rest.append(eid)
            continue
        texts[eid] = text
        folded.pop(eid, None)
        if call is None:
            calls.pop(eid, None)
        else:
            # the fallback display (no call found) is built when a query needs it
            calls[eid] = (call, None, len(text))
        orders[eid] = sk.order
    return rest


def fold_calls(
    source: TreeSource, cache: ViewCache, ci: CallIndex, home: str, limit: int | None = None
) -> int:
    """Fold the display of each tool result's call into its searchable text, for up to
    ``limit`` results (all when ``None``); how many it folded.

    The call of an id only one message has is the same in every flattened order: it is
    folded into its result's text (until the call index says an owner changed), so only
    the calls of shared ids are resolved per row. The daemon's idle time folds ahead of a
    first search in slices (`warmup.warm_search`), the search folds what is left."""
    texts = cache.search_text
    calls = cache.search_call
    folded = cache.search_folded
    key = (ci, ci.gen, home)
    if cache.search_tool_key != key:
        # an owner changed (or the index or home): take the folded displays out again
        for eid, kept in folded.items():
            texts[eid] = texts[eid][: kept[2]]
            calls[eid] = kept
        folded.clear()
        cache.search_tool_key = key
        cache.search_gen += 1
    owners = ci.owner
    fold = [eid for eid, call in calls.items() if owners.get(call[0]) is not None]
    if limit is not None:
        del fold[limit:]
    ci.preload(source, [owners[calls[eid][0]] for eid in fold])
    if fold:
        cache.search_gen += 1  # (texts changed: the buffer is made again)
        shown = ci.shown
        for eid in fold:
            call = calls.pop(eid)
            texts[eid] = f"{texts[eid]} {shown(owners[call[0]], call[0], home)}"
            folded[eid] = call
    return len(fold)


def search_rows(
    source: TreeSource, cache: ViewCache, flat: Flat, indices: list[int], tokens: list[str], home: str
) -> list[int]:
    ids = flat.ids
    if cache.search_all_at != source.entry_count():  # else every entry has its current text
        fill_search_text(source, cache, [ids[i] for i in indices])
    ci: CallIndex | None = None
    if cache.search_call or cache.search_folded:
        ci = call_index(source, cache, flat)
        fold_calls(source, cache, ci, home)
    if len(indices) >= _BUFFER_MIN and len(flat.ids) <= _BUFFER_MAX and tokens and all(tokens):
        return _buffer_rows(source, cache, flat, indices, tokens, home, ci)
    return _match_rows(source, cache, flat, indices, tokens, home, ci)


_BUFFER_MIN = 2048  # below this many rows, matching row by row costs no more
#: Above this many entries a session's searchable texts are not kept between queries (those
#: of a million entries would hold several hundred megabytes): a search reads them step by
#: step and lets each step's go (`progressive`). Nor is the buffer made above this many
#: rows (a second copy of every text), nor are texts built in idle time.
#: ``SESSIONTREE_SEARCH_TEXTS_MAX`` sets another bound (`keep_texts_max`).
KEEP_TEXTS_MAX = 300_000
_BUFFER_MAX = KEEP_TEXTS_MAX


def keep_texts_max() -> int:
    """The entry count up to which searchable texts are kept (the environment's, when set)."""
    return bound("SESSIONTREE_SEARCH_TEXTS_MAX", KEEP_TEXTS_MAX)


_DENSE_PROBE = 256  # hits found in the buffer before it is judged how dense they are


class SearchBuffer:
    """The kept texts of every row of one flattened tree, in row order, in one string.

    Rows are joined by a newline, which no token holds (tokens are split on whitespace),
    so a token found in the buffer lies within one row's text; ``starts[r]`` is where row
    ``r`` begins (one more item at the end). Valid for one flattened tree and one
    generation of the texts (`ViewCache.search_gen`).
    """

    def __init__(self, ids: list[str], texts: dict[str, str], gen: int) -> None:
        self.ids = ids
        self.count = len(ids)
        self.gen = gen
        # the texts themselves, not copies (C loops: no Python step per row)
        parts = self.parts = list(map(texts.get, ids, repeat("")))
        self.text = "\n".join(parts)
        self.starts = list(accumulate(map(add, map(len, parts), repeat(1)), initial=0))
        self._row_of: dict[str, int] | None = None
        # (the visible rows a search started from, the rows not among them): the same list
        # serves every query of a view and mode (`filters.visible_rows` keeps it)
        self._absent: tuple[list[int], set[int]] | None = None

    def rows_with(self, token: str) -> list[int]:
        """The rows whose text holds ``token``, ascending.

        Found in the buffer while hits are sparse; once the first `_DENSE_PROBE` hits lie
        within the first sixteenth as many rows, the rest are tested row by row by C loops
        (`token in text` for each, without a Python step per row)."""
        find = self.text.find
        starts = self.starts
        out: list[int] = []
        append = out.append
        pos = find(token)
        while pos >= 0:
            r = bisect_right(starts, pos) - 1
            append(r)
            if len(out) == _DENSE_PROBE and r < _DENSE_PROBE * 16:
                out.extend(
                    compress(
                        range(r + 1, self.count),
                        map(contains, islice(self.parts, r + 1, None), repeat(token)),
                    )
                )
                return out
            pos = find(token, starts[r + 1])
        return out

    def keep_with(self, rows: list[int], token: str) -> list[int]:
        """Those of ``rows`` whose text holds ``token`` (in their order)."""
        return list(compress(rows, map(contains, map(self.parts.__getitem__, rows), repeat(token))))

    def absent(self, rows: list[int]) -> set[int]:
        """The rows of this buffer's tree that ``rows`` (ascending, at least half of them)
        leaves out; made once for a given list."""
        kept = self._absent
        if kept is not None and kept[0] is rows:
            return kept[1]
        out = set(range(self.count)).difference(rows) if len(rows) != self.count else set()
        self._absent = (rows, out)
        return out

    def rows_of(self, ids: Any) -> set[int]:
        """The rows of those of ``ids`` that are rows of this buffer's tree."""
        row_of = self._row_of
        if row_of is None:
            row_of = self._row_of = dict(zip(self.ids, range(self.count), strict=True))
        get = row_of.get
        return {r for r in map(get, ids) if r is not None}


def _buffer_rows(
    source: TreeSource,
    cache: ViewCache,
    flat: Flat,
    indices: list[int],
    tokens: list[str],
    home: str,
    ci: CallIndex | None,
) -> list[int]:
    """`_match_rows` for many rows: the first token found in the buffer, the rest checked
    on the rows that hold it; rows with a label or an unresolved call go row by row."""
    ids = flat.ids
    buf = cache.search_buffer
    if not (
        isinstance(buf, SearchBuffer)
        and buf.ids is ids
        and buf.count == len(ids)
        and buf.gen == cache.search_gen
    ):
        buf = cache.search_buffer = SearchBuffer(ids, cache.search_text, cache.search_gen)
    labels = source.labels
    calls = cache.search_call
    special = buf.rows_of(set(labels) | set(calls) if calls else labels)
    if len(indices) * 2 < buf.count:
        # few rows to look at (typing on: the last query's rows): each token is tested
        # on them, the longest (likely the rarest) first, without a look through the buffer
        if special:
            special = _among(special, indices)
        hits = [r for r in indices if r not in special] if special else indices
        rest = sorted(tokens, key=len, reverse=True)
    else:
        # the longest token is likely the rarest: found in the buffer, the others checked
        # on its rows; the rows not shown (kept per view) and the odd ones are taken out
        absent = buf.absent(indices)
        if special and absent:
            special -= absent
        first = max(tokens, key=len)
        rest = [t for t in tokens if t is not first]
        hits = _without(buf.rows_with(first), absent | special if special else absent)
    for t in rest:
        hits = buf.keep_with(hits, t)
    if not special:
        return hits
    odd = sorted(special)
    return sorted(hits + _match_rows(source, cache, flat, odd, tokens, home, ci))


def _among(rows: set[int], within: list[int]) -> set[int]:
    """Those of ``rows`` that ``within`` (ascending) holds: by bisection when they are few."""
    if len(rows) * 32 > len(within):
        return rows & set(within)
    n = len(within)
    return {r for r in rows if (i := bisect_left(within, r)) < n and within[i] == r}


def _without(rows: list[int], drop: set[int]) -> list[int]:
    """``rows`` (ascending) without those in ``drop``, in their order.

    A few rows to drop (a view hides few, a session has few labels) are found by bisection
    and the rest copied in slices; many are tested row by row in a C loop."""
    if not drop:
        return rows
    if len(drop) * 32 > len(rows):
        return list(filterfalse(drop.__contains__, rows))
    out: list[int] = []
    start = 0
    n = len(rows)
    for r in sorted(drop):
        i = bisect_left(rows, r, start)
        if i < n and rows[i] == r:
            out += rows[start:i]
            start = i + 1
    if start == 0:
        return rows
    out += rows[start:]
    return out


def _match_rows(
    source: TreeSource,
    cache: ViewCache,
    flat: Flat,
    indices: list[int],
    tokens: list[str],
    home: str,
    ci: CallIndex | None,
) -> list[int]:
    ids = flat.ids
    labels = source.labels
    texts = cache.search_text
    calls = cache.search_call
    one = tokens[0] if len(tokens) == 1 else None
    matched: list[int] = []
    # A token holds no whitespace, so it is in the searchable text (parts joined by single
    # spaces) exactly when it is in one of the parts: the cached text (lowercased) or the
    # label; nothing is joined or lowercased per query but a row's label.
    for i in indices:
        eid = ids[i]
        text = texts[eid]
        call = calls.get(eid)
        if call is not None:
            # The tool call this toolResult row shows, as the page resolves it. The call of
            # an id only one message has was folded into the cached text (`search_rows`);
            # an id several messages share is resolved for this order every time.
            assert ci is not None
            shown = ci.display(call[0], flat, home)
            if shown is None:
                fallback = call[1]
                if fallback is None:
                    entry = source.get_entry(eid)
                    fallback = scrub_text(display_text(entry)).lower() if entry is not None else ""
                    calls[eid] = (call[0], fallback, call[2])
                shown = fallback
            text = f"{text} {shown}"
        label = labels.get(eid)
        if label:
            low = scrub_text(label).lower()
            ok = all(t in text or t in low for t in tokens)
        elif one is not None:
            ok = one in text
        else:
            ok = all(t in text for t in tokens)
        if ok:
            matched.append(i)
    return matched
