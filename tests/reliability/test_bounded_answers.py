"""Answers a client can bound: `session/tree` nesting (`maxDepth`, a flat form) and
`session/context` pages (`offset`, `limit`, `maxBytes`).

The daemon is driven by `RawLsp`, which decodes every message with Python's standard
`json` module (about 1,000 nesting levels at most): a linear session of 3,000 entries nests
6,000 levels when sent unbounded, so before the bound these answers did not decode at all.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from sessiontree.core.session import SessionManager

from .rawlsp import RawLsp

pytestmark = pytest.mark.timeout(180)


def _session(tmp: Path, linear: int, seed: int = 3) -> tuple[Path, list[dict[str, Any]]]:
    """A long chain with a few branches back to earlier entries (as navigation leaves)."""
    rng = random.Random(seed)
    mgr = SessionManager.create(str(tmp), str(tmp / "sessions"))
    ids: list[str] = []
    for i in range(linear):
        if ids and i % 700 == 0:
            mgr.branch(ids[rng.randrange(len(ids))])
        role = "user" if i % 2 == 0 else "assistant"
        msg: dict[str, Any] = {"role": role, "content": [{"type": "text", "text": f"m{i}"}], "timestamp": i}
        if role == "assistant":
            msg.update(provider="p", model="m", stopReason="stop")
        ids.append(mgr.append_message(msg))
    mgr.flush()
    path = Path(mgr.get_session_file() or "")
    entries = [json.loads(line) for line in path.read_text().splitlines()[1:]]
    return path, entries


def _start(tmp: Path) -> RawLsp:
    d = RawLsp(env={"HOME": str(tmp), "PI_CODING_AGENT_DIR": str(tmp / "agent")})
    res = d.initialize({"agentDir": str(tmp / "agent"), "allowedRoots": [str(tmp)], "watch": False})
    assert "result" in res, res
    return d


def _ok(d: RawLsp, method: str, params: dict[str, Any]) -> Any:
    res = d.request(method, params, timeout=120)
    assert "result" in res, res
    return res["result"]


def _depth(node: dict[str, Any]) -> int:
    """Tree levels below and including `node` (iteratively: the answer may be deep)."""
    best = 0
    todo = [(node, 1)]
    while todo:
        n, level = todo.pop()
        best = max(best, level)
        todo.extend((c, level + 1) for c in n["children"])
    return best


def _edges_nested(d: RawLsp, s: str, roots: list[dict[str, Any]], max_depth: int) -> list[tuple[str, Any]]:
    """Every (id, parentId) of the tree in pre-order, following each truncated node's subtree."""
    out: list[tuple[str, Any]] = []
    todo = list(reversed(roots))
    calls = 0
    while todo:
        n = todo.pop()
        out.append((n["id"], n["parentId"]))
        if n.get("truncated"):
            assert n["children"] == []
            calls += 1
            sub = _ok(d, "session/tree", {"session": s, "rootId": n["id"], "maxDepth": max_depth})
            assert [r["id"] for r in sub["roots"]] == [n["id"]]
            todo.extend(reversed(sub["roots"][0]["children"]))
        else:
            todo.extend(reversed(n["children"]))
    assert calls > 0
    return out


def test_a_deep_session_tree_decodes_with_the_standard_json_module(tmp_path: Path) -> None:
    path, entries = _session(tmp_path, 3000)
    d = _start(tmp_path)
    try:
        s = _ok(d, "session/open", {"path": str(path)})["session"]
        tree = _ok(d, "session/tree", {"session": s})  # decoded by json.loads in RawLsp
        assert max(_depth(r) for r in tree["roots"]) == 200
        flat = _ok(d, "session/tree", {"session": s, "flat": True})
        assert flat["roots"] == [] and flat["leafId"] == tree["leafId"] == entries[-1]["id"]
        nodes = flat["nodes"]
        # every entry once, parents before children
        assert sorted(n["id"] for n in nodes) == sorted(e["id"] for e in entries)
        seen: set[str] = set()
        for n in nodes:
            assert n["parentId"] is None or n["parentId"] in seen
            seen.add(n["id"])
        want = {e["id"]: e["parentId"] for e in entries}
        assert all(want[n["id"]] == n["parentId"] for n in nodes)
        # the nested form, its truncated subtrees followed, is the flat form's pre-order
        small = _ok(d, "session/tree", {"session": s, "maxDepth": 50})
        assert max(_depth(r) for r in small["roots"]) == 50
        assert _edges_nested(d, s, small["roots"], 50) == [(n["id"], n["parentId"]) for n in nodes]
        # one subtree, flat
        mid = entries[1500]["id"]
        sub = _ok(d, "session/tree", {"session": s, "flat": True, "rootId": mid})
        assert sub["nodes"][0]["id"] == mid and len(sub["nodes"]) < len(nodes)
        bad = d.request("session/tree", {"session": s, "maxDepth": 0})
        assert bad["error"]["code"] == -32602 and bad["error"]["data"]["field"] == "maxDepth"
        unknown = d.request("session/tree", {"session": s, "rootId": "no-such-id"})
        assert unknown["error"]["code"] == -32002
    finally:
        d.close()


def test_session_context_answers_a_page_or_a_size_bounded_answer(tmp_path: Path) -> None:
    path, _ = _session(tmp_path, 400)
    d = _start(tmp_path)
    try:
        s = _ok(d, "session/open", {"path": str(path)})["session"]
        full = _ok(d, "session/context", {"session": s})
        msgs = full["messages"]
        n = len(msgs)
        assert n > 100 and full["totalMessages"] == n and full["offset"] == 0 and not full["truncated"]
        last = _ok(d, "session/context", {"session": s, "offset": -50})
        assert last["messages"] == msgs[-50:] and last["offset"] == n - 50 and not last["truncated"]
        page = _ok(d, "session/context", {"session": s, "offset": 10, "limit": 5, "llm": True})
        assert page["messages"] == msgs[10:15] and page["truncated"] and page["totalMessages"] == n
        assert len(page["llmMessages"]) == 5
        small = _ok(d, "session/context", {"session": s, "maxBytes": 2000})
        sent = small["messages"]
        assert 1 <= len(sent) < n and small["truncated"] and sent == msgs[: len(sent)]
        assert sum(len(json.dumps(m, separators=(",", ":"))) + 1 for m in sent) <= 2000
        one = _ok(d, "session/context", {"session": s, "offset": -1, "maxBytes": 1})
        assert one["messages"] == msgs[-1:]  # at least one message
        assert _ok(d, "session/context", {"session": s, "offset": n + 5})["messages"] == []
        for bad in ({"limit": -1}, {"maxBytes": -3}):
            err = d.request("session/context", {"session": s, **bad})["error"]
            assert err["code"] == -32602 and err["data"]["field"] == next(iter(bad))
    finally:
        d.close()
