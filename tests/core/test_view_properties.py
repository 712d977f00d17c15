"""Property tests over random trees with cycles, self-parents, orphans and duplicates.

Every visible entry appears in the view exactly once, after its tree parent, and every
walk (the view, the active path, the context rebuild, navigation) terminates.
"""

from __future__ import annotations

import json
import os
import tempfile
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sessiontree.core.session import SessionManager
from sessiontree.core.tree.context import build_session_context
from sessiontree.core.tree.navigation import navigate_tree, prepare_navigation
from sessiontree.core.view import FILTER_MODES, EntriesTreeSource, active_path_ids, build_view

IDS = [f"e{i}" for i in range(12)]
ROLES = ["user", "assistant", "toolResult", "bashExecution", "custom"]
TYPES = [
    "message",
    "message",
    "message",
    "label",
    "model_change",
    "compaction",
    "branch_summary",
    "custom_message",
    "session_init",
]


@st.composite
def entries(draw: Any, unique: bool = True) -> list[dict[str, Any]]:
    n = draw(st.integers(min_value=0, max_value=len(IDS)))
    ids = draw(st.permutations(IDS))[:n] if unique else draw(st.lists(st.sampled_from(IDS[:5]), max_size=10))
    out = []
    for i, eid in enumerate(ids):
        parent = draw(st.sampled_from([None, "missing", eid, *IDS[: max(1, len(ids))]]))
        etype = draw(st.sampled_from(TYPES))
        sec = draw(st.integers(min_value=0, max_value=3))
        e: dict[str, Any] = {
            "type": etype,
            "id": eid,
            "parentId": parent,
            "timestamp": f"2026-01-01T00:00:0{sec}.000Z",
        }
        if etype == "message":
            role = draw(st.sampled_from(ROLES))
            text = draw(st.sampled_from(["", "  ", "hello", "tool"]))
            msg: dict[str, Any] = {"role": role, "content": [{"type": "text", "text": text}]}
            if role == "assistant":
                msg["stopReason"] = draw(st.sampled_from([None, "stop", "toolUse", "error", "aborted"]))
                msg["content"].append(
                    {"type": "toolCall", "id": f"c{i}", "name": "read", "arguments": {"path": "x"}}
                )
            if role == "toolResult":
                msg["toolCallId"] = f"c{draw(st.integers(min_value=0, max_value=12))}"
            e["message"] = msg
        elif etype == "label":
            e["targetId"] = draw(st.sampled_from(IDS))
            e["label"] = draw(st.sampled_from(["", "L1", "L2"]))
        elif etype == "compaction":
            e.update(summary="S", firstKeptEntryId=draw(st.sampled_from(IDS)), tokensBefore=1500)
        elif etype == "branch_summary":
            e.update(fromId="root", summary="B")
        elif etype == "custom_message":
            e.update(customType="c", content="x", display=True)
        elif etype == "model_change":
            e["model"] = "a/b"
        out.append(e)
    return out


def _hidden_assistant(e: dict[str, Any], leaf: str | None) -> bool:
    msg = e.get("message") or {}
    if e["type"] != "message" or msg.get("role") != "assistant" or e["id"] == leaf:
        return False
    has_text = any(b.get("type") == "text" and b.get("text", "").strip() for b in msg["content"])
    return not has_text and msg.get("stopReason") in (None, "stop", "toolUse")


@settings(max_examples=200, deadline=None)
@given(entries(), st.data())
def test_every_visible_entry_appears_exactly_once(ents: list[dict[str, Any]], data: Any) -> None:
    leaf = data.draw(st.sampled_from([None, "missing", *[e["id"] for e in ents]]))
    src = EntriesTreeSource(ents, leaf_id=leaf)
    page = build_view(src, filter="all")
    ids = [r.id for r in page.rows]
    assert len(ids) == len(set(ids))
    assert set(ids) == {e["id"] for e in ents if not _hidden_assistant(e, leaf)}
    position = {eid: i for i, eid in enumerate(ids)}
    for r in page.rows:
        parent = src.index.effective_parent(r.id)
        if parent is not None and parent in position:
            assert position[parent] < position[r.id]
        assert len(r.prefix) == 3 * r.depth
    assert page.total == len(ids)
    if ids:
        assert page.selected_index is not None and 0 <= page.selected_index < len(ids)
    else:
        assert page.selected_index is None
    for mode in FILTER_MODES:
        sub = [
            r.id
            for r in build_view(
                src, filter=mode, search=data.draw(st.sampled_from([None, "", "hello", "l1 user"]))
            ).rows
        ]
        assert len(sub) == len(set(sub)) and set(sub) <= set(ids) | ({leaf} if leaf else set())
        assert sub == [i for i in ids if i in set(sub)]  # filtering keeps the order


