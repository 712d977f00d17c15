"""Comparing two nodes: the common ancestor, each side's entries since, and the files each
side's tool calls wrote or edited (every argument shape of the pi family's tools)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from golden import GOLDEN, check_golden
from sessiontree.core.compare import code_effects, compare_nodes, render_side
from sessiontree.core.errors import EntryNotFoundError
from sessiontree.core.session import SessionManager
from shared_data import REAL_CORPUS

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "server" / "sessiontree" / "data" / "demo-session.jsonl"
FIXTURE_TIP, LEAF, TALK_TIP, BRANCH_POINT = "1a2caaa9", "1a2ebbb8", "1a2e5552", "1a2c4443"
TESTS_GREEN = "1a2d6664"  # labelled; the talk about times of day branches off here


def open_ro(path: Path) -> SessionManager:
    return SessionManager.open(str(path), read_only=True)


def real(name: str) -> SessionManager:
    path = REAL_CORPUS / name
    if not path.is_file():
        pytest.skip(f"{path} is missing (../shared is read beside the repository)")
    return open_ro(path)


def files(side: Any) -> list[tuple[str, str]]:
    return [(f.path, f.summary) for f in side.files]


def test_demo_branches_list_the_files_each_attempt_changed() -> None:
    c = compare_nodes(open_ro(DEMO), FIXTURE_TIP, LEAF)
    assert c.ancestor_id == BRANCH_POINT
    assert files(c.a) == [("tests/fixtures/tasks.json", "write")]
    assert files(c.b) == [("src/store.py", "edit"), ("src/cli.py", "edit"), ("tests/test_due.py", "write")]
    store = c.b.files[0].effects[0]
    assert store.hunks[0].old == "Task(**d)" and "d.get('dueDate')" in store.hunks[0].new
    assert [x.command for x in c.a.commands] == []
    assert len(c.b.commands) == 3
    assert c.a.entry_ids[0] == "1a2c5554" and c.a.entry_ids[-1] == FIXTURE_TIP


def test_side_documents_golden() -> None:
    c = compare_nodes(open_ro(DEMO), FIXTURE_TIP, LEAF)
    check_golden(GOLDEN / "compare" / "demo-a.txt", render_side(c, "a"))
    check_golden(GOLDEN / "compare" / "demo-b.txt", render_side(c, "b"))


def test_an_ancestor_compared_with_its_descendant() -> None:
    mgr = open_ro(DEMO)
    c = compare_nodes(mgr, TESTS_GREEN, TALK_TIP)
    assert c.ancestor_id == TESTS_GREEN
    assert c.a.entry_ids == []
    path = mgr.index.path_to_root(TALK_TIP)
    assert c.b.entry_ids == path[path.index(TESTS_GREEN) + 1 :]
    assert files(c.b) == [] and c.b.commands == []
    # from the branch point, the talk's side carries the store fix made before it
    c = compare_nodes(mgr, FIXTURE_TIP, TALK_TIP)
    assert files(c.b) == [("src/store.py", "edit")]


def test_same_node_and_unknown_ids() -> None:
    mgr = open_ro(DEMO)
    c = compare_nodes(mgr, LEAF, LEAF)
    assert c.ancestor_id == LEAF and c.a.entry_ids == [] and c.b.entry_ids == []
    with pytest.raises(EntryNotFoundError):
        compare_nodes(mgr, LEAF, "nope")


def _call(eid: str, name: str, args: dict[str, Any], cid: str) -> dict[str, Any]:
    return {
        "type": "message",
        "id": eid,
        "message": {
            "role": "assistant",
            "content": [{"type": "toolCall", "id": cid, "name": name, "arguments": args}],
        },
    }


def _result(eid: str, cid: str, error: bool = False) -> dict[str, Any]:
    return {
        "type": "message",
        "id": eid,
        "message": {"role": "toolResult", "toolCallId": cid, "isError": error, "content": []},
    }


def test_every_argument_shape_of_write_and_edit() -> None:
    entries = [
        _call("1", "write", {"path": "a.txt", "content": "hello"}, "c1"),
        _call("2", "edit", {"path": "a.txt", "oldText": "hello", "newText": "bye"}, "c2"),
        _call(
            "3",
            "edit",
            {"path": "b.py", "edits": [{"oldText": "x", "newText": "y"}, {"oldText": "p", "newText": "q"}]},
            "c3",
        ),
        _call("4", "edit", {"edits": [{"path": "c.md", "oldText": "", "newText": "n"}]}, "c4"),
        _call("5", "edit", {"path": "/w/d.ts", "input": "@@ hashline patch"}, "c5"),
        _call("6", "Edit", {"file_path": "/w/e.rs", "old_string": "o", "new_string": "n"}, "c6"),
        _call("7", "edit", {"path": "f.txt", "oldText": "zz", "newText": "yy"}, "c7"),
        _result("7r", "c7", error=True),
        _call("8", "bash", {"command": "pytest -q"}, "c8"),
        _result("8r", "c8", error=True),
        _call("9", "read", {"path": "g.txt"}, "c9"),
        {
            "type": "message",
            "id": "10",
            "message": {"role": "bashExecution", "command": "ls", "exitCode": 0, "output": ""},
        },
    ]
    changes, commands = code_effects(entries, "/w")
    got = [(c.path, c.summary) for c in changes]
    assert got == [
        ("a.txt", "write, edit"),
        ("b.py", "edit"),
        ("c.md", "edit"),
        ("d.ts", "edit"),
        ("e.rs", "edit"),
        ("f.txt", "1 failed"),
    ]
    assert [(h.old, h.new) for h in changes[1].effects[0].hunks] == [("x", "y"), ("p", "q")]
    assert changes[3].effects[0].patch == "@@ hashline patch"
    assert [(c.command, c.failed) for c in commands] == [("pytest -q", True), ("ls", False)]


def test_real_pi_mono_session_lists_its_edited_files() -> None:
    mgr = real("pimono-large-session.jsonl")
    leaf = mgr.get_leaf_id()
    path = mgr.index.path_to_root(leaf)
    c = compare_nodes(mgr, path[len(path) * 3 // 4], leaf)
    got = dict(files(c.b))
    assert got["packages/coding-agent/src/tui/tool-execution.ts"] == "edit ×10"
    assert got["packages/coding-agent/src/theme/theme.ts"] == "edit ×6"
    assert got["packages/coding-agent/CHANGELOG.md"] == "edit ×3"
    assert len(got) == 12
    assert len(c.b.commands) == 59


def test_real_edits_array_session_lists_its_files_and_failures() -> None:
    mgr = real("dexter-v3-pi-session.jsonl")
    leaf = mgr.get_leaf_id()
    path = mgr.index.path_to_root(leaf)
    c = compare_nodes(mgr, path[len(path) * 3 // 4], leaf)
    got = dict(files(c.b))
    assert got["src/lib/copilot/runtime.ts"] == "edit ×6"
    assert got["src/app/(app)/chat/page.tsx"] == "write ×3"
    assert got["docs/findings/2026-06-10-repo-scan.md"] == "1 failed"


def test_real_branching_session() -> None:
    mgr = real("twkrash-pi-0.85.1-branching.jsonl")
    c = compare_nodes(mgr, "e6", "e8")
    assert c.ancestor_id == "e2"
    assert c.a.entry_ids == ["e3", "e4", "e5", "e6"] and c.b.entry_ids == ["e7", "e8"]
    assert files(c.a) == files(c.b) == []
