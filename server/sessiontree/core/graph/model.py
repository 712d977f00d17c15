"""The graph of a session tree: which entries are drawn, in which row and lane.

Rows follow the tree in preorder (the first child's subtree first, as `getTree()` orders
children), so a branch reads top to bottom like `git log --graph`. A *chain* is a node and
its first children; every chain gets one lane for the rows from its branch point to its
last node, assigned greedily so that no two chains share a lane over the same rows.

In another agent's transcript (a Claude Code or Codex session: the manager's ``agent``),
the lines the tree view's default filter hides (progress, meta, title and bookkeeping
lines, assistant lines with only a tool call: `view.filters.keeps`) are folded into the
next node of their chain (at a chain's end, into the node before them), unless they shape
the tree (a branch point, the leaf, a labelled entry): the graph shows the rows its sidebar
shows, not a node per line. A node's ``count`` counts them with it. A pi-family session's
graph draws every entry (its hidden settings entries are few and named).

Entries that say nothing about the tree's shape (one parent with one child, no label, not a
compaction or branch summary, not the leaf) are folded into *runs* when a session is large,
so a 100,000-entry session draws as a few thousand nodes: a run node holds the count of its
entries by kind and stands for its last entry (a click goes there).

Wide fans are folded the same way: a node with more than `fan_max()` children shows a page
of them (the first, or the page asked for in ``pages``; the branch of the leaf always) and
one *more* node for the branches before the page and one for those after it, which a client
pages through (``fanParent``, ``fanOffset``). And no answer holds more than `nodes_max()`
nodes, whatever the session: past it the walk stops and the graph says it was cut.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..format.words import counted
from ..tuning import bound
from ..view.display import display_text
from ..view.filters import keeps
from ..view.tool_calls import calls_of

__all__ = [
    "AUTO_COLLAPSE_ABOVE",
    "FAN_MAX",
    "NODES_MAX",
    "Graph",
    "GraphNode",
    "build_graph",
    "fan_max",
    "nodes_max",
]

AUTO_COLLAPSE_ABOVE = 400
"""Sessions with more entries than this fold linear runs by default; smaller ones show every entry."""

FAN_MAX = 24
"""Children of one node drawn at once; the others are folded into "more" nodes."""
NODES_MAX = 20_000
"""Nodes in one graph at most (about 3 MB of answer); past it the walk stops."""


def fan_max() -> int:
    """`FAN_MAX`, or ``$SESSIONTREE_GRAPH_FAN`` (at least 1)."""
    return max(1, bound("SESSIONTREE_GRAPH_FAN", FAN_MAX))


def nodes_max() -> int:
    """`NODES_MAX`, or ``$SESSIONTREE_GRAPH_NODES`` (at least 1)."""
    return max(1, bound("SESSIONTREE_GRAPH_NODES", NODES_MAX))


_MARKED_TYPES = frozenset({"compaction", "branch_summary"})
_TEXT_MAX = 120


@dataclass
class GraphNode:
    """One drawn node: an entry, or a run of linear entries folded into one."""

    id: str
    """The entry id (for a run: its last entry, where a click navigates)."""
    kind: str
    """``"entry"``, ``"run"`` or ``"more"`` (folded branches of a wide fan)."""
    type: str
    """The entry type (``"run"`` for a run)."""
    role: str | None
    row: int
    lane: int = 0
    parent: int | None = None
    """Index of the parent node in `Graph.nodes` (None for a root)."""
    text: str = ""
    label: str | None = None
    count: int = 1
    """Entries the node stands for: 1 for an entry, more when entries the tree view hides
    are folded into it."""
    first_id: str | None = None
    """A run's first entry."""
    kinds: dict[str, int] = field(default_factory=dict)
    """A run's entries by kind (``user``, ``assistant``, ``toolResult``, entry types); for an
    entry, the kinds of the hidden entries folded into it (custom entries by custom type)."""
    active: bool = False
    """On the path from the root to the current leaf."""
    leaf: bool = False
    """The current leaf (a run holding it is marked too)."""
    tip: bool = False
    """No children: the end of a branch."""
    branch_point: bool = False
    """More than one child."""
    fan_parent: str | None = None
    """A "more" node: the entry whose children it folds."""
    fan_offset: int | None = None
    """A "more" node: the index (among the parent's children) of the page it opens."""

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (camelCase, as the page's script and the wire read it)."""
        d: dict[str, Any] = {
            "id": self.id,
            "kind": self.kind,
            "type": self.type,
            "row": self.row,
            "lane": self.lane,
            "parent": self.parent,
            "text": self.text,
            "count": self.count,
        }
        if self.role is not None:
            d["role"] = self.role
        if self.label is not None:
            d["label"] = self.label
        if self.first_id is not None:
            d["firstId"] = self.first_id
        if self.kinds:
            d["kinds"] = dict(self.kinds)
        if self.fan_parent is not None:
            d["fanParent"] = self.fan_parent
            d["fanOffset"] = self.fan_offset
        for flag in ("active", "leaf", "tip", "branch_point"):
            if getattr(self, flag):
                d["branchPoint" if flag == "branch_point" else flag] = True
        return d


@dataclass
class Graph:
    """The laid-out graph of one session."""

    nodes: list[GraphNode]
    lanes: int
    entries: int
    """Entries in the session (every one is in exactly one node)."""
    leaf_id: str | None
    collapsed: bool
    title: str = ""
    truncated: bool = False
    """The walk stopped at `nodes_max()` nodes: part of the tree is not drawn."""

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of the whole graph."""
        return {
            "nodes": [n.to_dict() for n in self.nodes],
            "lanes": self.lanes,
            "entries": self.entries,
            "leafId": self.leaf_id,
            "collapsed": self.collapsed,
            "title": self.title,
            "truncated": self.truncated,
        }


def _kind_of(sk: Any) -> str:
    if sk.type == "message" and isinstance(sk.role, str):
        return str(sk.role)
    return str(sk.type)


class _Texts:
    """Display texts of the drawn entries, read one entry at a time (only those drawn)."""

    def __init__(self, manager: Any, home: str | None) -> None:
        self._mgr = manager
        self._home = home
        self._calls: dict[str, Any] = {}

    def _note_calls(self, entry: Mapping[str, Any] | None) -> None:
        for call in calls_of(entry):
            cid = call.get("id")
            if isinstance(cid, str):
                self._calls[cid] = {"name": call.get("name"), "arguments": call.get("arguments")}

    def text(self, entry_id: str, parent_id: Any) -> str:
        entry = self._mgr.get_entry(entry_id)
        if entry is None:
            return ""
        msg = entry.get("message")
        if isinstance(msg, Mapping) and msg.get("role") == "toolResult" and isinstance(parent_id, str):
            self._note_calls(self._mgr.get_entry(parent_id))
        try:
            text = display_text(entry, self._calls, self._home)
        except Exception:  # a damaged entry still gets a node
            text = str(entry.get("type", ""))
        return text if len(text) <= _TEXT_MAX else text[: _TEXT_MAX - 1] + "…"


def build_graph(
    manager: Any,
    *,
    collapse: int | None = None,
    home: str | None = None,
    leaf_id: Any = ...,
    pages: Mapping[str, int] | None = None,
    fan: int | None = None,
    max_nodes: int | None = None,
    fold_hidden: bool | None = None,
) -> Graph:
    """Lay out ``manager``'s tree.

    ``collapse``: fold runs of at least this many linear entries into one node; ``0`` never
    folds (not even the entries the tree view hides: every entry is a node); ``None`` (the
    default) folds runs of 2 or more only in sessions of more than `AUTO_COLLAPSE_ABOVE`
    entries. ``fold_hidden``: fold the entries the tree view hides into the next node
    (default: in another agent's transcript, unless ``collapse`` is 0). ``leaf_id`` overrides the highlighted leaf. ``fan``
    (default `fan_max()`): children of a node drawn at once; ``pages``: for a parent id, the
    index of the first child to draw (a "more" node's ``fanOffset``). ``max_nodes`` (default
    `nodes_max()`): the most nodes drawn.
    """
    index = manager.index
    roots, children = index.child_map()
    leaf = manager.get_leaf_id() if leaf_id is ... else leaf_id
    active = set(index.path_to_root(leaf)) if leaf is not None else set()
    labels: Mapping[str, str] = index.labels
    total = len(index)
    if fold_hidden is None:
        fold_hidden = collapse != 0 and isinstance(getattr(manager, "agent", None), str)
    if collapse is None:
        collapse = 2 if total > AUTO_COLLAPSE_ABOVE else 0
    texts = _Texts(manager, home)
    empty: list[str] = []
    fan = fan_max() if fan is None else max(1, fan)
    max_nodes = nodes_max() if max_nodes is None else max(1, max_nodes)
    pages = pages or {}

    def hides(eid: str) -> bool:
        """The tree view does not show it and it does not shape the tree by itself."""
        if not fold_hidden or eid == leaf or eid in labels:
            return False
        sk = index.skeleton(eid)
        return sk is not None and not keeps(sk, eid, leaf, "default", labels)

    # Subtrees of hidden entries only (a label entry hanging off an entry, a progress line at
    # a chain's end): the entries each holds, folded into the node above; 0: not all hidden.
    gone_memo: dict[str, int] = {}

    def gone(eid: str) -> int:
        if eid in gone_memo:
            return gone_memo[eid]
        todo: list[tuple[str, bool]] = [(eid, False)]
        while todo:
            x, after = todo.pop()
            if x in gone_memo:
                continue
            if not after:
                if not hides(x):
                    gone_memo[x] = 0
                    continue
                todo.append((x, True))
                todo.extend((c, False) for c in children.get(x, empty) if c not in gone_memo)
                continue
            total = 1
            for c in children.get(x, empty):
                size = gone_memo.get(c, 0)
                if not size:
                    total = 0
                    break
                total += size
            gone_memo[x] = total
        return gone_memo[eid]

    def drawn_kids(eid: str) -> list[str]:
        kids = children.get(eid, empty)
        if not fold_hidden or not kids:
            return kids
        return [k for k in kids if not gone(k)]

    def gone_kids(eid: str) -> list[str]:
        if not fold_hidden:
            return empty
        return [k for k in children.get(eid, empty) if gone(k)]

    # An entry whose parent has one child and which has one child, unmarked: foldable.
    branch_starts: set[str] = set(roots)
    for pid, kids in children.items():
        if len(kids) > 1:
            shown = drawn_kids(pid)
            if len(shown) > 1:
                branch_starts.update(shown)

    def plain(eid: str) -> bool:
        if eid in branch_starts or eid == leaf or eid in labels:
            return False
        if len(children.get(eid, empty)) != 1:
            return False
        sk = index.skeleton(eid)
        return sk is not None and sk.type not in _MARKED_TYPES

    nodes: list[GraphNode] = []

    def fold_kind(eid: str, into: dict[str, int]) -> None:
        sk = index.skeleton(eid)
        if sk is None:
            return
        k = sk.custom_type if sk.type == "custom" and isinstance(sk.custom_type, str) else _kind_of(sk)
        into[k] = into.get(k, 0) + 1

    def fold_subtree(eid: str, into: dict[str, int]) -> None:
        todo = [eid]
        while todo:
            x = todo.pop()
            fold_kind(x, into)
            todo.extend(children.get(x, empty))

    def emit_entry(eid: str, parent: int | None) -> int:
        sk = index.skeleton(eid)
        kids = drawn_kids(eid)
        node = GraphNode(
            id=eid,
            kind="entry",
            type=str(sk.type) if sk is not None else "",
            role=sk.role if sk is not None and isinstance(sk.role, str) else None,
            row=len(nodes),
            parent=parent,
            text=texts.text(eid, sk.parent_id if sk is not None else None),
            label=labels.get(eid),
            active=eid in active,
            leaf=eid == leaf,
            tip=not kids,
            branch_point=len(kids) > 1,
        )
        for k in gone_kids(eid):
            node.count += gone(k)
            fold_subtree(k, node.kinds)
        nodes.append(node)
        return len(nodes) - 1

    def take(node: int, pending: tuple[int, dict[str, int]] | None) -> int:
        """Hidden entries before the node (in its chain) folded into it."""
        if pending is not None:
            n = nodes[node]
            n.count += pending[0]
            for k, v in pending[1].items():
                n.kinds[k] = n.kinds.get(k, 0) + v
        return node

    def emit_run(run: list[str], parent: int | None) -> int:
        kinds: dict[str, int] = {}
        first_user = None
        for eid in run:
            sk = index.skeleton(eid)
            if sk is None:
                continue
            k = _kind_of(sk)
            kinds[k] = kinds.get(k, 0) + 1
            if first_user is None and k == "user":
                first_user = eid
        shown = first_user or run[0]
        sk0 = index.skeleton(shown)
        node = GraphNode(
            id=run[-1],
            kind="run",
            type="run",
            role=None,
            row=len(nodes),
            parent=parent,
            text=texts.text(shown, sk0.parent_id if sk0 is not None else None),
            count=len(run),
            first_id=run[0],
            kinds=kinds,
            active=run[-1] in active,
        )
        nodes.append(node)
        return len(nodes) - 1

    def emit_more(owner: str, first: str, hidden: int, offset: int, after: bool, parent: int | None) -> None:
        where = "more" if after else "earlier"
        nodes.append(
            GraphNode(
                id=first,
                kind="more",
                type="more",
                role=None,
                row=len(nodes),
                parent=parent,
                text=f"{counted(hidden, where + ' branch', where + ' branches', grouped=True)}",
                count=hidden,
                first_id=first,
                fan_parent=owner,
                fan_offset=offset,
            )
        )

    # Iterative preorder: a deep session must not hit the recursion limit. A stack item is
    # an entry to draw, or a "more" node to draw: (owner, first hidden id, count, offset);
    # with the hidden entries folded on the way to it (their count and kinds).
    Pending = tuple[int, dict[str, int]] | None
    Item = tuple[str, int | None, tuple[str, str, int, int, bool] | None, Pending]
    stack: list[Item] = [(r, None, None, None) for r in reversed(_page(roots, "", pages, fan, active))]
    truncated = False
    while stack:
        if len(nodes) >= max_nodes:
            truncated = True
            break
        eid, parent, more, pending = stack.pop()
        if more is not None:
            emit_more(*more, parent=parent)
            continue
        kids = drawn_kids(eid)
        if hides(eid) and len(kids) <= 1 and (kids or parent is not None):
            # folded into the next node of its chain, or (at its end) into the node above
            count, kinds = pending if pending is not None else (0, {})
            kinds = dict(kinds)
            fold_kind(eid, kinds)
            count += 1
            for k in gone_kids(eid):
                count += gone(k)
                fold_subtree(k, kinds)
            if kids:
                stack.append((kids[0], parent, None, (count, kinds)))
            elif parent is not None:
                take(parent, (count, kinds))
            continue
        if collapse and plain(eid):
            run = [eid]
            nxt = children[eid][0]
            while plain(nxt):
                run.append(nxt)
                nxt = children[nxt][0]
            if len(run) >= collapse:
                parent = take(emit_run(run, parent), pending)
                stack.append((nxt, parent, None, None))
                continue
            # too short to fold: drawn entry by entry (each may be one the view hides)
        me = take(emit_entry(eid, parent), pending)
        if len(kids) <= fan:
            stack.extend((kid, me, None, None) for kid in reversed(kids))
            continue
        start, shown = _fan_page(kids, pages.get(eid, 0), fan, active)
        end = start + fan
        if end < len(kids):
            stack.append(("", me, (eid, kids[end], len(kids) - end, end, True), None))
        stack.extend((kid, me, None, None) for kid in reversed(shown))
        if start > 0:
            stack.append(("", me, (eid, kids[0], start, max(0, start - fan), False), None))

    lanes = _assign_lanes(nodes)
    return Graph(
        nodes=nodes,
        lanes=lanes,
        entries=total,
        leaf_id=leaf,
        collapsed=bool(collapse),
        truncated=truncated,
    )


def _fan_page(kids: list[str], offset: Any, fan: int, active: set[str]) -> tuple[int, list[str]]:
    """The page of ``kids`` from ``offset`` (clamped), with the leaf's branch added when it
    is on no page shown: (the page's first index, the children drawn, in order)."""
    start = offset if isinstance(offset, int) and not isinstance(offset, bool) else 0
    start = min(max(0, start), max(0, len(kids) - fan))
    shown = kids[start : start + fan]
    on_path = next((k for k in kids if k in active), None)
    if on_path is not None and on_path not in shown:
        shown = [*shown, on_path] if kids.index(on_path) > start else [on_path, *shown]
    return start, shown


def _page(roots: list[str], owner: str, pages: Mapping[str, int], fan: int, active: set[str]) -> list[str]:
    """The roots drawn (sessions have one root; a damaged file with thousands of orphans is
    paged like a fan, without "more" nodes, since roots have no parent to hang them on)."""
    if len(roots) <= fan:
        return roots
    return _fan_page(roots, pages.get(owner, 0), fan, active)[1]


def _assign_lanes(nodes: list[GraphNode]) -> int:
    """Give every chain a lane free over its rows (from its branch point to its end)."""
    first_child: dict[int, int] = {}
    chain_of: list[int] = [0] * len(nodes)
    chains: list[list[int]] = []  # [fork row, last row, lane]
    for i, n in enumerate(nodes):
        p = n.parent
        if p is not None and p not in first_child:
            first_child[p] = i
            c = chain_of[p]
            chain_of[i] = c
            chains[c][1] = n.row
        else:
            chain_of[i] = len(chains)
            fork = nodes[p].row if p is not None else n.row
            chains.append([fork, n.row, -1])
    # Chains in order of their branch point (then row order): interval-graph greedy colouring.
    order = sorted(range(len(chains)), key=lambda c: (chains[c][0], c))
    lane_end: list[int] = []
    for c in order:
        fork, last, _ = chains[c]
        lane = next((i for i, end in enumerate(lane_end) if end < fork), -1)
        if lane < 0:
            lane = len(lane_end)
            lane_end.append(last)
        else:
            lane_end[lane] = last
        chains[c][2] = lane
    for i, n in enumerate(nodes):
        n.lane = chains[chain_of[i]][2]
    return len(lane_end)