@settings(max_examples=200, deadline=None)
@given(entries(unique=False), st.data())
def test_walks_terminate_with_duplicates_and_cycles(ents: list[dict[str, Any]], data: Any) -> None:
    leaf = data.draw(st.sampled_from([None, "missing", *[e["id"] for e in ents]]))
    src = EntriesTreeSource(ents, leaf_id=leaf)
    path = active_path_ids(src, leaf)
    assert len(path) == len(set(path)) <= len(ents) + 1
    page = build_view(src, filter="all")
    assert len({r.id for r in page.rows}) == len(page.rows)
    ctx = build_session_context(ents, leaf)
    assert len(ctx.messages) <= len(ents) + 1


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(entries(), st.data())
def test_navigation_terminates_on_loaded_files(ents: list[dict[str, Any]], data: Any) -> None:
    if not ents:
        return
    header = {
        "type": "session",
        "version": 3,
        "id": "0123456789abcdef",
        "timestamp": "2026-01-01T00:00:00.000Z",
        "cwd": "/tmp",
    }
    fd, path = tempfile.mkstemp(suffix=".jsonl")
    try:
        with os.fdopen(fd, "w") as f:
            for e in [header, *ents]:
                f.write(json.dumps(e) + "\n")
        m = SessionManager.open(path, read_only=True)
        target = data.draw(st.sampled_from([e["id"] for e in ents]))
        prep = prepare_navigation(m, target)
        assert len(prep.entries_to_summarize) <= len(ents)
        res = navigate_tree(m, target, summarize=True, summary="s")
        assert res.new_leaf_id == m.get_leaf_id()
        ctx = m.build_session_context()
        assert len(ctx.messages) <= len(ents) + 2
        assert build_view(m).total >= 0
    finally:
        os.unlink(path)


@st.composite
def operations(draw: Any) -> list[tuple[str, Any]]:
    ops = []
    for _ in range(draw(st.integers(min_value=1, max_value=12))):
        kind = draw(st.sampled_from(["leaf", "leaf", "leaf", "branch", "label", "move", "dup"]))
        ops.append((kind, draw(st.integers(min_value=0, max_value=10_000))))
    return ops


@settings(max_examples=80, deadline=None)
@given(entries(), operations(), st.data())
def test_cached_views_after_appends_match_a_fresh_build(
    ents: list[dict[str, Any]], ops: list[Any], data: Any
) -> None:
    """The incremental path (appends under the leaf) gives exactly what a full build gives."""
    ents = [dict(e) for e in ents]
    live = EntriesTreeSource(ents)
    modes = [(m, q) for m in FILTER_MODES for q in (None, "hello")]
    for step, (kind, n) in enumerate(ops):
        ids = [e["id"] for e in ents]
        leaf = live.leaf_id
        new_id = f"n{step}"
        if kind == "move" and ids:
            live.leaf_id = ids[n % len(ids)]
        elif kind == "label" and ids:
            e = {
                "type": "label",
                "id": new_id,
                "parentId": leaf,
                "timestamp": "2026-01-01T00:00:05.000Z",
                "targetId": ids[n % len(ids)],
                "label": "L1" if n % 2 else "",
            }
            ents.append(e)
            live.append(e)
        else:
            parent = ids[n % len(ids)] if kind == "branch" and ids else leaf
            eid = ids[n % len(ids)] if kind == "dup" and ids else new_id
            role = ["user", "assistant", "toolResult"][n % 3]
            msg: dict[str, Any] = {
                "role": role,
                "content": [{"type": "text", "text": "hello" if n % 4 else " "}],
            }
            if role == "assistant":
                msg["stopReason"] = "stop"
            e = {
                "type": "message",
                "id": eid,
                "parentId": parent,
                "timestamp": "2026-01-01T00:00:05.000Z",
                "message": msg,
            }
            ents.append(e)
            live.append(e)
        fresh = EntriesTreeSource(ents, leaf_id=live.leaf_id)
        for mode, q in data.draw(st.lists(st.sampled_from(modes), min_size=1, max_size=2)):
            a = build_view(live, filter=mode, search=q)
            b = build_view(fresh, filter=mode, search=q)
            assert [(r.id, r.line()) for r in a.rows] == [(r.id, r.line()) for r in b.rows]
            assert (a.total, a.selected_index) == (b.total, b.selected_index)


