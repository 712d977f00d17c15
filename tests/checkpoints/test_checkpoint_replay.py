"""The replay's rules on each agent's shapes (core/checkpoints/replay.py): what makes a file
known, absent or unknown at a node."""

from __future__ import annotations

from typing import Any

import pytest
from sessiontree.core.checkpoints.replay import ABSENT, KNOWN, UNKNOWN, replay_entries
from sessiontree.core.checkpoints.shell import reads_only

CWD = "/w"


def _call(eid: str, cid: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "message",
        "id": eid,
        "message": {
            "role": "assistant",
            "content": [{"type": "toolCall", "id": cid, "name": name, "arguments": args}],
        },
    }


def _result(eid: str, cid: str, text: str = "ok", error: bool = False, details: Any = None) -> dict[str, Any]:
    msg: dict[str, Any] = {
        "role": "toolResult",
        "toolCallId": cid,
        "content": [{"type": "text", "text": text}],
        "isError": error,
    }
    if details is not None:
        msg["details"] = details
    return {"type": "message", "id": eid, "message": msg}


def _run(*entries: dict[str, Any]) -> Any:
    return replay_entries(list(enumerate(entries)), CWD)


def test_write_then_edit_then_a_failed_edit() -> None:
    r = _run(
        _call("a1", "c1", "write", {"path": "f.py", "content": "x = 1\n"}),
        _result("r1", "c1"),
        _call("a2", "c2", "edit", {"path": "f.py", "edits": [{"oldText": "x = 1", "newText": "x = 2"}]}),
        _result("r2", "c2"),
        _call("a3", "c3", "edit", {"path": "f.py", "oldText": "nothing", "newText": "y"}),
        _result("r3", "c3", "Could not find", error=True),
    )
    assert r.state_at("/w/f.py", 1).content == "x = 1\n"
    assert r.state_at("/w/f.py", 3).content == "x = 2\n"
    assert r.state_at("/w/f.py", 5).content == "x = 2\n"  # a failed call changes nothing
    assert r.state_at("/w/f.py", 0).status == UNKNOWN  # before the write: not seen


def test_a_command_makes_files_unknown_and_a_later_read_tells_them_back_to_it() -> None:
    r = _run(
        _call("a1", "c1", "write", {"path": "f.py", "content": "1\n"}),
        _result("r1", "c1"),
        _call("a2", "c2", "bash", {"command": "make gen"}),
        _result("r2", "c2"),
        _call("a3", "c3", "bash", {"command": "ls -la && git status"}),
        _result("r3", "c3"),
        _call("a4", "c4", "read", {"path": "f.py"}),
        _result("r4", "c4", "generated\n"),
    )
    assert r.state_at("/w/f.py", 1).content == "1\n"
    # from the command on (the read-only one changes nothing) the file was what the read shows
    assert [r.state_at("/w/f.py", p).content for p in (3, 5, 7)] == ["generated\n"] * 3
    assert [c for _, _, c in r.commands] == ["make gen"]


def test_a_partial_read_is_no_evidence() -> None:
    r = _run(
        _call("a1", "c1", "read", {"path": "f.py", "offset": 10, "limit": 5}),
        _result("r1", "c1", "part"),
        _call("a2", "c2", "read", {"path": "g.py"}),
        _result("r2", "c2", "cut", details={"truncation": {"truncated": True}}),
    )
    assert r.state_at("/w/f.py", 3).status == UNKNOWN and r.state_at("/w/g.py", 3).status == UNKNOWN


def test_oh_my_pi_18_results_carry_the_whole_file() -> None:
    r = _run(
        _call("a1", "c1", "edit", {"path": "/w/h.ts", "input": "\u00a7/w/h.ts\n\u22541ab\nnew\n"}),
        _result(
            "r1",
            "c1",
            details={"path": "/w/h.ts", "oldText": "old\n", "newText": "new\n", "diff": "-1|old\n+1|new"},
        ),
        _call(
            "a2",
            "c2",
            "edit",
            {"path": "/w/gone.ts", "input": "*** Begin Patch\n*** Delete File: /w/gone.ts\n*** End Patch"},
        ),
        _result("r2", "c2", details={"path": "/w/gone.ts", "oldText": "bye\n", "op": "delete"}),
    )
    assert r.state_at("/w/h.ts", 0).content == "old\n"  # the file before the call, from its result
    assert r.state_at("/w/h.ts", 1).content == "new\n"
    assert r.state_at("/w/gone.ts", 3).status == ABSENT and r.state_at("/w/gone.ts", 2).content == "bye\n"


