"""DIVERGENCE 9: a search finds what rows show (the display text is searchable too).

The reference matches a query against its searchable parts only (tree-view-rules.md), so a
toolResult row shown as ``[read: src/vscode.py]`` is not found by ``src/vscode.py``, nor an
older pi ``model_change`` shown as ``[model: provider/modelId]`` by ``provider/modelId``.
sessiontree also matches the display text: its results are a superset of the reference's,
with the same prefix art and order of rows.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sessiontree.core import SessionManager
from sessiontree.core.view import (
    FILTER_MODES,
    EntriesTreeSource,
    build_view,
    searchable_text,
)
from sessiontree.core.view.search import _search_display, searchable_parts

HOME = "/home/someone"


def _ts(n: int) -> str:
    return f"2026-01-01T{n // 3600:02d}:{n // 60 % 60:02d}:{n % 60:02d}.000Z"


def _header() -> dict[str, Any]:
    return {"type": "session", "version": 3, "id": "s-1", "timestamp": _ts(0), "cwd": "/w"}


def _msg(eid: str, parent: str | None, n: int, **message: Any) -> dict[str, Any]:
    message.setdefault("timestamp", n)
    return {"type": "message", "id": eid, "parentId": parent, "timestamp": _ts(n), "message": message}


def _call(cid: str, name: str, **args: Any) -> dict[str, Any]:
    return {"type": "toolCall", "id": cid, "name": name, "arguments": args}


def _result(eid: str, parent: str, n: int, cid: str, name: str, text: str) -> dict[str, Any]:
    return _msg(
        eid,
        parent,
        n,
        role="toolResult",
        toolCallId=cid,
        toolName=name,
        content=[{"type": "text", "text": text}],
    )


def _session() -> list[dict[str, Any]]:
    return [
        _msg("u1", None, 1, role="user", content="look at the extension"),
        _msg(
            "a1",
            "u1",
            2,
            role="assistant",
            content=[
                {"type": "text", "text": "reading"},
                _call("c1", "read", path="src/vscode.py"),
                _call("c2", "read", path=f"{HOME}/proj/notes.md", offset=3, limit=4),
            ],
        ),
        _result("r1", "a1", 3, "c1", "read", "def activate(): ..."),
        _result("r2", "r1", 4, "c2", "read", "# notes"),
        {
            "type": "model_change",
            "id": "m1",
            "parentId": "r2",
            "timestamp": _ts(5),
            "provider": "anthropic",
            "modelId": "claude-x",
        },
        _msg("u2", "m1", 6, role="user", content="thanks"),
    ]


def _write(tmp_path: Path, entries: list[dict[str, Any]]) -> Path:
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in [_header(), *entries]))
    return path


def _ids(source: Any, **kw: Any) -> list[str]:
    return [r.id for r in build_view(source, home=HOME, **kw).rows]


def test_a_path_shown_in_a_tool_row_is_found(tmp_path: Path) -> None:
    mgr = SessionManager.open(str(_write(tmp_path, _session())), read_only=True)
    texts = {r.id: r.text for r in build_view(mgr, home=HOME).rows}
    assert texts["r1"] == "[read: src/vscode.py]"
    assert _ids(mgr, search="src/vscode.py") == ["r1"]
    # found as shown: the home-shortened path with its line range
    assert texts["r2"] == "[read: ~/proj/notes.md:3-6]"
    assert _ids(mgr, search="~/proj/notes.md:3-6") == ["r2"]
    assert _ids(mgr, search="[read:") == ["r1", "r2"]
    # still found by content, as the reference finds it
    assert _ids(mgr, search="activate") == ["r1"]


def test_an_older_pi_model_change_is_found_by_the_model_it_shows(tmp_path: Path) -> None:
    mgr = SessionManager.open(str(_write(tmp_path, _session())), read_only=True)
    row = next(r for r in build_view(mgr, filter="all").rows if r.id == "m1")
    assert row.text == "[model: anthropic/claude-x]"  # DIVERGENCE 8
    assert _ids(mgr, filter="all", search="anthropic/claude-x") == ["m1"]
    assert _ids(mgr, filter="all", search="[model: anthropic") == ["m1"]


def test_a_tool_row_without_its_call_is_found_by_the_fallback_it_shows() -> None:
    entries = [
        _msg("u1", None, 1, role="user", content="hi"),
        _result("r1", "u1", 2, "gone", "grep", "match"),
    ]
    src = EntriesTreeSource(entries)
    assert [r.text for r in build_view(src).rows] == ["user: hi", "[grep]"]
    assert _ids(src, search="[grep]") == ["r1"]


def test_a_duplicated_call_id_is_searched_as_the_row_shows_it() -> None:
    # Two branches reuse call id "c": the selector's map takes the call last in flattened
    # order, which depends on the leaf; the search follows the row's display.
    entries = [
        _msg("u", None, 1, role="user", content="go"),
        _msg("a1", "u", 2, role="assistant", content=[_call("c", "ls", path="left")]),
        _result("r1", "a1", 3, "c", "ls", "x"),
        _msg("a2", "u", 4, role="assistant", content=[_call("c", "ls", path="right")]),
        _result("r2", "a2", 5, "c", "ls", "y"),
    ]
    for leaf in ("r1", "r2"):
        src = EntriesTreeSource(entries, leaf)
        page = build_view(src, home=HOME)
        for row in page.rows:
            if row.type == "message" and row.role == "toolResult":
                assert row.id in _ids(src, search=row.text), (leaf, row)
        # a query of one display finds exactly the rows that show it
        for shown in ("[ls: left]", "[ls: right]"):
            want = [r.id for r in page.rows if r.text == shown]
            assert [i for i in _ids(src, search=shown) if i in ("r1", "r2")] == want


def _reference_match(entry: Mapping[str, Any], label: str | None, query: str) -> bool:
    """The reference's rule (tree-view-rules.md, Search), written from the spec."""
    parts = [label] if label else []
    parts += searchable_parts(entry)
    low = " ".join(parts).lower()
    return all(t in low for t in query.lower().split())


