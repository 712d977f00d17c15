"""sessiontree.client against the real daemon: requests, errors, notifications, asyncio."""

from __future__ import annotations

import asyncio
import sys

import pytest
from e2e_helpers import World
from sessiontree.client import Client, RpcError


def test_client_round_trip(world: World) -> None:
    path = world.copy("client.jsonl")
    with Client.spawn(
        [sys.executable, "-m", "sessiontree", "serve"], env=world.env(), init_options=world.init_options()
    ) as c:
        assert c.initialize_result["serverInfo"]["name"] == "sessiontree"
        opened = c.request("session/open", {"path": str(path)})
        futures = [
            c.request_future("session/view", {"session": opened["session"], "limit": 5}) for _ in range(3)
        ]
        assert all(len(f.result(30)["rows"]) == 5 for f in futures)
        with pytest.raises(RpcError) as err:
            c.request("session/branch", {"session": opened["session"], "entryId": "missing1"})
        assert err.value.code == -32002
        first = c.request("session/path", {"session": opened["session"]})["entries"][0]["id"]
        c.request("session/branch", {"session": opened["session"], "entryId": first})
        note = c.wait_for_notification("session/didNavigate", timeout=10)
        assert note["newLeafId"] == first and note["oldLeafId"] == opened["leafId"]
        result = asyncio.run(c.arequest("session/labels", {"session": opened["session"]}))
        assert isinstance(result["labels"], list)
    assert c.process is not None and c.process.returncode == 0
