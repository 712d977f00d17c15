"""Idle-time work waits for a quiet moment (features/warm.py `_quiet`): a client's call
that runs long (a million entries' first view: seconds) is not quiet, so work queued then
would make the click's next requests wait behind it."""

from __future__ import annotations

import asyncio
import time

import pytest
from sessiontree.lsp.features import sessions, warm
from sessiontree.lsp.setup import create_server
from sessiontree_protocol import types as t


async def test_a_call_in_flight_is_not_quiet(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(warm, "CACHE_QUIET", 0.3)
    server = create_server()
    try:
        opened = await sessions.open_in_memory(server, t.OpenInMemoryParams())
        registry = server.registry
        session = registry.get(opened.session)
        long_call = asyncio.ensure_future(registry.call(session, time.sleep, 1.0))
        await asyncio.sleep(0.05)
        assert session.calls_in_flight == 1
        started = time.monotonic()
        quiet = await warm._quiet(registry, opened.session)
        waited = time.monotonic() - started
        assert long_call.done(), "idle-time work came while a client's call ran"
        assert waited >= 0.95 + 0.3 - 0.05  # the call's end, then CACHE_QUIET without one
        assert quiet is session and session.calls_in_flight == 0
        # with nothing running, the quiet moment is CACHE_QUIET after the last call ended
        await registry.call(session, time.sleep, 0.0)
        started = time.monotonic()
        await warm._quiet(registry, opened.session)
        assert 0.25 <= time.monotonic() - started < 1.0
    finally:
        server.end_connection()
