"""sessiontree writes, pi 1.6 reads (issue 31, ours → theirs).

sessiontree's SessionManager writes a session with each of its write operations (every
append_*, labels, names, branch, branch_with_summary, navigation with a summary, fork,
create_branched_session, images, migrations of v1 and v2 files), then sessiontree and pi's
own SessionManager (tests/compat/pi/harness.mjs) each open the written file: the normalized
states (tests/compat/state.py) must be equal, at the leaf and with the leaf moved to every
entry, and neither open may change the file. A difference is something pi 1.6 reads
otherwise than sessiontree meant it (/work/brief/pi16-dialect.md).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from sessiontree.core.session import SessionManager
from sessiontree.core.tree.navigation import branch_to_new_session, navigate_tree
from shared_data import REPO, real_v1_session

from compat.conftest import Work
from compat.pi_messages import (
    LARGE_PNG,
    assistant,
    bash_execution,
    conversation,
    custom,
    image,
    system,
    text,
    tool_call,
    tool_decl,
    tool_result,
    user,
    user_blocks,
)
from compat.state import Agent, agent_write, assert_read_alike


def ours(work: Work) -> SessionManager:
    """A new session of sessiontree's in the test's sessions directory."""
    return SessionManager.create(str(work.cwd), str(work.sessions))


def on_disk(m: SessionManager) -> str:
    """Everything `m` wrote, on disk and closed; its file."""
    m.ensure_on_disk()
    path = m.get_session_file()
    m.close()
    assert path is not None and Path(path).is_file()
    return path


def same_everywhere(pi: Agent, path: str | Path, what: str) -> None:
    """Both readers agree on `path` at its leaf and at every entry as the leaf."""
    assert_read_alike(pi, path, what)


def started(m: SessionManager) -> tuple[str, str]:
    """A first exchange; the ids of its user and assistant messages."""
    return m.append_message(user("hello")), m.append_message(assistant("hi there"))


# Each operation writes after a first exchange; it returns the file to read (a move writes
# another one).
Op = Callable[[SessionManager, Work], str | None]


def _messages_of_every_role(m: SessionManager, work: Work) -> None:
    m.append_message(assistant("reading", tool_call("c1")))
    m.append_message(tool_result("c1", "body"))
    m.append_message(assistant("failed", stop="error", error="boom"))
    m.append_message(bash_execution("ls", "a"))
    m.append_message(custom("ext", "injected"))
    m.append_message(system("You are xcsh.", {"tools": "<tools/>"}, [tool_decl("read")]))
    m.append_message({"role": "developer", "content": "be terse", "timestamp": 5})
    m.append_message(
        {
            "role": "fileMention",
            "files": [{"path": "a.py", "content": "x = 1", "lineCount": 1}],
            "timestamp": 6,
        }
    )
    m.append_message(
        {"role": "pythonExecution", "code": "print(1)", "output": "1", "exitCode": 0, "timestamp": 7}
    )
    m.append_message(user("done?"))


def _image_small(m: SessionManager, work: Work) -> None:
    m.append_message(user_blocks(text("small"), image()))


def _image_large(m: SessionManager, work: Work) -> None:
    # sessiontree keeps this one in its blob store and writes a blob:sha256: reference
    m.append_message(user_blocks(text("large"), image(LARGE_PNG)))
    m.append_message(assistant("seen"))


def _tool_result_image_large(m: SessionManager, work: Work) -> None:
    m.append_message(assistant(tool_call("c9", "screenshot")))
    m.append_message(tool_result("c9", "shot", image(LARGE_PNG), name="screenshot"))


def _thinking_level(m: SessionManager, work: Work) -> None:
    m.append_thinking_level_change("high")


def _thinking_level_none(m: SessionManager, work: Work) -> None:
    m.append_thinking_level_change(None)


def _model_change(m: SessionManager, work: Work) -> None:
    m.append_model_change("openai/gpt-5")


def _model_change_role(m: SessionManager, work: Work) -> None:
    m.append_model_change("openai/gpt-5-mini", "smol")


def _model_change_then_question(m: SessionManager, work: Work) -> None:
    m.append_model_change("openai/gpt-5")
    m.append_message(user("which model answers?"))


def _mode_change(m: SessionManager, work: Work) -> None:
    m.append_mode_change("plan", {"step": 1})


def _compaction(m: SessionManager, work: Work) -> None:
    first = m.append_message(user("two"))
    m.append_message(assistant("2"))
    m.append_compaction("we counted", "counting", first, 1500, {"readFiles": []}, True)
    m.append_message(user("three"))


def _compaction_no_kept_entry(m: SessionManager, work: Work) -> None:
    m.append_compaction("everything", None, None, 800)
    m.append_message(user("after"))


def _compaction_openai_remote(m: SessionManager, work: Work) -> None:
    first = m.append_message(user("two"))
    m.append_message(assistant("2", provider="openai", model="gpt-5"))
    remote = {
        "openaiRemoteCompaction": {
            "provider": "openai",
            "replacementHistory": [{"type": "compaction", "encrypted_content": "abc"}],
        }
    }
    m.append_compaction("remote", None, first, 900, None, None, remote)
    m.append_message(user("three"))


def _custom_entry(m: SessionManager, work: Work) -> None:
    m.append_custom_entry("my-ext", {"count": 42})


def _custom_message(m: SessionManager, work: Work) -> None:
    m.append_custom_message_entry("note", "hidden note", False, {"a": 1})
    m.append_custom_message_entry("note", [text("shown"), image()], True, None, "user")


def _label_set_and_cleared(m: SessionManager, work: Work) -> None:
    first = m.get_entries()[0]["id"]
    second = m.get_entries()[1]["id"]
    m.append_label_change(first, "start")
    m.append_label_change(second, "answer")
    m.append_label_change(first, None)


def _xcsh_state_entries(m: SessionManager, work: Work) -> None:
    m.append_session_init({"systemPrompt": "sp", "task": "t", "tools": ["read"]})
    m.append_ttsr_injection(["rule-a", "rule-b"])
    m.append_context_change("prod", "tenant-1", "ns")
    m.append_service_tier_change("flex")
    m.append_mcp_tool_selection(["github__search"])
    m.append_message(user("after the state entries"))


def _set_session_name(m: SessionManager, work: Work) -> None:
    m.set_session_name("Refactor auth", "user")


def _branch(m: SessionManager, work: Work) -> None:
    first = m.get_entries()[0]["id"]
    m.append_message(user("two"))
    m.append_message(assistant("2"))
    m.branch(first)
    m.append_message(assistant("another answer"))


def _reset_leaf(m: SessionManager, work: Work) -> None:
    m.reset_leaf()
    m.append_message(user("a second root"))


def _branch_with_summary(m: SessionManager, work: Work) -> None:
    first = m.get_entries()[0]["id"]
    m.append_message(user("two"))
    m.append_message(assistant("2"))
    m.branch_with_summary(first, "We tried two.", {"readFiles": []}, True)
    m.append_message(assistant("again"))


def _branch_with_summary_root(m: SessionManager, work: Work) -> None:
    m.branch_with_summary(None, "Started over.")
    m.append_message(user("new first"))


def _navigate_with_summary(m: SessionManager, work: Work) -> None:
    m.append_message(user("two"))
    m.append_message(assistant("2"))
    second_answer = m.get_entries()[1]["id"]
    navigate_tree(m, second_answer, summarize=True, summary="The second question went nowhere.")
    m.append_message(user("two, rephrased"))


def _navigate_to_user_message(m: SessionManager, work: Work) -> None:
    q = m.append_message(user("two"))
    m.append_message(assistant("2"))
    navigate_tree(m, q)
    m.append_message(user("two, edited"))


OPS: dict[str, Op] = {
    "messages_of_every_role": _messages_of_every_role,
    "image_small": _image_small,
    "image_large": _image_large,
    "tool_result_image_large": _tool_result_image_large,
    "thinking_level": _thinking_level,
    "thinking_level_none": _thinking_level_none,
    "model_change": _model_change,
    "model_change_with_role": _model_change_role,
    "model_change_then_question": _model_change_then_question,
    "mode_change": _mode_change,
    "compaction": _compaction,
    "compaction_without_kept_entry": _compaction_no_kept_entry,
    "compaction_openai_remote": _compaction_openai_remote,
    "custom_entry": _custom_entry,
    "custom_message": _custom_message,
    "label_set_and_cleared": _label_set_and_cleared,
    "xcsh_state_entries": _xcsh_state_entries,
    "set_session_name": _set_session_name,
    "branch": _branch,
    "reset_leaf": _reset_leaf,
    "branch_with_summary": _branch_with_summary,
    "branch_with_summary_from_root": _branch_with_summary_root,
    "navigate_with_summary": _navigate_with_summary,
    "navigate_to_user_message": _navigate_to_user_message,
}


@pytest.mark.parametrize("op", list(OPS))
def test_each_write_operation(pi: Agent, work: Work, op: str) -> None:
    m = ours(work)
    started(m)
    OPS[op](m, work)
    same_everywhere(pi, on_disk(m), f"sessiontree's {op} session")


def test_fork(pi: Agent, work: Work) -> None:
    m = ours(work)
    started(m)
    m.set_session_name("source", "user")
    moved = m.fork()
    assert moved is not None
    m.append_message(user("in the fork"))
    same_everywhere(pi, on_disk(m), "sessiontree's fork")


def test_fork_from(pi: Agent, work: Work) -> None:
    m = ours(work)
    started(m)
    source = on_disk(m)
    forked = SessionManager.fork_from(source, str(work.cwd), str(work.sessions))
    forked.append_message(user("in the fork"))
    same_everywhere(pi, on_disk(forked), "sessiontree's fork_from")


def test_create_branched_session_with_labels(pi: Agent, work: Work) -> None:
    m = ours(work)
    q, _ = started(m)
    m.append_label_change(q, "start")
    q2 = m.append_message(user("two"))
    a2 = m.append_message(assistant("2"))
    m.append_label_change(a2, "two")
    m.append_message(user("three"))
    path = m.create_branched_session(a2)
    assert path is not None
    same_everywhere(pi, on_disk(m), "sessiontree's branched session")
    assert q2  # the path runs through the labelled entries


def test_branch_to_new_session(pi: Agent, work: Work) -> None:
    m = ours(work)
    started(m)
    q2 = m.append_message(user("two"))
    m.append_message(assistant("2"))
    result = branch_to_new_session(m, q2)
    assert result.path is not None
    m.append_message(user("two, in the new session"))
    same_everywhere(pi, on_disk(m), "sessiontree's /branch session")


def test_move_to_another_cwd(pi: Agent, work: Work) -> None:
    m = ours(work)
    started(m)
    on_disk(m)
    other = work.cwd.parent / "elsewhere"
    other.mkdir()
    m.move_to(str(other))
    m.append_message(user("moved"))
    same_everywhere(pi, on_disk(m), "sessiontree's moved session")


def _migrated_and_appended(pi: Agent, work: Work, source: Path) -> None:
    path = work.file(source.name)
    shutil.copyfile(source, path)
    m = SessionManager.open(str(path))
    m.append_message(user("appended after the migration"))
    m.append_message(assistant("ok"))
    m.append_label_change(m.get_entries()[0]["id"], "first")
    same_everywhere(pi, on_disk(m), f"{source.name} migrated and appended to by sessiontree")


def test_v1_session_migrated_and_appended(pi: Agent, work: Work) -> None:
    _migrated_and_appended(pi, work, real_v1_session())


def test_v2_session_migrated_and_appended(pi: Agent, work: Work) -> None:
    _migrated_and_appended(
        pi, work, REPO / "tests" / "fixtures" / "golden" / "migrations" / "hook-messages.v2.jsonl"
    )


def test_a_long_mixed_session(pi: Agent, work: Work) -> None:
    m = ours(work)
    q, a = started(m)
    m.append_model_change("anthropic/claude-sonnet-4-5")
    m.append_thinking_level_change("medium")
    m.append_message(assistant("reading", tool_call("x1")))
    m.append_message(tool_result("x1", "body"))
    m.append_label_change(q, "start")
    q2 = m.append_message(user("try the other way"))
    m.append_message(assistant("partial", stop="aborted"))
    m.branch(a)
    m.append_model_change("openai/gpt-5")
    m.append_message(user("with gpt-5"))
    m.append_message(assistant("ok", provider="openai", model="gpt-5"))
    m.append_custom_entry("state", {"n": 1})
    m.append_custom_message_entry("hint", "remember tests", True)
    first_kept = m.get_leaf_id()
    assert first_kept is not None
    m.append_compaction("gpt-5 branch so far", "so far", first_kept, 3000)
    m.append_message(user("after compaction"))
    m.branch_with_summary(q2, "The gpt-5 branch worked.")
    m.append_message(assistant("back"))
    m.set_session_name("mixed", "user")
    m.reset_leaf()
    m.append_message(user("second root"))
    m.branch(q2)
    m.append_message(assistant("leaf on the first branch"))
    same_everywhere(pi, on_disk(m), "sessiontree's mixed session")


def test_pi_reads_what_sessiontree_appends_to_a_pi_session(pi: Agent, work: Work) -> None:
    """A session pi wrote, continued by sessiontree (a label, a name, an exchange)."""
    answer = agent_write(pi, work.file("pi.jsonl"), work.cwd, conversation(("one", "1"), ("two", "2")))
    m = SessionManager.open(answer["path"])
    m.append_label_change(answer["ids"][0], "first")
    m.set_session_name("continued", "user")
    m.append_message(user("three"))
    m.append_message(assistant("3"))
    same_everywhere(pi, on_disk(m), "a pi session continued by sessiontree")
