"""Navigation flows (reference-behavior.md section 16) over a real SessionManager."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from sessiontree.core.errors import EntryNotFoundError
from sessiontree.core.session import SessionManager
from sessiontree.core.tree.navigation import (
    InvalidBranchEntryError,
    SummaryUnavailableError,
    branch_to_new_session,
    get_user_messages_for_branching,
    navigate_tree,
    prepare_navigation,
)


def user_msg(text: Any) -> dict[str, Any]:
    return {"role": "user", "content": text, "timestamp": 1}


def assistant_msg(text: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [{"type": "text", "text": text}],
        "provider": "p",
        "model": "m",
        "stopReason": "stop",
        "timestamp": 2,
    }


@pytest.fixture
def tree() -> tuple[SessionManager, dict[str, str]]:
    """u1 - a1 - u2 - a2 (leaf) and a branch a1 - u3 - a3, plus a custom_message under a2."""
    m = SessionManager.in_memory("/tmp")
    ids: dict[str, str] = {}
    ids["u1"] = m.append_message(user_msg("first"))
    ids["a1"] = m.append_message(assistant_msg("one"))
    ids["u3"] = m.append_message(
        user_msg([{"type": "text", "text": "side "}, {"type": "text", "text": "question"}])
    )
    ids["a3"] = m.append_message(assistant_msg("three"))
    m.branch(ids["a1"])
    ids["u2"] = m.append_message(user_msg("second"))
    ids["a2"] = m.append_message(assistant_msg("two"))
    ids["cm"] = m.append_custom_message_entry("note", "custom text", True)
    ids["a4"] = m.append_message(assistant_msg("four"))
    return m, ids


def test_prepare_navigation_collects_the_abandoned_branch(
    tree: tuple[SessionManager, dict[str, str]],
) -> None:
    m, ids = tree
    prep = prepare_navigation(m, ids["a3"])
    assert (prep.old_leaf_id, prep.common_ancestor_id) == (ids["a4"], ids["a1"])
    assert [e["id"] for e in prep.entries_to_summarize] == [ids["u2"], ids["a2"], ids["cm"], ids["a4"]]
    # moving within the same branch: nothing is left behind
    assert prepare_navigation(m, ids["a4"]).entries_to_summarize == []
    assert [e["id"] for e in prepare_navigation(m, ids["u2"]).entries_to_summarize] == [
        ids["a2"],
        ids["cm"],
        ids["a4"],
    ]
    m.reset_leaf()
    prep = prepare_navigation(m, ids["a3"])
    assert (prep.old_leaf_id, prep.common_ancestor_id, prep.entries_to_summarize) == (None, None, [])
    with pytest.raises(EntryNotFoundError):
        prepare_navigation(m, "nope")


def test_user_target_moves_to_its_parent_and_returns_its_text(
    tree: tuple[SessionManager, dict[str, str]],
) -> None:
    m, ids = tree
    res = navigate_tree(m, ids["u3"])
    assert (res.cancelled, res.new_leaf_id, res.old_leaf_id) == (False, ids["a1"], ids["a4"])
    assert res.editor_text == "side question" and res.summary_entry is None
    assert m.get_leaf_id() == ids["a1"]


def test_root_user_target_resets_the_leaf(tree: tuple[SessionManager, dict[str, str]]) -> None:
    m, ids = tree
    res = navigate_tree(m, ids["u1"])
    assert (res.new_leaf_id, res.editor_text) == (None, "first")
    assert m.get_leaf_id() is None


def test_custom_message_target_behaves_like_a_user_message(
    tree: tuple[SessionManager, dict[str, str]],
) -> None:
    m, ids = tree
    res = navigate_tree(m, ids["cm"])
    assert (res.new_leaf_id, res.editor_text) == (ids["a2"], "custom text")


def test_other_targets_become_the_leaf(tree: tuple[SessionManager, dict[str, str]]) -> None:
    m, ids = tree
    res = navigate_tree(m, ids["a3"])
    assert (res.new_leaf_id, res.editor_text) == (ids["a3"], None)
    assert m.get_leaf_id() == ids["a3"]


def test_current_leaf_is_a_no_op_but_its_parent_user_message_is_not(
    tree: tuple[SessionManager, dict[str, str]],
) -> None:
    m, ids = tree
    before = len(m.get_entries())
    res = navigate_tree(m, ids["a4"], summarize=True)  # no-op wins over the missing summary
    assert (res.cancelled, res.new_leaf_id, res.old_leaf_id) == (False, ids["a4"], ids["a4"])
    assert len(m.get_entries()) == before
    m.branch(ids["a2"])
    res = navigate_tree(m, ids["u2"])
    assert res.new_leaf_id == ids["a1"]


def test_summary_hangs_at_the_new_position(tree: tuple[SessionManager, dict[str, str]]) -> None:
    m, ids = tree
    res = navigate_tree(
        m, ids["u3"], summarize=True, summary="left the main line", summary_details={"readFiles": []}
    )
    s = res.summary_entry
    assert s is not None
    assert (s["type"], s["parentId"], s["fromId"], s["summary"]) == (
        "branch_summary",
        ids["a1"],
        ids["a1"],
        "left the main line",
    )
    assert s["details"] == {"readFiles": []} and "fromExtension" not in s
    assert res.new_leaf_id == s["id"] == m.get_leaf_id()
    assert res.editor_text == "side question"
    # the summary is part of the context at the new position
    ctx = m.build_session_context()
    assert ctx.messages[-1]["role"] == "branchSummary"


def test_root_summary_from_root(tree: tuple[SessionManager, dict[str, str]]) -> None:
    m, ids = tree
    res = navigate_tree(m, ids["u1"], summarize=True, summary="S", from_extension=True)
    s = res.summary_entry
    assert s is not None and (s["parentId"], s["fromId"], s["fromExtension"]) == (None, "root", True)


def test_summary_is_not_attached_without_summarize(tree: tuple[SessionManager, dict[str, str]]) -> None:
    m, ids = tree
    before = len(m.get_entries())
    res = navigate_tree(m, ids["a3"], summary="ignored")
    assert res.summary_entry is None and len(m.get_entries()) == before


def test_errors(tree: tuple[SessionManager, dict[str, str]]) -> None:
    m, ids = tree
    leaf = m.get_leaf_id()
    with pytest.raises(SummaryUnavailableError):
        navigate_tree(m, ids["a3"], summarize=True)
    with pytest.raises(EntryNotFoundError, match="Entry nope not found"):
        navigate_tree(m, "nope")
    assert m.get_leaf_id() == leaf


def test_user_messages_for_branching(tree: tuple[SessionManager, dict[str, str]]) -> None:
    m, ids = tree
    m.append_message(user_msg(""))
    got = [(b.entry_id, b.text) for b in get_user_messages_for_branching(m)]
    assert got == [(ids["u1"], "first"), (ids["u3"], "side question"), (ids["u2"], "second")]


def test_branch_to_new_session(tmp_path: Path) -> None:
    m = SessionManager.create(str(tmp_path), str(tmp_path / "sessions"))
    u1 = m.append_message(user_msg("first"))
    m.append_message(assistant_msg("one"))
    m.append_label_change(u1, "start")
    u2 = m.append_message(user_msg("second"))
    m.append_message(assistant_msg("two"))
    old_file = m.get_session_file()
    assert old_file is not None
    old_bytes = Path(old_file).read_bytes()

    with pytest.raises(InvalidBranchEntryError, match="Invalid entry ID for branching"):
        branch_to_new_session(m, m.get_leaf_id())  # type: ignore[arg-type]
    with pytest.raises(InvalidBranchEntryError):
        branch_to_new_session(m, "nope")

    res = branch_to_new_session(m, u2)
    assert res.selected_text == "second"
    assert res.path is not None and res.path != old_file and m.get_session_file() == res.path
    lines = [json.loads(x) for x in Path(res.path).read_text().splitlines()]
    assert lines[0]["parentSession"] == old_file
    kinds = [(e["type"], e.get("message", {}).get("role")) for e in lines[1:]]
    assert kinds == [("message", "user"), ("message", "assistant"), ("label", None)]
    assert Path(old_file).read_bytes() == old_bytes

    # from the root user message: an empty new session pointing back at the previous file
    m2 = SessionManager.open(res.path, str(tmp_path / "sessions"))
    first = m2.get_entries()[0]["id"]
    res2 = branch_to_new_session(m2, first)
    assert res2.selected_text == "first"
    assert m2.get_entries() == [] and m2.get_header()["parentSession"] == res.path  # type: ignore[index]
