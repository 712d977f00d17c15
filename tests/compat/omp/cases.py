"""What the omp half of the compatibility suite writes: messages of every role omp 18 holds,
and the harness steps for every write operation of omp's SessionManager (tests/compat/omp/
harness.ts lists them). Shared by the tests/compat/test_omp_*.py files.

Steps refer to entries already in the file with ``{"$entry": n}`` (file order, negative from
the end) and to the ids of earlier steps of the same request with ``{"$step": n}``, so a case
runs the same on a file omp started and on one sessiontree started.
"""

from __future__ import annotations

import base64
from typing import Any

__all__ = [
    "BASE_STEPS",
    "CASES",
    "LONG_SCRIPT",
    "USAGE",
    "assistant",
    "bash_execution",
    "big_image",
    "small_image",
    "tool_result",
    "user",
]

USAGE: dict[str, Any] = {
    "input": 120,
    "output": 30,
    "cacheRead": 0,
    "cacheWrite": 0,
    "totalTokens": 150,
    "cost": {"input": 0.0012, "output": 0.0009, "cacheRead": 0, "cacheWrite": 0, "total": 0.0021},
}

#: A PNG-sized payload: base64 of 1024 characters and more goes to the blob store (both agents).
big_image: dict[str, Any] = {
    "type": "image",
    "data": base64.b64encode(bytes(range(256)) * 6).decode(),
    "mimeType": "image/png",
}
#: Below the blob threshold: stays inline.
small_image: dict[str, Any] = {
    "type": "image",
    "data": base64.b64encode(b"tiny png").decode(),
    "mimeType": "image/png",
}


def user(text: str, ts: int = 1_767_225_600_000, images: tuple[dict[str, Any], ...] = ()) -> dict[str, Any]:
    content: Any = [{"type": "text", "text": text}, *images] if images else text
    return {"role": "user", "content": content, "timestamp": ts}


def assistant(
    text: str,
    stop: str = "stop",
    calls: tuple[str, ...] = (),
    *,
    provider: str = "anthropic",
    model: str = "claude-sonnet-4-5",
    ts: int = 1_767_225_601_000,
    error: str | None = None,
) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    content += [
        {"type": "toolCall", "id": c, "name": "read", "arguments": {"path": f"{c}.txt"}} for c in calls
    ]
    msg: dict[str, Any] = {
        "role": "assistant",
        "content": content,
        "api": "anthropic-messages",
        "provider": provider,
        "model": model,
        "usage": USAGE,
        "stopReason": stop,
        "timestamp": ts,
    }
    if error is not None:
        msg["errorMessage"] = error
    return msg


def tool_result(
    call_id: str, text: str, is_error: bool = False, ts: int = 1_767_225_602_000
) -> dict[str, Any]:
    return {
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": "read",
        "content": [{"type": "text", "text": text}],
        "isError": is_error,
        "timestamp": ts,
    }


def bash_execution(command: str, output: str, ts: int = 1_767_225_603_000) -> dict[str, Any]:
    return {
        "role": "bashExecution",
        "command": command,
        "output": output,
        "exitCode": 0,
        "cancelled": False,
        "truncated": False,
        "timestamp": ts,
    }


def _msg(message: dict[str, Any]) -> dict[str, Any]:
    return {"op": "message", "message": message}


FIRST: dict[str, Any] = {"$entry": 0}
"""The base's first user message."""
ANSWER: dict[str, Any] = {"$entry": 1}
"""The base's first assistant message."""

#: Every case starts from this conversation (written by omp or by sessiontree).
BASE_STEPS: list[dict[str, Any]] = [_msg(user("What is in a.txt?")), _msg(assistant("Let me answer."))]

_MODEL_USAGE: dict[str, Any] = {
    "purpose": "title",
    "role": "smol",
    "api": "anthropic-messages",
    "provider": "anthropic",
    "model": "claude-haiku-4-5",
    "usage": USAGE,
    "stopReason": "stop",
}

