"""session/navigate with `summarize: true` and no summary runs `summarizerCommand`."""

from __future__ import annotations

import json
import sys

import pytest
from e2e_helpers import World, call, start_client, stop_client
from pygls.exceptions import JsonRpcException

pytestmark = pytest.mark.asyncio(loop_scope="session")

SUMMARIZER = (
    "import json, sys; d = json.load(sys.stdin); "
    "print('summary of %d entries, %s' % (len(d['entries']), d['customInstructions']))"
)


def _ids(path):  # type: ignore[no-untyped-def]
    return [json.loads(line)["id"] for line in path.read_bytes().splitlines()[1:]]


async def test_summarizer_command_writes_the_branch_summary(world: World) -> None:
    path = world.copy("summarize.jsonl")
    ids = _ids(path)
    c = await start_client(world, "visual-studio-code", summarizerCommand=[sys.executable, "-c", SUMMARIZER])
    try:
        h = (await call(c, "session/open", {"path": str(path)}))["session"]
        prep = await call(c, "session/prepareNavigation", {"session": h, "targetId": ids[10]})
        n = len(prep["entriesToSummarize"])
        res = await call(
            c,
            "session/navigate",
            {"session": h, "targetId": ids[10], "summarize": True, "customInstructions": "be brief"},
        )
        stored = json.loads(path.read_bytes().splitlines()[-1])
        assert stored["type"] == "branch_summary"
        assert stored["summary"] == f"summary of {n} entries, be brief"
        assert res["summaryEntry"]["id"] == stored["id"]
        nav = [p for m, p in c.notes if m == "session/didNavigate"]  # type: ignore[attr-defined]
        assert nav[-1]["summaryEntry"]["id"] == stored["id"]
    finally:
        await stop_client(c)


async def test_failing_summarizer_is_32006_and_writes_nothing(world: World) -> None:
    path = world.copy("summarize-fails.jsonl")
    ids = _ids(path)
    before = path.read_bytes()
    c = await start_client(world, "neovim@v0.11", summarizerCommand="echo broken >&2; exit 3")
    try:
        h = (await call(c, "session/open", {"path": str(path)}))["session"]
        with pytest.raises(JsonRpcException) as err:
            await call(c, "session/navigate", {"session": h, "targetId": ids[10], "summarize": True})
        assert err.value.code == -32006 and "broken" in err.value.message
        assert path.read_bytes() == before
        view = await call(c, "session/view", {"session": h, "limit": 0})
        assert view["leafId"] == ids[-1]
    finally:
        await stop_client(c)
