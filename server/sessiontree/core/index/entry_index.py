"""`EntryIndex`: the skeletons of a session in file order, its tree, and its entries on demand.

Full entries are parsed on demand from their byte range (the session's loaders) and kept in
a bounded LRU; entries created in this process, and entries of files that had to go through
the lenient parser, are held in memory. The tree structure (children in `getTree()` order,
roots, effective parents) is built lazily on the first tree query and then maintained
incrementally on every append, so an append is O(1) (plus a sorted insert among siblings).
"""

from __future__ import annotations

import gc
import math
import threading
import weakref
from bisect import bisect_right
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from functools import cmp_to_key
from operator import attrgetter, is_
from typing import TYPE_CHECKING, Any, Protocol

import msgspec

from ..format.jscompat import date_ms
from .skeleton import Skeleton, skeleton_from_dict
from .usage import UsageTotals

_by_offset = attrgetter("offset")


class _Stamp(msgspec.Struct, gc=False):
    id: Any = None
    timestamp: Any = None


# the timestamp of an entry's line, the rest skipped (siblings are ordered by it)
_STAMP_DECODER = msgspec.json.Decoder(_Stamp)

__all__ = ["EntryIndex", "EntryList", "gc_paused"]


class EntryList(list):  # type: ignore[type-arg]
    """A list of entries read in bulk (`EntryIndex.entries_bulk`), a plain list to its user.

    It remembers the skeletons it was read for and the entries it was made with (whatever
    the caller then does to the list), so that the next bulk read of the same index takes
    those entries while the caller still holds the list instead of parsing them again (the
    same dicts, as the reference returns the same objects every time).
    """

    __slots__ = ("__weakref__", "entries", "skeletons")

    skeletons: tuple[Skeleton, ...]
    entries: tuple[dict[str, Any], ...]


def _cmp_pair(a: tuple[float, str], b: tuple[float, str]) -> int:
    return _cmp_ts(a[0], b[0])


def _cmp_ts(a: float, b: float) -> int:
    d = a - b
    if d != d or d == 0:  # NaN compares as equal, like a JS comparator returning NaN
        return 0
    return -1 if d < 0 else 1


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
                # (Moving what was made meanwhile to the oldest generation, `gc.freeze` then
                # `unfreeze`, spares the collection that walks it after a big pause, but
                # leaves closed sessions, freed by the collector, waiting for a full one:
                # the daemon's memory grew 108 MB per 100 open/close cycles.)
                gc.enable()


class DeferredSkeletons(Protocol):
    """Skeletons still encoded, and what is known of them without them
    (`cache.CachedSkeletons`)."""

    count: int
    last: Skeleton | None
    labels: dict[Any, Any]
    has_assistant: bool
    first_user: Skeleton | None
    last_compaction: Skeleton | None

    def decode(self) -> list[Skeleton] | None: ...


