"""session/search end to end: the real daemon over stdio, session files written by plain file writes."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sessiontree.client import Client, RpcError
from sessiontree.core.fts import fts5_available

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(not fts5_available(), reason="this Python's SQLite has no FTS5")


def _line(obj: dict[str, Any]) -> str:
    return json.dumps(obj, separators=(",", ":")) + "\n"


def _msg(eid: str, parent: str | None, role: str, text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "id": eid,
        "parentId": parent,
        "timestamp": "2026-04-01T09:00:00.000Z",
        "message": {"role": role, "content": [{"type": "text", "text": text}]},
    }


def _header(sid: str, cwd: str) -> dict[str, Any]:
    return {"type": "session", "version": 3, "id": sid, "timestamp": "2026-04-01T00:00:00.000Z", "cwd": cwd}


def _snapshot(root: Path) -> dict[str, tuple[int, int]]:
    out = {}
    for dirpath, dirnames, files in os.walk(root):
        for n in files + dirnames:
            st = os.stat(os.path.join(dirpath, n))
            out[os.path.join(dirpath, n)] = (st.st_size, st.st_mtime_ns)
    return out


class World:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.agent = root / "agent"
        self.sessions = self.agent / "sessions" / "--w-proj--"
        self.sessions.mkdir(parents=True)
        self.index = root / "cache" / "search.db"

    def spawn(self, **env: str) -> Client:
        return Client.spawn(
            init_options={"agentDir": str(self.agent), "stateDir": str(self.root / "state")},
            env={
                "PI_CODING_AGENT_DIR": str(self.agent),
                "SESSIONTREE_SEARCH_INDEX": str(self.index),
                "PYTHONPATH": os.pathsep.join([str(REPO / "server"), str(REPO / "protocol")]),
                **env,
            },
        )


@pytest.fixture
def world(tmp_path: Path) -> World:
    w = World(tmp_path)
    p = w.sessions / "a.jsonl"
    p.write_text(
        _line(_header("s1", "/w/proj"))
        + _line(_msg("u1", None, "user", "how does the romeo widget work"))
        + _line(_msg("a1", "u1", "assistant", "the romeo widget spins"))
        + _line(_msg("a2", "u1", "assistant", "another answer on a branch"))
    )
    return w


@pytest.fixture
def client(world: World) -> Iterator[Client]:
    c = world.spawn()
    try:
        yield c
    finally:
        c.close()


def _wait_for(client: Client, params: dict[str, Any], want: Any, timeout: float = 15) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        res = client.request("session/search", params)
        if want(res):
            return res
        if time.monotonic() > deadline:
            raise AssertionError(f"not found in time: {res}")
        time.sleep(0.1)


def test_a_hit_names_the_session_entry_and_its_place_with_progress_for_the_build(
    world: World, client: Client
) -> None:
    before = _snapshot(world.agent)
    res = client.request("session/search", {"query": "romeo widget"})
    ids = sorted(h["entryId"] for h in res["hits"])
    assert ids == ["a1", "u1"]
    hit = next(h for h in res["hits"] if h["entryId"] == "a1")
    assert hit["path"] == os.path.realpath(world.sessions / "a.jsonl")
    assert hit["sessionId"] == "s1" and hit["cwd"] == "/w/proj" and hit["role"] == "assistant"
    assert hit["ancestors"] == ["u1"] and hit["depth"] == 1
    # the leaf is a2 (the last entry): a1 is on another branch
    assert hit["onActiveBranch"] is False
    assert [hit["snippet"][a:b] for a, b in hit["highlights"]] == ["romeo widget"]
    assert res["indexedFiles"] == 1 and res["indexBytes"] > 0
    kinds = [p["value"]["kind"] for p in client.notifications_of("$/progress")]
    assert kinds[0] == "begin" and kinds[-1] == "end"
    assert world.index.exists()
    assert _snapshot(world.agent) == before


def test_appends_and_new_files_become_searchable_after_the_watcher_sees_them(
    world: World, client: Client
) -> None:
    client.request("session/search", {"query": "romeo"})
    with open(world.sessions / "a.jsonl", "a") as f:
        f.write(_line(_msg("u2", "a2", "user", "sierra appended by a plain writer")))
    res = _wait_for(client, {"query": "sierra"}, lambda r: r["hits"])
    assert [h["entryId"] for h in res["hits"]] == ["u2"]
    assert res["hits"][0]["onActiveBranch"] is True and res["hits"][0]["ancestors"] == ["u1", "a2"]
    (world.sessions / "b.jsonl").write_text(
        _line(_header("s2", "/w/other")) + _line(_msg("x1", None, "user", "tango in a new file"))
    )
    res = _wait_for(client, {"query": "tango"}, lambda r: r["hits"])
    assert res["hits"][0]["sessionId"] == "s2"
    # a deleted session leaves the results
    os.unlink(world.sessions / "b.jsonl")
    _wait_for(client, {"query": "tango"}, lambda r: not r["hits"])


def test_appends_are_found_by_the_rescan_when_the_watcher_only_polls(world: World) -> None:
    c = world.spawn(SESSIONTREE_WATCH_POLLING="1", SESSIONTREE_SEARCH_RESCAN_SECONDS="0.3")
    try:
        c.request("session/search", {"query": "romeo"})
        with open(world.sessions / "a.jsonl", "a") as f:
            f.write(_line(_msg("u3", "a2", "user", "uniform polled")))
        res = _wait_for(c, {"query": "uniform"}, lambda r: r["hits"])
        assert res["hits"][0]["entryId"] == "u3"
    finally:
        c.close()


@pytest.mark.parametrize(
    "query", ['"', "NEAR(", "a AND (", "*", "-romeo", "romeo:", "^", "OR", "'", "\\", ""]
)
def test_fts_syntax_characters_do_not_error(client: Client, query: str) -> None:
    res = client.request("session/search", {"query": query})
    assert isinstance(res["hits"], list)


def test_filters_paging_and_bad_params(world: World, client: Client) -> None:
    res = client.request("session/search", {"query": "romeo", "role": "user"})
    assert [h["entryId"] for h in res["hits"]] == ["u1"]
    res = client.request("session/search", {"query": "romeo", "cwd": "/w/other"})
    assert res["hits"] == []
    res = client.request("session/search", {"query": "romeo", "since": "2026-05-01"})
    assert res["hits"] == []
    res = client.request("session/search", {"query": "romeo", "limit": 1})
    assert len(res["hits"]) == 1 and res["nextOffset"] == 1
    res2 = client.request("session/search", {"query": "romeo", "limit": 1, "offset": 1})
    assert res2["hits"][0]["entryId"] != res["hits"][0]["entryId"] and "nextOffset" not in res2
    with pytest.raises(RpcError) as exc:
        client.request("session/search", {"query": "romeo", "role": "robot"})
    assert exc.value.code == -32602
    with pytest.raises(RpcError) as exc:
        client.request("session/search", {"query": "romeo", "since": "last week"})
    assert exc.value.code == -32602
    with pytest.raises(RpcError) as exc:
        client.request("session/search", {})
    assert exc.value.code == -32602


def test_a_cancelled_search_leaves_the_daemon_answering(client: Client) -> None:
    fut = client.request_future("session/search", {"query": "romeo"})
    client.cancel(fut)
    try:
        fut.result(30)
    except RpcError as exc:
        assert exc.code == -32800
    res = client.request("session/search", {"query": "romeo"})
    assert len(res["hits"]) == 2


def test_a_deleted_index_is_rebuilt_by_the_daemon(world: World, client: Client) -> None:
    client.request("session/search", {"query": "romeo"})
    for suffix in ("", "-wal", "-shm"):
        p = Path(str(world.index) + suffix)
        if p.exists():
            p.unlink()
    with open(world.sessions / "a.jsonl", "a") as f:
        f.write(_line(_msg("u4", "a2", "user", "victor after the index went")))
    res = _wait_for(client, {"query": "victor"}, lambda r: r["hits"])
    assert res["hits"][0]["entryId"] == "u4"
    res = _wait_for(client, {"query": "romeo"}, lambda r: len(r["hits"]) == 2)
