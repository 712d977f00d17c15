"""Counts in words (core/format/words.py): `1 entry`, `2 entries`, never `1 entries`."""

from __future__ import annotations

import json
from pathlib import Path

from sessiontree.core.format.words import counted
from sessiontree.core.graph.model import build_graph
from sessiontree.core.graph.render import summary_line
from sessiontree.core.session import SessionManager


def test_counted() -> None:
    assert [counted(n, "entry") for n in (0, 1, 2)] == ["0 entries", "1 entry", "2 entries"]
    assert counted(1, "lane") == "1 lane" and counted(3, "lane") == "3 lanes"
    assert counted(1, "branch") == "1 branch" and counted(2, "match") == "2 matches"
    assert counted(1234, "node", grouped=True) == "1,234 nodes"
    assert counted(1, "more branch", "more branches") == "1 more branch"


def test_a_one_entry_graph_says_one_entry_and_one_lane(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    lines = [
        {"type": "session", "version": 3, "id": "s", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/p"},
        {
            "type": "message",
            "id": "u",
            "parentId": None,
            "timestamp": "2026-01-01T00:00:01.000Z",
            "message": {"role": "user", "content": "hi", "timestamp": 1},
        },
    ]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    mgr = SessionManager.open(str(path), read_only=True)
    assert summary_line(build_graph(mgr)) == "1 entry · 1 node · 1 lane"
