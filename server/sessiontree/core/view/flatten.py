"""Flattening: the tree as the selector's rows in order, with their indent and connector art.

Children are ordered with the subtree holding the leaf first; a chain of single children
stays at one indent; `prefix_of` draws the gutters and connectors of a row. Built from
skeletons only, and extended in place of a full flattening when only a chain was appended
under the leaf (what an agent does all the time).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Hashable, Iterable, Iterator, MutableSequence
from dataclasses import dataclass, field
from typing import Any

from .source import TreeSource

__all__ = [
    "Filtered",
    "Flat",
    "PathSet",
    "active_path_ids",
    "display_indent",
    "expand_runs",
    "extend",
    "flatten",
    "iter_active_path",
    "prefix_of",
]


#: A per-row column of a flattened view: indents or flags, as a list or a compact `array`.
Column = MutableSequence[Any]


class PathSet:
    """The active path's ids: a shared base plus what appends added (cheap to extend)."""

    __slots__ = ("base", "extra")

    def __init__(self, base: frozenset[str], extra: frozenset[str] = frozenset()) -> None:
        self.base = base
        self.extra = extra

    def __contains__(self, entry_id: object) -> bool:
        return entry_id in self.extra or entry_id in self.base

    def extended(self, ids: Iterable[str]) -> PathSet:
        extra = self.extra | frozenset(ids)
        if len(extra) > 4096:
            return PathSet(self.base | extra)
        return PathSet(self.base, extra)


@dataclass(slots=True)
class Flat:
    ids: list[str]
    # (lists, or a `LazyFlat`'s compact arrays: `Column`)
    indent: Column
    show_connector: Column
    is_last: Column
    gutters: list[tuple[tuple[int, bool], ...]]
    virtual_root: Column
    just_branched: Column
    multiple_roots: bool
    active_path: PathSet
    leaf: str | None = None
    leaf_index: int | None = None
    version: Hashable = None
    content_version: Hashable = None
    count: int = -1  # source entry count when built (-1: unknown, no extension)
    distinct: int = -1
    # How this flat was made from a cached one: (previous version, previous leaf,
    # position of the previous leaf, number of rows inserted after it).
    extended_from: tuple[Hashable, str, int, int] | None = None
    index_of: dict[str, int] | None = None
    prefix_cache: dict[tuple[int, int, bool, bool], tuple[Any, str]] = field(default_factory=dict)

    def index(self, entry_id: str) -> int | None:
        """The flattened position of an entry."""
        if entry_id == self.leaf and self.leaf_index is not None:
            return self.leaf_index
        if self.index_of is None:
            if self.leaf_index is not None:
                # The leaf's ancestors come just before it (the selection walks up from a
                # hidden leaf): a short scan spares mapping every row.
                lo = max(0, self.leaf_index - 64)
                try:
                    return self.ids.index(entry_id, lo, self.leaf_index + 1)
                except ValueError:
                    pass
            self.index_of = dict(zip(self.ids, range(len(self.ids)), strict=True))
        return self.index_of.get(entry_id)


def active_path_ids(source: TreeSource, leaf_id: str | None) -> list[str]:
    """The leaf and its ancestors by ``parentId`` (leaf first), stopping at a repeat."""
    return list(iter_active_path(source, leaf_id))


def iter_active_path(source: TreeSource, leaf_id: str | None) -> Iterator[str]:
    seen: set[str] = set()
    cur = leaf_id
    skeleton = source.lookups()[0]
    while isinstance(cur, str) and cur not in seen:
        seen.add(cur)
        yield cur
        sk = skeleton(cur)
        if sk is None:
            break
        cur = sk.parent_id