def _full_page(src: Any, leaf: Any, mode: str, offset: int, limit: int) -> Any:
    """The page from a whole flattening, the lazy walk kept out."""
    from sessiontree.core.view import page as view_page

    saved = view_page._lazy_rows
    view_page._lazy_rows = lambda *a: None  # type: ignore[assignment]
    try:
        return build_view(src, filter=mode, offset=offset, limit=limit, leaf_id=leaf)
    finally:
        view_page._lazy_rows = saved


@settings(max_examples=150, deadline=None)
@given(entries(), st.data())
def test_the_view_walked_from_the_leaf_is_the_whole_flattening(ents: list[dict[str, Any]], data: Any) -> None:
    """Pages of the lazy walk (path first, the rest on demand) equal a whole flattening's,
    anywhere in the view, for every leaf and mode, and in any order of page requests."""
    src = EntriesTreeSource([dict(e) for e in ents])
    ids = [e["id"] for e in ents]
    leaf = data.draw(st.sampled_from([None, *ids])) if ids else None
    mode = data.draw(st.sampled_from([m for m in FILTER_MODES if m != "labeled-only"]))
    for _ in range(data.draw(st.integers(min_value=1, max_value=4))):
        offset = data.draw(st.integers(min_value=0, max_value=len(ids) + 1))
        limit = data.draw(st.integers(min_value=0, max_value=len(ids) + 1))
        a = build_view(src, filter=mode, offset=offset, limit=limit, leaf_id=leaf)
        b = _full_page(EntriesTreeSource([dict(e) for e in ents]), leaf, mode, offset, limit)
        assert [(r.id, r.line(), r.depth, r.on_active_path, r.is_leaf) for r in a.rows] == [
            (r.id, r.line(), r.depth, r.on_active_path, r.is_leaf) for r in b.rows
        ]
        assert (a.total, a.selected_index) == (b.total, b.selected_index)


def test_a_deep_linear_session_answers_its_first_pages_without_walking_the_rest(tmp_path: Any) -> None:
    """A long chain with side branches: the leaf's pages come from the path, the rest stays
    unwalked until a page asks for it, and every page equals the whole flattening's."""
    from sessiontree.core.view.adapters import as_tree_source
    from sessiontree.core.view.cache import cache_of

    mgr = SessionManager.create(str(tmp_path), str(tmp_path / "s"))
    ids = []
    for i in range(3000):
        if i and i % 500 == 0:
            mgr.branch(ids[i - 250])  # a side branch: its rows come after the leaf's path
        ids.append(mgr.append_message({"role": "user", "content": f"m{i}", "timestamp": i}))
    first = build_view(mgr, offset=0, limit=100)
    lazy = next(iter(cache_of(as_tree_source(mgr)).lazy.values()))
    assert not lazy.done and len(lazy.ids) < 3000  # the side branches are not walked yet
    assert first.total == 3000 and first.selected_index == len(lazy.path) - 1
    for offset in (0, first.selected_index - 50, first.selected_index + 1, 2900):
        a = build_view(mgr, offset=offset, limit=100)
        b = _full_page(mgr, mgr.get_leaf_id(), "default", offset, 100)
        assert [r.line() for r in a.rows] == [r.line() for r in b.rows] and len(a.rows) > 0
        assert (a.total, a.selected_index) == (b.total, b.selected_index)


@settings(max_examples=120, deadline=None)
@given(entries(), st.data(), st.booleans())
def test_the_lazy_walk_follows_appends_and_moves_like_a_whole_flattening(
    ents: list[dict[str, Any]], data: Any, big: bool
) -> None:
    """After appends (under the leaf, elsewhere, adopting an entry that waited for its
    parent, reusing an id) and leaf moves, the lazily walked pages equal a whole
    flattening of the same entries; also as a big source (two views kept, the rows made
    from the others dropped: `cache.views_to_keep`)."""
    from sessiontree.core.view import cache as view_cache

    saved = view_cache.BIG_VIEW
    view_cache.BIG_VIEW = 0 if big else saved
    try:
        _lazy_walk_follows(ents, data)
    finally:
        view_cache.BIG_VIEW = saved


