"""The view's tool-call map is built once and extended on appends, yet always equals the
selector's map rebuilt from scratch: the calls of every assistant message in flattened
order, a later duplicate call id overwriting an earlier one (tree-view-rules.md).

Random trees with duplicate call ids across branches, duplicate entry ids, toolResults
with and without their call; random appends and leaf moves, on an in-memory source and on
a real session file followed by external appends.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sessiontree.core.ids import FixedClock, IdSource
from sessiontree.core.paths import PathEnv
from sessiontree.core.session import SessionManager
from sessiontree.core.store import FileSessionStorage
from sessiontree.core.store.blobs import BlobStore
from sessiontree.core.view import EntriesTreeSource, as_tree_source, build_view, display_text
from sessiontree.core.view.flatten import flatten

ENTRY_IDS = [f"e{i}" for i in range(14)]
CALL_IDS = ["c0", "c1", "c2", "c3"]
NAMES = ["read", "bash", "grep", "mytool"]
HEADER = {"type": "session", "version": 3, "id": "sess", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/w"}


@st.composite
def an_entry(draw: Any, k: int) -> dict[str, Any]:
    eid = draw(st.sampled_from(ENTRY_IDS))
    parent = draw(st.one_of(st.none(), st.sampled_from(ENTRY_IDS)))
    ts = f"2025-01-01T00:{k // 60:02d}:{k % 60:02d}.000Z"
    kind = draw(st.sampled_from(["assistant", "assistant", "toolResult", "toolResult", "user"]))
    if kind == "assistant":
        calls = draw(st.lists(st.tuples(st.sampled_from(CALL_IDS), st.sampled_from(NAMES)), max_size=3))
        content: list[dict[str, Any]] = [
            {
                "type": "toolCall",
                "id": cid,
                "name": name,
                "arguments": {"path": f"/{eid}/{k}", "command": f"x{k}"},
            }
            for cid, name in calls
        ]
        msg: dict[str, Any] = {"role": "assistant", "content": content, "stopReason": "toolUse"}
    elif kind == "toolResult":
        cid = draw(st.sampled_from([*CALL_IDS, "none"]))
        msg = {"role": "toolResult", "toolCallId": cid, "toolName": "t", "content": []}
    else:
        msg = {"role": "user", "content": f"u{k}"}
    return {"type": "message", "id": eid, "parentId": parent, "timestamp": ts, "message": msg}


@st.composite
def scenario(draw: Any) -> tuple[list[dict[str, Any]], list[tuple[str, Any]]]:
    n = draw(st.integers(min_value=1, max_value=10))
    initial = [draw(an_entry(k)) for k in range(n)]
    steps: list[tuple[str, Any]] = []
    for j in range(draw(st.integers(min_value=1, max_value=8))):
        if draw(st.booleans()):
            steps.append(
                ("append", [draw(an_entry(100 + 10 * j + i)) for i in range(draw(st.integers(1, 3)))])
            )
        else:
            steps.append(("leaf", draw(st.sampled_from(ENTRY_IDS))))
    return initial, steps


def scratch_texts(src: Any, leaf: str | None) -> dict[str, str]:
    """The text of every tree entry with the map built from scratch, the selector's way."""
    ids = flatten(src, leaf).ids
    m: dict[Any, dict[str, Any]] = {}
    for eid in ids:
        entry = src.get_entry(eid)
        msg = entry.get("message") or {}
        if entry.get("type") == "message" and msg.get("role") == "assistant":
            for b in msg.get("content") or []:
                if isinstance(b, dict) and b.get("type") == "toolCall":
                    m[b.get("id")] = {"name": b.get("name"), "arguments": b.get("arguments")}
    return {eid: display_text(src.get_entry(eid), m, "/h") for eid in ids}


def view_texts(src: Any, leaf: str | None) -> dict[str, str]:
    page = build_view(src, filter="all", leaf_id=leaf, home="/h")
    return {r.id: r.text for r in page.rows}


def check(src: Any, leaf: str | None, written: list[dict[str, Any]] | None = None) -> None:
    got = view_texts(src, leaf)
    want = scratch_texts(src, leaf)
    # (assistants without text are hidden even with the "all" filter)
    assert got == {eid: want[eid] for eid in got}
    # A fresh source over the same entries (no incremental history) agrees too.
    if written is not None:
        assert view_texts(EntriesTreeSource(written, leaf_id=leaf), leaf) == got


