"""EntryIndex: the fast skeleton path equals the lenient path; the sidecar index cache."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import msgspec
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sessiontree.core.discovery import display_name_of_manager
from sessiontree.core.ids import FixedClock, IdSource
from sessiontree.core.index import IndexCache, compute_has_text, scan_clean
from sessiontree.core.paths import PathEnv
from sessiontree.core.session import SessionManager
from sessiontree.core.store import FileSessionStorage
from sessiontree.core.store.blobs import BlobStore

HEADER = {"type": "session", "version": 3, "id": "sess", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/w"}


def kw(tmp_path: Path, seed: int = 1, **extra: Any) -> dict[str, Any]:
    clock = FixedClock(step_ms=1000)
    base = {
        "clock": clock,
        "ids": IdSource(seed=seed, clock=clock),
        "blobs": BlobStore(str(tmp_path / "blobs")),
        "cache_dir": str(tmp_path / "cache"),
        "storage": FileSessionStorage(),
        "penv": PathEnv(env={}, home=str(tmp_path / "home"), tmp="/nonexistent-tmp"),
        "agent_dir": str(tmp_path / "agent"),
    }
    base.update(extra)
    return base


def write(path: Path, rows: list[dict[str, Any]], sep: bytes = b"\n") -> None:
    path.write_bytes(b"".join(orjson.dumps(r) + sep for r in rows))


def snapshot(m: SessionManager) -> dict[str, Any]:
    idx = m.index
    ids = idx.order()
    return {
        "order": ids,
        "entries": m.get_entries(),
        "roots": idx.roots(),
        "children": {i: idx.children(i) for i in ids},
        "paths": {i: idx.path_to_root(i) for i in ids},
        "labels": list(idx.labels.items()),
        "skeletons": [
            (
                s.id,
                s.parent_id,
                s.type,
                s.order,
                s.role,
                s.stop_reason,
                s.has_text,
                s.tool_call_id,
                s.target_id,
                s.label,
                s.custom_type,
            )
            for s in idx.skeletons()
        ],
        "leaf": m.get_leaf_id(),
        "usage": m.get_usage_statistics(),
        "context": m.build_session_context().to_dict(),
        "tree": [(n.entry["id"], n.label, len(n.children)) for n in m.get_tree()],
    }


TEXTS = st.sampled_from(["", "  ", "\n\t", "hi", " x ", "\u00a0", "é\\n", "tail "])


@st.composite
def sessions(draw: Any) -> list[dict[str, Any]]:
    n = draw(st.integers(1, 25))
    ids = [f"e{i}" for i in range(n)]
    rows: list[dict[str, Any]] = [dict(HEADER)]
    for i, eid in enumerate(ids):
        kind = draw(
            st.sampled_from(
                [
                    "user",
                    "assistant",
                    "assistant",
                    "tool",
                    "label",
                    "model",
                    "thinking",
                    "compaction",
                    "custom",
                ]
            )
        )
        parent = draw(
            st.one_of(
                st.none(),
                st.sampled_from(ids),  # any id: forward references, self parents and loops happen
                st.just("missing"),
                st.sampled_from(ids[:i] or [None]),
            )
        )
        ts = draw(
            st.sampled_from(
                ["2025-01-01T00:00:01.000Z", "2025-01-01T00:00:02.000Z", "2024-12-31T23:59:59.000Z", "bad"]
            )
        )
        base: dict[str, Any] = {"type": "message", "id": eid, "parentId": parent, "timestamp": ts}
        if kind == "user":
            base["message"] = {"role": "user", "content": draw(TEXTS), "timestamp": 1}
        elif kind == "assistant":
            blocks = draw(
                st.lists(
                    st.one_of(
                        st.builds(lambda t: {"type": "text", "text": t}, TEXTS),
                        st.builds(lambda t: {"type": "thinking", "thinking": t}, TEXTS),
                        st.just({"type": "toolCall", "id": "c1", "name": "read", "arguments": {"text": "x"}}),
                    ),
                    max_size=3,
                )
            )
            content: Any = blocks if draw(st.booleans()) else draw(TEXTS)
            base["message"] = {
                "role": "assistant",
                "content": content,
                "provider": "p",
                "model": "m",
                "stopReason": draw(st.sampled_from(["stop", "toolUse", "error"])),
                "usage": {
                    "input": draw(st.integers(0, 9)),
                    "output": 1,
                    "cacheRead": 0,
                    "cacheWrite": 0,
                    "cost": {"total": 0.5},
                },
                "timestamp": 2,
            }
        elif kind == "tool":
            base["message"] = {
                "role": "toolResult",
                "toolCallId": "c1",
                "toolName": draw(st.sampled_from(["read", "task"])),
                "content": [],
                "details": {"usage": {"input": 3}},
                "timestamp": 3,
            }
        elif kind == "label":
            base = {
                "type": "label",
                "id": eid,
                "parentId": parent,
                "timestamp": ts,
                "targetId": draw(st.sampled_from([*ids, "nowhere"])),
                "label": draw(st.sampled_from(["a", "b", "", None])),
            }
        elif kind == "model":
            base = {"type": "model_change", "id": eid, "parentId": parent, "timestamp": ts, "model": "x/y"}
        elif kind == "thinking":
            base = {
                "type": "thinking_level_change",
                "id": eid,
                "parentId": parent,
                "timestamp": ts,
                "thinkingLevel": "high",
            }
        elif kind == "compaction":
            base = {
                "type": "compaction",
                "id": eid,
                "parentId": parent,
                "timestamp": ts,
                "summary": "s",
                "firstKeptEntryId": draw(st.sampled_from(ids)),
                "tokensBefore": 5,
            }
        else:
            base = {
                "type": "custom",
                "customType": "k",
                "data": {"a": 1},
                "id": eid,
                "parentId": parent,
                "timestamp": ts,
            }
        rows.append(base)
    return rows


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=sessions())
def test_fast_and_lenient_paths_agree(tmp_path: Path, rows: list[dict[str, Any]]) -> None:
    fast = tmp_path / "fast.jsonl"
    slow = tmp_path / "slow.jsonl"
    write(fast, rows)
    write(slow, rows, sep=b"\r\n")  # CRLF is read the same but forces the lenient loader
    a = SessionManager.open(str(fast), read_only=True, **kw(tmp_path))
    b = SessionManager.open(str(slow), read_only=True, **kw(tmp_path))
    assert a.load_report.fast_path and not b.load_report.fast_path
    assert snapshot(a) == snapshot(b)


def test_has_text_matches_the_dict_rule() -> None:
    cases: list[Any] = [
        [{"type": "text", "text": " "}],
        [{"type": "text", "text": "\u00a0"}],
        [{"type": "text", "text": "\\n"}],
        [{"type": "thinking", "thinking": "x"}, {"type": "text", "text": "\nx"}],
        [{"type": "toolCall", "arguments": {"type": "text", "text": "x"}}],
        "  ",
        "x",
        [],
        None,
        [{"type": "text", "text": 5}],
    ]
    for content in cases:
        line = (
            orjson.dumps(
                {
                    "type": "message",
                    "id": "a",
                    "parentId": None,
                    "timestamp": "t",
                    "message": {"role": "assistant", "content": content},
                }
            )
            + b"\n"
        )
        scan = scan_clean(line, 0, 0)
        assert scan is not None
        assert scan.skeletons[0].has_text == compute_has_text(content), content


def test_scan_rejects_unclean_bytes() -> None:
    good = b'{"type":"message","id":"a","parentId":null}\n'
    assert scan_clean(good, 0, 0) is not None
    for bad in (
        good + b"\n" + good,
        good + b"  \n" + good,
        b'{"a":\n1}\n',
        good.replace(b"\n", b"\r\n"),
        b"42\n",
        b'{"a":1}{"b":2}\n',
    ):
        assert scan_clean(bad, 0, 0) is None, bad
    torn = scan_clean(good + b'{"type":"mess', 0, 0)
    assert torn is not None and torn.torn_tail and len(torn.skeletons) == 1 and torn.end == len(good)
    no_newline = scan_clean(good.rstrip(b"\n"), 0, 0)
    assert (
        no_newline is not None
        and not no_newline.torn_tail
        and no_newline.skeletons[0].length == len(good) - 1
    )


def big_session(path: Path, n: int = 300) -> None:
    rows: list[dict[str, Any]] = [dict(HEADER)]
    parent = None
    for i in range(n):
        role = "user" if i % 2 == 0 else "assistant"
        msg: dict[str, Any] = {
            "role": role,
            "content": [{"type": "text", "text": f"message {i} " + "x" * 200}],
            "timestamp": i,
        }
        if role == "assistant":
            msg.update(
                provider="p",
                model="m",
                stopReason="stop",
                usage={"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0, "cost": {"total": 0.1}},
            )
        rows.append(
            {
                "type": "message",
                "id": f"id{i:05d}",
                "parentId": parent,
                "timestamp": "2025-01-01T00:00:01.000Z",
                "message": msg,
            }
        )
        parent = f"id{i:05d}"
        if i == 100:
            rows.append(
                {
                    "type": "label",
                    "id": "lbl",
                    "parentId": parent,
                    "timestamp": "2025-01-01T00:00:02.000Z",
                    "targetId": "id00050",
                    "label": "half",
                }
            )
            parent = "lbl"
    write(path, rows)


def test_warm_reopen_uses_the_cache(tmp_path: Path) -> None:
    p = tmp_path / "big.jsonl"
    big_session(p)
    cold = SessionManager.open(str(p), read_only=True, **kw(tmp_path, cache_min_bytes=1))
    assert not cold.load_report.from_cache
    cache = IndexCache(str(tmp_path / "cache"))
    cache_file = Path(cache.file_for(str(p)))
    assert cache_file.exists() and not cache_file.name.endswith(".jsonl")
    assert not str(cache_file).startswith(str(p.parent) + os.sep + "big")
    warm = SessionManager.open(str(p), read_only=True, **kw(tmp_path, cache_min_bytes=1))
    assert warm.load_report.from_cache
    assert snapshot(warm) == snapshot(cold)


def test_cache_after_append_indexes_only_new_bytes(tmp_path: Path) -> None:
    p = tmp_path / "big.jsonl"
    big_session(p)
    SessionManager.open(str(p), read_only=True, **kw(tmp_path, cache_min_bytes=1))
    extra = {
        "type": "message",
        "id": "late",
        "parentId": "id00299",
        "timestamp": "2025-01-01T00:00:09.000Z",
        "message": {"role": "user", "content": "late", "timestamp": 9},
    }
    with open(p, "ab") as f:
        f.write(orjson.dumps(extra) + b"\n")
    warm = SessionManager.open(str(p), read_only=True, **kw(tmp_path, cache_min_bytes=1))
    assert warm.load_report.from_cache
    assert warm.get_leaf_id() == "late"
    assert warm.get_leaf_entry()["message"]["content"] == "late"  # type: ignore[index]
    fresh = SessionManager.open(
        str(p), read_only=True, **kw(tmp_path, cache_dir=str(tmp_path / "other-cache"))
    )
    assert snapshot(warm) == snapshot(fresh)


def test_cache_is_saved_again_once_the_appended_part_is_big(tmp_path: Path) -> None:
    # architecture.md: a hit on a grown file is written again once the appended part is
    # 1 MB (or 1/16 of the file), so the next open does not index the same tail again.
    p = tmp_path / "big.jsonl"
    big_session(p)
    SessionManager.open(str(p), read_only=True, **kw(tmp_path, cache_min_bytes=1))
    parent = "id00299"
    with open(p, "ab") as f:
        for i in range(300):
            eid = f"late{i:04d}"
            entry = {
                "type": "message",
                "id": eid,
                "parentId": parent,
                "timestamp": "2025-01-01T00:00:09.000Z",
                "message": {"role": "user", "content": "x" * 4000, "timestamp": 9},
            }
            f.write(orjson.dumps(entry) + b"\n")
            parent = eid
    size = p.stat().st_size
    warm = SessionManager.open(str(p), read_only=True, **kw(tmp_path, cache_min_bytes=1))
    assert warm.load_report.from_cache and warm.get_leaf_id() == "late0299"
    hit = IndexCache(str(tmp_path / "cache")).load(str(p), os.stat(p))
    assert hit is not None and hit[3] == size


def test_cache_mismatch_or_corruption_means_full_index(tmp_path: Path) -> None:
    p = tmp_path / "big.jsonl"
    big_session(p)
    SessionManager.open(str(p), read_only=True, **kw(tmp_path, cache_min_bytes=1))
    cache_file = Path(IndexCache(str(tmp_path / "cache")).file_for(str(p)))
    cache_file.write_bytes(b"\x93garbage" + cache_file.read_bytes()[:50])
    m = SessionManager.open(str(p), read_only=True, **kw(tmp_path, cache_min_bytes=1))
    assert not m.load_report.from_cache and len(m.get_entries()) == 301
    # same size, different content (rewritten in place): the tail hash does not match
    data = p.read_bytes()
    p.write_bytes(data.replace(b"message 299 ", b"MESSAGE 299 "))
    m2 = SessionManager.open(str(p), read_only=True, **kw(tmp_path, cache_min_bytes=1))
    assert not m2.load_report.from_cache
    assert "MESSAGE 299" in m2.get_leaf_entry()["message"]["content"][0]["text"]  # type: ignore[index]
    # truncated: smaller than the cached size
    p.write_bytes(data[: data.rfind(b"\n", 0, len(data) - 1) + 1])
    m3 = SessionManager.open(str(p), read_only=True, **kw(tmp_path, cache_min_bytes=1))
    assert not m3.load_report.from_cache and m3.get_leaf_id() == "id00298"


def test_lru_bound_and_rematerialization(tmp_path: Path) -> None:
    p = tmp_path / "big.jsonl"
    big_session(p)
    m = SessionManager.open(str(p), read_only=True, **kw(tmp_path))
    m.index._cache_size = 10
    ents = m.get_entries()
    assert len(m.index._lru) <= 10
    again = m.get_entry("id00003")
    assert again == ents[3]


def test_external_append_ingest(tmp_path: Path) -> None:
    p = tmp_path / "s.jsonl"
    big_session(p, 10)
    m = SessionManager.open(str(p), read_only=True, **kw(tmp_path))
    new = {
        "type": "message",
        "id": "ext",
        "parentId": "id00009",
        "timestamp": "2025-01-01T00:00:09.000Z",
        "message": {"role": "user", "content": "e", "timestamp": 9},
    }
    line = orjson.dumps(new) + b"\n"
    with open(p, "ab") as f:
        f.write(line[:20])  # a partial line waits
    assert m.ingest_appended_bytes() == []
    with open(p, "ab") as f:
        f.write(line[20:])
    assert m.ingest_appended_bytes() == ["ext"]
    assert m.get_leaf_id() == "ext" and m.get_entry("ext") == new
    assert m.index.children("id00009") == ["ext"]


def _tree_of(idx: Any, plain: bool) -> tuple[Any, ...]:
    idx._tree_ready = False
    if plain:
        assert idx._build_plain_tree()
    else:
        idx._build_any_tree()
    for kids in idx._children.values():
        if len(kids) > 1:
            idx._sort_children(kids, idx._ts_of)
    return list(idx._roots), dict(idx._children), dict(idx._parent), dict(idx._orphans)


@pytest.mark.parametrize("branch_every", [0, 3, 11])
def test_the_plain_tree_build_links_as_the_general_one(tmp_path: Path, branch_every: int) -> None:
    # EntryIndex._build_plain_tree takes the common file in fewer lookups: the same roots,
    # children (in order) and parents as the build that handles loops, orphans and duplicates.
    gen = Path(__file__).resolve().parents[2] / "benchmarks" / "gen_corpus.py"
    p = tmp_path / "g.jsonl"
    args = [sys.executable, str(gen), str(p), "3000"]
    if branch_every:
        args += ["--branch-every", str(branch_every)]
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL)
    idx = SessionManager.open(str(p), read_only=True, **kw(tmp_path)).index
    assert _tree_of(idx, True) == _tree_of(idx, False)


def test_the_plain_tree_build_declines_what_it_cannot_link(tmp_path: Path) -> None:
    def entry(eid: str, pid: str | None, ts: str = "2025-01-01T00:00:01.000Z") -> dict[str, Any]:
        return {"type": "message", "id": eid, "parentId": pid, "timestamp": ts,
                "message": {"role": "user", "content": eid, "timestamp": 1}}  # fmt: skip

    cases = {
        "orphan": [entry("a", None), entry("b", "zz")],
        "loop": [entry("a", "b"), entry("b", "a")],
        "self parent": [entry("a", None), entry("s", "s")],
        "duplicate id": [entry("a", None), entry("b", "a"), entry("b", "a")],
    }
    for name, rows in cases.items():
        p = tmp_path / f"{name}.jsonl"
        header = {
            "type": "session",
            "version": 3,
            "id": "h",
            "timestamp": "2025-01-01T00:00:00.000Z",
            "cwd": "/p",
        }
        write(p, [header, *rows])
        idx = SessionManager.open(str(p), read_only=True, **kw(tmp_path)).index
        idx._tree_ready = False
        assert not idx._build_plain_tree(), name
        idx._tree_ready = False
        idx._ensure_tree()  # the general build decides, as before
        assert idx.roots(), name

    # a child before its parent (no loop possible yet): linked by both alike
    p = tmp_path / "child-first.jsonl"
    header = {
        "type": "session",
        "version": 3,
        "id": "h",
        "timestamp": "2025-01-01T00:00:00.000Z",
        "cwd": "/p",
    }
    write(p, [header, entry("c", "p"), entry("p", None), entry("d", "p")])
    idx = SessionManager.open(str(p), read_only=True, **kw(tmp_path)).index
    assert (
        _tree_of(idx, True)
        == _tree_of(idx, False)
        == (["p"], {"p": ["c", "d"]}, {"c": "p", "p": None, "d": "p"}, {})
    )


def _cache_fields(cache_file: Path) -> list[Any]:
    return msgspec.msgpack.decode(cache_file.read_bytes())  # type: ignore[no-any-return]


def test_a_warm_open_answers_before_it_decodes_the_skeletons(tmp_path: Path) -> None:
    # architecture.md: a cache hit keeps its skeletons encoded; the count, the leaf, the
    # labels and the name are answered without them, and the first tree query decodes them
    p = tmp_path / "big.jsonl"
    big_session(p)
    cold = SessionManager.open(str(p), read_only=True, **kw(tmp_path, cache_min_bytes=1))
    cache_file = Path(IndexCache(str(tmp_path / "cache")).file_for(str(p)))
    fields = _cache_fields(cache_file)
    # the skeletons part made undecodable: whatever the open answers cannot come from it
    fields[-1] = [1, 2, 3]
    cache_file.write_bytes(msgspec.msgpack.encode(fields))
    warm = SessionManager.open(str(p), read_only=True, **kw(tmp_path, cache_min_bytes=1))
    assert warm.load_report.from_cache
    assert len(warm.index) == len(cold.index) == 301
    assert warm.get_leaf_id() == cold.get_leaf_id()
    assert dict(warm.index.labels) == dict(cold.index.labels) and warm.index.labels
    assert display_name_of_manager(warm) == display_name_of_manager(cold)
    # the first use of the skeletons finds them undecodable: the file's bytes stand in
    assert snapshot(warm) == snapshot(cold)


@pytest.mark.parametrize("damage", ["orders", "count", "last"])
def test_cached_skeletons_that_do_not_fit_their_file_are_scanned_again(tmp_path: Path, damage: str) -> None:
    p = tmp_path / "big.jsonl"
    big_session(p)
    cold = SessionManager.open(str(p), read_only=True, **kw(tmp_path, cache_min_bytes=1))
    cache_file = Path(IndexCache(str(tmp_path / "cache")).file_for(str(p)))
    fields = _cache_fields(cache_file)
    sks = msgspec.msgpack.decode(msgspec.msgpack.encode(fields[-1]))
    order_at = 3  # Skeleton's fields in order: id, parent_id, type, order, ...
    if damage == "orders":
        sks[3][order_at], sks[4][order_at] = sks[4][order_at], sks[3][order_at]
    elif damage == "count":
        sks = sks[:-1]
    else:
        sks[-1][0] = "another"
    fields[-1] = sks
    cache_file.write_bytes(msgspec.msgpack.encode(fields))
    warm = SessionManager.open(str(p), read_only=True, **kw(tmp_path, cache_min_bytes=1))
    assert warm.load_report.from_cache
    assert snapshot(warm) == snapshot(cold)


def test_threads_that_first_use_a_warm_index_at_once_see_it_whole(tmp_path: Path) -> None:
    p = tmp_path / "big.jsonl"
    big_session(p, n=3000)
    cold = SessionManager.open(str(p), read_only=True, **kw(tmp_path, cache_min_bytes=1))
    want = snapshot(cold)
    for _ in range(5):
        warm = SessionManager.open(str(p), read_only=True, **kw(tmp_path, cache_min_bytes=1))
        assert warm.load_report.from_cache
        start = threading.Barrier(4)
        got: list[Any] = []

        def use(m: SessionManager = warm, start: threading.Barrier = start, got: list[Any] = got) -> None:
            start.wait()
            got.append((len(m.index.order()), m.index.path_to_root(m.get_leaf_id()), len(m.index.ids())))

        threads = [threading.Thread(target=use) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert got == [(3001, want["paths"][cold.get_leaf_id()], 3001)] * 4
        assert snapshot(warm) == want


def test_a_warm_index_that_grew_decodes_then_appends(tmp_path: Path) -> None:
    p = tmp_path / "big.jsonl"
    big_session(p)
    SessionManager.open(str(p), read_only=True, **kw(tmp_path, cache_min_bytes=1))
    warm = SessionManager.open(str(p), read_only=True, **kw(tmp_path, cache_min_bytes=1))
    entry = {
        "type": "label",
        "id": "lbl2",
        "parentId": warm.get_leaf_id(),
        "timestamp": "2025-01-01T00:00:09.000Z",
        "targetId": "id00001",
        "label": "second",
    }
    with open(p, "ab") as f:
        f.write(orjson.dumps(entry) + b"\n")
    assert warm.ingest_appended_bytes() == ["lbl2"]
    fresh = SessionManager.open(str(p), read_only=True, **kw(tmp_path, cache_dir=str(tmp_path / "c2")))
    # known before the decode, with the appended entry
    assert len(warm.index) == len(fresh.index) == 302
    assert warm.index.labels == fresh.index.labels and warm.index.labels["id00001"] == "second"
    assert warm.index.last() == fresh.index.last() and warm.get_leaf_id() == "lbl2"
    assert display_name_of_manager(warm) == display_name_of_manager(fresh)
    held = warm.append_message({"role": "user", "content": "mine", "timestamp": 10})
    fresh.append_message({"role": "user", "content": "mine", "timestamp": 10})
    assert warm.index.last() is not None and warm.index.last().id == held  # type: ignore[union-attr]
    assert len(warm.index) == 303
    # then decoded: the cached skeletons, the appended one and the held one, in order
    got = snapshot(warm)
    want = snapshot(fresh)
    assert got["order"][:-1] == want["order"][:-1] and len(got["order"]) == 303
    got["entries"][-1].pop("id"), want["entries"][-1].pop("id")
    assert got["entries"] == want["entries"]
