"""omp 18 writes, sessiontree reads (issue 31): every write operation of omp's own
SessionManager (tests/compat/omp/harness.ts), then sessiontree's read-only open must hold the
state omp holds (tests/compat/state.py) and leave the file's bytes as they were.

Each case runs twice:
* on a file omp started (omp's title slot is its first line, as in every file omp creates);
* on a file sessiontree started (no slot: omp only appends to it, one line per entry, unless
  the case rewrites it), which shows the differences of the entries themselves apart from
  the slot.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sessiontree.core.session import SessionManager

from compat.conftest import Work
from compat.omp.cases import BASE_STEPS, CASES, LONG_SCRIPT
from compat.state import Agent, agent_load, agent_write, assert_same_state, our_state

STARTS = ("omp_file", "sessiontree_file")


def start_file(agent: Agent, work: Work, start: str) -> Path:
    """A session file holding the base conversation, written by omp or by sessiontree."""
    path = work.file("session.jsonl")
    if start == "omp_file":
        agent_write(agent, path, work.cwd, BASE_STEPS)
    else:
        mgr = SessionManager.open(str(path))
        try:
            for step in BASE_STEPS:
                mgr.append_message(step["message"])
        finally:
            mgr.close()
    assert path.is_file()
    return path


def compare(agent: Agent, path: str | Path, what: str, every_leaf: bool = True) -> None:
    theirs = agent_load(agent, path, every_leaf=every_leaf)
    ours = our_state(path, every_leaf=every_leaf)
    assert_same_state(ours, theirs, agent, what)


@pytest.mark.parametrize("start", STARTS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_omp_writes_sessiontree_reads(omp: Agent, work: Work, case: str, start: str) -> None:
    path = start_file(omp, work, start)
    written: dict[str, Any] = agent_write(omp, path, work.cwd, CASES[case])
    assert written["written"], written
    # create_branched_session and fork move omp to a new file: that file is the one to read
    compare(omp, written["path"], f"omp's {case} ({start})")


@pytest.mark.parametrize("start", STARTS)
def test_omp_long_mixed_script_with_branches(omp: Agent, work: Work, start: str) -> None:
    path = start_file(omp, work, start)
    written = agent_write(omp, path, work.cwd, LONG_SCRIPT)
    compare(omp, written["path"], f"omp's long mixed script ({start})")
    # and at every leaf the script left: each branch's own context
    ids = written["ids"]
    # the aborted turn's branch, the plan branch's last message, the cleared branch's title
    for leaf in (ids[12], ids[19], ids[25]):
        theirs = agent_load(omp, written["path"], leaf_id=leaf)
        ours = our_state(written["path"], leaf_id=leaf)
        assert_same_state(ours, theirs, omp, f"omp's long mixed script at leaf {leaf} ({start})")
