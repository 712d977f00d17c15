"""session/context: the SessionContext at the leaf or any node (+ LLM messages)."""

from __future__ import annotations

from sessiontree_protocol import methods as m
from sessiontree_protocol import types as t

from sessiontree.core.tree.context import context_from_path
from sessiontree.core.tree.messages import convert_to_llm
from sessiontree.lsp import mapping
from sessiontree.lsp.handlers import register
from sessiontree.lsp.server import SessionTreeServer


async def context(ls: SessionTreeServer, p: t.ContextParams) -> t.ContextResult:
    session = ls.registry.get(p.session)

    def work() -> t.ContextResult:
        manager = session.manager
        if p.leaf_id is t.ABSENT:
            ctx = manager.build_session_context()
        elif p.leaf_id is None:
            ctx = manager.build_session_context(None)
        else:
            mapping.require_entry(manager, p.leaf_id)
            ctx = context_from_path(manager.materialize_context_path(p.leaf_id))
        llm = convert_to_llm(ctx.messages) if p.llm else None
        return mapping.context_result(ctx, llm)

    return await ls.registry.call(session, work)


def setup(server: SessionTreeServer) -> None:
    """Register session/context."""
    register(server, m.SESSION_CONTEXT, context)
