"""session/context: the SessionContext at the leaf or any node (+ LLM messages)."""

from __future__ import annotations

from typing import Any

import orjson
from sessiontree_protocol import methods as m
from sessiontree_protocol import types as t

from sessiontree.core.tree.context import context_from_path
from sessiontree.core.tree.messages import convert_to_llm
from sessiontree.lsp import errors, mapping
from sessiontree.lsp.handlers import register
from sessiontree.lsp.server import SessionTreeServer


def _within(messages: list[Any], max_bytes: int) -> list[Any]:
    """The leading messages whose JSON fits in ``max_bytes`` (at least one)."""
    size = 0
    for i, msg in enumerate(messages):
        size += len(orjson.dumps(mapping.wire_safe(msg))) + 1
        if size > max_bytes and i > 0:
            return messages[:i]
    return messages


async def context(ls: SessionTreeServer, p: t.ContextParams) -> t.ContextResult:
    session = ls.registry.get(p.session)  # an unknown handle is reported before bad params
    for name, value in (("limit", p.limit), ("maxBytes", p.max_bytes)):
        if value is not None and value < 0:
            raise errors.InvalidParams(
                f"{name} must be 0 or more: {value}", {"field": name, "reason": "negative"}
            )

    def work() -> t.ContextResult:
        manager = session.manager
        if p.leaf_id is t.ABSENT:
            ctx = manager.build_session_context()
        elif p.leaf_id is None:
            ctx = manager.build_session_context(None)
        else:
            mapping.require_entry(manager, p.leaf_id)
            ctx = context_from_path(manager.materialize_context_path(p.leaf_id), manager.dialect)
        messages = list(ctx.messages)
        total = len(messages)
        start = p.offset if p.offset >= 0 else max(0, total + p.offset)
        end = total if p.limit is None else min(total, start + p.limit)
        page = messages[start:end]
        if p.max_bytes is not None:
            page = _within(page, p.max_bytes)
        llm = convert_to_llm(page) if p.llm else None
        result = mapping.context_result(ctx, llm, page)
        result.total_messages = total
        result.offset = min(start, total)
        result.truncated = start + len(page) < total
        return result

    return await ls.registry.call(session, work)


def setup(server: SessionTreeServer) -> None:
    """Register session/context."""
    register(server, m.SESSION_CONTEXT, context)
