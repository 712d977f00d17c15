"""The tool calls a ``toolResult`` row shows: every assistant message's calls by call id.

The selector fills its map with the tool calls of every assistant message in flattened
order, a later duplicate id overwriting an earlier one. `CallIndex` holds them independent
of the order (built once per source content from one bulk read, extended on appends); only
a call id found in several messages consults the flattened order (the later one wins).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Hashable, Mapping
from typing import Any, Protocol

from ..format.jscompat import js_get
from ..format.jsonl import scrub_text
from ..index import gc_paused
from .display import format_tool_call
from .flatten import Flat
from .source import TreeSource

__all__ = ["CallIndex", "CallIndexHolder", "LazyToolCalls", "call_index", "calls_of"]


def calls_of(entry: Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
    if entry is None or entry.get("type") != "message":
        return []
    msg = entry.get("message")
    if not isinstance(msg, Mapping) or msg.get("role") != "assistant":
        return []
    content = msg.get("content")
    if not isinstance(content, list):
        return []
    return [b for b in content if isinstance(b, Mapping) and b.get("type") == "toolCall"]


class CallIndex:
    """Every assistant message's tool calls, keyed by call id, independent of the tree order.

    ``ids_of`` maps an assistant entry id to its call ids (from the skeletons, so building
    the index reads no message); ``calls`` holds the calls read so far
    (``{call id: (name, arguments)}``, a later call with the same id in one message
    winning), read through ``load`` when a row shows one; ``owner`` maps a call id to the
    one message that has it, and ``dups`` a call id that several messages have to all of
    them. Built once per source content (`key`), then extended with the entries appended
    after the first ``count`` (file order); ``count == -1``: not extensible (rebuilt when
    ``key``, then the source version, changes).
    """

    __slots__ = ("calls", "count", "dups", "gen", "ids_of", "key", "load", "memo", "memo_home", "owner")

    def __init__(
        self, key: Hashable, count: int, load: Callable[[str], Mapping[str, Any] | None] | None = None
    ) -> None:
        self.key = key
        self.count = count
        # weakly: the index lives in the view's cache, which its source holds weakly
        self.load: Callable[[], Callable[[str], Mapping[str, Any] | None] | None] = (
            _weak_callable(load) if load is not None else lambda: None
        )
        self.ids_of: dict[str, tuple[Hashable, ...]] = {}
        self.calls: dict[str, dict[Hashable, tuple[Any, Any]]] = {}
        self.owner: dict[Hashable, str] = {}
        self.dups: dict[Hashable, list[str]] = {}
        # format_tool_call of (message id, call id) for searches, for one home
        self.memo: dict[tuple[str, Hashable], str] = {}
        self.memo_home: str | None = None
        # Bumped when a call id loses its one owner (a removal, or a second message with
        # it), so that a call resolved through `owner` may now resolve otherwise.
        self.gen = 0

    def add(self, eid: str, entry: Mapping[str, Any] | None) -> None:
        """Record the calls of assistant entry ``eid`` (replacing what it had)."""
        mine = _calls_map(entry)
        self.add_ids(eid, tuple(mine))
        if mine:
            self.calls[eid] = mine

    def add_ids(self, eid: str, call_ids: Any) -> None:
        """Record that assistant entry ``eid`` has these call ids (replacing what it had)."""
        self.remove(eid)
        mine = tuple(dict.fromkeys(call_ids))
        if not mine:
            return
        self.ids_of[eid] = mine
        owner = self.owner
        dups = self.dups
        for cid in mine:
            lst = dups.get(cid)
            if lst is not None:
                lst.append(eid)
                continue
            prev = owner.get(cid)
            if prev is None:
                owner[cid] = eid
            else:
                dups[cid] = [prev, eid]
                del owner[cid]
                self.gen += 1

    def remove(self, eid: str) -> None:
        """Forget the calls of entry ``eid`` (a later entry with its id replaced it)."""
        mine = self.ids_of.pop(eid, None)
        self.calls.pop(eid, None)
        if not mine:
            return
        self.gen += 1
        owner = self.owner
        dups = self.dups
        memo = self.memo
        for cid in mine:
            memo.pop((eid, cid), None)
            lst = dups.get(cid)
            if lst is None:
                if owner.get(cid) == eid:
                    del owner[cid]
                continue
            if eid in lst:
                lst.remove(eid)
            if len(lst) == 1:
                owner[cid] = lst[0]
                del dups[cid]

    def let_go(self, call_ids: Any) -> None:
        """Forget what was read and shown of these calls (read again when asked): a search
        too big to keep its texts lets go of its calls' too."""
        owner = self.owner
        calls = self.calls
        memo = self.memo
        for cid in call_ids:
            eid = owner.get(cid)
            if eid is not None:
                calls.pop(eid, None)
                memo.pop((eid, cid), None)

    def preload(self, source: TreeSource, eids: Any) -> None:
        """Read the calls of many messages at once (a search shows many tool results)."""
        index = source.bulk_index()
        want = [eid for eid in dict.fromkeys(eids) if eid is not None and eid not in self.calls]
        if index is None or len(want) < 64:
            return
        sks = [sk for sk in (index.skeleton(eid) for eid in want) if sk is not None]
        with gc_paused():
            for sk, entry in index.stream_entries(sks):
                self.calls[sk.id] = _calls_map(entry)

    def _call(self, eid: str, call_id: Hashable) -> tuple[Any, Any] | None:
        mine = self.calls.get(eid)
        if mine is None:
            load = self.load()
            mine = _calls_map(load(eid) if load is not None else None)
            self.calls[eid] = mine
        return mine.get(call_id)

    def display(self, call_id: Hashable, flat: Flat, home: str) -> str | None:
        """`format_tool_call` of `lookup`, lowercased (None: no call), memoized for searches."""
        eid = self._owner(call_id, flat)
        if eid is None:
            return None
        return self.shown(eid, call_id, home)

    def shown(self, eid: str, call_id: Hashable, home: str) -> str:
        """`format_tool_call` of message ``eid``'s call ``call_id``, lowercased, memoized."""
        if self.memo_home != home:
            self.memo.clear()
            self.memo_home = home
        key = (eid, call_id)
        text = self.memo.get(key)
        if text is None:
            call = self._call(eid, call_id)
            name, args = call if call is not None else (None, None)
            text = self.memo[key] = scrub_text(format_tool_call(name, args, home)).lower()
        return text

    def _owner(self, call_id: Hashable, flat: Flat) -> str | None:
        eid = self.owner.get(call_id)
        if eid is None:
            lst = self.dups.get(call_id)
            if lst is None:
                return None
            # Several messages have this id: the one last in the flattened order wins.
            best = -1
            for cand in lst:
                pos = flat.index(cand)
                if pos is not None and pos > best:
                    best = pos
                    eid = cand
        return eid

    def lookup(self, call_id: Hashable, flat: Flat) -> Mapping[str, Any] | None:
        """The call as the selector's map has it for the flattened order of ``flat``."""
        eid = self._owner(call_id, flat)
        if eid is None:
            return None
        call = self._call(eid, call_id)
        if call is None:
            return None  # the message changed on disk since its skeleton was read
        name, args = call
        return {"name": name, "arguments": args}