#: One case per kind of thing omp's SessionManager writes: the steps after the base.
CASES: dict[str, list[dict[str, Any]]] = {
    "user_text": [_msg(user("and b.txt?", 1_767_225_700_000))],
    "user_small_image": [_msg(user("look", 1_767_225_700_000, (small_image,)))],
    "user_blob_image": [_msg(user("look at this", 1_767_225_700_000, (big_image,)))],
    "assistant_tool_call_and_result": [
        _msg(user("read it", 1_767_225_700_000)),
        _msg(assistant("Reading.", "toolUse", ("c1",), ts=1_767_225_701_000)),
        _msg(tool_result("c1", "contents of a")),
        _msg(assistant("It says: contents of a.", ts=1_767_225_703_000)),
    ],
    "tool_result_with_image": [
        _msg(user("screenshot", 1_767_225_700_000)),
        _msg(assistant("", "toolUse", ("c1",), ts=1_767_225_701_000)),
        _msg({**tool_result("c1", "png"), "content": [{"type": "text", "text": "png"}, big_image]}),
    ],
    "assistant_aborted_with_synthetic_results": [
        _msg(user("do two things", 1_767_225_700_000)),
        _msg(
            assistant("Starting.", "aborted", ("c1", "c2"), ts=1_767_225_701_000, error="Interrupted by user")
        ),
        _msg(tool_result("c1", "Tool execution was aborted.", True)),
        _msg(tool_result("c2", "Tool execution was aborted.", True)),
        _msg(user("never mind", 1_767_225_710_000)),
    ],
    "assistant_error_partial": [
        _msg(user("go", 1_767_225_700_000)),
        _msg(assistant("Half an answer", "error", ts=1_767_225_701_000, error="overloaded")),
        _msg(user("again", 1_767_225_710_000)),
    ],
    "assistant_error_empty": [
        _msg(user("go", 1_767_225_700_000)),
        _msg(assistant("", "error", ts=1_767_225_701_000, error="413 request too large")),
    ],
    "tool_call_without_result": [
        _msg(user("read two", 1_767_225_700_000)),
        _msg(assistant("Reading both.", "toolUse", ("c1", "c2"), ts=1_767_225_701_000)),
        _msg(tool_result("c1", "one")),
        _msg(user("stop there", 1_767_225_710_000)),
    ],
    "developer_message": [
        _msg({"role": "developer", "content": "Be brief.", "timestamp": 1_767_225_700_000})
    ],
    "custom_role_message": [
        _msg(
            {
                "role": "custom",
                "customType": "skill-prompt",
                "content": "Use the skill.",
                "display": True,
                "attribution": "user",
                "timestamp": 1_767_225_700_000,
            }
        )
    ],
    "bash_execution": [_msg(bash_execution("ls", "a.txt\nb.txt"))],
    "python_execution": [
        _msg(
            {
                "role": "pythonExecution",
                "code": "print(1)",
                "output": "1",
                "exitCode": 0,
                "cancelled": False,
                "truncated": False,
                "timestamp": 1_767_225_700_000,
            }
        )
    ],
    "file_mention": [
        _msg(
            {
                "role": "fileMention",
                "files": [{"path": "a.txt", "content": "hello", "lineCount": 1}],
                "timestamp": 1,
            }
        )
    ],
    "message_to_branch": [
        {"op": "message_to_branch", "message": user("side question", 1_767_225_700_000), "parentId": FIRST}
    ],
    "thinking_level": [{"op": "thinking_level", "level": "high", "configured": "auto"}],
    "thinking_level_none": [{"op": "thinking_level"}],
    "model_change_default": [
        {"op": "model_change", "model": "openai/gpt-5", "role": "default"},
        _msg(assistant("From gpt-5.", provider="openai", model="gpt-5", ts=1_767_225_702_000)),
    ],
    "model_change_without_role": [{"op": "model_change", "model": "openai/gpt-5"}],
    "model_change_role_smol": [{"op": "model_change", "model": "anthropic/claude-haiku-4-5", "role": "smol"}],
    "model_change_fallback": [
        {"op": "model_change", "model": "google/gemini-2.5-pro", "role": "fallback", "fallback": True}
    ],
    "service_tier": [{"op": "service_tier", "serviceTier": {"openai": "flex", "anthropic": "priority"}}],
    "service_tier_cleared": [{"op": "service_tier", "serviceTier": None}],
    "mode_change": [{"op": "mode_change", "mode": "plan", "data": {"planFile": "PLAN.md"}}],
    "session_init": [
        {
            "op": "session_init",
            "init": {
                "systemPrompt": "You are a scout.",
                "task": "find x",
                "tools": ["read", "grep"],
                "agent": "scout",
            },
        }
    ],
    "compaction": [
        _msg(user("more", 1_767_225_700_000)),
        _msg(assistant("More.", ts=1_767_225_701_000)),
        {
            "op": "compaction",
            "summary": "The user asked about a.txt.",
            "firstKeptEntryId": {"$step": 0},
            "tokensBefore": 12000,
        },
        _msg(user("after", 1_767_225_720_000)),
    ],
    "compaction_omp_fields": [
        _msg(user("more", 1_767_225_700_000)),
        {
            "op": "compaction",
            "summary": "Summary.",
            "shortSummary": "a.txt question",
            "firstKeptEntryId": {"$step": 0},
            "tokensBefore": 12000,
            "options": {
                "tokensAfter": 3000,
                "method": "soft",
                "details": {"readFiles": ["a.txt"]},
                "fromExtension": False,
            },
        },
    ],
    "compaction_remote_payload": [
        _msg(user("more", 1_767_225_700_000)),
        {
            "op": "compaction",
            "summary": "Remote summary.",
            "firstKeptEntryId": {"$step": 0},
            "tokensBefore": 9000,
            "options": {
                "preserveData": {
                    "openaiRemoteCompaction": {
                        "provider": "openai",
                        "replacementHistory": [{"type": "message", "role": "user", "content": "kept"}],
                    }
                }
            },
        },
    ],
    "reset_boundary": [
        {"op": "reset_boundary"},
        _msg(user("fresh start", 1_767_225_700_000)),
        _msg(assistant("Hello again.", ts=1_767_225_701_000)),
    ],
    "reset_boundary_then_compaction": [
        {"op": "reset_boundary"},
        _msg(user("fresh", 1_767_225_700_000)),
        {
            "op": "compaction",
            "summary": "After the clear.",
            "firstKeptEntryId": {"$step": 1},
            "tokensBefore": 500,
        },
    ],
    "custom_entry": [{"op": "custom_entry", "customType": "todo", "data": {"items": ["a", "b"]}}],
    # (omp's experimental, opt-in context notes are not here: omp renders them through its
    # own prompt template engine, which sessiontree does not reproduce; docs/storage-format.md)
    "custom_message_shown": [
        {
            "op": "custom_message",
            "customType": "lsp-late-diagnostic",
            "content": "error at 3:1",
            "display": True,
        }
    ],
    "custom_message_hidden_with_details": [
        {
            "op": "custom_message",
            "customType": "reminder",
            "content": [{"type": "text", "text": "hidden"}],
            "display": False,
            "details": {"k": 1},
            "attribution": "user",
        }
    ],
    "custom_message_prewalk_plan": [
        {"op": "custom_message", "customType": "prewalk-plan", "content": "plan text", "display": False}
    ],
    "ttsr_injection": [{"op": "ttsr_injection", "rules": ["no-console", "tests-first"]}],
    "credential_pin": [{"op": "credential_pin", "provider": "anthropic", "hash": "9f86d081884c7d65"}],
    "model_usage": [{"op": "model_usage", "usage": _MODEL_USAGE}],
    "model_usage_on_an_earlier_entry": [{"op": "model_usage", "usage": _MODEL_USAGE, "parentId": FIRST}],
    "label": [{"op": "label", "targetId": FIRST, "label": "question"}],
    "label_cleared": [
        {"op": "label", "targetId": FIRST, "label": "question"},
        {"op": "label", "targetId": FIRST},
    ],
    "title_user": [{"op": "title", "title": "Reading a.txt"}],
    "title_auto_then_user": [
        {"op": "title", "title": "auto title", "source": "auto"},
        {"op": "title", "title": "My title", "source": "user", "trigger": "rename"},
        {"op": "title", "title": "ignored auto title", "source": "auto"},
    ],
    "title_long_multibyte": [{"op": "title", "title": "日本語のとても長いセッションのタイトル" * 8}],
    "branch": [
        {"op": "branch", "id": FIRST},
        _msg(assistant("Another answer.", ts=1_767_225_700_000)),
    ],
    "reset_leaf": [{"op": "reset_leaf"}, _msg(user("a new root", 1_767_225_700_000))],
    "branch_with_summary": [
        {"op": "branch_with_summary", "branchFromId": FIRST, "summary": "Tried the answer; abandoned."},
        _msg(assistant("Second try.", ts=1_767_225_700_000)),
    ],
    "branch_with_summary_at_root": [
        {"op": "branch_with_summary", "branchFromId": None, "summary": "Started over.", "details": {"n": 1}}
    ],
    "discard_entry": [
        _msg(assistant("A dead turn.", ts=1_767_225_700_000)),
        {"op": "discard_entry", "id": {"$step": 0}},
    ],
    "rewrite": [{"op": "rewrite"}],
    "create_branched_session": [
        {"op": "label", "targetId": FIRST, "label": "kept"},
        _msg(user("later", 1_767_225_700_000)),
        {"op": "create_branched_session", "leafId": ANSWER},
    ],
    "fork": [{"op": "fork"}, _msg(user("in the fork", 1_767_225_700_000))],
}

