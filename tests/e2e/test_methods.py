"""Every request of the protocol against the real daemon: results and error codes."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any

import pytest
from e2e_helpers import World, call
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient

pytestmark = pytest.mark.asyncio(loop_scope="session")


def entries_of(path: Path) -> list[dict[str, Any]]:
    out = []
    for line in path.read_bytes().splitlines():
        try:
            v = json.loads(line)
        except ValueError:
            continue
        if isinstance(v, dict) and v.get("type") != "session":
            out.append(v)
    return out


async def open_copy(client: LanguageClient, world: World) -> tuple[str, Path, list[dict[str, Any]]]:
    path = world.copy(f"{uuid.uuid4().hex[:8]}.jsonl")
    res = await call(client, "session/open", {"path": str(path)})
    return res["session"], path, entries_of(path)


async def expect_error(client: LanguageClient, code: int, method: str, params: Any) -> JsonRpcException:
    with pytest.raises(JsonRpcException) as err:
        await call(client, method, params)
    assert err.value.code == code, (method, err.value.code, err.value.message)
    return err.value


def notes(client: LanguageClient, method: str, session: str) -> list[dict[str, Any]]:
    return [p for m, p in client.notes if m == method and p.get("session") == session]  # type: ignore[attr-defined]


async def test_initialize_advertises_protocol(client: LanguageClient) -> None:
    result = client.init_result  # type: ignore[attr-defined]
    assert result.server_info.name == "sessiontree"
    assert result.server_info.version
    assert result.capabilities.experimental == {"sessionTree": {"protocolVersion": 1}}


async def test_open_reports_the_file(client: LanguageClient, world: World) -> None:
    handle, path, entries = await open_copy(client, world)
    res = await call(client, "session/open", {"path": str(path)})
    assert res["session"] == handle  # same path, same handle
    assert res["path"] == str(path.resolve())
    assert res["entryCount"] == len(entries)
    assert res["leafId"] == entries[-1]["id"]
    assert res["header"]["type"] == "session"
    assert "migratedFrom" not in res and "recovered" not in res


async def test_open_errors(client: LanguageClient, world: World) -> None:
    bad = world.sessions / "bad.jsonl"
    bad.write_text("this is not a session\n")
    before = bad.read_bytes()
    err = await expect_error(client, -32007, "session/open", {"path": str(bad)})
    assert err.data["path"] == str(bad.resolve())
    assert bad.read_bytes() == before
    await expect_error(client, -32602, "session/open", {"path": 3})
    await expect_error(client, -32602, "session/open", {})


async def test_unknown_handle(client: LanguageClient) -> None:
    for method, extra in [
        ("session/view", {}),
        ("session/tree", {}),
        ("session/context", {}),
        ("session/close", {}),
        ("session/branch", {"entryId": "x"}),
    ]:
        err = await expect_error(client, -32001, method, {"session": "nope", **extra})
        assert "nope" in err.message


async def test_view_rows_filters_search_and_paging(client: LanguageClient, world: World) -> None:
    handle, _, entries = await open_copy(client, world)
    full = await call(client, "session/view", {"session": handle})
    assert full["total"] == len(full["rows"]) > 0
    assert full["leafId"] == entries[-1]["id"]
    sel = full["rows"][full["selectedIndex"]]
    assert sel["id"] == entries[-1]["id"] and sel["isLeaf"] and sel["onActivePath"]
    row = full["rows"][0]
    assert set(row) >= {
        "id",
        "parentId",
        "type",
        "depth",
        "prefix",
        "onActivePath",
        "isLeaf",
        "text",
        "timestamp",
    }
    page = await call(client, "session/view", {"session": handle, "offset": 5, "limit": 7})
    assert [r["id"] for r in page["rows"]] == [r["id"] for r in full["rows"][5:12]]
    assert page["total"] == full["total"]
    totals = {}
    for f in ("default", "no-tools", "user-only", "labeled-only", "all"):
        totals[f] = (await call(client, "session/view", {"session": handle, "filter": f}))["total"]
    assert totals["all"] >= totals["default"] >= totals["no-tools"] >= totals["user-only"]
    assert totals["labeled-only"] <= totals["all"]
    users = await call(client, "session/view", {"session": handle, "filter": "user-only"})
    assert all(r["role"] == "user" for r in users["rows"])
    word = users["rows"][0]["text"].split()[1]
    found = await call(client, "session/view", {"session": handle, "search": word})
    assert 0 < found["total"] <= full["total"]
    none = await call(client, "session/view", {"session": handle, "search": "zzzqqqxxx-nothing"})
    assert none["total"] == 0 and none["rows"] == []
    await expect_error(client, -32602, "session/view", {"session": handle, "filter": "tools"})
    await expect_error(client, -32002, "session/view", {"session": handle, "leafId": "missing1"})


async def test_tree_children_path_entry_entries(client: LanguageClient, world: World) -> None:
    handle, _, entries = await open_copy(client, world)
    by_id = {e["id"]: e for e in entries}
    tree = await call(client, "session/tree", {"session": handle})
    assert tree["leafId"] == entries[-1]["id"]
    seen = []
    stack = list(tree["roots"])
    while stack:
        node = stack.pop()
        seen.append(node["id"])
        assert node["parentId"] == by_id[node["id"]]["parentId"]
        stack.extend(node["children"])
    assert sorted(seen) == sorted(by_id)

    roots = await call(client, "session/children", {"session": handle, "parentId": None})
    assert [e["id"] for e in roots["entries"]] == [n["id"] for n in tree["roots"]]
    first = roots["entries"][0]["id"]
    kids = await call(client, "session/children", {"session": handle, "parentId": first})
    assert all(k["parentId"] == first for k in kids["entries"])
    await expect_error(client, -32002, "session/children", {"session": handle, "parentId": "missing1"})

    path = await call(client, "session/path", {"session": handle})
    assert path["entries"][-1]["id"] == entries[-1]["id"]
    assert path["entries"][0]["parentId"] is None
    mid = path["entries"][len(path["entries"]) // 2]["id"]
    sub = await call(client, "session/path", {"session": handle, "fromId": mid})
    assert sub["entries"][-1]["id"] == mid
    await expect_error(client, -32002, "session/path", {"session": handle, "fromId": "missing1"})

    one = await call(client, "session/entry", {"session": handle, "id": mid})
    assert one["entry"] == by_id[mid]
    await expect_error(client, -32002, "session/entry", {"session": handle, "id": "missing1"})

    page = await call(client, "session/entries", {"session": handle, "offset": 10, "limit": 5})
    assert page["total"] == len(entries)
    assert page["entries"] == entries[10:15]


async def test_branch_reset_and_notifications(client: LanguageClient, world: World) -> None:
    handle, _, entries = await open_copy(client, world)
    target = entries[5]["id"]
    res = await call(client, "session/branch", {"session": handle, "entryId": target})
    assert res == {"leafId": target}
    assert (await call(client, "session/view", {"session": handle, "limit": 0}))["leafId"] == target
    res = await call(client, "session/resetLeaf", {"session": handle})
    assert res == {"leafId": None}
    await client.wait_until_idle() if hasattr(client, "wait_until_idle") else None
    navs = notes(client, "session/didNavigate", handle)
    assert navs[-2:] == [
        {"session": handle, "newLeafId": target, "oldLeafId": entries[-1]["id"]},
        {"session": handle, "newLeafId": None, "oldLeafId": target},
    ]
    await expect_error(client, -32002, "session/branch", {"session": handle, "entryId": "missing1"})


async def test_append_labels_and_compare_and_append(client: LanguageClient, world: World) -> None:
    handle, path, entries = await open_copy(client, world)
    leaf = entries[-1]["id"]
    msg = {"role": "user", "content": [{"type": "text", "text": "hello from e2e"}], "timestamp": 1}
    res = await call(
        client, "session/append", {"session": handle, "entry": {"type": "message", "message": msg}}
    )
    assert res["leafId"] == res["id"]
    on_disk = entries_of(path)
    assert on_disk[-1]["id"] == res["id"] and on_disk[-1]["parentId"] == leaf
    change = notes(client, "session/didChange", handle)[-1]
    assert change["source"] == "local" and change["oldLeafId"] == leaf and change["leafId"] == res["id"]
    assert change["appended"][0]["text"] == "user: hello from e2e"

    err = await expect_error(
        client,
        -32004,
        "session/append",
        {"session": handle, "entry": {"type": "custom", "customType": "x"}, "expectedLeafId": leaf},
    )
    assert err.data["leafId"] == res["id"]
    assert len(entries_of(path)) == len(on_disk)
    ok = await call(
        client,
        "session/append",
        {
            "session": handle,
            "entry": {"type": "model_change", "model": "openai/gpt-4o"},
            "expectedLeafId": res["id"],
        },
    )
    assert entries_of(path)[-1]["model"] == "openai/gpt-4o"
    await expect_error(client, -32602, "session/append", {"session": handle, "entry": {"type": "nope"}})
    await expect_error(
        client, -32602, "session/append", {"session": handle, "entry": {"type": "model_change"}}
    )

    lab = await call(client, "session/setLabel", {"session": handle, "targetId": leaf, "label": "checkpoint"})
    assert entries_of(path)[-1]["id"] == lab["entryId"]
    labels = await call(client, "session/labels", {"session": handle})
    assert {"targetId": leaf, "label": "checkpoint"} in labels["labels"]
    assert notes(client, "session/didChangeLabel", handle)[-1] == {
        "session": handle,
        "targetId": leaf,
        "label": "checkpoint",
    }
    await call(client, "session/setLabel", {"session": handle, "targetId": leaf})
    assert notes(client, "session/didChangeLabel", handle)[-1] == {"session": handle, "targetId": leaf}
    labels = await call(client, "session/labels", {"session": handle})
    assert all(x["targetId"] != leaf for x in labels["labels"])
    await expect_error(
        client, -32002, "session/setLabel", {"session": handle, "targetId": "missing1", "label": "x"}
    )
    assert ok["id"]


async def test_context_at_leaf_and_any_node(client: LanguageClient, world: World) -> None:
    handle, _, entries = await open_copy(client, world)
    ctx = await call(client, "session/context", {"session": handle})
    assert ctx["messages"] and isinstance(ctx["thinkingLevel"], str) and "models" in ctx
    assert isinstance(ctx["selectedMCPToolNames"], list) and "hasPersistedMCPToolSelection" in ctx
    early = next(e for e in entries[3:] if e["type"] == "message")
    part = await call(client, "session/context", {"session": handle, "leafId": early["id"], "llm": True})
    assert len(part["messages"]) < len(ctx["messages"])
    assert part["llmMessages"] and all("role" in m for m in part["llmMessages"])
    empty = await call(client, "session/context", {"session": handle, "leafId": None})
    assert empty["messages"] == []
    await expect_error(client, -32002, "session/context", {"session": handle, "leafId": "missing1"})


async def test_branch_with_summary_and_navigate(client: LanguageClient, world: World) -> None:
    handle, path, entries = await open_copy(client, world)
    old = entries[-1]["id"]
    target = next(e for e in entries[4:] if e["type"] == "message" and e["message"]["role"] == "assistant")
    prep = await call(client, "session/prepareNavigation", {"session": handle, "targetId": target["id"]})
    assert prep["targetId"] == target["id"] and prep["oldLeafId"] == old
    assert prep["entriesToSummarize"]
    assert prep["entriesToSummarize"][-1]["id"] == old

    nav = await call(
        client,
        "session/navigate",
        {"session": handle, "targetId": target["id"], "summarize": True, "summary": "what I tried"},
    )
    assert nav["cancelled"] is False and nav["oldLeafId"] == old
    assert nav["summaryEntry"]["type"] == "branch_summary"
    assert nav["newLeafId"] == nav["summaryEntry"]["id"]
    stored = entries_of(path)[-1]
    assert stored["type"] == "branch_summary" and stored["summary"] == "what I tried"
    assert stored["parentId"] == target["id"]
    await expect_error(
        client, -32006, "session/navigate", {"session": handle, "targetId": old, "summarize": True}
    )
    user = next(e for e in entries[2:] if e["type"] == "message" and e["message"]["role"] == "user")
    nav = await call(client, "session/navigate", {"session": handle, "targetId": user["id"]})
    assert nav["newLeafId"] == user["parentId"] and isinstance(nav["editorText"], str)
    await expect_error(client, -32002, "session/navigate", {"session": handle, "targetId": "missing1"})
    await expect_error(
        client, -32002, "session/prepareNavigation", {"session": handle, "targetId": "missing1"}
    )

    bws = await call(
        client, "session/branchWithSummary", {"session": handle, "branchFromId": None, "summary": "root note"}
    )
    stored = entries_of(path)[-1]
    assert stored["id"] == bws["entryId"] and stored["parentId"] is None and stored["fromId"] == "root"


async def test_sessions_create_fork_name_flush_close(client: LanguageClient, world: World) -> None:
    cwd = str(world.root / "project")
    created = await call(client, "session/create", {"cwd": cwd, "sessionDir": str(world.sessions)})
    assert created["leafId"] is None and created["entryCount"] == 0
    assert created["path"].startswith(str(world.sessions.resolve()))
    child = await call(
        client,
        "session/create",
        {"cwd": cwd, "sessionDir": str(world.sessions), "parentSession": "/p/parent.jsonl"},
    )
    assert child["header"]["parentSession"] == "/p/parent.jsonl" and child["session"] != created["session"]
    mem = await call(client, "session/openInMemory", {"cwd": cwd})
    assert "path" not in mem and mem["leafId"] is None
    await call(
        client, "session/append", {"session": mem["session"], "entry": {"type": "custom", "customType": "m"}}
    )
    await expect_error(client, -32602, "session/fork", {"session": mem["session"]})

    handle, path, entries = await open_copy(client, world)
    named = await call(client, "session/setName", {"session": handle, "name": "My title"})
    assert named == {"changed": True}
    assert json.loads(path.read_text().splitlines()[0])["title"] == "My title"
    auto = await call(client, "session/setName", {"session": handle, "name": "auto", "source": "auto"})
    assert auto == {"changed": False}
    assert await call(client, "session/flush", {"session": handle}) is None

    fork = await call(client, "session/fork", {"session": handle})
    assert fork["oldPath"] == str(path.resolve()) and Path(fork["newPath"]).exists()
    assert len(entries_of(Path(fork["newPath"]))) == len(entries)

    ff = await call(
        client,
        "session/forkFrom",
        {"sourcePath": str(path), "cwd": cwd, "sessionDir": str(world.sessions)},
    )
    assert ff["header"]["parentSession"] and ff["entryCount"] == len(entries)
    await expect_error(
        client, -32602, "session/forkFrom", {"sourcePath": str(world.sessions / "none.jsonl"), "cwd": cwd}
    )

    assert await call(client, "session/close", {"session": handle}) is None
    await expect_error(client, -32001, "session/view", {"session": handle})


async def test_list_recent_continue(client: LanguageClient, world: World) -> None:
    cwd = "/home/dev/project"
    await open_copy(client, world)  # at least one session in the sessions dir, whatever ran before
    listed = await call(client, "session/list", {"all": True})
    assert listed["sessions"]
    s0 = listed["sessions"][0]
    assert set(s0) >= {"path", "id", "cwd", "firstMessage", "messageCount", "created", "modified"}
    mods = [s["modified"] for s in listed["sessions"]]
    assert mods == sorted(mods, reverse=True)
    limited = await call(client, "session/list", {"all": True, "limit": 1})
    assert len(limited["sessions"]) == 1
    word = s0["firstMessage"].split()[0]
    q = await call(client, "session/list", {"all": True, "query": word})
    assert s0["path"] in [s["path"] for s in q["sessions"]]
    nothing = await call(client, "session/list", {"all": True, "query": "zzzqqq-nothing-matches"})
    assert nothing["sessions"] == []
    recent = await call(client, "session/recent", {"cwd": cwd, "sessionDir": str(world.sessions), "limit": 2})
    assert 0 < len(recent["sessions"]) <= 2 and set(recent["sessions"][0]) == {"path", "name", "modified"}
    cont = await call(client, "session/continueRecent", {"cwd": cwd, "sessionDir": str(world.sessions)})
    assert cont["path"] == recent["sessions"][0]["path"]
    # the breadcrumb of the agent's terminal wins over the newest file
    older = world.copy(f"{uuid.uuid4().hex[:8]}.jsonl")
    os.utime(older, (1, 1))
    crumbs = world.agent_dir / "terminal-sessions"
    crumbs.mkdir(exist_ok=True)
    (crumbs / "tmux-%3").write_text(f"{cwd}\n{older}\n")
    by_terminal = await call(
        client,
        "session/continueRecent",
        {"cwd": cwd, "sessionDir": str(world.sessions), "terminalId": "tmux-%3"},
    )
    assert by_terminal["path"] == str(older)
    other = await call(
        client,
        "session/continueRecent",
        {"cwd": cwd, "sessionDir": str(world.sessions), "terminalId": "pts-77"},
    )
    assert other["path"] == recent["sessions"][0]["path"]


async def test_branch_to_new_session_and_create_branched(client: LanguageClient, world: World) -> None:
    handle, path, entries = await open_copy(client, world)
    user = [e for e in entries if e["type"] == "message" and e["message"]["role"] == "user"][2]
    res = await call(client, "session/branchToNewSession", {"session": handle, "entryId": user["id"]})
    assert res["session"] == handle and res["selectedText"]
    assert res["path"] != str(path.resolve())
    not_user = next(e for e in entries if e["type"] == "message" and e["message"]["role"] == "assistant")
    await expect_error(
        client, -32602, "session/branchToNewSession", {"session": handle, "entryId": not_user["id"]}
    )

    handle2, path2, entries2 = await open_copy(client, world)
    mid = entries2[len(entries2) // 2]["id"]
    cbs = await call(client, "session/createBranchedSession", {"session": handle2, "leafId": mid})
    assert cbs["path"] and Path(cbs["path"]).exists() and cbs["path"] != str(path2.resolve())
    await expect_error(
        client, -32002, "session/createBranchedSession", {"session": handle2, "leafId": "missing1"}
    )


async def test_doctor(client: LanguageClient, world: World) -> None:
    handle, _path, _ = await open_copy(client, world)
    res = await call(client, "session/doctor", {"session": handle})
    assert isinstance(res["problems"], list)
    torn = world.copy("torn.jsonl")
    torn.write_bytes(torn.read_bytes() + b'{"type":"message","id":"abc')
    res = await call(client, "session/doctor", {"path": str(torn)})
    assert any(p["kind"] == "torn-tail" for p in res["problems"])
    await expect_error(client, -32602, "session/doctor", {})
