"""Several requests in flight, a small request answered during a large open,
cancellation of a long request, and work-done progress for a long open."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from e2e_helpers import World, call
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient

pytestmark = pytest.mark.asyncio(loop_scope="session")


async def test_requests_in_flight_at_once(client: LanguageClient, world: World) -> None:
    paths = [world.copy(f"conc-{i}.jsonl") for i in range(4)]
    opens = [client.protocol.send_request_async("session/open", {"path": str(p)}) for p in paths]
    same = client.protocol.send_request_async("session/open", {"path": str(paths[0])})
    results = await asyncio.gather(*opens, same)
    handles = [r["session"] for r in results]
    assert len(set(handles[:4])) == 4 and handles[4] == handles[0]
    views = await asyncio.gather(
        *[
            client.protocol.send_request_async("session/view", {"session": h, "limit": 20})
            for h in handles[:4]
        ],
        *[client.protocol.send_request_async("session/context", {"session": h}) for h in handles[:4]],
    )
    assert all(len(v["rows"]) == 20 for v in views[:4])
    assert all(v["messages"] for v in views[4:])


async def test_small_request_answered_during_large_open(
    client: LanguageClient, world: World, big_session: Path
) -> None:
    path = world.copy(f"big-{client.kind}.jsonl", big_session, big_session.parent)  # type: ignore[attr-defined]
    assert path.stat().st_size > 25_000_000
    before = set(client.progress_reports)
    t0 = time.monotonic()
    big = asyncio.ensure_future(client.protocol.send_request_async("session/open", {"path": str(path)}))
    await asyncio.sleep(0.05)
    small = await client.protocol.send_request_async("session/openInMemory", {})
    t_small = time.monotonic() - t0
    assert not big.done(), "the large open finished before the small request; it should take longer"
    res = await big
    t_big = time.monotonic() - t0
    assert small["session"] and res["entryCount"] > 20000
    assert res["recovered"]["skippedLines"] == 1
    assert t_small < t_big
    # no token was sent: the daemon created one (window/workDoneProgress/create) for this long open
    await asyncio.sleep(0.1)
    new = [t for t in client.progress_reports if t not in before]
    assert len(new) == 1, "a 30 MB open reports work-done progress"
    kinds = [getattr(r, "kind", None) for r in client.progress_reports[new[0]]]
    assert kinds[0] == "begin" and kinds[-1] == "end"
    if t_big > 1.0:  # reports every 0.5 s while loading
        assert "report" in kinds
    await call(client, "session/close", {"session": res["session"]})


async def test_cancel_a_long_open(client: LanguageClient, world: World, big_session: Path) -> None:
    path = world.copy(f"big-cancel-{client.kind}.jsonl", big_session, big_session.parent)  # type: ignore[attr-defined]
    msg_id = f"cancel-{client.kind}"  # type: ignore[attr-defined]
    fut = client.protocol.send_request("session/open", {"path": str(path)}, msg_id=msg_id)
    await asyncio.sleep(0.1)
    client.protocol.notify("$/cancelRequest", lsp.CancelParams(id=msg_id))
    t0 = time.monotonic()
    with pytest.raises(JsonRpcException) as err:
        await asyncio.wait_for(asyncio.wrap_future(fut), 10)
    assert err.value.code == -32800
    assert time.monotonic() - t0 < 2.0, "the cancellation is answered at once, not after the load"
    # the daemon keeps working; the cancelled load is not registered
    res = await call(client, "session/openInMemory", {})
    assert res["session"]
    with pytest.raises(JsonRpcException):
        await call(client, "session/view", {"session": "s-does-not-exist"})


@pytest.mark.filterwarnings("ignore:Unknown progress token")  # pytest-lsp expects server-created tokens
async def test_progress_with_client_token(client: LanguageClient, world: World) -> None:
    path = world.copy(f"progress-{client.kind}.jsonl")  # type: ignore[attr-defined]
    token = f"tok-{client.kind}"  # type: ignore[attr-defined]
    await call(client, "session/open", {"path": str(path), "workDoneToken": token})
    await asyncio.sleep(0.1)
    kinds = [getattr(r, "kind", None) for r in client.progress_reports.get(token, [])]
    assert kinds[0] == "begin" and kinds[-1] == "end"
