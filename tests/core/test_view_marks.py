"""What a row the filter hides hands on (core/view/marks.py, docs/tree-view.md "One face").

The leaf's mark goes up to its nearest visible ancestor, which names the hidden leaf; a
hidden first row of a branch gives its connector to its first visible descendant. Checked
on random trees against a statement of the rule in terms of the tree itself (parents,
children, the order of the rows), for every filter mode, searches, whole views and pages,
a list of entries and a session file (whose view is walked from the leaf first).
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from sessiontree.core.session import SessionManager
from sessiontree.core.view import FILTER_MODES, EntriesTreeSource, build_view
from sessiontree.core.view.flatten import flatten, prefix_of

HOME = "/home/tester"


def _ts(i: int) -> str:
    return f"2026-01-01T00:{i // 60:02d}:{i % 60:02d}.000Z"


def _random_session(rng: random.Random, n: int) -> list[dict[str, Any]]:
    """A sound tree (parents come first) of messages, tool results, settings entries and
    unknown types, branching often."""
    out: list[dict[str, Any]] = []
    for i in range(n):
        eid = f"e{i}"
        parent = None if i == 0 else out[rng.choice([i - 1, i - 1, i - 1, rng.randrange(i)])]["id"]
        if i and rng.random() < 0.03:
            parent = None  # a second root now and then
        kind = rng.random()
        e: dict[str, Any] = {"id": eid, "parentId": parent, "timestamp": _ts(i)}
        if kind < 0.25:
            e.update(type="message", message={"role": "user", "content": rng.choice(["fix it", "go on"])})
        elif kind < 0.45:
            text = rng.choice(["", "done", "ok then"])
            content: list[Any] = [{"type": "text", "text": text}] if text else []
            content.append({"type": "toolCall", "id": f"c{i}", "name": "read", "arguments": {"path": "a.py"}})
            e.update(
                type="message",
                message={"role": "assistant", "content": content, "stopReason": "toolUse"},
            )
        elif kind < 0.65:
            e.update(
                type="message",
                message={"role": "toolResult", "toolCallId": f"c{i - 1}", "toolName": "read", "content": "x"},
            )
        elif kind < 0.75:
            e.update(type="model_change", provider="p", modelId=rng.choice(["m1", "m2"]))
        elif kind < 0.82:
            e.update(
                type="label",
                targetId=out[rng.randrange(i)]["id"] if i else eid,
                label=rng.choice(["L", "fix"]),
            )
        elif kind < 0.88:
            e.update(type="future_entry", payload=1)
        else:
            e.update(type="message", message={"role": "user", "content": "again"})
        out.append(e)
    return out


def _expected(
    entries: list[dict[str, Any]], leaf: str | None, rows: list[Any], all_rows: list[str]
) -> dict[str, Any]:
    """The rule, from the tree: for each shown row id, (marks the leaf, the connectors it is
    handed as (cell, glyph), the depth of the outermost hidden branch head it stands for)."""
    src = EntriesTreeSource(entries, leaf_id=leaf)
    flat = flatten(src, leaf)
    pos = {eid: i for i, eid in enumerate(flat.ids)}
    parent = {e["id"]: e["parentId"] for e in entries}
    kids: dict[str | None, list[str]] = {}
    for eid in flat.ids:
        p = parent[eid] if parent[eid] in pos else None
        kids.setdefault(p, []).append(eid)
    shown = set(all_rows)
    order = sorted(shown, key=pos.__getitem__)

    def subtree_first_shown(h: str) -> str | None:
        # the first shown row, in view order, of h's subtree
        stack, members = [h], set()
        while stack:
            x = stack.pop()
            members.add(x)
            stack.extend(kids.get(x, []))
        return next((x for x in order if x in members), None)

    multi = len(kids.get(None, [])) > 1
    out: dict[str, Any] = {}
    for eid in (r.id for r in rows):
        handed: list[tuple[int, str]] = []
        outer: int | None = None
        a = parent[eid] if parent[eid] in pos else None
        while a is not None:
            p = parent[a] if parent[a] in pos else None
            is_head = len(kids.get(p, [])) > 1 if p is not None else multi
            if a not in shown and is_head and subtree_first_shown(a) == eid:
                i = pos[a]
                disp = max(0, flat.indent[i] - 1) if multi else flat.indent[i]
                if p is not None:
                    glyph = "└─ " if kids[p][-1] == a else "├─ "
                    handed.append((max(0, disp - 1), glyph))
                outer = disp
            a = p
        out[eid] = [handed, outer]
    # the leaf's mark: the leaf, else its nearest shown ancestor
    marker = None
    a = leaf
    while a is not None and a in pos:
        if a in shown:
            marker = a
            break
        a = parent[a]
    for eid in out:
        out[eid].append(eid == marker)
    return out


def _check(
    entries: list[dict[str, Any]], leaf: str | None, mode: str, search: str | None, source: Any
) -> None:
    whole = build_view(source, filter=mode, search=search, leaf_id=leaf, home=HOME)
    all_ids = [r.id for r in whole.rows]
    want = _expected(entries, leaf, whole.rows, all_ids)
    flat = flatten(EntriesTreeSource(entries, leaf_id=leaf), leaf)
    pos = {eid: i for i, eid in enumerate(flat.ids)}
    for r in whole.rows:
        handed, outer, marks = want[r.id]
        cells = [prefix_of(flat, pos[r.id])[c : c + 3] for c in range(0, len(r.prefix), 3)]
        for cell, glyph in handed:
            cells[cell] = glyph
        assert r.prefix == "".join(cells), (mode, search, r.id)
        assert r.head_depth == outer, (mode, search, r.id)
        assert r.marks_leaf == marks, (mode, search, r.id)
        if marks and r.id != leaf:
            leaf_text = build_view(
                EntriesTreeSource(entries, leaf_id=leaf), filter="all", leaf_id=leaf, home=HOME
            )
            hidden = next((x.text for x in leaf_text.rows if x.id == leaf), None)
            if hidden is not None:
                assert r.hidden_leaf == hidden
            assert r.hidden_leaf is not None
        else:
            assert r.hidden_leaf is None
    assert sum(r.marks_leaf for r in whole.rows) <= 1
    # pages answer the same rows as the whole view
    paged: list[Any] = []
    for off in range(0, whole.total, 7):
        paged.extend(
            build_view(source, filter=mode, search=search, leaf_id=leaf, home=HOME, offset=off, limit=7).rows
        )
    assert paged == whole.rows


@pytest.mark.parametrize("seed", range(40))
def test_hidden_rows_hand_on_the_leaf_and_the_connectors(seed: int, tmp_path: Path) -> None:
    rng = random.Random(seed)
    entries = _random_session(rng, rng.randrange(5, 70))
    leaf = rng.choice(entries)["id"]
    path = tmp_path / "s.jsonl"
    header = {"type": "session", "version": 3, "id": "s", "timestamp": _ts(0), "cwd": "/p"}
    path.write_text("".join(json.dumps(x) + "\n" for x in [header, *entries]), encoding="utf-8")
    mgr = SessionManager.open(str(path), read_only=True)
    for mode in FILTER_MODES:
        for search in (None, "fix", "read"):
            _check(entries, leaf, mode, search, EntriesTreeSource(entries, leaf_id=leaf))
            _check(entries, leaf, mode, search, mgr)


def test_a_hidden_leaf_is_named_on_its_nearest_visible_ancestor() -> None:
    entries = [
        {
            "type": "message",
            "id": "u",
            "parentId": None,
            "timestamp": _ts(1),
            "message": {"role": "user", "content": "hi"},
        },
        {
            "type": "model_change",
            "id": "m",
            "parentId": "u",
            "timestamp": _ts(2),
            "provider": "p",
            "modelId": "m2",
        },
    ]
    rows = build_view(EntriesTreeSource(entries)).rows
    assert [(r.id, r.is_leaf, r.marks_leaf, r.hidden_leaf) for r in rows] == [
        ("u", False, True, "[model: p/m2]")
    ]
    rows = build_view(EntriesTreeSource(entries), filter="all").rows
    assert [(r.id, r.marks_leaf, r.hidden_leaf) for r in rows] == [("u", False, None), ("m", True, None)]
    # no ancestor shown: nothing marks the leaf (the selection falls back to the last row)
    assert not any(r.marks_leaf for r in build_view(EntriesTreeSource(entries), filter="labeled-only").rows)
