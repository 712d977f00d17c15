"""sessiontree writes, omp 18 reads (issue 31): every write operation of sessiontree's
SessionManager (and the navigation flows built on it), then omp's own SessionManager
(tests/compat/omp/harness.ts) must hold the state sessiontree holds (tests/compat/state.py),
and neither open may change the file's bytes.

sessiontree writes with its defaults under the test run's HOME (blobs in its own blob store),
as it does for a person; omp reads with its own (blobs in ~/.omp/agent/blobs).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sessiontree.core.session import SessionManager
from sessiontree.core.tree.navigation import branch_to_new_session, navigate_tree
from shared_data import REPO, real_v1_session

from compat.conftest import Work
from compat.omp.cases import assistant, bash_execution, big_image, small_image, tool_result, user
from compat.state import Agent, agent_load, assert_same_state, our_state

Base = tuple[str, str]
"""The ids of the base conversation: its user message, its assistant message."""


def _compaction(m: SessionManager, b: Base) -> None:
    m.append_message(user("more", 1_767_225_700_000))
    m.append_compaction("The user asked about a.txt.", None, b[1], 12000)
    m.append_message(user("after", 1_767_225_720_000))


def _compaction_all_fields(m: SessionManager, b: Base) -> None:
    m.append_compaction(
        "Summary.", "a.txt question", b[1], 12000, {"readFiles": ["a.txt"]}, True, {"kept": {"n": 1}}
    )


def _tool_round(m: SessionManager, b: Base) -> None:
    m.append_message(user("read it", 1_767_225_700_000))
    m.append_message(assistant("Reading.", "toolUse", ("c1",), ts=1_767_225_701_000))
    m.append_message(tool_result("c1", "contents of a"))
    m.append_message(assistant("It says: contents of a.", ts=1_767_225_703_000))


def _aborted(m: SessionManager, b: Base) -> None:
    m.append_message(user("do two things", 1_767_225_700_000))
    m.append_message(
        assistant("Starting.", "aborted", ("c1",), ts=1_767_225_701_000, error="Interrupted by user")
    )
    m.append_message(tool_result("c1", "Tool execution was aborted.", True))
    m.append_message(user("never mind", 1_767_225_710_000))


def _errored(m: SessionManager, b: Base) -> None:
    m.append_message(user("go", 1_767_225_700_000))
    m.append_message(assistant("Half an answer", "error", ts=1_767_225_701_000, error="overloaded"))
    m.append_message(user("again", 1_767_225_710_000))


def _dangling_call(m: SessionManager, b: Base) -> None:
    m.append_message(user("read two", 1_767_225_700_000))
    m.append_message(assistant("Reading both.", "toolUse", ("c1", "c2"), ts=1_767_225_701_000))
    m.append_message(tool_result("c1", "one"))


def _label_cleared(m: SessionManager, b: Base) -> None:
    m.append_label_change(b[0], "question")
    m.append_label_change(b[0], None)


def _branch(m: SessionManager, b: Base) -> None:
    m.branch(b[0])
    m.append_message(assistant("Another answer.", ts=1_767_225_700_000))


def _reset_leaf(m: SessionManager, b: Base) -> None:
    m.reset_leaf()
    m.append_message(user("a new root", 1_767_225_700_000))


def _branch_with_summary(m: SessionManager, b: Base) -> None:
    m.branch_with_summary(b[0], "Tried the answer; abandoned.")
    m.append_message(assistant("Second try.", ts=1_767_225_700_000))


def _navigate_with_summary(m: SessionManager, b: Base) -> None:
    m.append_message(user("follow-up", 1_767_225_700_000))
    m.append_message(assistant("Follow-up answer.", ts=1_767_225_701_000))
    navigate_tree(m, b[1], summarize=True, summary="Explored a follow-up.", summary_details={"files": []})
    m.append_message(user("instead, b.txt?", 1_767_225_710_000))


def _title_auto_then_user(m: SessionManager, b: Base) -> None:
    m.set_session_name("auto title", "auto")
    m.set_session_name("My title", "user")
    m.set_session_name("ignored auto title", "auto")


def _create_branched_session(m: SessionManager, b: Base) -> None:
    m.append_label_change(b[0], "kept")
    m.append_message(user("later", 1_767_225_700_000))
    m.create_branched_session(b[1])


def _fork(m: SessionManager, b: Base) -> None:
    m.fork()
    m.append_message(user("in the fork", 1_767_225_700_000))


def _branch_to_new_session(m: SessionManager, b: Base) -> None:
    second = m.append_message(user("second question", 1_767_225_700_000))
    m.append_message(assistant("Second answer.", ts=1_767_225_701_000))
    branch_to_new_session(m, second)
    m.append_message(user("a different second question", 1_767_225_710_000))
    m.append_message(assistant("A different answer.", ts=1_767_225_711_000))


CASES: dict[str, Callable[[SessionManager, Base], Any]] = {
    "user_text": lambda m, b: m.append_message(user("and b.txt?", 1_767_225_700_000)),
    "user_small_image": lambda m, b: m.append_message(user("look", 1_767_225_700_000, (small_image,))),
    "user_blob_image": lambda m, b: m.append_message(user("look at this", 1_767_225_700_000, (big_image,))),
    "assistant_tool_call_and_result": _tool_round,
    "assistant_aborted_with_result": _aborted,
    "assistant_error_partial": _errored,
    "tool_call_without_result": _dangling_call,
    "bash_execution": lambda m, b: m.append_message(bash_execution("ls", "a.txt")),
    "custom_role_message": lambda m, b: m.append_message(
        {"role": "custom", "customType": "note", "content": "x", "display": True, "timestamp": 1}
    ),
    "thinking_level": lambda m, b: m.append_thinking_level_change("high"),
    "thinking_level_none": lambda m, b: m.append_thinking_level_change(None),
    "model_change_default": lambda m, b: (
        m.append_model_change("openai/gpt-5", "default"),
        m.append_message(assistant("From gpt-5.", provider="openai", model="gpt-5", ts=1_767_225_702_000)),
    ),
    "model_change_without_role": lambda m, b: m.append_model_change("openai/gpt-5"),
    "model_change_role_smol": lambda m, b: m.append_model_change("anthropic/claude-haiku-4-5", "smol"),
    "mode_change": lambda m, b: m.append_mode_change("plan", {"planFile": "PLAN.md"}),
    "compaction": _compaction,
    "compaction_all_fields": _compaction_all_fields,
    "custom_entry": lambda m, b: m.append_custom_entry("todo", {"items": ["a"]}),
    "custom_message_entry": lambda m, b: m.append_custom_message_entry("reminder", "tests in tests/", True),
    "custom_message_entry_hidden": lambda m, b: m.append_custom_message_entry(
        "note", [{"type": "text", "text": "hidden"}], False, {"k": 1}, "user"
    ),
    "label": lambda m, b: m.append_label_change(b[0], "question"),
    "label_cleared": _label_cleared,
    "ttsr_injection": lambda m, b: m.append_ttsr_injection(["no-console"]),
    "session_init": lambda m, b: m.append_session_init(
        {"systemPrompt": "You are a scout.", "task": "find x", "tools": ["read"]}
    ),
    "context_change": lambda m, b: m.append_context_change("prod", "acme", "default"),
    "service_tier_change": lambda m, b: m.append_service_tier_change("flex"),
    "mcp_tool_selection": lambda m, b: m.append_mcp_tool_selection(["github.search"]),
    "branch": _branch,
    "reset_leaf": _reset_leaf,
    "branch_with_summary": _branch_with_summary,
    "branch_with_summary_at_root": lambda m, b: m.branch_with_summary(None, "Started over.", {"n": 1}),
    "navigate_tree_with_summary": _navigate_with_summary,
    "title_user": lambda m, b: m.set_session_name("Reading a.txt", "user"),
    "title_auto_then_user": _title_auto_then_user,
    "create_branched_session": _create_branched_session,
    "fork": _fork,
    "branch_to_new_session": _branch_to_new_session,
}


def write_with_sessiontree(path: Path, case: Callable[[SessionManager, Base], Any]) -> str:
    """The base conversation and the case, written by sessiontree; the file it ends in."""
    m = SessionManager.open(str(path))
    try:
        base = (
            m.append_message(user("What is in a.txt?")),
            m.append_message(assistant("Let me answer.")),
        )
        case(m, base)
        m.flush()
        out = m.get_session_file()
    finally:
        m.close()
    assert out is not None
    return out


def compare(agent: Agent, path: str | Path, what: str, every_leaf: bool = True) -> None:
    ours = our_state(path, every_leaf=every_leaf)
    theirs = agent_load(agent, path, every_leaf=every_leaf)
    assert_same_state(ours, theirs, agent, what)


@pytest.mark.parametrize("case", sorted(CASES))
def test_sessiontree_writes_omp_reads(omp: Agent, work: Work, case: str) -> None:
    path = write_with_sessiontree(work.file("session.jsonl"), CASES[case])
    compare(omp, path, f"sessiontree's {case}")


def test_fork_from_another_session(omp: Agent, work: Work) -> None:
    source = write_with_sessiontree(work.file("source.jsonl"), CASES["title_user"])
    m = SessionManager.fork_from(source, str(work.cwd), str(work.sessions))
    try:
        m.append_message(user("in the copy", 1_767_225_700_000))
        m.flush()
        path = m.get_session_file()
    finally:
        m.close()
    assert path is not None
    compare(omp, path, "sessiontree's fork_from")


def _migrated_copy(src: Path, work: Work) -> Path:
    """`src` copied, opened for writing by sessiontree (which migrates the file), one message
    appended."""
    path = work.file(src.name)
    shutil.copyfile(src, path)
    path.chmod(0o644)
    m = SessionManager.open(str(path))
    try:
        m.append_message(user("appended after the migration", 1_767_225_700_000))
        m.flush()
    finally:
        m.close()
    return path


def test_migrated_v1_file(omp: Agent, work: Work) -> None:
    path = _migrated_copy(real_v1_session(), work)
    compare(omp, path, "a v1 file sessiontree migrated", every_leaf=False)


def test_migrated_v2_file(omp: Agent, work: Work) -> None:
    path = _migrated_copy(REPO / "tests/fixtures/golden/migrations/hook-messages.v2.jsonl", work)
    compare(omp, path, "a v2 file sessiontree migrated")
