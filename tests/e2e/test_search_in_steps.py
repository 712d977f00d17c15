"""A big session's search over the wire: `partial` answers with the rows found so far, the
daemon goes on in idle time and sends `session/didCompleteSearch`; the rows then are the
ones a whole answer has. A client that does not ask for `partial` gets the whole answer.
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


def _spawn(tmp_path: Path, agent: Path) -> Client:
    env = {
        "PI_CODING_AGENT_DIR": str(agent),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "PYTHONPATH": os.pathsep.join([str(REPO / "server"), str(REPO / "protocol")]),
        # a session of a few thousand entries is searched in steps as a big one is, and too
        # big to keep its texts (none built in idle time): every search goes in steps
        "SESSIONTREE_PARTIAL_SEARCH_MIN": "1000",
        "SESSIONTREE_SEARCH_TEXTS_MAX": "1000",
    }
    return Client.spawn(
        init_options={"agentDir": str(agent), "stateDir": str(tmp_path / "state"), "watch": False}, env=env
    )


def test_a_partial_search_completes_with_the_whole_answer(tmp_path: Path) -> None:
    agent = tmp_path / "agent"
    path = agent / "sessions" / "--p--" / "s.jsonl"
    path.parent.mkdir(parents=True)
    subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "gen_corpus.py"), str(path), "12000"],
        check=True,
        capture_output=True,
    )
    before = path.read_bytes()
    with _spawn(tmp_path, agent) as c, _spawn(tmp_path / "other", agent) as whole_client:
        handle = c.request("session/open", {"path": str(path)})["session"]
        other = whole_client.request("session/open", {"path": str(path)})["session"]
        for query in ("neovim", "neovim s", "tool e"):
            mark = len(c.notifications)
            params = {"session": handle, "search": query, "limit": 50}
            first = c.request("session/view", {**params, "partial": True})
            assert first["complete"] is False
            assert first["selectedIndex"] is None
            # the rows that fill the page, or those found in its time budget
            assert len(first["rows"]) == min(50, first["total"])
            done = c.wait_for_notification(
                "session/didCompleteSearch", lambda p, q=query: p["search"] == q, timeout=120, start=mark
            )
            whole = whole_client.request("session/view", {"session": other, "search": query, "limit": 50})
            assert "complete" not in whole  # a client that did not ask for partial answers
            assert done == {
                "session": handle,
                "search": query,
                "filter": "default",
                "leafId": whole["leafId"],
                "total": whole["total"],
            }
            assert first["total"] <= whole["total"]
            assert first["rows"] == whole["rows"][: len(first["rows"])]  # found first, shown first
            after = c.request("session/view", {**params, "partial": True})
            assert "complete" not in after
            assert (after["total"], after["selectedIndex"], after["rows"]) == (
                whole["total"],
                whole["selectedIndex"],
                whole["rows"],
            )
            near = {"offset": max(0, whole["selectedIndex"] - 10), "limit": 20}
            assert (
                c.request("session/view", {**params, **near, "partial": True})["rows"]
                == whole_client.request("session/view", {"session": other, "search": query, **near})["rows"]
            )
    assert path.read_bytes() == before  # looking never writes