def _leaf_ancestors(source: TreeSource, leaf_id: str | None, root_set: set[str]) -> tuple[set[str], bool]:
    """The leaf and its ancestors in the tree, and whether that is exactly its active path.

    The walk stops at a root; when that root's stored ``parentId`` is null (every sound
    file) the set is the active path too, else (an orphan, a loop closer) the active path
    follows stored parents further and is walked on its own.
    """
    skeleton = source.lookups()[0]
    contains: set[str] = set()
    if leaf_id is None or skeleton(leaf_id) is None:
        return contains, leaf_id is None
    cur: Any = leaf_id
    add = contains.add
    while type(cur) is str or isinstance(cur, str):
        if cur in contains:
            break
        add(cur)
        sk = skeleton(cur)
        if sk is None:
            return contains, False
        if cur in root_set:
            return contains, sk.parent_id is None
        cur = sk.parent_id
    return contains, False


def flatten(source: TreeSource, leaf_id: str | None, chains: dict[str, list[str]] | None = None) -> Flat:
    """The rows of the whole tree for ``leaf_id``.

    A chain of single children shares its indent, flags and gutters, so it is emitted as
    one run (list extends, not a step per row); ``chains`` (head id -> the run under it)
    keeps the runs between calls for the same tree (only the order at branch points and
    the active path depend on the leaf). A malformed source (a child listed twice, a
    loop) is flattened one node at a time, each node once.
    """
    children = source.lookups()[1]
    roots = list(children(None))
    root_set = set(roots)
    contains, exact = _leaf_ancestors(source, leaf_id, root_set)
    flat = _flatten_runs(source, roots, contains, {} if chains is None else chains)
    if flat is None:
        flat = _flatten_nodes(source, roots, contains)
    flat.active_path = PathSet(frozenset(contains) if exact else frozenset(active_path_ids(source, leaf_id)))
    flat.leaf = leaf_id
    if leaf_id in contains:
        try:
            flat.leaf_index = flat.ids.index(leaf_id)
        except ValueError:
            flat.leaf_index = None
    return flat


_Arrays = tuple[
    list[str],
    Column,
    Column,
    Column,
    list[tuple[tuple[int, bool], ...]],
    Column,
    Column,
]
_State = tuple[str, int, bool, bool, bool, tuple[tuple[int, bool], ...], bool]


def expand_runs(
    children: Any,
    chains: dict[str, list[str]],
    stack: list[_State],
    state: _State,
    multi: bool,
    arrays: _Arrays,
    *,
    emit_self: bool = True,
    contains: set[str] | frozenset[str] = frozenset(),
    limit: int = -1,
) -> bool:
    """One step of the depth-first walk: the node of ``state`` (unless ``emit_self`` is
    false: emitted already), the run of single children under it, and its children pushed
    onto ``stack`` (those in ``contains`` first). False when a run is longer than ``limit``
    (a loop in a malformed source; ``-1``: no limit)."""
    ids, indent_l, conn_l, last_l, gut_l, vr_l, jb_l = arrays
    nid, indent, jb, sc, last, gut, vr = state
    if emit_self:
        ids.append(nid)
        indent_l.append(indent)
        conn_l.append(sc)
        last_l.append(last)
        gut_l.append(gut)
        vr_l.append(vr)
        jb_l.append(jb)
    kids = children(nid)
    if not kids:
        return True
    if sc and not vr:
        disp = max(0, indent - 1) if multi else indent
        child_gut = (*gut, (max(0, disp - 1), not last))
    else:
        child_gut = gut
    if len(kids) == 1:
        # A run of single children: all at one indent, no connector, the same gutters.
        ci = indent + 1 if (jb and indent > 0) else indent
        run = chains.get(nid)
        if run is None:
            run = []
            k = kids[0]
            while True:
                run.append(k)
                if 0 <= limit < len(run):
                    return False
                nxt = children(k)
                if len(nxt) != 1:
                    break
                k = nxt[0]
            chains[nid] = run
        n = len(run)
        ids.extend(run)
        indent_l.extend([ci] * n)
        conn_l.extend([False] * n)
        last_l.extend([True] * n)
        gut_l.extend([child_gut] * n)
        vr_l.extend([False] * n)
        jb_l.extend([False] * n)
        kids = children(run[-1])
        if not kids:
            return True
        indent = ci  # the run's last row has no connector: its children keep the gutters
    nk = len(kids)
    if contains:
        kids = [k for k in kids if k in contains] + [k for k in kids if k not in contains]
    ci = indent + 1
    for i in range(nk - 1, -1, -1):
        stack.append((kids[i], ci, True, True, i == nk - 1, child_gut, False))
    return True