def _random_session(rng: random.Random, n: int) -> list[dict[str, Any]]:
    words = ["alpha", "beta", "src/a.py", "make test", "Gamma", "ls", "read"]
    tools = ["read", "bash", "grep", "ls", "edit", "custom_tool"]
    entries: list[dict[str, Any]] = []
    for i in range(n):
        parent = (
            entries[rng.randrange(len(entries))]["id"]
            if entries and rng.random() < 0.3
            else (entries[-1]["id"] if entries else None)
        )
        eid = f"e{i}"
        kind = rng.random()
        if kind < 0.25:
            entries.append(_msg(eid, parent, i, role="user", content=" ".join(rng.sample(words, 2))))
        elif kind < 0.5:
            name = rng.choice(tools)
            cid = f"c{rng.randrange(n // 2 + 1)}"  # some ids repeat across messages
            args = {"path": rng.choice(words), "command": rng.choice(words), "pattern": "x"}
            entries.append(
                _msg(
                    eid,
                    parent,
                    i,
                    role="assistant",
                    content=[{"type": "text", "text": rng.choice(words)}, _call(cid, name, **args)],
                )
            )
        elif kind < 0.8:
            cid = f"c{rng.randrange(n // 2 + 1)}"
            entries.append(_result(eid, parent, i, cid, rng.choice(tools), rng.choice(words)))
        elif kind < 0.9:
            entries.append(
                {
                    "type": "model_change",
                    "id": eid,
                    "parentId": parent,
                    "timestamp": _ts(i),
                    "provider": "prov",
                    "modelId": rng.choice(words),
                }
            )
        else:
            target = entries[rng.randrange(len(entries))]["id"] if entries else eid
            entries.append(
                {
                    "type": "label",
                    "id": eid,
                    "parentId": parent,
                    "timestamp": _ts(i),
                    "targetId": target,
                    "label": rng.choice(words),
                }
            )
    return entries


def _same_but_marks(a: Any, b: Any) -> bool:
    """Rows equal but for what hidden rows hand on (the art's connectors, the leaf's mark)."""
    skip = {"prefix", "marks_leaf", "hidden_leaf", "head_depth"}
    return all(getattr(a, f) == getattr(b, f) for f in a.__dataclass_fields__ if f not in skip)


@pytest.mark.parametrize("seed", range(6))
def test_results_are_a_superset_of_the_reference_with_the_same_art_and_order(seed: int) -> None:
    rng = random.Random(seed)
    entries = _random_session(rng, 60)
    by_id = {e["id"]: e for e in entries}
    queries = ["alpha", "src/a.py", "[read:", "make test", "ls: src", "prov/", "[model:", "gamma beta", "zzz"]
    for mode in FILTER_MODES:
        src = EntriesTreeSource(entries)
        base = build_view(src, filter=mode, home=HOME)
        labels = {r.id: r.label for r in base.rows}
        index = {r.id: n for n, r in enumerate(base.rows)}
        for q in queries:
            page = build_view(src, filter=mode, search=q, home=HOME)
            got = [r.id for r in page.rows]
            reference = [r.id for r in base.rows if _reference_match(by_id[r.id], labels[r.id], q)]
            assert set(reference) <= set(got), (mode, q)
            # the rows a search keeps are the unsearched rows, in their order, with their
            # art but for the connectors of the branches whose first rows the search hides
            # (`marks`: a gutter cell becomes that branch's connector)
            assert [index[i] for i in got] == sorted(index[i] for i in got)
            for row in page.rows:
                was = base.rows[index[row.id]]
                assert _same_but_marks(row, was)
                assert len(row.prefix) == len(was.prefix)
                for c in range(0, len(row.prefix), 3):
                    now, then = row.prefix[c : c + 3], was.prefix[c : c + 3]
                    assert now == then or (then in ("│  ", "   ") and now in ("├─ ", "└─ "))
            # and every row the search found shows, or is searched by, every token
            for row in page.rows:
                shown = " ".join(filter(None, [row.label, row.text])).lower()
                assert _reference_match(by_id[row.id], row.label, q) or all(
                    t in shown or _reference_match(by_id[row.id], row.label, t) for t in q.lower().split()
                )
        # every row is found by its own display text
        for row in base.rows:
            assert row.id in _ids(src, filter=mode, search=row.text), (mode, row)


