"""Reopening a file while its session is still closing gets a live session, not the closing one.

A close is queued behind the session's running calls (a page, a write, the idle-time search
warm-up), so an editor that closes and reopens a file at once (a sidebar redrawn, a test's
teardown and setup) used to be handed the closing session's handle and then -32001 for it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from sessiontree.client import Client

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.timeout(180)


def test_a_file_reopened_while_its_session_closes_opens_afresh(tmp_path: Path) -> None:
    agent = tmp_path / "agent"
    path = agent / "sessions" / "--p--" / "big.jsonl"
    path.parent.mkdir(parents=True)
    subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "gen_corpus.py"), str(path), "8000"],
        check=True,
        capture_output=True,
    )
    env = {
        "PI_CODING_AGENT_DIR": str(agent),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "PYTHONPATH": os.pathsep.join([str(REPO / "server"), str(REPO / "protocol")]),
    }
    with Client.spawn(
        init_options={"agentDir": str(agent), "stateDir": str(tmp_path / "state"), "watch": False}, env=env
    ) as c:
        for _ in range(6):
            first = c.request("session/open", {"path": str(path)})["session"]
            # the page and the search warm-up keep the session busy while it is closed
            busy = c.request_future("session/view", {"session": first, "search": "neovim", "limit": 5})
            closing = c.request_future("session/close", {"session": first})
            again = c.request("session/open", {"path": str(path)})["session"]
            assert again != first
            page = c.request("session/view", {"session": again, "limit": 5})
            assert page["total"] > 0 and len(page["rows"]) == 5
            busy.result(60)
            closing.result(60)
            c.request("session/close", {"session": again})