def _weak_callable(fn: Callable[[str], Any]) -> Callable[[], Callable[[str], Any] | None]:
    """A weak reference to a bound method (or the function itself when not bound)."""
    if hasattr(fn, "__self__"):
        return weakref.WeakMethod(fn)  # type: ignore[arg-type]
    return lambda: fn


def _calls_map(entry: Mapping[str, Any] | None) -> dict[Hashable, tuple[Any, Any]]:
    mine: dict[Hashable, tuple[Any, Any]] = {}
    for call in calls_of(entry):
        cid = call.get("id")
        if type(cid) is str or isinstance(cid, Hashable):
            mine[cid] = (js_get(call, "name"), js_get(call, "arguments"))
    return mine


def _is_assistant(sk: Any) -> bool:
    return sk is not None and sk.type == "message" and sk.role == "assistant"


class CallIndexHolder(Protocol):
    """Where a source's `CallIndex` is kept between calls (the view's cache)."""

    call_index: CallIndex | None


def call_index(source: TreeSource, cache: CallIndexHolder, flat: Flat) -> CallIndex:
    """The source's `CallIndex`: cached, extended after appends, rebuilt when content changed."""
    ci = cache.call_index
    key = source.content_version()
    now = source.entry_count()
    if ci is not None and ci.key == key and 0 <= ci.count <= now:
        if ci.count < now:
            new = list(dict.fromkeys(source.appended_since(ci.count)))
            ci.count = now
            for eid in new:
                ci.remove(eid)
            skeleton = source.skeleton
            mine = [eid for eid in new if _is_assistant(skeleton(eid))]
            if mine:
                entries = source.get_entries(mine)
                for eid, entry in zip(mine, entries, strict=True):
                    ci.add(eid, entry)
        return ci
    with gc_paused():
        return _build_call_index(source, cache, flat, key, now)


def _build_call_index(
    source: TreeSource, cache: CallIndexHolder, flat: Flat, key: Hashable, now: int
) -> CallIndex:
    ci = CallIndex(key, now, source.get_entry)
    index = source.bulk_index()
    if index is None:
        # read one by one: the assistants of the tree
        ids = [eid for eid in flat.ids if _is_assistant(source.skeleton(eid))]
        for eid, entry in zip(ids, source.get_entries(ids), strict=True):
            ci.add(eid, entry)
        cache.call_index = ci
        return ci
    unknown = []
    known: list[tuple[str, tuple[Hashable, ...]]] = []
    for sk in index.ids().values():
        if sk.role == "assistant" and sk.type == "message":
            if sk.call_ids is None:
                unknown.append(sk)
            elif sk.call_ids:
                known.append((sk.id, sk.call_ids))
    # Most sessions have no call id twice: one dict comprehension is then the whole index.
    # (A skeleton's call ids are distinct already.)
    pairs = [(cid, eid) for eid, cids in known for cid in cids]
    owner = dict(pairs)
    if len(owner) == len(pairs):
        ci.owner = owner
        ci.ids_of = dict(known)
    else:
        for eid, cids in known:
            ci.add_ids(eid, cids)
    if unknown:
        for sk, entry in index.stream_entries(unknown):
            ci.add(sk.id, entry)
    cache.call_index = ci
    return ci


class LazyToolCalls:
    """The selector's tool-call map, looked up lazily.

    The selector fills its map with the tool calls of every assistant message in flattened
    order, a later duplicate id overwriting an earlier one. So a call id that is
    duplicated across branches resolves to the call that comes last in the flattened
    order, which need not be the result's ancestor (docs/tree-view.md). The calls come
    from the source's `CallIndex` (built once, extended on appends); only a duplicated
    id looks at the flattened order (``flat``) to pick its winner.
    """

    def __init__(
        self, source: TreeSource, cache: CallIndexHolder, flat: Callable[[], Flat], version: Hashable
    ) -> None:
        self.source = source
        self.cache = cache
        self.flat = flat
        self.version = version
        self.start: str | None = None
        self._index: CallIndex | None = None
        self._flat: Flat | None = None

    def get(self, call_id: Any) -> Mapping[str, Any] | None:
        if self._index is None or self._flat is None:
            self._flat = self.flat()
            self._index = call_index(self.source, self.cache, self._flat)
        return self._index.lookup(call_id, self._flat)
