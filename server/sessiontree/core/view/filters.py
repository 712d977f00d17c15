"""The filter modes of the selector and the rows each keeps (docs/tree-view.md).

An assistant message without text is hidden unless it is the leaf or ended otherwise than
by a plain stop; then the mode decides (``default`` hides settings entries, ``no-tools``
also tool results, ``user-only`` keeps user messages, ``labeled-only`` labelled entries,
``all`` everything); a search narrows the result (`search`).
"""

from __future__ import annotations

from bisect import bisect_right, insort
from collections.abc import Mapping
from itertools import compress
from operator import not_
from typing import Any, Final

from .cache import ViewCache
from .flatten import Filtered, Flat
from .search import search_rows
from .source import TreeSource

__all__ = [
    "FILTER_MODES",
    "FILTER_SUFFIXES",
    "SETTINGS_TYPES",
    "hidden_ids",
    "keeps",
    "next_filter",
    "visible_rows",
    "visible_rows_extended",
]

FILTER_MODES: Final[tuple[str, ...]] = ("default", "no-tools", "user-only", "labeled-only", "all")
"""The filter modes in the selector's cycle order (Ctrl+O forward, Shift+Ctrl+O back)."""

FILTER_SUFFIXES: Final[Mapping[str, str]] = {
    "default": "",
    "no-tools": " [no-tools]",
    "user-only": " [user]",
    "labeled-only": " [labeled]",
    "all": " [all]",
}
"""The footer suffix of each filter mode."""

SETTINGS_TYPES: Final = frozenset(
    {
        "label",
        "custom",
        "model_change",
        "thinking_level_change",
        # pi 1.6's and oh-my-pi 18's bookkeeping, hidden by their own selectors' default
        "session_info",
        "context_edit",
        "usage",
        "title_change",
        "model_usage",
        "credential_pin",
        "reset_boundary",
    }
)
"""Entry types the default and no-tools filters hide: settings and bookkeeping."""


def next_filter(mode: str, direction: int = 1) -> str:
    """The mode after ``mode`` in the cycle (``direction`` -1 goes back)."""
    i = FILTER_MODES.index(mode) if mode in FILTER_MODES else 0
    return FILTER_MODES[(i + (1 if direction >= 0 else -1)) % len(FILTER_MODES)]


def keeps(sk: Any, eid: str, leaf_id: str | None, mode: str, labels: Mapping[str, str]) -> bool:
    """The assistant rule and the filter mode (search is applied separately)."""
    etype = sk.type
    role = sk.role if etype == "message" else None
    if role == "assistant" and eid != leaf_id and not sk.has_text:
        stop = sk.stop_reason
        if not stop or stop in ("stop", "toolUse"):
            return False
    if mode == "default":
        return etype not in SETTINGS_TYPES
    if mode == "no-tools":
        return etype not in SETTINGS_TYPES and role != "toolResult"
    if mode == "user-only":
        return role == "user"
    if mode == "labeled-only":
        return eid in labels
    return True


def visible_rows(
    source: TreeSource,
    cache: ViewCache,
    flat: Flat,
    leaf_id: str | None,
    mode: str,
    tokens: list[str],
    home: str,
) -> list[int]:
    labels = source.labels
    skeleton = source.lookups()[0]
    out: list[int]
    if mode == "labeled-only":
        out = []
        for i, eid in enumerate(flat.ids):
            sk = skeleton(eid)
            if sk is not None and keeps(sk, eid, leaf_id, mode, labels):
                out.append(i)
    else:
        # The rows this mode hides whatever the leaf (kept per source, extended on
        # appends): one set lookup per row instead of the rules.
        hidden = hidden_ids(source, cache, mode)
        if tokens:
            # every query of a search starts from the same rows: kept for the next one
            # (search_rows only reads them)
            key = (mode, leaf_id, len(flat.ids), len(hidden))
            kept = cache.search_rows_of
            if kept is not None and kept[0] is flat.ids and kept[1] is hidden and kept[2] == key:
                return search_rows(source, cache, flat, kept[3], tokens, home)
        ids = flat.ids
        out = list(compress(range(len(ids)), map(not_, map(hidden.__contains__, ids))))
        if leaf_id is not None and leaf_id in hidden:
            sk = skeleton(leaf_id)
            pos = flat.index(leaf_id)
            if sk is not None and pos is not None and keeps(sk, leaf_id, leaf_id, mode, labels):
                insort(out, pos)  # the leaf is exempt from the assistant rule
        if tokens:
            cache.search_rows_of = (flat.ids, hidden, (mode, leaf_id, len(flat.ids), len(hidden)), out)
    return search_rows(source, cache, flat, out, tokens, home) if tokens else out


_PLAIN_STOPS = (None, "", "stop", "toolUse")