def test_claude_code_original_file_and_write() -> None:
    r = _run(
        _call(
            "a1",
            "c1",
            "edit",
            {"file_path": "/w/c.py", "old_string": "a", "new_string": "b", "replace_all": True},
        ),
        _result(
            "r1",
            "c1",
            details={"filePath": "/w/c.py", "originalFile": "a a\n", "oldString": "a", "newString": "b"},
        ),
        _call("a2", "c2", "write", {"file_path": "/w/n.py", "content": "n\n"}),
        _result(
            "r2",
            "c2",
            details={"type": "create", "filePath": "/w/n.py", "content": "n\n", "originalFile": None},
        ),
    )
    assert r.state_at("/w/c.py", 0).content == "a a\n" and r.state_at("/w/c.py", 1).content == "b b\n"
    assert r.state_at("/w/n.py", 2).status == ABSENT and r.state_at("/w/n.py", 3).content == "n\n"


def test_codex_apply_patch_known_only_when_its_output_says_it_applied() -> None:
    add = "*** Begin Patch\n*** Add File: p.txt\n+hi\n*** End Patch"
    r = _run(
        _call("a1", "c1", "apply_patch", {"input": add}),
        _result("r1", "c1", "Success. Updated the following files:\nA p.txt"),
        _call("a2", "c2", "apply_patch", {"input": add.replace("p.txt", "q.txt")}),
        _result("r2", "c2", "something else"),
    )
    assert (r.state_at("/w/p.txt", 1).status, r.state_at("/w/p.txt", 1).content) == (KNOWN, "hi\n")
    assert r.state_at("/w/q.txt", 3).status == UNKNOWN


@pytest.mark.parametrize(
    ("command", "reads"),
    [
        ("ls -la", True),
        ("cat a.py | grep x | wc -l", True),
        ("git status && git diff HEAD", True),
        ("grep -rn foo src 2>/dev/null", True),
        ("echo hi > out.txt", False),
        ("sed -i s/a/b/ f", False),
        ("find . -name '*.pyc' -delete", False),
        ("ls & rm -rf build", False),
        ("cat $(ls)", False),
        ("npm test", False),
        ("git checkout -- .", False),
        ("sort -o f f", False),
    ],
)
def test_which_commands_only_read(command: str, reads: bool) -> None:
    assert reads_only(command) is reads


def test_path_events_skip_only_lines_that_call_no_file_tool_whatever_their_spacing(tmp_path: Any) -> None:
    """The first plan of a session looks at assistant lines without parsing them: a line
    that calls only other tools (a search) is skipped, one that calls a file tool is read,
    however another writer spaced its JSON."""
    import json
    from pathlib import Path

    from sessiontree.core.checkpoints.events import path_events
    from sessiontree.core.session import SessionManager

    header = {
        "type": "session",
        "version": 3,
        "id": "0123456789abcdef",
        "timestamp": "2026-01-01T00:00:00.000Z",
        "cwd": CWD,
    }
    entries = [
        {
            "type": "message",
            "id": "u1",
            "parentId": None,
            "timestamp": "2026-01-01T00:00:01.000Z",
            "message": {"role": "user", "content": "go", "timestamp": 1},
        },
        {
            **_call("a1", "c1", "grep", {"pattern": "write"}),
            "parentId": "u1",
            "timestamp": "2026-01-01T00:00:02.000Z",
        },
        {**_result("r1", "c1"), "parentId": "a1", "timestamp": "2026-01-01T00:00:03.000Z"},
        {
            **_call("a2", "c2", "write", {"path": "f.py", "content": "x\n"}),
            "parentId": "r1",
            "timestamp": "2026-01-01T00:00:04.000Z",
        },
        {**_result("r2", "c2"), "parentId": "a2", "timestamp": "2026-01-01T00:00:05.000Z"},
        {
            **_call("a3", "c3", "edit", {"path": "f.py", "oldText": "x", "newText": "y"}),
            "parentId": "r2",
            "timestamp": "2026-01-01T00:00:06.000Z",
        },
        {**_result("r3", "c3"), "parentId": "a3", "timestamp": "2026-01-01T00:00:07.000Z"},
    ]
    lines = [json.dumps(header, separators=(",", ":"))]
    for e in entries:
        # the edit's line spaced as another writer might (`"name": "edit"`)
        lines.append(json.dumps(e) if e["id"] == "a3" else json.dumps(e, separators=(",", ":")))
    path = Path(tmp_path) / "s.jsonl"
    path.write_text("\n".join(lines) + "\n")
    m = SessionManager.open(str(path), read_only=True)
    assert m.load_report.fast_path  # file-backed entries: their raw lines are looked at
    _ids, found = path_events(m, "r3")
    assert [ev["id"] for _pos, ev in found] == ["a2", "r2", "a3", "r3"]
