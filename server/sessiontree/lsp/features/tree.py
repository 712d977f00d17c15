"""Reading the tree: tree, view, children, path, entry, entries."""

from __future__ import annotations

import copy
from typing import Any

import orjson
from sessiontree_protocol import methods as m
from sessiontree_protocol import types as t

from sessiontree.core import view as core_view
from sessiontree.core.errors import EntryNotFoundError
from sessiontree.core.format.persistence import resolve_blob_refs
from sessiontree.lsp import errors, mapping, search_steps
from sessiontree.lsp.handlers import register
from sessiontree.lsp.server import SessionTreeServer


def tree_json(
    manager: Any, flat: bool = False, root_id: str | None = None, max_depth: int = t.TREE_MAX_DEPTH
) -> orjson.Fragment:
    """The `session/tree` result as pre-serialized JSON.

    Built iteratively: session trees are mostly long single-child chains, far deeper than
    any recursive serializer allows, so each node is serialized flat and the nesting is
    written with an explicit stack. Nesting stops at ``max_depth`` levels (a node there
    with children says ``truncated``; its subtree is another call with ``root_id``), so
    the answer stays decodable by standard JSON parsers; ``flat`` sends every node once
    in pre-order with no nesting at all. The summaries of every node come from one
    sequential read of the session (`core.view.entry_summaries_bulk`).
    """
    index = manager.index
    roots, child_map = index.child_map()
    if root_id is not None:
        if index.skeleton(root_id) is None:
            raise EntryNotFoundError(root_id)
        roots = [root_id]
    roots = list(roots)
    summaries = core_view.entry_summaries_bulk(manager)
    dumps = mapping.dumps_wire
    wire = mapping.summary_wire
    empty: tuple[str, ...] = ()
    leaf = dumps(manager.get_leaf_id())
    if flat:
        out: list[bytes] = []
        todo = roots[::-1]
        while todo:
            nid = todo.pop()
            out.append(dumps(wire(summaries[nid])))
            kids = child_map.get(nid, empty)
            if kids:
                todo.extend(reversed(kids))
        return orjson.Fragment(b'{"roots":[],"nodes":[' + b",".join(out) + b'],"leafId":' + leaf + b"}")
    parts: list[bytes] = [b'{"roots":[']
    append = parts.append
    # stack items: (node id, its level), or 0 for a separator, or 1 for "close the node"
    stack: list[tuple[str, int] | int] = []

    def push(kids: list[str] | tuple[str, ...], level: int) -> None:
        last = len(kids) - 1
        for i, cid in enumerate(reversed(kids)):
            stack.append((cid, level))
            if i < last:
                stack.append(0)

    push(roots, 1)
    while stack:
        val = stack.pop()
        if type(val) is int:
            append(b"," if val == 0 else b"]}")
            continue
        assert isinstance(val, tuple)
        nid, level = val
        head = dumps(wire(summaries[nid]))
        kids = child_map.get(nid, empty)
        if kids and level >= max_depth:
            append(head[:-1] + b',"children":[],"truncated":true}')
            continue
        append(head[:-1] + b',"children":[')
        stack.append(1)
        if kids:
            push(kids, level + 1)
    append(b'],"leafId":' + leaf + b"}")
    return orjson.Fragment(b"".join(parts))


async def tree(ls: SessionTreeServer, p: t.TreeParams) -> Any:
    session = ls.registry.get(p.session)
    if p.max_depth < 1:
        raise errors.InvalidParams(
            f"maxDepth must be 1 or more: {p.max_depth}", {"field": "maxDepth", "reason": "below 1"}
        )
    return await ls.registry.call(session, tree_json, session.manager, p.flat, p.root_id, p.max_depth)


def selected_window(page: Any, size: int) -> int | None:
    """Where the `window` of a `session/view` answer starts: ``size`` rows with the selected
    row in their middle, pulled back to end at the last row, never starting before the end of
    the page's rows; ``None`` when the page holds the selected row, lies past it or has none."""
    sel = page.selected_index
    end = page.offset + len(page.rows)
    if sel is None or sel < end:
        return None
    return max(end, core_view.window_start(sel, page.total, size))