def _lazy_walk_follows(ents: list[dict[str, Any]], data: Any) -> None:
    ents = [dict(e) for e in ents]
    live = EntriesTreeSource(ents)
    for step in range(data.draw(st.integers(min_value=1, max_value=6))):
        ids = [e["id"] for e in ents]
        kind = data.draw(st.sampled_from(["under-leaf", "elsewhere", "adopt", "dup", "move"]))
        if kind == "move" and ids:
            live.leaf_id = data.draw(st.sampled_from(ids))
        else:
            waiting = [e["parentId"] for e in ents if e["parentId"] is not None and e["parentId"] not in ids]
            if kind == "adopt" and waiting:
                eid = waiting[0]
            elif kind == "dup" and ids:
                eid = data.draw(st.sampled_from(ids))
            else:
                eid = f"a{step}"
            parent = (
                live.leaf_id
                if kind in ("under-leaf", "adopt") or not ids
                else data.draw(st.sampled_from(ids))
            )
            e = {
                "type": "message",
                "id": eid,
                "parentId": parent,
                "timestamp": "2026-01-01T00:00:04.000Z",
                "message": {"role": "user", "content": [{"type": "text", "text": "hello"}]},
            }
            ents.append(e)
            live.append(e)
        mode = data.draw(st.sampled_from(["default", "all", "no-tools"]))
        offset = data.draw(st.integers(min_value=0, max_value=len(ents)))
        a = build_view(live, filter=mode, offset=offset, limit=5)
        b = _full_page(EntriesTreeSource(ents, leaf_id=live.leaf_id), live.leaf_id, mode, offset, 5)
        assert [(r.id, r.line(), r.on_active_path) for r in a.rows] == [
            (r.id, r.line(), r.on_active_path) for r in b.rows
        ]
        assert (a.total, a.selected_index) == (b.total, b.selected_index)


@settings(max_examples=120, deadline=None)
@given(entries(), st.data())
def test_typing_on_narrows_to_what_a_fresh_search_finds(ents: list[dict[str, Any]], data: Any) -> None:
    """A query typed on from an earlier one (its rows matched again, not every row's)
    finds exactly what the same query finds from scratch."""
    words = ["h", "he", "hel", "hello", "hello t", "too", "tool", "t", "user", "assistant:"]
    src = EntriesTreeSource([dict(e) for e in ents])
    for q in data.draw(st.lists(st.sampled_from(words), min_size=2, max_size=5)):
        mode = data.draw(st.sampled_from(["default", "all"]))
        a = build_view(src, filter=mode, search=q)
        b = build_view(EntriesTreeSource([dict(e) for e in ents]), filter=mode, search=q)
        assert [(r.id, r.line()) for r in a.rows] == [(r.id, r.line()) for r in b.rows]
        assert (a.total, a.selected_index) == (b.total, b.selected_index)


def test_texts_built_ahead_are_the_texts_a_search_builds(tmp_path: Any) -> None:
    """`warm_search` (the daemon's idle-time slices) builds for every entry the text a first
    search would build, so searching afterwards finds exactly what it finds cold."""
    from sessiontree.core.view import warm_search
    from sessiontree.core.view.adapters import as_tree_source
    from sessiontree.core.view.cache import cache_of

    mgr = SessionManager.create(str(tmp_path), str(tmp_path / "s"))
    for i in range(3000):
        role = ("user", "assistant", "toolResult")[i % 3]
        msg: dict[str, Any] = {
            "role": role,
            "content": [{"type": "text", "text": f"w{i % 97} hello"}],
            "timestamp": i,
        }
        if role == "assistant":
            msg.update(stopReason="toolUse", provider="p", model="m")
            msg["content"].append(
                {"type": "toolCall", "id": f"c{i}", "name": "read", "arguments": {"path": f"/x{i}"}}
            )
        if role == "toolResult":
            msg.update(toolCallId=f"c{i - 1}", toolName="read")
        mgr.append_message(msg)
    mgr.flush()
    path = mgr.get_session_file()
    warm = SessionManager.open(path, viewing=True, breadcrumbs=False)
    cache = cache_of(as_tree_source(warm))
    slices = 0
    folded = [0]
    while not warm_search(warm, 512):
        slices += 1
        folded.append(len(cache.search_folded))
    assert slices >= 5
    texts = cache.search_text
    assert set(texts) == set(warm.index.ids())
    # each tool result's call display is folded into its text in the slices, at most a
    # slice's budget at a time; the last step (the search that makes the buffer) folds none
    assert max(b - a for a, b in pairwise(folded)) == 512
    assert folded[-1] == len(cache.search_folded) == 1000
    assert not cache.search_call
    cold = SessionManager.open(path, viewing=True, breadcrumbs=False)
    for q in ("w13", "hello w4", "read: /x4", "assistant:", "nothing-like-this"):
        a = build_view(warm, search=q)
        b = build_view(cold, search=q)
        assert [(r.id, r.line()) for r in a.rows] == [(r.id, r.line()) for r in b.rows]
        assert (a.total, a.selected_index) == (b.total, b.selected_index)


