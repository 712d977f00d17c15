"""pi 1.6 writes, sessiontree reads (issue 31, theirs → ours).

pi's own SessionManager (tests/compat/pi/harness.mjs) writes a session with each kind of
step it has, then sessiontree and pi each open the file: the normalized states
(tests/compat/state.py) must be equal, at the leaf and with the leaf moved to every entry,
and neither open may change the file's bytes. Failures here are the differences between
pi 1.6's dialect and sessiontree's reader (/work/brief/pi16-dialect.md has pi's rules).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from compat.conftest import Work
from compat.pi_messages import (
    LARGE_PNG,
    assistant,
    bash_execution,
    conversation,
    custom,
    image,
    msg,
    step,
    system,
    text,
    thinking,
    tool_call,
    tool_decl,
    tool_result,
    usage,
    user,
    user_blocks,
)
from compat.state import Agent, agent_load, agent_write, assert_read_alike, assert_same_state, our_state


def written_by_pi(pi: Agent, work: Work, steps: list[dict[str, Any]], **kw: Any) -> dict[str, Any]:
    answer = agent_write(pi, work.file("pi.jsonl"), work.cwd, steps, **kw)
    assert answer["written"], "pi wrote no file (a script needs a user or assistant message)"
    return answer


def same_everywhere(pi: Agent, path: str | Path, what: str) -> None:
    """Both readers agree on `path` at its leaf and at every entry as the leaf."""
    assert_read_alike(pi, path, what)


BASE = conversation(("hello", "hi there"))

# Every kind of step pi 1.6's SessionManager writes, after a short conversation.
KINDS: dict[str, list[dict[str, Any]]] = {
    "user_text": [*BASE, msg(user("and again"))],
    "user_blocks": [*BASE, msg(user_blocks(text("look"), text("twice")))],
    "image_small_inline": [*BASE, msg(user_blocks(text("this one"), image()))],
    "image_large_inline": [*BASE, msg(user_blocks(text("this one"), image(LARGE_PNG)))],
    "assistant_thinking_tool_call_result": [
        *BASE,
        msg(user("read it")),
        msg(assistant(thinking("let me read"), "reading", tool_call("c1"))),
        msg(tool_result("c1", "file body")),
        msg(assistant("done")),
    ],
    "tool_result_image_error": [
        *BASE,
        msg(assistant(tool_call("c2", "screenshot"))),
        msg(tool_result("c2", "failed", image(), name="screenshot", error=True)),
    ],
    "assistant_aborted": [
        *BASE,
        msg(user("long task")),
        msg(assistant("partial", stop="aborted")),
        msg(user("retry")),
    ],
    "assistant_error": [
        *BASE,
        msg(user("task")),
        msg(assistant(stop="error", error="overloaded_error: Overloaded")),
    ],
    "orphan_tool_call": [
        *BASE,
        msg(assistant(tool_call("c3", "bash", command="ls"))),
        msg(user("never mind")),
    ],
    "system_messages": [
        msg(
            system("You are pi.", {"tools": "<tools/>", "cwd": "/p"}, [tool_decl("read"), tool_decl("write")])
        ),
        *BASE,
        msg(system("", {"cwd": None, "skills": "<skills/>"}, [tool_decl("grep")], ["write"])),
        msg(user("next")),
    ],
    "custom_role_message": [*BASE, msg(custom("ext", "injected", True, {"k": 1}))],
    "bash_execution": [
        *BASE,
        msg(bash_execution("ls", "a\nb")),
        msg(bash_execution("false", "", 1)),
        msg(bash_execution("secret", "x", 0, excludeFromContext=True)),
    ],
    "model_change": [*BASE, {"op": "model_change", "provider": "openai", "modelId": "gpt-5"}],
    "model_change_then_assistant": [
        *BASE,
        {"op": "model_change", "provider": "openai", "modelId": "gpt-5"},
        msg(user("q")),
        msg(assistant("a", provider="openai", model="gpt-5-mini")),
    ],
    "model_change_first": [{"op": "model_change", "provider": "openai", "modelId": "gpt-5"}, msg(user("q"))],
    "thinking_level": [*BASE, {"op": "thinking_level", "level": "high"}],
    "thinking_level_null": [*BASE, {"op": "thinking_level", "level": None}],
    "usage_entry": [
        *BASE,
        {
            "op": "usage",
            "kind": "cache_warm",
            "provider": "anthropic",
            "model": "claude-sonnet-4-5",
            "usage": usage(),
        },
        {
            "op": "usage",
            "kind": "x",
            "provider": "openai",
            "model": "gpt-5",
            "usage": usage(5),
            "note": "extension",
        },
    ],
    "compaction": [
        *conversation(("one", "1"), ("two", "2")),
        {"op": "compaction", "summary": "we counted", "firstKeptEntryId": step(2), "tokensBefore": 1200},
        msg(user("three")),
    ],
    "compaction_retain_none": [
        *conversation(("one", "1"), ("two", "2")),
        {"op": "compaction", "summary": "all of it", "tokensBefore": 900},
        msg(user("three")),
    ],
    "compaction_system_message_usage_hook": [
        msg(system("You are pi.", {"tools": "<tools/>"}, [tool_decl("read")])),
        *conversation(("one", "1")),
        msg(system("", {"skills": "<skills/>"})),
        *conversation(("two", "2")),
        {
            "op": "compaction",
            "summary": "summary by an extension",
            "firstKeptEntryId": step(3),
            "tokensBefore": 5000,
            "details": {"readFiles": ["a.py"], "modifiedFiles": []},
            "fromHook": True,
            "usage": usage(77),
        },
        msg(user("after")),
    ],
    "two_compactions": [
        *conversation(("one", "1"), ("two", "2")),
        {"op": "compaction", "summary": "first", "firstKeptEntryId": step(2), "tokensBefore": 100},
        *conversation(("three", "3")),
        {"op": "compaction", "summary": "second", "firstKeptEntryId": step(4), "tokensBefore": 200},
        msg(user("four")),
    ],
    "custom_entry": [*BASE, {"op": "custom_entry", "customType": "my-ext", "data": {"count": 42}}],
    "custom_message": [
        *BASE,
        {
            "op": "custom_message",
            "customType": "note",
            "content": "hidden",
            "display": False,
            "details": {"a": 1},
        },
        {"op": "custom_message", "customType": "note", "content": [text("shown"), image()], "display": True},
    ],
    "session_info": [*BASE, {"op": "session_info", "name": "Refactor auth\nmodule"}],
    "session_info_cleared": [
        *BASE,
        {"op": "session_info", "name": "named"},
        {"op": "session_info", "name": ""},
    ],
    "context_edit_replace": [
        *conversation(("secret token 123", "noted"), ("go on", "ok")),
        {"op": "context_edit", "targetId": step(0), "replacement": {"content": "[redacted]"}},
        {"op": "context_edit", "targetId": step(1), "replacement": {"content": "(shortened)"}},
        msg(user("next")),
    ],
    "context_edit_omit": [
        *conversation(("one", "1"), ("two", "2")),
        {"op": "context_edit", "targetId": step(2), "replacement": None},
        {"op": "context_edit", "targetId": step(0), "replacement": {"content": "first edit"}},
        {"op": "context_edit", "targetId": step(0), "replacement": {"content": [text("second edit wins")]}},
    ],
    "context_edit_custom_message_and_tool_result": [
        *BASE,
        {"op": "custom_message", "customType": "note", "content": "long note", "display": True},
        msg(assistant(tool_call("c4"))),
        msg(tool_result("c4", "huge output")),
        {"op": "context_edit", "targetId": step(2), "replacement": {"content": "short note"}},
        {"op": "context_edit", "targetId": step(4), "replacement": {"content": "trimmed"}},
    ],
    "context_edit_branch_relative": [
        *conversation(("one", "1")),
        {"op": "context_edit", "targetId": step(0), "replacement": None},
        msg(user("after the edit")),
        {"op": "branch", "id": step(1)},
        msg(user("other branch, edit not on the path")),
    ],
    "context_edit_in_compaction_kept_range": [
        *conversation(("one", "1"), ("two", "2")),
        {"op": "context_edit", "targetId": step(2), "replacement": {"content": "edited two"}},
        {"op": "compaction", "summary": "s", "firstKeptEntryId": step(2), "tokensBefore": 10},
        msg(user("three")),
    ],
    "label_set": [*BASE, {"op": "label", "targetId": step(0), "label": "start"}],
    "label_cleared": [
        *BASE,
        {"op": "label", "targetId": step(0), "label": "start"},
        {"op": "label", "targetId": step(1), "label": "kept"},
        {"op": "label", "targetId": step(0)},
    ],
    "branch": [
        *conversation(("one", "1"), ("two", "2")),
        {"op": "branch", "id": step(1)},
        *conversation(("two again", "2b")),
    ],
    "branch_leaf_in_middle": [
        *conversation(("one", "1"), ("two", "2")),
        {"op": "branch", "id": step(1)},
    ],
    "reset_leaf_second_root": [*BASE, {"op": "reset_leaf"}, *conversation(("fresh start", "ok"))],
    "branch_with_summary": [
        *conversation(("one", "1"), ("two", "2")),
        {
            "op": "branch_with_summary",
            "branchFromId": step(1),
            "summary": "We tried two.",
            "details": {"readFiles": [], "modifiedFiles": ["x"]},
            "fromHook": False,
            "usage": usage(12),
        },
        msg(user("two, differently")),
    ],
    "branch_with_summary_from_root": [
        *BASE,
        {"op": "branch_with_summary", "branchFromId": None, "summary": "Started over."},
        msg(user("new first")),
    ],
}


@pytest.mark.parametrize("kind", list(KINDS))
def test_each_kind_of_step(pi: Agent, work: Work, kind: str) -> None:
    path = written_by_pi(pi, work, KINDS[kind])["path"]
    same_everywhere(pi, path, f"pi's {kind} session")


def test_a_long_mixed_script_with_branches(pi: Agent, work: Work) -> None:
    steps: list[dict[str, Any]] = [
        msg(system("You are pi.", {"tools": "<tools/>"}, [tool_decl("read"), tool_decl("bash")])),  # 0
        {"op": "model_change", "provider": "anthropic", "modelId": "claude-sonnet-4-5"},  # 1
        {"op": "thinking_level", "level": "medium"},  # 2
        msg(user("fix the bug")),  # 3
        msg(assistant(thinking("look first"), tool_call("m1", "read", path="a.py"))),  # 4
        msg(tool_result("m1", "def f(): pass")),  # 5
        msg(assistant("found it", tool_call("m2", "bash", command="pytest"))),  # 6
        msg(tool_result("m2", "1 failed", name="bash", error=True)),  # 7
        {"op": "label", "targetId": step(6), "label": "first try"},  # 8
        msg(bash_execution("git diff", "+x")),  # 9
        {"op": "session_info", "name": "bug hunt"},  # 10
        msg(user("try another way")),  # 11
        msg(assistant("partial", stop="aborted")),  # 12
        {"op": "branch", "id": step(7)},  # 13
        {"op": "model_change", "provider": "openai", "modelId": "gpt-5"},  # 14
        msg(user("use the other model")),  # 15
        msg(assistant("ok", provider="openai", model="gpt-5")),  # 16
        {"op": "context_edit", "targetId": step(5), "replacement": {"content": "(file elided)"}},  # 17
        {"op": "custom_entry", "customType": "state", "data": {"n": 1}},  # 18
        {"op": "custom_message", "customType": "hint", "content": "remember tests", "display": True},  # 19
        {
            "op": "compaction",
            "summary": "fixed in gpt-5 branch",
            "firstKeptEntryId": step(15),
            "tokensBefore": 3000,
        },
        msg(user("after compaction")),  # 21
        {"op": "usage", "kind": "cache_warm", "provider": "openai", "model": "gpt-5", "usage": usage()},  # 22
        {
            "op": "branch_with_summary",
            "branchFromId": step(11),
            "summary": "The gpt-5 branch fixed it.",
            "usage": usage(3),
        },  # 23
        {"op": "thinking_level", "level": "off"},  # 24
        msg(user("back on the first branch")),  # 25
        msg(assistant("sure")),  # 26
        {"op": "label", "targetId": step(8), "label": "label on a label"},  # 27
        {"op": "session_info", "name": "bug hunt, two branches"},  # 28
        {"op": "reset_leaf"},  # 29
        msg(user("a second root")),  # 30
        {"op": "branch", "id": step(26)},  # 31
        msg(user("leaf back on the first branch")),  # 32
    ]
    path = written_by_pi(pi, work, steps)["path"]
    same_everywhere(pi, path, "pi's mixed session")


def test_create_branched_session(pi: Agent, work: Work) -> None:
    steps: list[dict[str, Any]] = [
        *conversation(("one", "1")),
        {"op": "label", "targetId": step(0), "label": "start"},
        *conversation(("two", "2"), ("three", "3")),
        {"op": "label", "targetId": step(5), "label": "three"},
        {"op": "create_branched_session", "leafId": step(4)},
    ]
    answer = written_by_pi(pi, work, steps)
    assert Path(answer["path"]) != work.file("pi.jsonl"), "pi made a new file"
    same_everywhere(pi, answer["path"], "pi's branched session")


def test_fork_from(pi: Agent, work: Work) -> None:
    source = written_by_pi(pi, work, [*conversation(("one", "1")), {"op": "session_info", "name": "src"}])[
        "path"
    ]
    answer = agent_write(pi, work.file("fork.jsonl"), work.cwd, [msg(user("in the fork"))], fork_from=source)
    same_everywhere(pi, answer["path"], "pi's forked session")


def test_a_pi_file_without_trailing_newline(pi: Agent, work: Work) -> None:
    """pi's open appends the missing newline (session-manager.js 367-368), sessiontree's does
    not; both read the same session."""
    path = Path(written_by_pi(pi, work, BASE)["path"])
    path.write_bytes(path.read_bytes().rstrip(b"\n"))
    ours = our_state(path, every_leaf=True)
    theirs = agent_load(pi, path, every_leaf=True)
    assert ours["bytesUnchanged"] is True
    assert theirs["bytesUnchanged"] is False and path.read_bytes().endswith(b"}\n")
    theirs["bytesUnchanged"] = True  # pi's repair is pi's; the states must still agree
    assert_same_state(ours, theirs, pi, "a pi session whose last line has no newline")