#: What `EntryIndex.add_cached` leaves undecoded until first read.
_DEFERRED: frozenset[str] = frozenset({"_order", "_by_id", "_has_assistant"})


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
        # the last bulk read's answer, while its caller holds it (`entries_bulk`)
        self._last_bulk: weakref.ref[EntryList] | None = None
        self.loader = loader
        self.batch_loader: Callable[[list[Skeleton]], list[dict[str, Any]]] | None = None
        # stream_loader(skeletons sorted by offset) yields their entries in that order,
        # reading the file sequentially in big chunks (bulk materialization).
        self.stream_loader: Callable[[list[Skeleton]], Iterator[dict[str, Any]]] | None = None
        # raw_loader(skeletons sorted by offset) yields (skeleton, its line) unparsed
        self.raw_loader: Callable[[list[Skeleton]], Iterator[tuple[Skeleton, memoryview]]] | None = None
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
        # skeletons of a cache hit not decoded yet (`add_cached`), and what gives them when
        # the cached ones do not decode
        self._pending: DeferredSkeletons | None = None
        self._rescan: Callable[[], list[Skeleton]] | None = None
        self._pending_lock = threading.Lock()
        # entries added meanwhile (appended to the file, or in this process), in order
        self._extra: list[Skeleton] = []
        self._extra_assistant = False
        # (entry count, last id, its context skeletons) kept beside the cache (`know_context`)
        self._known_context: tuple[int, str, list[Skeleton]] | None = None
        # ids known to be entries while the skeletons are not decoded (`vouch`)
        self._vouched: set[str] = set()

    # -- building ---------------------------------------------------------------------------
    def __len__(self) -> int:
        pending = self._pending
        if pending is not None:
            return pending.count + len(self._extra)
        return len(self._order)

    def add_cached(self, cached: DeferredSkeletons, rescan: Callable[[], list[Skeleton]]) -> None:
        """Take the skeletons of a cache hit without decoding them: the entry count, the
        last entry, the labels and `display_skeletons` are known at once, and stay known as
        entries are added (they wait in order for the decode); the first use of anything
        else decodes them (`rescan` gives them when they do not decode). Only into an empty
        index."""
        assert not self._order and not self._tree_ready and self._pending is None
        self.labels.update(cached.labels)
        self._pending = cached
        self._rescan = rescan
        # absent until decoded: their first read goes through `__getattr__`
        del self._order, self._by_id, self._has_assistant

    if not TYPE_CHECKING:  # (the type checker still knows every attribute's own type)

        def __getattr__(self, name: str) -> Any:
            # only ever called for an attribute that is absent: those `add_cached` defers
            if name in _DEFERRED and self.__dict__.get("_pending") is not None:
                self._decode_pending()
                return self.__dict__[name]
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def _decode_pending(self) -> None:
        with self._pending_lock:
            pending = self._pending
            if pending is None:
                return  # another thread decoded them meanwhile
            with gc_paused():
                sks = pending.decode()
                relabel = sks is None
                if sks is None:
                    assert self._rescan is not None
                    sks = self._rescan()
                # the entries added meanwhile follow (as `_add` would have added them: the
                # tree is not built before the decode); the labels hold theirs already
                sks.extend(self._extra)
                # the cached labels hold theirs unless they were of other skeletons
                labels: dict[str, str] | None = {} if relabel else None
                by_id, has_assistant = self._bulk_maps(sks, labels)
            if labels is not None:  # the cached labels were of other skeletons
                self.labels.clear()
                self.labels.update(labels)
            # what readers see only once whole: the file order last, then no longer pending
            self._by_id = by_id
            self._has_assistant = has_assistant
            self._order = sks
            self._pending = None
            self._rescan = None
            self._extra = []
            self._known_context = None
            self._vouched = set()

    def _add_pending(self, sk: Skeleton) -> None:
        """`_add` before the decode: what is known without the skeletons follows it."""
        with self._pending_lock:
            if self._pending is None:  # decoded meanwhile
                self._add(sk)
                return
            self._extra.append(sk)
            if sk.type == "message" and sk.role == "assistant":
                self._extra_assistant = True
            self._apply_label(sk, self.labels)

    def know_context(self, leaf_id: str, skeletons: list[Skeleton]) -> None:
        """The context skeletons of the last entry `leaf_id` (`session.context_walk`), kept
        from an earlier process, for `deferred_context` while the skeletons are not decoded."""
        self._known_context = (len(self), leaf_id, skeletons)

    def deferred_context(self, leaf_id: str | None) -> list[Skeleton] | None:
        """The context skeletons of `leaf_id` when `know_context` gave them for the index as
        it is and its skeletons are not decoded yet, else None (the path is walked)."""
        known = self._known_context
        if known is None or self._pending is None or known[0] != len(self) or known[1] != leaf_id:
            return None
        return known[2]

    def display_skeletons(self) -> tuple[Skeleton | None, Skeleton | None]:
        """The first user message and the last compaction in file order (a session's name
        comes from them), without decoding a cache hit's skeletons."""
        pending = self._pending
        if pending is not None:
            extra = self._extra
            user = pending.first_user or next(
                (sk for sk in extra if sk.type == "message" and sk.role == "user"), None
            )
            last = next((sk for sk in reversed(extra) if sk.type == "compaction"), pending.last_compaction)
            return user, last
        sks = self._order
        user = next((sk for sk in sks if sk.type == "message" and sk.role == "user"), None)
        last = next((sk for sk in reversed(sks) if sk.type == "compaction"), None)
        return user, last

    def add_skeletons(self, skeletons: Iterable[Skeleton]) -> None:
        """Add file-backed skeletons (already carrying offset/length and order)."""
        sks = skeletons if isinstance(skeletons, list) else list(skeletons)
        if self._pending is not None:
            for sk in sks:
                self._add_pending(sk)
            return
        if self._order or self._tree_ready:
            for sk in sks:
                self._add(sk)
            return
        # Bulk load into an empty index: comprehensions instead of a call per entry.
        self._by_id, self._has_assistant = self._bulk_maps(sks, self.labels)
        self._order = list(sks)

    def _bulk_maps(
        self, sks: list[Skeleton], labels: dict[str, str] | None
    ) -> tuple[dict[str, Skeleton], bool]:
        """The id map (the last of an id wins) and whether an assistant message is among
        `sks` (all of an empty index), with their labels applied in file order to `labels`
        (None: none applied)."""
        by_id = {sk.id: sk for sk in sks if sk.id is not None}
        has_assistant = any(sk.role == "assistant" and sk.type == "message" for sk in sks)
        if labels is not None:
            for sk in [sk for sk in sks if sk.type == "label"]:
                self._apply_label(sk, labels)
        return by_id, has_assistant

    @staticmethod
    def _apply_label(sk: Skeleton, labels: dict[str, str]) -> None:
        if sk.type != "label":
            return
        tid = sk.target_id
        if tid is None:
            return
        if sk.label:
            labels[tid] = sk.label
        else:
            labels.pop(tid, None)

    def add_held(self, entry: dict[str, Any], count_usage: bool = True) -> Skeleton:
        """Add an entry held in memory (appended in this process or leniently loaded);
        `count_usage` False leaves `usage` alone (a view's source does not read it)."""
        sk = skeleton_from_dict(entry, len(self))
        self._held[sk.order] = entry
        if count_usage:
            self.usage.add_entry(entry)
        if self._pending is not None:
            self._add_pending(sk)
        else:
            self._add(sk)
        return sk

    def _add(self, sk: Skeleton) -> None:
        self._order.append(sk)
        if sk.type == "message" and sk.role == "assistant":
            self._has_assistant = True
        self._apply_label(sk, self.labels)
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
        if self._pending is not None and entry_id in self._vouched:
            return True  # (no decode of a cache hit's skeletons for it)
        return entry_id in self._by_id

    def vouch(self, entry_id: str) -> None:
        """Note that `entry_id` is an entry of the file, as something made from the very
        same bytes says (the kept first pages, `view.opening`), so that asking whether it
        is one does not decode a cache hit's skeletons. Forgotten once they are decoded."""
        if self._pending is not None:
            self._vouched.add(entry_id)

    def ids(self) -> dict[str, Skeleton]:
        """The id map (read-only by convention)."""
        return self._by_id

    def order(self) -> list[str]:
        """Entry ids in file order."""
        return [sk.id for sk in self._order]

    def skeletons(self) -> list[Skeleton]:
        """Skeletons in file order (the live list; do not mutate)."""
        return self._order

    def skeletons_since(self, count: int) -> list[Skeleton]:
        """Skeletons after the first `count` in file order (those added since, without
        decoding a cache hit's when they all came after it)."""
        pending = self._pending
        if pending is not None and count >= pending.count:
            return self._extra[count - pending.count :]
        return self._order[count:]

    def last(self) -> Skeleton | None:
        pending = self._pending
        if pending is not None:
            return self._extra[-1] if self._extra else pending.last
        return self._order[-1] if self._order else None

    @property
    def has_assistant(self) -> bool:
        """Whether any entry of the session is an assistant message."""
        pending = self._pending
        if pending is not None:
            return pending.has_assistant or self._extra_assistant
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
        backed = sorted((sk for sk in sks if sk.offset >= 0), key=_by_offset)
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

    def entries_in_order(self, sks: list[Skeleton]) -> list[dict[str, Any]]:
        """The entries of `sks` in their order, read as `stream_entries` reads them (one
        sequential pass, the LRU and the last bulk answer left as they were): a page of an
        export or a comparison."""
        got = {id(sk): e for sk, e in self.stream_entries(sks)}
        return [got[id(sk)] for sk in sks]

    def entries_bulk(self, sks: list[Skeleton]) -> list[dict[str, Any]]:
        """`entries_of(sks)` for many entries: one sequential read, the LRU left as it was.

        Entries already cached, held in memory or in the last bulk answer the caller still
        holds are used as they are; the others are read in file order (`stream_loader`) and
        put back in the order of `sks`. The answer is an `EntryList`."""
        loader = self.stream_loader
        if loader is None or len(sks) <= 256:
            return self.entries_of(sks)
        lru = self._lru
        held = self._held
        ref = self._last_bulk
        prev = ref() if ref is not None else None
        if prev is not None and len(prev.skeletons) == len(sks) and all(map(is_, prev.skeletons, sks)):
            return self._remember(prev.skeletons, prev.entries)  # the same entries again
        # (by the skeleton's `id()`: those skeletons are alive while `prev` is)
        shared = dict(zip(map(id, prev.skeletons), prev.entries, strict=True)) if prev is not None else {}
        if shared:
            want = [sk for sk in sks if sk.offset >= 0 and id(sk) not in shared and sk.order not in lru]
        elif lru:
            want = [sk for sk in sks if sk.offset >= 0 and sk.order not in lru]
        else:
            want = [sk for sk in sks if sk.offset >= 0]
        offsets = list(map(_by_offset, want))
        if offsets != sorted(offsets):  # (a path is mostly in file order already)
            want.sort(key=_by_offset)
        read = dict(zip(map(id, want), loader(want), strict=True)) if want else {}
        if shared:
            read.update(shared)
        try:
            out = tuple(map(read.__getitem__, map(id, sks)))
        except KeyError:  # entries held in memory, or in the LRU
            got_list: list[dict[str, Any]] = []
            append = got_list.append
            for sk in sks:
                got = read.get(id(sk))
                if got is None:
                    got = held[sk.order] if sk.offset < 0 else lru[sk.order]
                append(got)
            out = tuple(got_list)
        return self._remember(tuple(sks), out)

    def _remember(self, sks: tuple[Skeleton, ...], entries: tuple[dict[str, Any], ...]) -> EntryList:
        out = EntryList(entries)
        out.skeletons = sks
        out.entries = entries
        self._last_bulk = weakref.ref(out)
        return out

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
        self._last_bulk = None
        for sk, rng in zip(self._order, new_ranges, strict=True):
            if sk.offset >= 0 and rng is not None:
                sk.offset, sk.length = rng

    def drop_cache(self) -> None:
        self._lru.clear()
        self._last_bulk = None

    # -- tree -------------------------------------------------------------------------------
    def _ts_of(self, eid: str) -> float:
        v = self._ts.get(eid)
        if v is None:
            self._read_timestamps([eid])
            v = self._ts[eid]
        return v

    def _read_timestamps(self, ids: Iterable[str]) -> None:
        """The timestamps (ms, NaN when not a date) of these entries into `_ts`: skeletons do
        not keep them, and only siblings are ordered by them. Entries held in memory give
        theirs; file-backed ones are read from their lines in one pass in file order."""
        ts = self._ts
        by_id = self._by_id
        want = [by_id[i] for i in dict.fromkeys(ids) if i not in ts]
        if not want:
            return
        stamps: dict[str, Any] = {}
        raw = self.raw_loader
        backed = sorted((sk for sk in want if sk.offset >= 0), key=_by_offset)
        if raw is not None and backed:
            for sk, line in raw(backed):
                try:
                    got = _STAMP_DECODER.decode(line)
                except msgspec.DecodeError:
                    continue  # a line the fast decoder refuses: read as an entry below
                if got.id == sk.id:  # else the file changed: the entry's read says so
                    stamps[sk.id] = got.timestamp
        for sk in want:
            if sk.id not in stamps:
                entry = self.entry_of(sk)
                stamps[sk.id] = entry.get("timestamp") if isinstance(entry, dict) else None
        for eid, value in stamps.items():
            ms = date_ms(value)
            ts[eid] = math.nan if ms is None else float(ms)

    def _build_tree(self) -> None:
        if not self._build_plain_tree():
            self._build_any_tree()
        ts_of = self._ts_of
        multi = [kids for kids in self._children.values() if len(kids) > 1]
        self._read_timestamps(k for kids in multi for k in kids)
        for kids in multi:
            self._sort_children(kids, ts_of)
        self._tree_ready = True

    def _build_plain_tree(self) -> bool:
        """The tree of the common file (every id once and a string, every parent id known
        and none after an entry that already has children, so no loop and no orphan) in
        one loop with fewer lookups than `_build_any_tree`; False, with nothing kept, for
        any other file. The links are those `_build_any_tree` makes."""
        by_id = self._by_id
        if len(by_id) != len(self._order):
            return False  # an id more than once (or none)
        children: dict[str, list[str]] = {}
        parent: dict[str, str | None] = {}
        roots: list[str] = []
        get = children.get
        for sk in self._order:
            eid = sk.id
            pid = sk.parent_id
            if pid is None:
                if type(eid) is not str:
                    return False
                parent[eid] = None
                roots.append(eid)
                continue
            if (
                type(pid) is not str
                or pid not in by_id
                or eid in children
                or pid == eid
                or type(eid) is not str
            ):
                return False
            parent[eid] = pid
            kids = get(pid)
            if kids is None:
                children[pid] = [eid]
            else:
                kids.append(eid)
        self._children = children
        self._roots = roots
        self._parent = parent
        self._orphans = {}
        return True

    def _build_any_tree(self) -> None:
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
            with gc_paused():
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

    def path_skeletons(self, entry_id: str | None) -> list[Skeleton]:
        """The skeletons of `path_to_root(entry_id)`, root first."""
        by_id = self._by_id
        if not self._tree_ready and entry_id is not None:
            found = self._stored_path_skeletons(entry_id)
            if found is not None:
                return found
        return [by_id[i] for i in self.path_to_root(entry_id)]

    def _stored_path_skeletons(self, entry_id: str) -> list[Skeleton] | None:
        """`path_skeletons` by stored parent ids in one tight loop, before the tree is built:
        None when the walk is longer than the number of ids (it met one twice: the tree
        decides which entry closes the loop). It ends, as `path_to_root` does, at a null
        parent or at an id that is not an entry."""
        get = self._by_id.get
        out: list[Skeleton] = []
        append = out.append
        budget = len(self._by_id)
        cur: Any = entry_id
        try:
            while budget:
                sk = get(cur)
                if sk is None:
                    break
                append(sk)
                cur = sk.parent_id
                if cur is None:
                    break
                budget -= 1
            else:
                return None
        except TypeError:  # an unhashable parent id: not an entry's
            pass
        out.reverse()
        return out

    def stored_path(
        self, entry_id: str, stop: frozenset[str] | None = None
    ) -> tuple[list[str], str | None] | None:
        """Ids from `entry_id` up its stored parent ids, leaf first: until a parent of
        null (then the second item is None) or until an id in `stop` (then it is that id,
        not included). None when the walk meets an id twice, an unknown or non-string id:
        then the stored parents are not the tree's path (`_build_tree` decides).

        One tight loop: a walk longer than the number of ids must have met one twice.
        """
        by_id = self._by_id
        get = by_id.get
        out: list[str] = []
        append = out.append
        budget = len(by_id)
        cur: Any = entry_id
        while budget:
            if type(cur) is not str:
                return None
            if stop is not None and cur in stop:
                return out, cur
            sk = get(cur)
            if sk is None:
                return None
            # the id map's own string (its hash is kept, and set and dict lookups of the
            # path find the very object), not the equal one a parent id holds
            append(sk.id)
            cur = sk.parent_id
            if cur is None:
                return out, None
            budget -= 1
        return None

    def raw_children(self, parent_id: str) -> list[str]:
        """Every id whose stored parentId is `parent_id`, in id-map order (getChildren)."""
        return [eid for eid, sk in self._by_id.items() if sk.parent_id == parent_id]
