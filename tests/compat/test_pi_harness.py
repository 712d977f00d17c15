"""The suite's own tools against pi 1.6: the harness answers what pi's SessionManager holds,
and the comparison sees a difference of one character and a write by an open."""

from __future__ import annotations

import json
from pathlib import Path

from compat.conftest import Work
from compat.pi_messages import assistant, conversation, msg, step, user
from compat.state import Agent, agent_load, agent_write, differences, our_state


def test_the_harness_writes_through_pis_api_and_reads_it_back(pi: Agent, work: Work) -> None:
    steps = [
        *conversation(("one", "1")),
        {"op": "label", "targetId": step(0), "label": "L"},
        {"op": "branch", "id": step(0)},
        msg(assistant("another 1")),
    ]
    answer = agent_write(pi, work.file("s.jsonl"), work.cwd, steps)
    assert answer["path"] == str(work.file("s.jsonl"))
    ids = answer["ids"]
    assert ids[3] is None and all(isinstance(i, str) for i in ids[:3] + ids[4:])
    lines = [json.loads(x) for x in Path(answer["path"]).read_text().splitlines()]
    assert lines[0]["type"] == "session" and lines[0]["cwd"] == str(work.cwd)
    assert [e["id"] for e in lines[1:]] == [ids[0], ids[1], ids[2], ids[4]]
    assert lines[4]["parentId"] == ids[0]  # the branch moved the leaf

    state = agent_load(pi, answer["path"])
    assert [e["id"] for e in state["entries"]] == [ids[0], ids[1], ids[2], ids[4]]
    assert state["tree"] == [
        {"id": ids[0], "depth": 0},
        {"id": ids[1], "depth": 1},
        {"id": ids[2], "depth": 2},
        {"id": ids[4], "depth": 1},
    ]
    assert state["leafId"] == ids[4] and state["labels"] == {ids[0]: "L"}
    assert [m["content"] for m in state["context"]] == ["one", [{"type": "text", "text": "another 1"}]]
    assert state["bytesUnchanged"] is True
    moved = agent_load(pi, answer["path"], leaf_id=ids[1])
    assert moved["leafId"] == ids[1] and len(moved["context"]) == 2


def test_the_comparison_sees_one_character_and_a_write(pi: Agent, work: Work) -> None:
    path = Path(
        agent_write(pi, work.file("s.jsonl"), work.cwd, [msg(user("abc")), msg(assistant("x"))])["path"]
    )
    ours = our_state(path)
    assert differences(ours, agent_load(pi, path), pi) == []
    changed = work.file("changed.jsonl")
    changed.write_text(path.read_text().replace('"abc"', '"abd"').rstrip("\n"))
    found = differences(ours, agent_load(pi, changed), pi)
    assert 'entries[0].message.content: sessiontree "abc" | pi "abd"' in found
    assert 'context[0].content: sessiontree "abc" | pi "abd"' in found
    assert found[-1] == "pi 1.6.0's open changed the file's bytes"  # it added the last newline
