"""convert_to_llm: reference-behavior.md section 14 and the recorded reference output."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from sessiontree.core.tree.messages import (
    INTERRUPTED_TOOL_RESULT_TEXT,
    bash_execution_to_text,
    convert_to_llm,
    python_execution_to_text,
)

REF = Path(__file__).resolve().parents[1] / "fixtures" / "reference"


def _cases() -> list[dict[str, Any]]:
    return json.loads((REF / "inputs.json").read_text())["convertCases"]  # type: ignore[no-any-return]


@pytest.mark.parametrize("case", _cases(), ids=lambda c: c["name"])
def test_reference_golden(case: dict[str, Any]) -> None:
    expected = json.loads((REF / "convert-to-llm.expected.json").read_text())[case["name"]]
    assert convert_to_llm(case["messages"], now_ms=lambda: 0) == expected


def text_of(m: dict[str, Any]) -> str:
    return "".join(b["text"] for b in m["content"] if b["type"] == "text")


def test_bash_execution_texts() -> None:
    base = {"role": "bashExecution", "command": "ls -la", "output": "a\nb", "exitCode": 0, "cancelled": False}
    assert bash_execution_to_text(base) == "Ran `ls -la`\n```\na\nb\n```"
    assert bash_execution_to_text({**base, "output": ""}) == "Ran `ls -la`\n(no output)"
    assert (
        bash_execution_to_text({**base, "exitCode": 2})
        == "Ran `ls -la`\n```\na\nb\n```\n\nCommand exited with code 2"
    )
    assert (
        bash_execution_to_text({**base, "exitCode": 2, "cancelled": True})
        == "Ran `ls -la`\n```\na\nb\n```\n\n(command cancelled)"
    )
    assert bash_execution_to_text({**base, "exitCode": None}).endswith("```")
    out = convert_to_llm([{**base, "timestamp": 5}, {**base, "excludeFromContext": True}])
    assert out == [
        {
            "role": "user",
            "content": [{"type": "text", "text": bash_execution_to_text(base)}],
            "attribution": "user",
            "timestamp": 5,
        }
    ]


def test_python_execution_text() -> None:
    msg = {"role": "pythonExecution", "code": "print(1)", "output": "1", "exitCode": 0, "cancelled": False}
    assert python_execution_to_text(msg) == "Ran Python:\n```python\nprint(1)\n```\nOutput:\n```\n1\n```"
    assert python_execution_to_text({**msg, "output": "", "exitCode": 1}) == (
        "Ran Python:\n```python\nprint(1)\n```\n(no output)\n\nExecution failed with code 1"
    )
    assert python_execution_to_text({**msg, "cancelled": True}).endswith("\n\n(execution cancelled)")


def test_file_mention() -> None:
    image = {"type": "image", "data": "AAAA", "mimeType": "image/png"}
    msg = {
        "role": "fileMention",
        "files": [{"path": "a.py", "content": "x = 1"}, {"path": "b.png", "content": "", "image": image}],
        "timestamp": 3,
    }
    [out] = convert_to_llm([msg])
    assert out["role"] == "user" and out["attribution"] == "user" and out["timestamp"] == 3
    assert out["content"] == [
        {
            "type": "text",
            "text": '<system-reminder>\n<file path="a.py">\nx = 1\n</file>\n\n<file path="b.png">\n</file>\n</system-reminder>',
        },
        image,
    ]


def test_attribution_defaults_and_pruned_tool_results() -> None:
    call = {"type": "toolCall", "id": "t1", "name": "read", "arguments": {}}
    msgs = [
        {"role": "user", "content": [{"type": "image", "data": "x"}], "timestamp": 1},
        {"role": "developer", "content": "dev", "timestamp": 2},
        {"role": "assistant", "content": [call], "timestamp": 3},
        {
            "role": "toolResult",
            "toolCallId": "t1",
            "toolName": "read",
            "content": [
                {"type": "text", "text": "a"},
                {"type": "image", "data": "x"},
                {"type": "text", "text": "b"},
            ],
            "prunedAt": 9,
            "timestamp": 4,
        },
        {"role": "user", "content": "typed", "attribution": "agent", "timestamp": 5},
    ]
    out = convert_to_llm(msgs)
    assert [m.get("attribution") for m in out] == ["user", "agent", None, "agent", "agent"]
    assert out[3]["content"] == [{"type": "text", "text": "ab"}]
    msgs[3]["content"] = [{"type": "image", "data": "x"}]
    assert convert_to_llm(msgs)[3]["content"] == [{"type": "text", "text": "[Output truncated]"}]
    # the input objects are not modified
    assert "attribution" not in msgs[0]


def test_custom_and_hook_messages() -> None:
    out = convert_to_llm(
        [
            {"role": "custom", "customType": "c", "content": "s", "display": True, "timestamp": 1},
            {"role": "assistant", "content": [{"type": "text", "text": "x"}], "timestamp": 2},
            {
                "role": "hookMessage",
                "customType": "h",
                "content": [{"type": "text", "text": "t"}],
                "attribution": "user",
                "timestamp": 3,
            },
            {"role": "unknownRole", "timestamp": 4},
        ]
    )
    assert out[0] == {"role": "user", "content": [{"type": "text", "text": "s"}], "timestamp": 1}
    assert out[2] == {
        "role": "user",
        "content": [{"type": "text", "text": "t"}],
        "attribution": "user",
        "timestamp": 3,
    }
    assert len(out) == 3


def _assistant(*ids: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [{"type": "toolCall", "id": i, "name": f"tool_{i}", "arguments": {}} for i in ids],
        "timestamp": 0,
    }


def _result(i: str) -> dict[str, Any]:
    return {
        "role": "toolResult",
        "toolCallId": i,
        "toolName": f"tool_{i}",
        "content": [{"type": "text", "text": i}],
        "attribution": "agent",
        "timestamp": 0,
    }


def _user(t: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "image", "data": t}], "attribution": "user", "timestamp": 0}


def _shape(msgs: list[dict[str, Any]]) -> list[str]:
    out = []
    for m in msgs:
        if m["role"] == "toolResult":
            out.append(f"R:{m['toolCallId']}" + ("!" if m.get("isError") else ""))
        elif m["role"] == "assistant":
            out.append("A:" + ",".join(b["id"] for b in m["content"]))
        else:
            out.append("U:" + m["content"][0].get("data", ""))
    return out


def test_tool_results_are_moved_next_to_their_call() -> None:
    msgs = [_assistant("a", "b"), _user("wedged"), _result("b"), _result("a")]
    assert _shape(convert_to_llm(msgs, now_ms=lambda: 7)) == ["A:a,b", "R:b", "R:a", "U:wedged"]


def test_missing_results_get_the_synthetic_error() -> None:
    msgs = [_assistant("a", "b"), _result("a"), _user("next")]
    out = convert_to_llm(msgs, now_ms=lambda: 42)
    assert _shape(out) == ["A:a,b", "R:a", "R:b!", "U:next"]
    assert out[2] == {
        "role": "toolResult",
        "toolCallId": "b",
        "toolName": "tool_b",
        "content": [{"type": "text", "text": INTERRUPTED_TOOL_RESULT_TEXT}],
        "isError": True,
        "timestamp": 42,
    }
    assert INTERRUPTED_TOOL_RESULT_TEXT == "Tool execution was interrupted (session recovery)."


def test_displaced_assistant_gets_its_results_in_the_second_pass() -> None:
    msgs = [_assistant("a"), _assistant("b"), _result("a"), _result("b")]
    assert _shape(convert_to_llm(msgs, now_ms=lambda: 0)) == ["A:a", "R:a", "A:b", "R:b"]


def test_well_formed_history_is_returned_unchanged() -> None:
    msgs = [_assistant("a"), _result("a"), _user("u")]
    out = convert_to_llm(msgs)
    assert _shape(out) == ["A:a", "R:a", "U:u"]


def test_consecutive_user_text_messages_merge() -> None:
    t = lambda s: {"role": "user", "content": [{"type": "text", "text": s}], "timestamp": len(s)}  # noqa: E731
    out = convert_to_llm(
        [t("a"), t("bb"), _user("img"), t("c"), {"role": "user", "content": "str", "timestamp": 0}]
    )
    assert [m["content"] for m in out] == [
        [{"type": "text", "text": "a"}, {"type": "text", "text": "bb"}],
        [{"type": "image", "data": "img"}],
        [{"type": "text", "text": "c"}],
        "str",
    ]
    assert out[0]["timestamp"] == 1 and out[0]["attribution"] == "user"