def _root_stack(roots: list[str], contains: set[str], multi: bool) -> list[_State]:
    """The walk's first stack: the roots (the leaf's first), last on top of it.

    A state is (id, indent, just_branched, show_connector, is_last, gutters,
    is_virtual_root_child)."""
    if contains and multi:
        roots = [r for r in roots if r in contains] + [r for r in roots if r not in contains]
    n_roots = len(roots)
    base = 1 if multi else 0
    return [(roots[i], base, multi, multi, i == n_roots - 1, (), multi) for i in range(n_roots - 1, -1, -1)]


def _flatten_runs(
    source: TreeSource, roots: list[str], contains: set[str], chains: dict[str, list[str]]
) -> Flat | None:
    children = source.lookups()[1]
    multi = len(roots) > 1
    arrays: _Arrays = ([], [], [], [], [], [], [])
    ids = arrays[0]
    stack = _root_stack(roots, contains, multi)
    limit = source.entry_count() + 1
    while stack:
        if not expand_runs(
            children, chains, stack, stack.pop(), multi, arrays, contains=contains, limit=limit
        ):
            return None  # a loop
        if len(ids) > limit:
            return None
    if len(set(ids)) != len(ids):
        return None  # a child listed twice: one row per node is the node-by-node walk's
    return Flat(*arrays, multi, PathSet(frozenset()))


def _flatten_nodes(source: TreeSource, roots: list[str], contains: set[str]) -> Flat:
    children = source.lookups()[1]
    multi = len(roots) > 1
    ids: list[str] = []
    indent_l: list[int] = []
    conn_l: list[bool] = []
    last_l: list[bool] = []
    gut_l: list[tuple[tuple[int, bool], ...]] = []
    vr_l: list[bool] = []
    jb_l: list[bool] = []
    stack = _root_stack(roots, contains, multi)
    emitted: set[str] = set()
    while stack:
        nid, indent, jb, sc, last, gut, vr = stack.pop()
        if nid in emitted:
            continue  # a malformed source cannot make a row appear twice or loop
        emitted.add(nid)
        ids.append(nid)
        indent_l.append(indent)
        conn_l.append(sc)
        last_l.append(last)
        gut_l.append(gut)
        vr_l.append(vr)
        jb_l.append(jb)
        kids = children(nid)
        if not kids:
            continue
        nk = len(kids)
        if sc and not vr:
            disp = max(0, indent - 1) if multi else indent
            child_gut = (*gut, (max(0, disp - 1), not last))
        else:
            child_gut = gut
        if nk > 1:
            if contains:
                kids = [k for k in kids if k in contains] + [k for k in kids if k not in contains]
            ci = indent + 1
            for i in range(nk - 1, -1, -1):
                stack.append((kids[i], ci, True, True, i == nk - 1, child_gut, False))
        else:
            ci = indent + 1 if (jb and indent > 0) else indent
            stack.append((kids[0], ci, False, False, True, child_gut, False))
    return Flat(ids, indent_l, conn_l, last_l, gut_l, vr_l, jb_l, multi, PathSet(frozenset()))


def _spliced(seq: Any, at: int, items: list[Any]) -> Any:
    """``seq`` with ``items`` inserted at ``at``, of the same kind (a list, or the compact
    arrays a `lazy.LazyFlat` keeps its per-row flags and indents in)."""
    out = seq[:at]
    out.extend(items)
    out.extend(seq[at:])
    return out