def _mode_hidden(cache: ViewCache, index: Any, count: int, mode: str) -> set[str]:
    """The hidden set of ``mode`` (not labelled-only) from one look at each id's latest
    skeleton, made of parts kept for the other modes: a set comprehension or two cost less
    than the rules; a click needs only its own mode's (the others come in idle time)."""
    parts = cache.hidden_parts
    sks = index.ids().values()

    def part(name: str) -> set[str]:
        got = parts.get(name)
        if got is None:
            if name == "rule":
                # the assistant rule (an assistant message without text that ended plainly)
                got = {
                    sk.id
                    for sk in sks
                    if sk.role == "assistant"
                    and sk.type == "message"
                    and not sk.has_text
                    and (not sk.stop_reason or sk.stop_reason in _PLAIN_STOPS)
                }
            elif name == "settings":
                got = {sk.id for sk in sks if sk.type in SETTINGS_TYPES}
            elif name == "results":
                got = {sk.id for sk in sks if sk.role == "toolResult" and sk.type == "message"}
            else:
                got = {sk.id for sk in sks if sk.role != "user" or sk.type != "message"}
            parts[name] = got
        return got

    if mode == "default":
        hidden = part("rule") | part("settings")
    elif mode == "no-tools":
        hidden = part("rule") | part("settings") | part("results")
        parts.pop("results", None)  # no other mode's part: kept no longer than needed
    elif mode == "user-only":
        hidden = part("not_user")
        parts.pop("not_user", None)  # its own: taken rather than copied
    else:
        hidden = set(part("rule"))
    cache.hidden[mode] = hidden
    cache.hidden_count[mode] = count
    return hidden


def hidden_ids(source: TreeSource, cache: ViewCache, mode: str) -> set[str]:
    """Ids of the entries ``mode`` hides when they are not the leaf (not for labeled-only).

    Missing skeletons count as hidden. Built once per stored content, then extended with
    the entries appended since (a later entry with an id re-decides that id).
    """
    content = source.content_version()
    if cache.hidden_version != content:
        cache.hidden = {}
        cache.hidden_count = {}
        cache.hidden_parts = {}
        cache.hidden_version = content
    hidden = cache.hidden.get(mode)
    done = cache.hidden_count.get(mode, 0)
    count = source.entry_count()
    if hidden is not None and done == count:
        return hidden
    labels = source.labels
    index = source.bulk_index()
    if (hidden is None or done > count) and index is not None:
        if cache.hidden_parts_count != count:
            cache.hidden_parts = {}  # parts are of one entry count
            cache.hidden_parts_count = count
        return _mode_hidden(cache, index, count, mode)
    if hidden is None or done > count:
        hidden = set()
        done = 0
    if index is not None:
        # Skeletons in file order: a later entry with an id comes later and decides it.
        for sk in index.skeletons()[done:]:
            eid = sk.id
            if keeps(sk, eid, None, mode, labels):
                hidden.discard(eid)
            else:
                hidden.add(eid)
    else:
        skeleton = source.skeleton
        for eid in source.appended_since(done):
            sk = skeleton(eid)
            if sk is None or not keeps(sk, eid, None, mode, labels):
                hidden.add(eid)
            else:
                hidden.discard(eid)
    cache.hidden[mode] = hidden
    cache.hidden_count[mode] = count
    return hidden


def visible_rows_extended(
    source: TreeSource,
    cache: ViewCache,
    flat: Flat,
    prev: Filtered,
    mode: str,
    tokens: list[str],
    home: str,
) -> list[int] | None:
    """The rows of an extended flat from the previous rows (see `extend`)."""
    if flat.extended_from is None:
        return None
    _, old_leaf, p, k = flat.extended_from
    chain = flat.ids[p + 1 : p + 1 + k]
    skeleton = source.skeleton
    labels = source.labels
    sks = [skeleton(eid) for eid in chain]
    if any(sk is None for sk in sks):
        return None
    if (mode == "labeled-only" or tokens) and any(sk.type == "label" for sk in sks):
        return None  # a label may change which rows these keep anywhere
    leaf = flat.leaf
    cut = bisect_right(prev.rows, p)
    head = prev.rows[:cut]
    if head and head[-1] == p:
        old_sk = skeleton(old_leaf)
        if old_sk is None or not keeps(old_sk, old_leaf, leaf, mode, labels):
            head.pop()  # the old leaf is no longer exempt from the assistant rule
    new = [
        p + 1 + j
        for j, (eid, sk) in enumerate(zip(chain, sks, strict=True))
        if keeps(sk, eid, leaf, mode, labels)
    ]
    if tokens and new:
        new = search_rows(source, cache, flat, new, tokens, home)
    return head + new + [i + k for i in prev.rows[cut:]]
