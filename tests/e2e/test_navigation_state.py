"""Navigation that lasts: the leaf chosen through the daemon and the history of jumps
survive a daemon restart; session/history and session/back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from e2e_helpers import CLIENTS, World, call, start_client, stop_client
from pytest_lsp import LanguageClient

pytestmark = pytest.mark.asyncio(loop_scope="session")


def ids(path: Path) -> list[str]:
    out = []
    for line in path.read_bytes().splitlines()[1:]:
        try:
            out.append(json.loads(line)["id"])
        except (ValueError, KeyError):
            pass
    return out


async def test_history_and_back(client: LanguageClient, world: World) -> None:
    path = world.copy(f"hist-{client.kind}.jsonl")  # type: ignore[attr-defined]
    all_ids = ids(path)
    res = await call(client, "session/open", {"path": str(path)})
    h, start = res["session"], res["leafId"]
    hist = await call(client, "session/history", {"session": h})
    assert hist == {"entries": [], "index": 0}
    back = await call(client, "session/back", {"session": h})
    assert back["cancelled"] is True and back["newLeafId"] == start

    a, b = all_ids[10], all_ids[20]
    await call(client, "session/branch", {"session": h, "entryId": a})
    await call(client, "session/branch", {"session": h, "entryId": b})
    hist = await call(client, "session/history", {"session": h})
    assert hist["index"] == 2
    assert [(e["leafId"], e["previousLeafId"]) for e in hist["entries"]] == [(a, start), (b, a)]
    assert all(e["at"].endswith("Z") for e in hist["entries"])

    back = await call(client, "session/back", {"session": h})
    assert back == {"cancelled": False, "newLeafId": a, "oldLeafId": b}
    nav = [p for m, p in client.notes if m == "session/didNavigate" and p["session"] == h]  # type: ignore[attr-defined]
    assert nav[-1] == {"session": h, "newLeafId": a, "oldLeafId": b}
    back = await call(client, "session/back", {"session": h})
    assert back["newLeafId"] == start
    assert (await call(client, "session/history", {"session": h}))["index"] == 0

    # a new jump after going back drops the undone ones
    await call(client, "session/resetLeaf", {"session": h})
    hist = await call(client, "session/history", {"session": h})
    assert hist["index"] == 1 and hist["entries"][-1] == {
        "leafId": None,
        "previousLeafId": start,
        "at": hist["entries"][-1]["at"],
    }


async def test_navigate_with_summary_is_one_back_away(client: LanguageClient, world: World) -> None:
    path = world.copy(f"hist-sum-{client.kind}.jsonl")  # type: ignore[attr-defined]
    all_ids = ids(path)
    res = await call(client, "session/open", {"path": str(path)})
    h, start = res["session"], res["leafId"]
    nav = await call(
        client,
        "session/navigate",
        {"session": h, "targetId": all_ids[15], "summarize": True, "summary": "left this branch"},
    )
    hist = await call(client, "session/history", {"session": h})
    assert hist["entries"][-1]["summaryEntryId"] == nav["summaryEntry"]["id"]
    back = await call(client, "session/back", {"session": h})
    assert back["newLeafId"] == start  # "return to the branch I left" in one call


async def test_leaf_and_history_survive_a_restart(world: World) -> None:
    kind = CLIENTS[0]
    path = world.copy(f"restart-{kind}.jsonl")
    before = sorted(p.name for p in world.sessions.iterdir())
    all_ids = ids(path)
    c = await start_client(world, kind)
    try:
        h = (await call(c, "session/open", {"path": str(path)}))["session"]
        await call(c, "session/branch", {"session": h, "entryId": all_ids[30]})
        await call(c, "session/branch", {"session": h, "entryId": all_ids[40]})
    finally:
        await stop_client(c)
    data_before = path.read_bytes()

    c = await start_client(world, kind)
    try:
        res = await call(c, "session/open", {"path": str(path)})
        assert res["leafId"] == all_ids[40]
        assert res["restoredLeafId"] == all_ids[40]
        view = await call(c, "session/view", {"session": res["session"], "limit": 0})
        assert view["leafId"] == all_ids[40]
        hist = await call(c, "session/history", {"session": res["session"]})
        assert [e["leafId"] for e in hist["entries"]] == [all_ids[30], all_ids[40]]
        back = await call(c, "session/back", {"session": res["session"]})
        assert back["newLeafId"] == all_ids[30]
    finally:
        await stop_client(c)
    # nothing was written into the session file or the sessions directory for this
    assert path.read_bytes() == data_before
    assert sorted(p.name for p in world.sessions.iterdir()) == before
    state = world.state_dir / "state.json"
    assert state.exists() and str(path.resolve()) in json.loads(state.read_text())["sessions"]


async def test_restore_is_skipped_when_the_file_moved_on(world: World) -> None:
    path = world.copy("restart-moved-on.jsonl")
    all_ids = ids(path)
    c = await start_client(world, "neovim@v0.11")
    try:
        h = (await call(c, "session/open", {"path": str(path)}))["session"]
        await call(c, "session/branch", {"session": h, "entryId": all_ids[5]})
    finally:
        await stop_client(c)
    # another process (the agent) continues the session meanwhile
    last = json.loads(path.read_bytes().splitlines()[-1])
    extra = {
        "type": "custom",
        "customType": "agent-continued",
        "id": "feedbeef",
        "parentId": last["id"],
        "timestamp": "2030-01-01T00:00:00.000Z",
    }
    with path.open("ab") as fh:
        fh.write(json.dumps(extra).encode() + b"\n")
    c = await start_client(world, "neovim@v0.11")
    try:
        res = await call(c, "session/open", {"path": str(path)})
        assert res["leafId"] == "feedbeef" and "restoredLeafId" not in res
    finally:
        await stop_client(c)