@settings(max_examples=300, deadline=None)
@given(scenario())
def test_incremental_map_equals_scratch_in_memory(
    sc: tuple[list[dict[str, Any]], list[tuple[str, Any]]],
) -> None:
    initial, steps = sc
    src = EntriesTreeSource(initial)
    written = list(initial)
    check(src, src.get_leaf_id(), written)
    for kind, arg in steps:
        if kind == "append":
            for e in arg:
                src.append(e)
            written += arg
        elif arg in src.index:
            src.leaf_id = arg
        check(src, src.get_leaf_id(), written)


def _kw(d: Path) -> dict[str, Any]:
    clock = FixedClock(step_ms=1000)
    return {
        "clock": clock,
        "ids": IdSource(seed=3, clock=clock),
        "blobs": BlobStore(str(d / "blobs")),
        "cache_dir": str(d / "cache"),
        "storage": FileSessionStorage(),
        "penv": PathEnv(env={}, home=str(d / "home"), tmp="/nonexistent-tmp"),
        "agent_dir": str(d / "agent"),
    }


def _write(path: Path, entries: list[dict[str, Any]], mode: str = "ab") -> None:
    with open(path, mode) as f:
        for e in entries:
            f.write(orjson.dumps(e) + b"\n")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenario())
def test_incremental_map_equals_scratch_on_file(
    sc: tuple[list[dict[str, Any]], list[tuple[str, Any]]],
) -> None:
    initial, steps = sc
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        path = d / "s.jsonl"
        _write(path, [HEADER, *initial], "wb")
        mgr = SessionManager.open(str(path), **_kw(d))
        src = as_tree_source(mgr)
        check(src, mgr.get_leaf_id())
        for kind, arg in steps:
            if kind == "append":
                # another process appends (new ids: live sync skips lines reusing an id)
                fresh: dict[str, dict[str, Any]] = {}
                for e in arg:
                    if e["id"] not in mgr.index:
                        fresh.setdefault(e["id"], e)
                _write(path, list(fresh.values()))
                mgr.sync_with_file()
            elif arg in mgr.index:
                mgr.branch(arg)
            check(src, mgr.get_leaf_id())
            # the manager reopened from the file agrees
            other = SessionManager.open(str(path), **_kw(d))
            if mgr.get_leaf_id() in other.index:
                other.branch(mgr.get_leaf_id())  # type: ignore[arg-type]
                assert view_texts(other, other.get_leaf_id()) == view_texts(src, mgr.get_leaf_id())


def test_duplicate_call_winner_follows_leaf_moves() -> None:
    """The same call id in two branches: the winner is the one later in the current order."""

    def asst(eid: str, parent: str, path: str, ts: str) -> dict[str, Any]:
        call = {"type": "toolCall", "id": "t1", "name": "read", "arguments": {"path": path}}
        return {
            "type": "message",
            "id": eid,
            "parentId": parent,
            "timestamp": ts,
            "message": {"role": "assistant", "content": [call], "stopReason": "toolUse"},
        }

    root = {
        "type": "message",
        "id": "u",
        "parentId": None,
        "timestamp": "2025-01-01T00:00:00.000Z",
        "message": {"role": "user", "content": "hi"},
    }
    res = {
        "type": "message",
        "id": "r",
        "parentId": "a1",
        "timestamp": "2025-01-01T00:00:03.000Z",
        "message": {"role": "toolResult", "toolCallId": "t1", "toolName": "read", "content": []},
    }
    src = EntriesTreeSource(
        [
            root,
            asst("a1", "u", "/one", "2025-01-01T00:00:01.000Z"),
            asst("a2", "u", "/two", "2025-01-01T00:00:02.000Z"),
            res,
        ]
    )
    # leaf r: order u, a1, r, a2 -> a2 wins
    assert view_texts(src, "r")["r"] == "[read: /two]"
    src.leaf_id = "a2"  # order u, a2, a1, r -> a1 wins
    assert view_texts(src, "a2")["r"] == "[read: /one]"
    src.append(asst("a3", "r", "/three", "2025-01-01T00:00:04.000Z"))  # leaf a3: u, a1, r, a3, a2
    assert view_texts(src, "a3")["r"] == "[read: /two]"
    src.leaf_id = "a2"  # u, a2, a1, r, a3 -> a3 wins
    assert view_texts(src, "a2")["r"] == "[read: /three]"