async def view(ls: SessionTreeServer, p: t.ViewParams) -> dict[str, Any]:
    session = ls.registry.get(p.session)
    if p.selected_window is not None and p.selected_window < 0:
        raise errors.InvalidParams(
            f"selectedWindow must be 0 or more: {p.selected_window}",
            {"field": "selectedWindow", "reason": "below 0"},
        )

    def work() -> dict[str, Any]:
        kw: dict[str, Any] = {
            "filter": p.filter,
            "search": p.search,
            "offset": max(0, p.offset),
            "limit": p.limit,
        }
        if p.leaf_id is not t.ABSENT:
            if p.leaf_id is not None:
                mapping.require_entry(session.manager, p.leaf_id)
            kw["leaf_id"] = p.leaf_id
        if p.partial:
            kw["partial"] = True
        page = core_view.build_view(session.manager, **kw)
        out = mapping.view_result_wire(page)
        if p.selected_window:
            found = selected_window(page, p.selected_window)
            if found is not None:
                # the same view again (kept): only the window's page is built
                win = core_view.build_view(
                    session.manager, **{**kw, "offset": found, "limit": p.selected_window}
                )
                out["window"] = {"offset": found, "rows": mapping.rows_wire(win.rows)}
        return out

    result = await ls.registry.call(session, work)
    if result.get("complete") is False:
        search_steps.go_on(ls, session)  # the rest in idle time, then didCompleteSearch
    return result


async def children(ls: SessionTreeServer, p: t.ChildrenParams) -> t.EntrySummariesResult:
    session = ls.registry.get(p.session)

    def work() -> t.EntrySummariesResult:
        if p.parent_id is not None:
            mapping.require_entry(session.manager, p.parent_id)
        ids = session.manager.index.children(p.parent_id)
        return t.EntrySummariesResult(entries=mapping.summaries(session.manager, ids))

    return await ls.registry.call(session, work)


async def path(ls: SessionTreeServer, p: t.PathParams) -> t.EntrySummariesResult:
    session = ls.registry.get(p.session)

    def work() -> t.EntrySummariesResult:
        start = p.from_id if p.from_id is not None else session.manager.get_leaf_id()
        if start is None:
            return t.EntrySummariesResult(entries=[])
        mapping.require_entry(session.manager, start)
        ids = session.manager.index.path_to_root(start)
        return t.EntrySummariesResult(entries=mapping.summaries(session.manager, ids))

    return await ls.registry.call(session, work)


async def entry(ls: SessionTreeServer, p: t.EntryParams) -> t.EntryResult:
    session = ls.registry.get(p.session)

    def work() -> t.EntryResult:
        e = session.manager.get_entry(p.id)
        if e is None:
            raise EntryNotFoundError(p.id)
        if p.resolve_blobs:
            e = copy.deepcopy(e)
            resolve_blob_refs(e, session.manager._blob_store())
        return t.EntryResult(entry=mapping.wire_safe(e))

    return await ls.registry.call(session, work)


async def entries(ls: SessionTreeServer, p: t.EntriesParams) -> t.EntriesResult:
    session = ls.registry.get(p.session)

    def work() -> t.EntriesResult:
        order = session.manager.index.order()
        start = max(0, p.offset)
        end = len(order) if p.limit is None else min(len(order), start + max(0, p.limit))
        out = [session.manager.get_entry(i) for i in order[start:end]]
        return t.EntriesResult(entries=mapping.wire_safe([e for e in out if e is not None]), total=len(order))

    return await ls.registry.call(session, work)


def setup(server: SessionTreeServer) -> None:
    """Register the tree-reading methods."""
    register(server, m.SESSION_TREE, tree)
    register(server, m.SESSION_VIEW, view)
    register(server, m.SESSION_CHILDREN, children)
    register(server, m.SESSION_PATH, path)
    register(server, m.SESSION_ENTRY, entry)
    register(server, m.SESSION_ENTRIES, entries)
