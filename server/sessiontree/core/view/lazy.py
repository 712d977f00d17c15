"""The view built around the leaf first, the rest of the tree flattened only when asked for.

In the selector's order the subtree holding the leaf comes first at every branch point, so
the rows begin with the leaf's whole path (root to leaf), then its own subtree, then the
other branches from the deepest branch point up. `LazyFlat` holds that path with the same
per-row structure a `Flat` has, and continues the depth-first walk from where the leaf
leaves it only as far as a page needs. The visible row count and the selected row come
from the filter's hidden set and the path alone, so a click, a navigation or an append
answers its first pages without walking the whole tree; a search, the labelled-only mode
or a page far down completes it (`complete`), which is exactly `flatten`.

Used for sources with an index whose tree links every entry once (a session); a path
that is not exactly the stored parents to a true root (an orphan, a loop) takes `flatten`.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Hashable
from typing import Any

from .cache import ViewCache, views_to_keep
from .filters import hidden_ids, keeps
from .flatten import Column, Flat, PathSet, expand_runs
from .source import TreeSource

__all__ = ["LazyFlat", "LazyRows", "lazy_flat"]

_State = tuple[str, int, bool, bool, bool, tuple[tuple[int, bool], ...], bool]


class LazyFlat:
    """A `Flat` whose rows after the leaf's path are made on demand (same attributes).

    With ``base`` (an earlier `LazyFlat` of the same tree, or of the tree before a chain
    was appended under its leaf) the first ``shared`` rows of the path, and what the walk
    keeps for the branch points above them, are taken from it: a navigation or an append
    pays for the part of the path that changed.
    """

    ids: list[str]
    # (lists, or a `LazyFlat`'s compact arrays: `Column`)
    indent: Column
    show_connector: Column
    is_last: Column
    gutters: list[tuple[tuple[int, bool], ...]]
    virtual_root: Column
    just_branched: Column
    pushed: list[tuple[int, _State]]
    leaf_index: int

    def __init__(
        self,
        source: TreeSource,
        leaf_id: str,
        path: list[str],
        chains: dict[str, list[str]],
        version: Hashable,
        content_version: Hashable,
        base: LazyFlat | None = None,
        shared: int = 0,
    ) -> None:
        index = source.bulk_index()
        assert index is not None
        roots, kid_map = index.child_map()
        kids_get = kid_map.get
        empty: tuple[str, ...] = ()
        # Nothing here refers to the source: the view's cache is held weakly by it.
        self.children = source.lookups()[1]
        self.chains = chains
        self.version = version
        self.content_version = content_version
        self.leaf = leaf_id
        self.count = -1  # entries and distinct ids of the source when made (`lazy_flat`)
        self.distinct = -1
        self.path = path
        self.path_set = frozenset(path)
        self._pos: dict[str, int] | None = None
        self._scanned_once = False
        self.root_count = len(roots)
        self.multiple_roots = multi = len(roots) > 1
        self.active_path = PathSet(self.path_set)
        self.prefix_cache: dict[tuple[int, int, bool, bool], tuple[Any, str]] = {}
        self.index_of: dict[str, int] | None = None
        # (the base's version and leaf, the rows taken from it, where its leaf's row was):
        # its visible rows before that point are these rows' too (`LazyRows`)
        self.shared_with: tuple[Hashable, str, int, int] | None = None
        if base is not None and shared > 0:
            self.shared_with = (base.version, base.leaf, shared, base.leaf_index)
        last_i = len(path) - 1
        # (branch point's path index, pushed state): the walk's stack when the leaf is left
        pushed: list[tuple[int, _State]] = []
        if base is not None and shared > 0:
            i = shared - 1
            ids = base.ids[:shared]
            indent_l = base.indent[:shared]
            conn_l = base.show_connector[:shared]
            last_l = base.is_last[:shared]
            gut_l = base.gutters[:shared]
            vr_l = base.virtual_root[:shared]
            jb_l = base.just_branched[:shared]
            pushed = [item for item in base.pushed if item[0] < i]
            state = (indent_l[i], jb_l[i], conn_l[i], last_l[i], gut_l[i], vr_l[i])
            emit = False
        else:
            i = 0
            ids, gut_l = [], []
            # one byte a row for a flag, not a pointer (a million rows: 32 MB less a view)
            indent_l = array("l")
            conn_l, last_l, vr_l, jb_l = array("b"), array("b"), array("b"), array("b")
            first = path[0]
            others = [r for r in roots if r != first]
            n_roots = len(roots)
            base_indent = 1 if multi else 0
            for k in range(n_roots - 1, 0, -1):
                pushed.append((-1, (others[k - 1], base_indent, multi, multi, k == n_roots - 1, (), multi)))
            state = (base_indent, multi, multi, n_roots == 1, (), multi)
            emit = True
        # Where the path stops being a single-child run: the rows between share one state.
        stops = [k for k in range(i, last_i) if len(kids_get(path[k], empty)) != 1]
        stops.append(last_i)
        si = 0
        while True:
            indent, jb, sc, last, gut, vr = state
            if emit:
                ids.append(path[i])
                indent_l.append(indent)
                conn_l.append(sc)
                last_l.append(last)
                gut_l.append(gut)
                vr_l.append(vr)
                jb_l.append(jb)
            emit = True
            if i == last_i:
                break
            if sc and not vr:
                disp = max(0, indent - 1) if multi else indent
                child_gut = (*gut, (max(0, disp - 1), not last))
            else:
                child_gut = gut
            kids = kids_get(path[i], empty)
            nk = len(kids)
            if nk == 1:
                ci = indent + 1 if (jb and indent > 0) else indent
                state = (ci, False, False, True, child_gut, False)
                while stops[si] <= i:
                    si += 1
                j = stops[si]  # the next row that is a branch point (or the leaf)
                n = j - i - 1  # rows i+1 .. j-1 have the state of row j
                if n > 0:
                    ids.extend(path[i + 1 : j])
                    indent_l.extend([ci] * n)
                    conn_l.extend([False] * n)
                    last_l.extend([True] * n)
                    gut_l.extend([child_gut] * n)
                    vr_l.extend([False] * n)
                    jb_l.extend([False] * n)
                i = j
                continue
            nxt = path[i + 1]
            ordered = [nxt] + [k for k in kids if k != nxt]
            ci = indent + 1
            for k in range(nk - 1, 0, -1):
                pushed.append((i, (ordered[k], ci, True, True, k == nk - 1, child_gut, False)))
            state = (ci, True, True, False, child_gut, False)
            i += 1
        self.pushed = pushed
        self.ids = ids
        self.indent = indent_l
        self.show_connector = conn_l
        self.is_last = last_l
        self.gutters = gut_l
        self.virtual_root = vr_l
        self.just_branched = jb_l
        self.leaf_index = last_i
        self.path_rows = len(ids)
        # what the walk does after emitting the leaf: its children, then the stack
        indent, jb, sc, last, gut, vr = state
        stack = self._stack = [st for _, st in pushed]
        expand_runs(
            self.children,
            chains,
            stack,
            (leaf_id, indent, jb, sc, last, gut, vr),
            multi,
            (ids, indent_l, conn_l, last_l, gut_l, vr_l, jb_l),
            emit_self=False,
        )
        self.done = not stack

    def position_on_path(self, entry_id: str) -> int | None:
        """The index of ``entry_id`` on the leaf's path (None when not on it)."""
        if entry_id not in self.path_set:
            return None
        if entry_id == self.leaf:
            return self.leaf_index
        if self._pos is None:
            if not self._scanned_once:
                # a navigation asks once: one scan of the list costs less than the map
                self._scanned_once = True
                return self.path.index(entry_id)
            self._pos = {eid: i for i, eid in enumerate(self.path)}
        return self._pos[entry_id]

    # -- growing ---------------------------------------------------------------------------
    def ensure(self, rows: int) -> None:
        """Walk on until at least ``rows`` rows exist (or the tree ends)."""
        stack = self._stack
        arrays = (
            self.ids,
            self.indent,
            self.show_connector,
            self.is_last,
            self.gutters,
            self.virtual_root,
            self.just_branched,
        )
        while stack and len(self.ids) < rows:
            expand_runs(self.children, self.chains, stack, stack.pop(), self.multiple_roots, arrays)
        self.done = not stack
        self.index_of = None

    def complete(self) -> LazyFlat:
        self.ensure(1 << 62)
        return self

    def index(self, entry_id: str) -> int | None:
        """The flattened position of an entry (completes the walk when off the path)."""
        pos = self.position_on_path(entry_id)
        if pos is not None:
            return pos
        self.complete()
        if self.index_of is None:
            self.index_of = dict(zip(self.ids, range(len(self.ids)), strict=True))
        return self.index_of.get(entry_id)

    def as_flat(self) -> Flat:
        """The whole `Flat` (walks the rest of the tree)."""
        self.complete()
        flat = Flat(
            self.ids,
            self.indent,
            self.show_connector,
            self.is_last,
            self.gutters,
            self.virtual_root,
            self.just_branched,
            self.multiple_roots,
            self.active_path,
        )
        flat.leaf = self.leaf
        flat.leaf_index = self.leaf_index
        flat.version = self.version
        flat.content_version = self.content_version
        flat.prefix_cache = self.prefix_cache
        return flat