#: A longer session with every kind mixed and three branches.
LONG_SCRIPT: list[dict[str, Any]] = [
    {"op": "model_change", "model": "anthropic/claude-sonnet-4-5", "role": "default"},  # 0
    {"op": "thinking_level", "level": "medium", "configured": "medium"},  # 1
    _msg(user("Fix the bug in a.py", 1_767_225_700_000)),  # 2
    _msg(assistant("Reading.", "toolUse", ("c1",), ts=1_767_225_701_000)),  # 3
    _msg(tool_result("c1", "def f(): return 1")),  # 4
    {"op": "title", "title": "Fix the bug in a.py", "source": "auto"},  # 5
    _msg(assistant("Fixed.", ts=1_767_225_703_000)),  # 6
    {"op": "label", "targetId": {"$step": 2}, "label": "task"},  # 7
    {"op": "model_usage", "usage": _MODEL_USAGE},  # 8
    {"op": "credential_pin", "provider": "anthropic", "hash": "abc123"},  # 9
    _msg(user("Now add a test", 1_767_225_710_000)),  # 10
    _msg(assistant("Aborting.", "aborted", ("c2",), ts=1_767_225_711_000)),  # 11
    _msg(tool_result("c2", "Tool execution was aborted.", True)),  # 12
    {"op": "branch", "id": {"$step": 6}},  # 13
    _msg(user("Add a test, with pytest", 1_767_225_720_000)),  # 14
    {"op": "mode_change", "mode": "plan"},  # 15
    _msg(assistant("Plan: write test_a.py", ts=1_767_225_721_000)),  # 16
    {
        "op": "compaction",
        "summary": "Bug fixed; planning a test.",
        "firstKeptEntryId": {"$step": 14},
        "tokensBefore": 40000,
    },  # 17
    {
        "op": "custom_message",
        "customType": "reminder",
        "content": "tests live in tests/",
        "display": True,
    },  # 18
    _msg(bash_execution("pytest -q", "1 passed", 1_767_225_730_000)),  # 19
    {
        "op": "branch_with_summary",
        "branchFromId": {"$step": 6},
        "summary": "Tried a test first; dropped it.",
    },  # 20
    {"op": "reset_boundary"},  # 21
    _msg(user("Different question: what is b.py?", 1_767_225_740_000)),  # 22
    _msg(assistant("b.py holds helpers.", provider="openai", model="gpt-5", ts=1_767_225_741_000)),  # 23
    {"op": "label", "targetId": {"$step": 22}, "label": "b"},  # 24
    {"op": "title", "title": "a.py and b.py", "source": "user"},  # 25
]
