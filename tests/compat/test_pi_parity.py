"""The same operation done by sessiontree and by pi 1.6: the two files must say the same
(issue 31).

Reading one file with both agents (test_pi_theirs, test_pi_ours) cannot tell when sessiontree
writes something pi would have written otherwise: both then read the same bytes. Here each
side performs the same operation on the same messages, through its own API, and the files
are compared without what differs between any two runs (`state.written_shape`: session and
entry ids, entry timestamps).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sessiontree.core.session import SessionManager
from sessiontree.core.tree.navigation import navigate_tree

from compat.conftest import Work
from compat.pi_messages import assistant, msg, step, user
from compat.state import Agent, agent_write, assert_same_shape


def ours(work: Work) -> SessionManager:
    return SessionManager.create(str(work.cwd), str(work.sessions / "ours"))


def on_disk(m: SessionManager) -> str:
    m.ensure_on_disk()
    path = m.get_session_file()
    m.close()
    assert path is not None
    return path


def by_pi(pi: Agent, work: Work, steps: list[dict[str, Any]], **kw: Any) -> str:
    (work.sessions / "pi").mkdir(exist_ok=True)
    answer = agent_write(pi, work.sessions / "pi" / "pi.jsonl", work.cwd, steps, **kw)
    assert answer["written"]
    return str(answer["path"])


def four_messages() -> list[dict[str, Any]]:
    return [user("one"), assistant("1"), user("two"), assistant("2")]


def test_branch_with_summary(pi: Agent, work: Work) -> None:
    """Back to the first answer with a summary of the abandoned branch: pi's `fromId` is the
    leaf that was left (session-manager.js 1205)."""
    msgs = four_messages()
    later = user("two, differently")
    theirs = by_pi(
        pi,
        work,
        [
            *(msg(m) for m in msgs),
            {"op": "branch_with_summary", "branchFromId": step(1), "summary": "Two went nowhere."},
            msg(later),
        ],
    )
    m = ours(work)
    ids = [m.append_message(x) for x in msgs]
    m.branch_with_summary(ids[1], "Two went nowhere.")
    m.append_message(later)
    assert_same_shape(on_disk(m), theirs, pi, "a branch with a summary")


def test_navigation_with_an_extensions_summary(pi: Agent, work: Work) -> None:
    """/tree to the second question with a summary an extension gave: pi's AgentSession calls
    branchWithSummary(parent of the question, summary, details, fromExtension=true) (agent-session.js
    3480-3494), which pi writes as `fromHook`."""
    msgs = four_messages()
    details = {"source": "ext"}
    theirs = by_pi(
        pi,
        work,
        [
            *(msg(m) for m in msgs),
            {
                "op": "branch_with_summary",
                "branchFromId": step(1),
                "summary": "From the extension.",
                "details": details,
                "fromHook": True,
            },
        ],
    )
    m = ours(work)
    ids = [m.append_message(x) for x in msgs]
    navigate_tree(
        m, ids[2], summarize=True, summary="From the extension.", summary_details=details, from_extension=True
    )
    assert_same_shape(on_disk(m), theirs, pi, "a navigation with an extension's summary")


def test_create_branched_session_around_labels(pi: Agent, work: Work) -> None:
    """A new session holding the path to the second answer, whose path runs through label
    entries: pi re-chains the entries the labels were parents of (session-manager.js 1232-1258)."""
    msgs = four_messages()
    theirs = by_pi(
        pi,
        work,
        [
            msg(msgs[0]),
            msg(msgs[1]),
            {"op": "label", "targetId": step(0), "label": "first question"},
            msg(msgs[2]),
            msg(msgs[3]),
            {"op": "label", "targetId": step(4), "label": "second answer"},
            msg(user("three")),
            {"op": "create_branched_session", "leafId": step(4)},
        ],
    )
    m = ours(work)
    q1 = m.append_message(msgs[0])
    m.append_message(msgs[1])
    m.append_label_change(q1, "first question")
    m.append_message(msgs[2])
    a2 = m.append_message(msgs[3])
    m.append_label_change(a2, "second answer")
    m.append_message(user("three"))
    path = m.create_branched_session(a2)
    assert path is not None
    mine = on_disk(m)
    shape_ours, shape_theirs = _parent_session_named(mine), _parent_session_named(theirs)
    assert shape_ours == shape_theirs == "the source file", (shape_ours, shape_theirs)
    # (the two sources are different files)
    assert_same_shape(mine, theirs, pi, "a branched session", ignore_header=("parentSession",))


def test_fork_from(pi: Agent, work: Work) -> None:
    """A copy of a session in a new file: pi's header names the source by its path
    (session-manager.js 1419-1426)."""
    msgs = four_messages()
    source_theirs = by_pi(pi, work, [msg(x) for x in msgs])
    forked_theirs = by_pi(pi, work, [], fork_from=source_theirs)
    m = ours(work)
    for x in msgs:
        m.append_message(x)
    source_ours = on_disk(m)
    forked = SessionManager.fork_from(source_ours, str(work.cwd), str(work.sessions / "ours"))
    forked_ours = on_disk(forked)
    assert _parent_session_named(forked_ours) == _parent_session_named(forked_theirs) == "the source file", (
        f"parentSession: sessiontree {_parent_session_named(forked_ours)}, "
        f"{pi.name} {_parent_session_named(forked_theirs)}"
    )
    assert_same_shape(forked_ours, forked_theirs, pi, "a fork", ignore_header=("parentSession",))


def test_compaction_that_keeps_nothing(pi: Agent, work: Work) -> None:
    """A compaction with no kept entry: pi writes its own id as `firstKeptEntryId` (a required
    field in pi's format, session-manager.js 911)."""
    msgs = four_messages()
    theirs = by_pi(
        pi, work, [*(msg(m) for m in msgs), {"op": "compaction", "summary": "all", "tokensBefore": 100}]
    )
    m = ours(work)
    for x in msgs:
        m.append_message(x)
    m.append_compaction("all", None, None, 100)
    assert_same_shape(on_disk(m), theirs, pi, "a compaction that keeps nothing")


def test_label_set_and_cleared(pi: Agent, work: Work) -> None:
    msgs = four_messages()
    theirs = by_pi(
        pi,
        work,
        [
            *(msg(m) for m in msgs),
            {"op": "label", "targetId": step(0), "label": "start"},
            {"op": "label", "targetId": step(0)},
        ],
    )
    m = ours(work)
    ids = [m.append_message(x) for x in msgs]
    m.append_label_change(ids[0], "start")
    m.append_label_change(ids[0], None)
    assert_same_shape(on_disk(m), theirs, pi, "a label set and cleared")


def _parent_session_named(path: str) -> str:
    """What the header's `parentSession` names: the source file (a path that exists), a
    session id, or nothing."""
    header = Path(path).read_text().split("\n", 1)[0]
    parent = json.loads(header).get("parentSession")
    if parent is None:
        return "nothing"
    return "the source file" if Path(parent).is_file() else f"not a file: {parent!r}"