def test_searches_after_appends_follow_the_display_as_a_fresh_build_does() -> None:
    # Searches cache a toolResult's call display; appends that give its call id a second
    # owner, add the missing call or reuse an entry id must change what the search finds.
    entries = [
        _msg("u", None, 1, role="user", content="go"),
        _msg("a1", "u", 2, role="assistant", content=[_call("c", "ls", path="left")]),
        _result("r1", "a1", 3, "c", "ls", "x"),
        _result("r9", "r1", 4, "late", "grep", "y"),  # its call comes later
    ]
    live = EntriesTreeSource(entries)
    queries = ["[ls: left]", "[ls: right]", "[grep: /p/", "[grep]", "ls:"]

    def check() -> dict[str, list[str]]:
        fresh = EntriesTreeSource([live.get_entry(sk.id) for sk in live.index.skeletons()], live.leaf_id)
        found = {}
        for q in queries:
            for mode in ("default", "all"):
                got = _ids(live, filter=mode, search=q)
                assert got == _ids(fresh, filter=mode, search=q), (q, mode)
                showing = [r.id for r in build_view(live, filter=mode, home=HOME).rows if q in r.text]
                assert set(showing) <= set(got), (q, mode)
            found[q] = got
        return found

    assert check()["[ls: left]"] == ["r1"]
    assert check()["[grep]"] == ["r9"]
    # a second message with call id "c": the call last in flattened order wins, and the
    # leaf's branch comes first, so which call both results show follows the leaf
    live.append(_msg("a2", "u", 5, role="assistant", content=[_call("c", "ls", path="right")]))
    live.append(_result("r2", "a2", 6, "c", "ls", "z"))
    assert check()["[ls: left]"] == ["r2", "r1"]  # leaf r2: a2's branch first, a1 last
    live.leaf_id = "r9"
    assert check()["[ls: right]"] == ["r1", "r2"]  # leaf r9: a1's branch first, a2 last
    # the missing call arrives
    live.append(_msg("a3", "r9", 7, role="assistant", content=[_call("late", "grep", pattern="p")]))
    found = check()
    assert "r9" in found["[grep: /p/"] and "r9" not in found["[grep]"]
    # a reused id replaces r2 with a result of another call
    live.append(_result("r2", "a3", 8, "late", "grep", "again"), move_leaf=False)
    found = check()
    assert "r2" in found["[grep: /p/"] and "r2" not in found["[ls: left]"] + found["[ls: right]"]


_texts = st.one_of(
    st.none(),
    st.just(""),
    st.integers(-1, 1),
    st.booleans(),
    st.text(alphabet="ab:\n\t [] ", max_size=240),
    st.lists(
        st.fixed_dictionaries(
            {"type": st.sampled_from(["text", "image"]), "text": st.text("ab\n ", max_size=150)}
        ),
        max_size=3,
    ),
)


@settings(max_examples=300, deadline=None)
@given(
    role=st.sampled_from(["user", "assistant", "bashExecution", "toolResult", "custom", None]),
    content=_texts,
    command=_texts,
    stop=st.sampled_from([None, "aborted", "stop"]),
    error=st.sampled_from([None, "", "rate\tlimited"]),
    data=st.data(),
)
def test_the_cached_search_text_matches_as_the_full_display_does(
    role: str | None, content: Any, command: Any, stop: str | None, error: str | None, data: st.DataObject
) -> None:
    # The cache keeps only the prefix of a display whose rest the searchable parts already
    # hold (view.search._search_display); a token must match the one exactly when it matches the other.
    message: dict[str, Any] = {"role": role, "content": content, "command": command, "timestamp": 1}
    if stop:
        message["stopReason"] = stop
    if error is not None:
        message["errorMessage"] = error
    if role == "toolResult":
        message.pop("toolCallId", None)
        message["toolCallId"] = ["not hashable"]  # no call to look up: the fallback is static
    entry = {"type": "message", "id": "e", "parentId": None, "timestamp": _ts(1), "message": message}
    full = searchable_text(entry).lower()
    compact = " ".join([*searchable_parts(entry), _search_display(entry)]).lower()
    tokens = full.split() + compact.split()
    for t in tokens:
        for n in range(1, len(t) + 1):
            piece = t[:n]
            assert (piece in full) == (piece in compact), (piece, full, compact)
    extra = data.draw(st.text(alphabet="abu:[]() sert", min_size=1, max_size=6))
    for t in extra.split():
        assert (t in full) == (t in compact), (t, full, compact)