class LazyRows:
    """The visible rows of a `LazyFlat` for one filter mode (no search, not labelled-only)."""

    def __init__(self, source: TreeSource, cache: ViewCache, flat: LazyFlat, mode: str) -> None:
        self.flat = flat
        hidden = self.hidden = hidden_ids(source, cache, mode)
        leaf = flat.leaf
        sk = source.skeleton(leaf)
        # the leaf is exempt from the assistant rule
        self.leaf_shown = leaf not in hidden or (
            sk is not None and keeps(sk, leaf, leaf, mode, source.labels)
        )
        path = flat.path
        last = len(path) - 1
        start = 0
        self.rows: list[int] = []
        if flat.shared_with is not None:
            # The rows of the path above the fork point are the base's (same entries, same
            # hidden set), up to its own leaf (that row was exempt there, maybe not here).
            version, base_leaf, shared, base_leaf_index = flat.shared_with
            base = cache.lazy_rows.get((version, base_leaf, mode))
            if base is not None and base.hidden is hidden and base.flat.leaf == base_leaf:
                start = min(shared, base_leaf_index, last)
                self.rows = base.rows[: bisect_left(base.rows, start)]
        self.rows.extend([i for i in range(start, last) if path[i] not in hidden])
        if self.leaf_shown:
            self.rows.append(last)
        self.path_rows = len(self.rows)
        self.scanned = len(path)  # flat rows looked at so far
        tree_nodes = source.distinct_count()
        hidden_in_tree = len(hidden) - (1 if None in hidden else 0)
        self.count = tree_nodes - hidden_in_tree + (1 if self.leaf_shown and leaf in hidden else 0)
        self.selected: int | None = self._selected()

    def _selected(self) -> int | None:
        if self.count == 0:
            return None
        if self.path_rows:
            # the leaf's row, or its nearest visible ancestor's: the last path row
            return self.path_rows - 1
        return self.count - 1

    def total(self) -> int:
        return self.count

    def row(self, r: int) -> int:
        """The flat index of visible row ``r``."""
        rows = self.rows
        if r >= len(rows):
            flat = self.flat
            hidden = self.hidden
            while len(rows) <= r:
                want = max(self.scanned + 512, self.scanned + 2 * (r + 1 - len(rows)))
                flat.ensure(want)
                ids = flat.ids
                end = len(ids)
                if end == self.scanned:
                    raise IndexError(r)
                rows.extend(i for i in range(self.scanned, end) if ids[i] not in hidden)
                self.scanned = end
        return rows[r]

    def position(self, entry_id: str) -> int | None:
        fi = self.flat.index(entry_id)
        if fi is None:
            return None
        if fi >= self.scanned:
            self.row(self.count - 1)
        r = bisect_right(self.rows, fi) - 1
        return r if r >= 0 and self.rows[r] == fi else None