def extend(source: TreeSource, prev: Flat, leaf_id: str | None) -> Flat | None:
    """The flat for ``leaf_id`` made from ``prev`` when only a chain was appended under its leaf.

    This is what an agent does all the time (append to the leaf, the leaf follows), and it
    spares a full flattening of a large session. Anything else returns None.
    """
    old_leaf = prev.leaf
    if old_leaf is None or leaf_id is None or prev.count < 0:
        return None
    k = source.entry_count() - prev.count
    if k <= 0 or source.distinct_count() - prev.distinct != k:
        return None  # nothing new, or a new entry reuses an existing id
    chain = source.appended_since(prev.count)
    if len(chain) != k or chain[-1] != leaf_id or len(set(chain)) != k:
        return None
    parent = old_leaf
    for eid in chain:
        sk = source.skeleton(eid)
        if sk is None or sk.parent_id != parent or list(source.children(parent)) != [eid]:
            return None
        parent = eid
    if source.children(leaf_id):
        return None
    p = prev.index(old_leaf)
    if p is None:
        return None
    indent = prev.indent[p]
    gut = prev.gutters[p]
    if prev.show_connector[p] and not prev.virtual_root[p]:
        disp = max(0, indent - 1) if prev.multiple_roots else indent
        child_gut = (*gut, (max(0, disp - 1), not prev.is_last[p]))
    else:
        child_gut = gut
    ci = indent + 1 if (prev.just_branched[p] and indent > 0) else indent
    at = p + 1
    flat = Flat(
        _spliced(prev.ids, at, chain),
        _spliced(prev.indent, at, [ci] * k),
        _spliced(prev.show_connector, at, [False] * k),
        _spliced(prev.is_last, at, [True] * k),
        _spliced(prev.gutters, at, [child_gut] * k),
        _spliced(prev.virtual_root, at, [False] * k),
        _spliced(prev.just_branched, at, [False] * k),
        prev.multiple_roots,
        prev.active_path.extended(chain),
    )
    flat.leaf = leaf_id
    flat.leaf_index = p + k
    flat.extended_from = (prev.version, old_leaf, p, k)
    flat.prefix_cache = prev.prefix_cache
    return flat


def prefix_of(flat: Flat, i: int) -> str:
    indent = flat.indent[i]
    disp = max(0, indent - 1) if flat.multiple_roots else indent
    if disp == 0:
        return ""
    has_conn = flat.show_connector[i] and not flat.virtual_root[i]
    gutters = flat.gutters[i]
    # Rows of one chain share their gutter tuple, so its id is a key; the entry holds the
    # tuple itself so that the id cannot be reused while the entry exists.
    key = (id(gutters), disp, has_conn, has_conn and flat.is_last[i])
    cached = flat.prefix_cache.get(key)
    if cached is not None and cached[0] is gutters:
        return cached[1]
    shows: dict[int, bool] = {}
    for pos, show in gutters:
        shows.setdefault(pos, show)  # the first gutter at a position wins (Array.find)
    cells = []
    last_level = disp - 1
    for level in range(disp):
        g = shows.get(level)
        if g is not None:
            cells.append("│  " if g else "   ")
        elif has_conn and level == last_level:
            cells.append("└─ " if flat.is_last[i] else "├─ ")
        else:
            cells.append("   ")
    text = "".join(cells)
    flat.prefix_cache[key] = (gutters, text)
    return text


def display_indent(flat: Flat, i: int) -> int:
    indent = flat.indent[i]
    return max(0, indent - 1) if flat.multiple_roots else indent


@dataclass(slots=True)
class Filtered:
    flat: Flat
    rows: list[int]  # indices into flat, ascending
    selected: int | None = -1  # -1: not computed yet
    # False: the rows a search in progress matched so far (`progressive`), no selection yet
    complete: bool = True

    def position(self, entry_id: str) -> int | None:
        fi = self.flat.index(entry_id)
        if fi is None:
            return None
        r = bisect_left(self.rows, fi)
        return r if r < len(self.rows) and self.rows[r] == fi else None
