"""Bulk materialization (`get_tree`, `get_branch`, `session/tree`) equals the per-entry path.

The bulk paths read the session file sequentially and bypass the entry cache; every result
must be the one the per-entry reads (`get_entry`, `entry_summary`) give, on random trees
with loops, orphans, duplicate ids and tool calls, on the demo session and on a generated
corpus.
"""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from sessiontree.core.ids import FixedClock, IdSource
from sessiontree.core.index import gc_paused
from sessiontree.core.paths import PathEnv
from sessiontree.core.session import SessionManager, SessionTreeNode
from sessiontree.core.store import FileSessionStorage
from sessiontree.core.store.blobs import BlobStore
from sessiontree.core.view import entry_summaries_bulk, entry_summary
from sessiontree.lsp import mapping
from sessiontree.lsp.features.tree import tree_json
from sessiontree_protocol.converters import unstructure

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "server" / "sessiontree" / "data" / "demo-session.jsonl"
GEN = ROOT / "benchmarks" / "gen_corpus.py"
HEADER = {"type": "session", "version": 3, "id": "sess", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/w"}


def kw(tmp_path: Path) -> dict[str, Any]:
    clock = FixedClock(step_ms=1000)
    return {
        "clock": clock,
        "ids": IdSource(seed=3, clock=clock),
        "blobs": BlobStore(str(tmp_path / "blobs")),
        "cache_dir": str(tmp_path / "cache"),
        "storage": FileSessionStorage(),
        "penv": PathEnv(env={}, home=str(tmp_path / "home"), tmp="/nonexistent-tmp"),
        "agent_dir": str(tmp_path / "agent"),
    }


def random_entries(rng: random.Random, n: int) -> list[dict[str, Any]]:
    """Entries with duplicate ids, orphans, self-parents, loops, labels and tool calls."""
    pool = [f"{i:08x}" for i in range(int(n * 0.9))]  # fewer ids than entries: duplicates
    used: list[str] = []
    call_ids = [f"call_{i}" for i in range(n // 6)]  # some shared by several messages
    out: list[dict[str, Any]] = []
    for _ in range(n):
        eid = rng.choice(pool)
        r = rng.random()
        if not used or r < 0.04:
            parent: Any = None
        elif r < 0.08:
            parent = "missing-" + str(rng.randrange(5))  # orphan
        elif r < 0.10:
            parent = eid  # self-parent
        elif r < 0.14:
            parent = rng.choice(pool)  # maybe later: a loop or a late parent
        else:
            parent = used[-1] if rng.random() < 0.7 else rng.choice(used)
        ts_r = rng.random()
        ts: Any = (
            "not a date"
            if ts_r < 0.03
            else f"2025-01-01T00:{rng.randrange(60):02d}:{rng.randrange(60):02d}.000Z"
        )
        base = {"id": eid, "parentId": parent, "timestamp": ts}
        kind = rng.randrange(9)
        if kind == 0:
            e = {"type": "message", "message": {"role": "user", "content": f"question {rng.random()}"}}
        elif kind in (1, 2):
            blocks: list[dict[str, Any]] = []
            if rng.random() < 0.6:
                blocks.append({"type": "text", "text": rng.choice(["", "  ", "answer", "two\nlines"])})
            for _ in range(rng.randrange(3)):
                blocks.append(
                    {
                        "type": "toolCall",
                        "id": rng.choice(call_ids),
                        "name": rng.choice(["read", "bash", "edit", "other"]),
                        "arguments": {"path": f"/home/u/f{rng.randrange(9)}", "command": "ls -la"},
                    }
                )
            msg: dict[str, Any] = {"role": "assistant", "content": blocks, "stopReason": "stop"}
            if rng.random() < 0.05:
                msg["providerPayload"] = {"type": "openaiResponsesX", "x": 1}
            e = {"type": "message", "message": msg}
        elif kind in (3, 4):
            e = {
                "type": "message",
                "message": {
                    "role": "toolResult",
                    "toolCallId": rng.choice([*call_ids, "nowhere", None]),
                    "toolName": rng.choice(["read", "", None]),
                    "content": [{"type": "text", "text": "out"}],
                },
            }
        elif kind == 5:
            e = {"type": "label", "targetId": rng.choice(pool), "label": rng.choice(["L1", "L2", None, ""])}
        elif kind == 6:
            e = {"type": "custom_message", "customType": "note", "content": "hello", "display": True}
        elif kind == 7:
            e = {
                "type": "compaction",
                "summary": "s",
                "firstKeptEntryId": rng.choice(pool),
                "tokensBefore": 12345,
            }
        else:
            e = {"type": "model_change", "provider": "p", "model": "m", "data": "blob:sha256:" + "ab" * 32}
        out.append({**e, **base})
        used.append(eid)
    return out


def open_file(tmp_path: Path, rows: list[dict[str, Any]], name: str = "s.jsonl") -> SessionManager:
    path = tmp_path / name
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in [HEADER, *rows]))
    mgr = SessionManager.open(str(path), **kw(tmp_path))
    assert mgr.load_report.fast_path  # file-backed entries: the bulk reads are exercised
    return mgr


def reference_tree(mgr: SessionManager) -> list[SessionTreeNode]:
    """The per-entry `get_tree` (one `get_entry` per node, children from `index.children`)."""
    idx = mgr.index

    def node(eid: str) -> SessionTreeNode:
        return SessionTreeNode(idx.get(eid) or {}, [], idx.labels.get(eid))

    roots = [node(r) for r in idx.roots()]
    stack = list(roots)
    while stack:
        n = stack.pop()
        n.children = [node(c) for c in idx.children(n.entry.get("id"))]
        stack.extend(n.children)
    return roots


def flat(nodes: list[SessionTreeNode]) -> list[Any]:
    out: list[Any] = []
    stack = [(n, 0) for n in reversed(nodes)]
    while stack:
        n, depth = stack.pop()
        out.append((depth, n.entry, n.label, len(n.children)))
        stack.extend((c, depth + 1) for c in reversed(n.children))
    return out


def reference_tree_json(mgr: SessionManager) -> bytes:
    """`session/tree` from one `entry_summary` per node, nested with an explicit stack."""
    idx = mgr.index
    parts = [b'{"roots":[']
    stack: list[Any] = []

    def push(ids: list[str]) -> None:
        for i, cid in enumerate(reversed(ids)):
            stack.append(("node", cid))
            if i < len(ids) - 1:
                stack.append(("sep", None))

    push(idx.children(None))
    while stack:
        kind, val = stack.pop()
        if kind == "sep":
            parts.append(b",")
        elif kind == "close":
            parts.append(b"]}")
        else:
            head = orjson.dumps(unstructure(mapping.summary(mgr, val)))
            parts.append(head[:-1] + b',"children":[')
            stack.append(("close", None))
            push(idx.children(val))
    parts.append(b'],"leafId":' + orjson.dumps(mgr.get_leaf_id()) + b"}")
    return b"".join(parts)


def check_all(mgr: SessionManager) -> None:
    idx = mgr.index
    lru_before = len(idx._lru)
    assert flat(mgr.get_tree()) == flat(reference_tree(mgr))
    ids = list(idx.ids())
    for target in [None, *random.Random(5).sample(ids, min(20, len(ids)))]:
        start = target if target is not None else mgr.get_leaf_id()
        expected = [idx.get(i) for i in idx.path_to_root(start)]
        assert mgr.get_branch(target) == expected
    bulk = entry_summaries_bulk(mgr)
    assert bulk == {i: entry_summary(mgr, i) for i in ids}
    for s in bulk.values():
        assert mapping.summary_wire(s) == unstructure(mapping.summary(mgr, s.id))
    assert orjson.dumps(tree_json(mgr, max_depth=1 << 30)) == reference_tree_json(mgr)
    assert len(idx._lru) <= max(lru_before, idx._cache_size)


@pytest.mark.parametrize("seed", range(6))
def test_random_trees(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    mgr = open_file(tmp_path, random_entries(rng, rng.randrange(300, 900)))
    mgr.index._cache_size = 50  # the per-entry reference reads churn a small cache
    check_all(mgr)


@pytest.mark.parametrize("seed", range(4))
def test_branches_before_the_tree_is_built(tmp_path: Path, seed: int) -> None:
    """`get_branch` walks the stored parents until a loop makes the tree decide: on a session
    that never built its tree, every branch (loops, orphans, duplicate ids, non-string
    parents) is the one of `path_to_root` on a session that did."""
    rng = random.Random(100 + seed)
    rows = random_entries(rng, rng.randrange(300, 900))
    rows[len(rows) // 2]["parentId"] = 7  # a parent id that is not a string
    built = open_file(tmp_path, rows, "built.jsonl")
    built.index.child_map()
    ids = list(built.index.ids())
    for target in rng.sample(ids, min(40, len(ids))):
        fresh = open_file(tmp_path, rows, "fresh.jsonl")
        assert not fresh.index._tree_ready
        want = built.index.path_to_root(target)
        assert [sk.id for sk in fresh.index.path_skeletons(target)] == want
        assert [e["id"] for e in fresh.get_branch(target)] == want
    assert built.index.path_skeletons("not-an-id") == []
    assert built.index.path_skeletons(None) == []


def test_cached_and_held_entries_mix_with_streamed_ones(tmp_path: Path) -> None:
    rng = random.Random(11)
    mgr = open_file(tmp_path, random_entries(rng, 700))
    for i in list(mgr.index.ids())[::7]:
        mgr.get_entry(i)  # some entries already in the cache
    leaf = mgr.get_leaf_id()
    assert leaf is not None
    mgr.branch(leaf)
    for k in range(300):  # entries held in memory after the file-backed ones
        mgr.append_message({"role": "user", "content": f"m{k}", "timestamp": k})
    check_all(mgr)


def _chain(n: int) -> list[dict[str, Any]]:
    """`n` user messages, each the child of the one before."""
    rows: list[dict[str, Any]] = []
    parent = None
    for i in range(n):
        eid = f"{i:08x}"
        rows.append(
            {
                "type": "message",
                "id": eid,
                "parentId": parent,
                "timestamp": "2025-01-01T00:00:00.000Z",
                "message": {"role": "user", "content": f"m{i}"},
            }
        )
        parent = eid
    return rows


def test_bulk_read_leaves_the_entry_cache_alone(tmp_path: Path) -> None:
    mgr = open_file(tmp_path, _chain(3000))
    mgr.get_entry("00000005")
    assert list(mgr.index._lru) == [5]
    assert len(mgr.get_tree()) == 1
    assert len(mgr.get_branch()) == 3000
    assert len(entry_summaries_bulk(mgr)) == 3000
    assert list(mgr.index._lru) == [5]


def test_a_changed_file_is_reported_not_misread(tmp_path: Path) -> None:
    from sessiontree.core.errors import ConflictError

    rng = random.Random(2)
    rows = random_entries(rng, 600)
    mgr = open_file(tmp_path, rows)
    path = tmp_path / "s.jsonl"
    data = path.read_bytes()
    path.write_bytes(data.replace(b'"id":"', b'"id":"z', 1))  # same length would be needed; any shift
    with pytest.raises(ConflictError):
        # the entries are read when first asked for (lazy bodies), the timestamps of siblings
        # when the tree orders them: either read meets the change
        stack = list(mgr.get_tree())
        while stack:
            node = stack.pop()
            assert node.entry is not None
            stack.extend(node.children)


def test_gc_paused_nests_and_restores() -> None:
    import gc

    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()  # it was off before: it stays off
    finally:
        gc.enable()


def test_demo_session(tmp_path: Path) -> None:
    mgr = SessionManager.open(str(DEMO), **kw(tmp_path))
    check_all(mgr)
    assert entry_summaries_bulk(mgr)  # non-empty


def test_generated_corpus(tmp_path: Path) -> None:
    out = tmp_path / "corpus.jsonl"
    subprocess.run([sys.executable, str(GEN), str(out), "3000", "--branch-every", "300"], check=True)
    mgr = SessionManager.open(str(out), **kw(tmp_path))
    assert mgr.load_report.fast_path
    check_all(mgr)


def test_get_tree_reads_the_entries_only_when_asked(tmp_path: Path) -> None:
    """`get_tree()` builds nodes from skeletons; an entry is read on first access, with the
    nodes after it in file order, and what is read equals what an eager read gives."""
    rng = random.Random(4)
    mgr = open_file(tmp_path, random_entries(rng, 900))
    roots = mgr.get_tree()
    nodes: list[Any] = []
    stack = list(roots)
    while stack:
        node = stack.pop()
        nodes.append(node)
        stack.extend(node.children)
    assert len(nodes) == len(mgr.index.ids())
    assert all(n._entry is None for n in nodes)  # nothing read yet
    first = roots[0].entry
    read = sum(n._entry is not None for n in nodes)
    assert first["id"] == roots[0].entry["id"] and 1 <= read <= 4096
    eager = {e["id"]: e for e in mgr.get_entries()}
    assert all(n.entry == eager[n.entry["id"]] for n in nodes)


def test_a_held_branch_shares_its_entries(tmp_path: Path) -> None:
    """While the caller holds a branch, the next `get_branch` takes its entries (the same
    dicts, not parsed again); whatever the caller did to its list, the answer is the file's."""
    rows = _chain(3000)
    mgr = open_file(tmp_path, rows)
    first = mgr.get_branch()
    again = mgr.get_branch()
    assert again == rows
    assert all(a is b for a, b in zip(first, again, strict=True))
    # the caller's list is its own: reordered, cut, an item replaced
    again.reverse()
    again.pop()
    again[0] = {"id": "00000000", "bogus": True}
    first.clear()
    third = mgr.get_branch()
    assert third == rows
    # another leaf: the part of the path it shares comes from the held branch
    mgr.branch(rows[400]["id"])
    moved = mgr.get_branch()
    assert moved == rows[:401]
    assert all(a is b for a, b in zip(moved, third, strict=False))
    # an append under it: the old path's entries, then the new one
    new_id = mgr.append_message({"role": "user", "content": "after", "timestamp": 9})
    grown = mgr.get_branch()
    assert grown[:-1] == rows[:401] and grown[-1]["id"] == new_id
    assert all(a is b for a, b in zip(grown[:-1], moved, strict=True))
    # nothing is kept once the caller lets go of what it was given
    del first, again, third, moved, grown
    assert mgr.index._last_bulk is None or mgr.index._last_bulk() is None
    assert mgr.get_branch()[:-1] == rows[:401]


@pytest.mark.parametrize("seed", range(3))
def test_held_branches_of_random_trees(tmp_path: Path, seed: int) -> None:
    """Branches to many targets, each asked while the others are held, are the per-entry ones
    (loops, orphans, duplicate ids, held entries after the file-backed ones)."""
    rng = random.Random(300 + seed)
    mgr = open_file(tmp_path, random_entries(rng, rng.randrange(600, 900)))
    leaf = mgr.get_leaf_id()
    assert leaf is not None
    mgr.branch(leaf)
    for k in range(200):
        mgr.append_message({"role": "user", "content": f"m{k}", "timestamp": k})
    idx = mgr.index
    held = []
    for target in [None, *rng.sample(list(idx.ids()), 30), None]:
        start = target if target is not None else mgr.get_leaf_id()
        branch = mgr.get_branch(target)
        assert branch == [idx.get(i) for i in idx.path_to_root(start)]
        held.append(branch)
