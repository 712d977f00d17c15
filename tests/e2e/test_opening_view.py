"""The daemon keeps the first pages of a big session it showed (core/view/opening.py) and
a new daemon's open of the unchanged file shows them; after the agent appended, the close
keeps them (and the last entry's context) again: over stdio, a real cache directory."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import msgspec
import orjson
import pytest
from e2e_helpers import generate
from sessiontree.client import Client

REPO = Path(__file__).resolve().parents[2]
PAGE = 500

pytestmark = pytest.mark.timeout(120)


def _daemon(tmp_path: Path, agent: Path, watch: bool = False) -> Client:
    env = {
        "PI_CODING_AGENT_DIR": str(agent),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "PYTHONPATH": os.pathsep.join([str(REPO / "server"), str(REPO / "protocol")]),
    }
    return Client.spawn(
        init_options={"agentDir": str(agent), "stateDir": str(tmp_path / "state"), "watch": watch}, env=env
    )


def _pages(c: Client, handle: str) -> list[dict[str, Any]]:
    head = c.request("session/view", {"session": handle, "offset": 0, "limit": PAGE})
    sel = head["selectedIndex"]
    off = max(PAGE, min(sel - PAGE // 2, head["total"] - PAGE))
    return [head, c.request("session/view", {"session": handle, "offset": off, "limit": PAGE})]


def test_a_new_daemon_shows_the_kept_first_pages_until_the_session_changes(tmp_path: Path) -> None:
    agent = tmp_path / "agent"
    path = agent / "sessions" / "--p--" / "s.jsonl"
    path.parent.mkdir(parents=True)
    generate(path, 8000)
    agent_files = sorted(p for p in agent.rglob("*") if p.is_file())
    with _daemon(tmp_path, agent) as c:
        handle = c.request("session/open", {"path": str(path)})["session"]
        first = _pages(c, handle)
        deadline = time.monotonic() + 60
        kept: list[Path] = []
        while time.monotonic() < deadline and not kept:
            kept = list((tmp_path / "cache").rglob("*.view"))
            time.sleep(0.05)
        assert len(kept) == 1, "the warm-up kept no first pages"
    assert sorted(p for p in agent.rglob("*") if p.is_file()) == agent_files  # kept outside
    with _daemon(tmp_path, agent) as c:
        handle = c.request("session/open", {"path": str(path)})["session"]
        assert _pages(c, handle) == first
    # mark the kept rows: a page showing the mark came from them
    fields = msgspec.msgpack.decode(kept[0].read_bytes())
    for window in fields[-1]:
        for row in window[1]:
            row[9] = "KEPT " + row[9]
    kept[0].write_bytes(msgspec.msgpack.encode(fields))
    with _daemon(tmp_path, agent, watch=True) as c:
        handle = c.request("session/open", {"path": str(path)})["session"]
        shown = _pages(c, handle)
        assert all(r["text"].startswith("KEPT ") for p in shown for r in p["rows"])
        assert [[r["id"] for r in p["rows"]] for p in shown] == [[r["id"] for r in p["rows"]] for p in first]
        # the agent appends: the kept rows are of the file before, the rows are built
        leaf = c.request("session/view", {"session": handle, "limit": 0})["leafId"]
        seen = len(c.notifications)
        line = {
            "type": "message",
            "id": "agent001",
            "parentId": leaf,
            "timestamp": "2026-01-01T00:00:00.000Z",
            "message": {"role": "user", "content": "one more from the agent"},
        }
        with open(path, "ab") as f:
            f.write(orjson.dumps(line) + b"\n")
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not any(
            m == "session/didChange" for m, _ in c.notifications[seen:]
        ):
            time.sleep(0.02)
        after = _pages(c, handle)
        rows = [r for p in after for r in p["rows"]]
        assert not any(r["text"].startswith("KEPT ") for r in rows)
        assert any(r["id"] == "agent001" for r in rows)
        context = c.request("session/context", {"session": handle, "offset": -50})
        assert context["messages"][-1]["content"] == "one more from the agent"
        # closed: a forked copy keeps the first pages and the context as they are now
        before = kept[0].stat().st_mtime_ns
        c.request("session/close", {"session": handle})
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and kept[0].stat().st_mtime_ns == before:
            time.sleep(0.05)
        assert kept[0].stat().st_mtime_ns != before, "the closed session's first pages were not kept"
    assert list((tmp_path / "cache").rglob("*.ctx"))
    with _daemon(tmp_path, agent) as c:
        handle = c.request("session/open", {"path": str(path)})["session"]
        assert c.request("session/context", {"session": handle, "offset": -50}) == context
        assert _pages(c, handle) == after
