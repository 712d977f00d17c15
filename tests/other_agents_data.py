"""Small Claude Code and Codex transcripts the tests write (every line kind the readers map).

Shapes follow the real files in ``../shared/fixtures/real/`` (claudecode-*, codex-*): the
same keys, nothing invented beyond values.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

CLAUDE_ID = "11111111-2222-3333-4444-555555555555"
CWD = "/work/proj"


def _c(kind: str, uuid: str | None, parent: str | None, ts: int, **extra: Any) -> dict[str, Any]:
    d: dict[str, Any] = {"parentUuid": parent, "isSidechain": False, "type": kind}
    d.update(extra)
    if uuid is not None:
        d["uuid"] = uuid
    d.update(
        {
            "timestamp": f"2026-06-13T07:{ts // 60:02d}:{ts % 60:02d}.000Z",
            "cwd": CWD,
            "sessionId": CLAUDE_ID,
            "version": "2.1.77",
            "userType": "external",
        }
    )
    return d


def user(uuid: str, parent: str | None, ts: int, text: Any, **extra: Any) -> dict[str, Any]:
    return _c("user", uuid, parent, ts, message={"role": "user", "content": text}, **extra)


def assistant(
    uuid: str, parent: str | None, ts: int, *blocks: dict[str, Any], **extra: Any
) -> dict[str, Any]:
    msg = {
        "model": "claude-opus-4-6",
        "id": f"msg_{uuid[:6]}",
        "role": "assistant",
        "type": "message",
        "content": list(blocks),
        "stop_reason": None,
        "usage": {"input_tokens": 10, "output_tokens": 5, "cache_read_input_tokens": 100},
    }
    return _c("assistant", uuid, parent, ts, message=msg, requestId="req_1", **extra)


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


def tool_use(cid: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": cid, "name": name, "input": args}


def tool_result(cid: str, content: str) -> dict[str, Any]:
    return {"tool_use_id": cid, "type": "tool_result", "content": content}


def claude_lines() -> list[Any]:
    """A Claude Code session with every kind of line: a rewind (branch), a sidechain, a
    compaction, hook progress beside a tool result, and lines without a uuid."""
    return [
        {"type": "permission-mode", "permissionMode": "default", "sessionId": CLAUDE_ID},
        {
            "type": "file-history-snapshot",
            "messageId": "u1",
            "snapshot": {
                "messageId": "u1",
                "trackedFileBackups": {},
                "timestamp": "2026-06-13T07:00:00.000Z",
            },
            "isSnapshotUpdate": False,
        },
        user("u1", None, 1, "list the files please"),
        assistant("a1", "u1", 2, {"type": "thinking", "thinking": "I should run ls", "signature": ""}),
        assistant("a2", "a1", 3, tool_use("toolu_1", "Bash", {"command": "ls -la", "description": "list"})),
        _c(
            "progress",
            "p1",
            "a2",
            4,
            data={"type": "hook_progress", "hookEvent": "PostToolUse", "hookName": "PostToolUse:Bash"},
            parentToolUseID="toolu_1",
            toolUseID="toolu_1",
        ),
        user("r1", "a2", 5, [tool_result("toolu_1", "a.txt\nb.txt")], sourceToolAssistantUUID="a2"),
        assistant("a3", "r1", 6, text("There are two files: a.txt and b.txt.")),
        _c("system", "s1", "a3", 7, subtype="turn_duration", durationMs=1234, isMeta=False),
        {"type": "ai-title", "aiTitle": "List the files", "sessionId": CLAUDE_ID},
        user("u2", "s1", 8, "now read a.txt"),
        assistant("a4", "u2", 9, tool_use("toolu_2", "Read", {"file_path": "/work/proj/a.txt"})),
        user("r2", "a4", 10, [tool_result("toolu_2", "hello")]),
        assistant("a5", "r2", 11, text("a.txt says hello.")),
        # the user rewinds to a3 and asks something else: a branch at s1
        user("u3", "s1", 12, "actually, count the lines of b.txt"),
        assistant(
            "a6", "u3", 13, tool_use("toolu_3", "Task", {"description": "count", "prompt": "wc -l b.txt"})
        ),
        # the subagent's lines (a sidechain)
        user("x1", None, 14, "wc -l b.txt", isSidechain=True),
        assistant("x2", "x1", 15, text("b.txt has 1 line."), isSidechain=True),
        user("r3", "a6", 16, [tool_result("toolu_3", "b.txt has 1 line.")]),
        assistant("a7", "r3", 17, text("b.txt has one line.")),
        # a compaction: a new root that names its logical parent, then the summary
        _c(
            "system",
            "cb1",
            None,
            18,
            subtype="compact_boundary",
            content="Conversation compacted",
            logicalParentUuid="a7",
            compactMetadata={"trigger": "manual", "preTokens": 4242},
        ),
        user(
            "cs1",
            "cb1",
            19,
            "This session is being continued from a previous conversation. Summary: files listed.",
            isCompactSummary=True,
            isVisibleInTranscriptOnly=True,
        ),
        user("m1", "cs1", 20, "<local-command-stdout>ok</local-command-stdout>", isMeta=True),
        user("u4", "m1", 21, "thanks, that is all"),
        assistant("a8", "u4", 22, text("You're welcome.")),
        {
            "type": "last-prompt",
            "lastPrompt": "thanks, that is all",
            "leafUuid": "a8",
            "sessionId": CLAUDE_ID,
        },
    ]


def write_jsonl(path: Path, values: list[Any], damaged_at: int | None = None) -> Path:
    lines = [json.dumps(v, ensure_ascii=False) for v in values]
    if damaged_at is not None:
        lines.insert(damaged_at, '{"parentUuid": "a1", "uuid": "broken", "type": "user", "mess')
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


CODEX_ID = "019edda8-7eca-7710-b78b-6ce7607beaa1"
CODEX_FORK_ID = "019edda9-0000-7000-8000-000000000001"
CODEX_CHILD_ID = "019eddaa-3bb4-7da3-8f6f-2bb5e10f4e42"


def _x(ts: int, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {"timestamp": f"2026-06-19T02:15:{ts:02d}.000Z", "type": kind, "payload": payload}


def codex_lines(
    sid: str = CODEX_ID, *, forked_from: str | None = None, parent_thread: str | None = None
) -> list[Any]:
    """A Codex rollout with every kind of line (a fork or subagent thread when asked)."""
    meta: dict[str, Any] = {
        "id": sid,
        "timestamp": "2026-06-19T02:14:27.831Z",
        "cwd": CWD,
        "originator": "codex_cli_rs",
        "cli_version": "0.140.0",
    }
    if forked_from is not None:
        meta["forked_from_id"] = forked_from
    if parent_thread is not None:
        meta["source"] = {"subagent": {"thread_spawn": {"parent_thread_id": parent_thread, "depth": 1}}}
    return [
        _x(0, "session_meta", meta),
        _x(1, "event_msg", {"type": "task_started", "turn_id": "t1"}),
        _x(
            2,
            "response_item",
            {
                "type": "message",
                "role": "developer",
                "content": [{"type": "input_text", "text": "<permissions instructions>"}],
            },
        ),
        _x(3, "turn_context", {"turn_id": "t1", "cwd": CWD, "model": "gpt-5.5"}),
        _x(
            4,
            "response_item",
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "count the files"}],
            },
        ),
        _x(5, "event_msg", {"type": "user_message", "message": "count the files"}),
        _x(
            6,
            "response_item",
            {
                "type": "reasoning",
                "summary": [{"type": "summary_text", "text": "**Counting** with ls"}],
                "encrypted_content": "gAAA",
            },
        ),
        _x(7, "response_item", {"type": "reasoning", "summary": [], "encrypted_content": "gAAB"}),
        _x(
            8,
            "response_item",
            {
                "type": "function_call",
                "name": "exec_command",
                "arguments": '{"cmd":"ls | wc -l"}',
                "call_id": "call_1",
            },
        ),
        _x(9, "response_item", {"type": "function_call_output", "call_id": "call_1", "output": "2\n"}),
        _x(
            10,
            "response_item",
            {
                "type": "custom_tool_call",
                "name": "apply_patch",
                "input": "*** Begin Patch",
                "call_id": "call_2",
            },
        ),
        _x(11, "response_item", {"type": "custom_tool_call_output", "call_id": "call_2", "output": "Done"}),
        _x(12, "event_msg", {"type": "token_count", "info": {"total_token_usage": {"input_tokens": 10}}}),
        _x(13, "compacted", {"message": "The user asked to count files; there are 2."}),
        _x(
            14,
            "response_item",
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "There are 2 files."}],
            },
        ),
        _x(15, "event_msg", {"type": "task_complete", "turn_id": "t1"}),
    ]