@pytest.mark.parametrize("rows", [False, True], ids=["hidden-sets", "with-rows"])
def test_hidden_sets_made_ahead_are_the_ones_a_filter_change_makes(tmp_path: Any, rows: bool) -> None:
    """`warm_filters` (idle time) makes each mode's hidden set (and, asked, its rows for the
    leaf) as a first filter change would: the pages of every mode equal those of a session
    that never warmed, also after appends."""
    from sessiontree.core.view import WARM_FILTER_MODES, warm_filters
    from sessiontree.core.view.adapters import as_tree_source
    from sessiontree.core.view.cache import cache_of

    mgr = SessionManager.create(str(tmp_path), str(tmp_path / "s"))
    for i in range(900):
        role = ("user", "assistant", "toolResult")[i % 3]
        text = "" if i % 7 == 1 else f"w{i}"  # some assistants without text (hidden)
        msg: dict[str, Any] = {"role": role, "content": [{"type": "text", "text": text}], "timestamp": i}
        if role == "assistant":
            msg.update(stopReason="stop", provider="p", model="m")
        if role == "toolResult":
            msg.update(toolCallId=f"c{i}", toolName="read")
        mgr.append_message(msg)
        if i % 50 == 0:
            mgr.append_thinking_level_change("high")
    mgr.flush()
    path = mgr.get_session_file()
    warm = SessionManager.open(path, viewing=True, breadcrumbs=False)
    build_view(warm, limit=10)  # a click: its own mode's set only
    assert set(cache_of(as_tree_source(warm)).hidden) == {"default"}
    for mode in WARM_FILTER_MODES:
        warm_filters(warm, mode, rows)
    cache = cache_of(as_tree_source(warm))
    assert set(cache.hidden) == set(WARM_FILTER_MODES)
    warmed_rows = {key[-1] for key in cache.lazy_rows}
    assert warmed_rows == (set(WARM_FILTER_MODES) if rows else {"default"})
    copy = tmp_path / "copy.jsonl"  # its own file: each appends below
    copy.write_bytes(Path(path).read_bytes())
    cold = SessionManager.open(str(copy), viewing=True, breadcrumbs=False)
    for step in range(2):
        for mode in (*WARM_FILTER_MODES, "labeled-only"):
            for offset in (0, 250, 590):
                a = build_view(warm, filter=mode, offset=offset, limit=20)
                b = build_view(cold, filter=mode, offset=offset, limit=20)
                assert [(r.id, r.line()) for r in a.rows] == [(r.id, r.line()) for r in b.rows], (step, mode)
                assert (a.total, a.selected_index) == (b.total, b.selected_index)
        for m in (warm, cold):
            m.append_message({"role": "assistant", "content": [], "stopReason": "stop", "timestamp": 1})
            m.append_message({"role": "user", "content": "after", "timestamp": 2})


def test_a_path_that_takes_in_an_older_entry_is_not_a_chain_appended_under_the_leaf() -> None:
    """After the leaf e1, appends bring e3 (appended before, under e1) onto the new leaf's
    path while a new root e4 goes elsewhere: the path grew by as many entries as were
    appended, yet not by the appended ones, and e2 adopts e5, which waited for it. The rows
    walked lazily from the new leaf equal a whole flattening (they did not: a row too many was
    counted and its page failed)."""

    def msg(eid: str, parent: str | None, role: str, ts: int) -> dict[str, Any]:
        body: dict[str, Any] = {"role": role, "content": []}
        if role == "assistant":
            body["stopReason"] = "toolUse"
        if role == "user":
            body["content"] = f"u{eid}"
        return {"type": "message", "id": eid, "parentId": parent,
                "timestamp": f"2025-01-01T00:00:{ts:02d}.000Z", "message": body}  # fmt: skip

    ents = [msg("e0", None, "assistant", 0)]
    live = EntriesTreeSource(list(ents))
    for e in (msg("e1", None, "assistant", 1), msg("e3", "e1", "user", 2), msg("e5", "e2", "assistant", 3)):
        ents.append(e)
        live.append(e)
    live.leaf_id = "e1"
    for mode in ("all", "default"):
        build_view(live, filter=mode, limit=5)
    for e in (msg("e4", None, "user", 4), msg("e2", "e3", "assistant", 5)):
        ents.append(e)
        live.append(e)
    for mode in ("all", "default"):
        a = build_view(live, filter=mode, limit=10)
        b = _full_page(EntriesTreeSource(ents, leaf_id=live.leaf_id), live.leaf_id, mode, 0, 10)
        assert [(r.id, r.line(), r.on_active_path) for r in a.rows] == [
            (r.id, r.line(), r.on_active_path) for r in b.rows
        ], mode
        assert (a.total, a.selected_index) == (b.total, b.selected_index), mode
