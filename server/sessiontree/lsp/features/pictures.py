"""session/graph, session/export, session/diff (additions): the graph of the whole tree, a
branch or subtree exported with redaction, two nodes compared (docs/graph-export-compare.md).

Each handler calls one core function (`core.graph`, `core.export`, `core.compare`) under the
session's lock and reads only; the core's JSON-ready dicts are structured into the wire
classes here, so their field names are checked against the protocol's.
"""

from __future__ import annotations

from typing import Any

from sessiontree_protocol import methods as m
from sessiontree_protocol import types as t
from sessiontree_protocol.converters import structure

from sessiontree.core.compare import compare_nodes, render_side
from sessiontree.core.discovery import display_name_of_manager
from sessiontree.core.export import (
    FORMATS,
    ExportInput,
    ExportRun,
    export_file_name,
    read_export,
    read_page,
)
from sessiontree.core.export.redact import RedactionConfigError
from sessiontree.core.graph import build_graph, render_html, render_svg
from sessiontree.core.graph.render import page_csp, summary_line
from sessiontree.lsp import errors, mapping
from sessiontree.lsp.handlers import register
from sessiontree.lsp.server import SessionTreeServer


async def graph(ls: SessionTreeServer, p: t.GraphParams) -> t.GraphResult:
    session = ls.registry.get(p.session)
    if p.collapse is not None and p.collapse < 0:
        raise errors.InvalidParams("collapse must be 0 or more", {"field": "collapse", "reason": "negative"})
    if p.fan is not None and p.fan < 1:
        raise errors.InvalidParams("fan must be 1 or more", {"field": "fan", "reason": "not positive"})
    if p.nonce:
        try:  # a nonce or source that could widen the page's policy is a bad param, not a fault
            page_csp(nonce=p.nonce, csp_source=p.csp_source)
        except ValueError as exc:
            field = "nonce" if "nonce" in str(exc) else "cspSource"
            raise errors.InvalidParams(str(exc), {"field": field, "reason": str(exc)}) from None

    def work() -> t.GraphResult:
        manager = session.manager
        leaf: Any = ...
        if not isinstance(p.leaf_id, t._Absent):
            mapping.require_entry(manager, p.leaf_id)
            leaf = p.leaf_id
        g = build_graph(manager, collapse=p.collapse, leaf_id=leaf, pages=p.pages, fan=p.fan)
        # the name the sidebars show the session under (a transcript's title, not its id)
        g.title = display_name_of_manager(manager)
        page = render_html(g, nonce=p.nonce, csp_source=p.csp_source) if p.nonce else None
        return t.GraphResult(
            svg=render_svg(g),
            nodes=[n.to_dict() for n in g.nodes],
            entries=g.entries,
            lanes=g.lanes,
            collapsed=g.collapsed,
            leaf_id=g.leaf_id,
            summary=summary_line(g),
            html=page,
            truncated=g.truncated,
        )

    return await ls.registry.call(session, work)


async def export(ls: SessionTreeServer, p: t.ExportParams) -> t.ExportResult:
    session = ls.registry.get(p.session)
    if p.format not in FORMATS:
        raise errors.InvalidParams(
            f"format must be one of {', '.join(FORMATS)}", {"field": "format", "reason": "unknown format"}
        )
    if p.subtree_id is not None and not isinstance(p.leaf_id, t._Absent):
        raise errors.InvalidParams(
            "give leafId or subtreeId, not both", {"field": "subtreeId", "reason": "both given"}
        )

    def read() -> ExportInput:
        manager = session.manager
        leaf: Any = ... if isinstance(p.leaf_id, t._Absent) else p.leaf_id
        if leaf is not ...:
            mapping.require_entry(manager, leaf)
        if p.subtree_id is not None:
            mapping.require_entry(manager, p.subtree_id)
        return read_export(manager, leaf_id=leaf, subtree_id=p.subtree_id)

    def begin(inp: ExportInput) -> tuple[ExportRun, str]:
        try:
            run = ExportRun(inp, p.format, redact=p.redact, dry_run=p.dry_run)
        except RedactionConfigError as exc:
            raise errors.InvalidParams(
                f"redaction config: {exc}", {"field": "redact", "reason": str(exc)}
            ) from exc
        return run, run.start()

    def page(sks: list[Any]) -> list[dict[str, Any]]:
        return read_page(session.manager, sks)

    # Only the reading holds the session, a page at a time: redacting and rendering a
    # 100,000-entry path takes seconds, and the tree view's requests must not wait for it.
    # The rendering runs in the pool of session-less work, not on any session's queue, and
    # every built-in pattern is linear (it gives the interpreter back between candidates),
    # so requests on other sessions are answered meanwhile; the export's time budget ends
    # it with -32009. What is held is a page of entries and the document made so far.
    inp = await ls.registry.call(session, read)
    run, head = await ls.registry.run(begin, inp)
    parts = [head]
    for sks in inp.selection.pages():
        entries = await ls.registry.call(session, page, sks)
        parts.append(await ls.registry.run(run.feed, entries))
    parts.append(await ls.registry.run(run.finish))
    r = run.result("".join(parts))
    del parts
    return t.ExportResult(
        content=r.content,
        format=r.format,
        entries=r.entries,
        leaf_id=r.leaf_id,
        redacted=r.redacted,
        redactions=[t.RedactionCount(pattern=k, count=v) for k, v in sorted(r.counts.items())],
        findings=[structure(f.to_dict(), t.RedactionFinding) for f in r.findings],
        suggested_name=export_file_name(inp.session_id, p.subtree_id or r.leaf_id, r.format),
    )


async def diff(ls: SessionTreeServer, p: t.DiffParams) -> t.DiffResult:
    session = ls.registry.get(p.session)

    def work() -> t.DiffResult:
        manager = session.manager
        mapping.require_entry(manager, p.a)
        mapping.require_entry(manager, p.b)
        cmp = compare_nodes(manager, p.a, p.b)
        d = cmp.to_dict()
        d["a"]["document"] = render_side(cmp, "a")
        d["b"]["document"] = render_side(cmp, "b")
        return structure(d, t.DiffResult)

    return await ls.registry.call(session, work)


def setup(server: SessionTreeServer) -> None:
    """Register session/graph, session/export and session/diff."""
    register(server, m.SESSION_GRAPH, graph)
    register(server, m.SESSION_EXPORT, export)
    register(server, m.SESSION_DIFF, diff)