def leaf_path(source: TreeSource, leaf_id: str, hint: LazyFlat | None = None) -> tuple[list[str], int] | None:
    """Root-to-leaf ids by stored parents and how many lead ``hint``'s path too, or None
    when that is not the tree's path.

    The walk must end at an entry whose stored parent is null without meeting an id twice
    (then every link on it is the tree's, see `EntryIndex._build_tree`). With ``hint`` (an
    earlier path of the same stored content), the walk stops where it meets it.
    """
    index = source.bulk_index()
    if index is None:
        return None
    found = index.stored_path(leaf_id, hint.path_set if hint is not None else None)
    if found is None:
        return None
    walked, met = found
    walked.reverse()
    if met is None:
        return walked, 0
    assert hint is not None
    j = hint.position_on_path(met)
    assert j is not None
    return [*hint.path[: j + 1], *walked], j + 1


def lazy_flat(source: TreeSource, cache: ViewCache, leaf_id: str | None) -> LazyFlat | None:
    """A `LazyFlat` for ``leaf_id`` (kept per version and leaf), or None when it cannot be."""
    if leaf_id is None or source.bulk_index() is None:
        return None
    version = source.version()
    content = source.content_version()
    key = (version, leaf_id)
    got = cache.lazy.get(key)
    if got is not None:
        return got
    count = source.entry_count()
    distinct = source.distinct_count()
    hint = None
    for prev in reversed(cache.lazy.values()):
        # Stored parents of the ids a path holds stay as they were while the content is
        # the same and nothing appended reused an id (which replaces that entry).
        if prev.content_version == content and count - prev.count == distinct - prev.distinct >= 0:
            hint = prev
            break
    found = leaf_path(source, leaf_id, hint)
    if found is None:
        return None
    path, shared = found
    base = None
    if hint is not None and shared:
        if hint.version == version:
            base = hint  # the same tree: every row above the fork point is as it was
        elif (
            shared == len(hint.path)
            and len(path) - shared == count - hint.count
            and path[shared:] == source.appended_since(hint.count)
            and len(source.children(None)) == hint.root_count
        ):
            # Only a chain appended under the old leaf (the new entries are exactly the new
            # end of the path: as many is not enough, an entry from before may have come onto
            # the path while a new one went elsewhere), and it adopted no entry that waited
            # for its parent (a root fewer): the old path's rows are as they were.
            base = hint
    if cache.chains_version != version:
        cache.chains = {}
        cache.chains_version = version
    flat = LazyFlat(source, leaf_id, path, cache.chains, version, content, base, shared if base else 0)
    flat.count = count
    flat.distinct = distinct
    cache.lazy[key] = flat
    cache.lazy.move_to_end(key)
    keep = views_to_keep(cache, len(path))
    while len(cache.lazy) > keep:
        cache.lazy.popitem(last=False)
    return flat
