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
from sessiontree.lsp import mapping
from sessiontree.lsp.handlers import register
from sessiontree.lsp.server import SessionTreeServer


def tree_json(manager: Any) -> orjson.Fragment:
    """The `session/tree` result as pre-serialized JSON.

    Built iteratively: session trees are mostly long single-child chains, far deeper than
    any recursive serializer allows, so each node is serialized flat and the nesting is
    written with an explicit stack. The summaries of every node come from one sequential
    read of the session (`core.view.entry_summaries_bulk`).
    """
    index = manager.index
    roots, child_map = index.child_map()
    roots = list(roots)
    summaries = core_view.entry_summaries_bulk(manager)
    dumps = mapping.dumps_wire
    wire = mapping.summary_wire
    parts: list[bytes] = [b'{"roots":[']
    append = parts.append
    empty: tuple[str, ...] = ()
    # stack items: a node id, or 0 for a separator, or 1 for "close the node"
    stack: list[str | int] = []

    def push(kids: list[str]) -> None:
        last = len(kids) - 1
        for i, cid in enumerate(reversed(kids)):
            stack.append(cid)
            if i < last:
                stack.append(0)

    push(roots)
    while stack:
        val = stack.pop()
        if type(val) is int:
            append(b"," if val == 0 else b"]}")
        else:
            assert isinstance(val, str)
            head = dumps(wire(summaries[val]))
            append(head[:-1] + b',"children":[')
            stack.append(1)
            kids = child_map.get(val, empty)
            if kids:
                push(list(kids))
    append(b'],"leafId":' + dumps(manager.get_leaf_id()) + b"}")
    return orjson.Fragment(b"".join(parts))


async def tree(ls: SessionTreeServer, p: t.SessionParams) -> Any:
    session = ls.registry.get(p.session)
    return await ls.registry.call(session, tree_json, session.manager)


async def view(ls: SessionTreeServer, p: t.ViewParams) -> t.ViewResult:
    session = ls.registry.get(p.session)

    def work() -> t.ViewResult:
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
        return mapping.view_result(core_view.build_view(session.manager, **kw))

    return await ls.registry.call(session, work)


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
