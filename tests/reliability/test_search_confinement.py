"""session/search answers only what session/list may read: the same guard, per agent dir.

The real daemon over stdio with one allowed root. Outside it: a pi session and a Claude Code
transcript whose ids and texts are markers. Inside it: links and hard links to them in a
session directory and in Claude Code's `projects/`, a session directory that links outside,
a second agent dir whose name differs only in case (sharing the one search index), and a
session replaced by a link after it was indexed. No search answer carries a marker or names
a file the listing does not list; the outside files are untouched.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from other_agents_data import claude_lines, write_jsonl
from sessiontree.core.fts import fts5_available
from sessiontree.core.sources.foreign import claude_project_dir

from .helpers import write_session
from .rawlsp import RawLsp
from .test_access_at_use import (
    OUTSIDE_TEXT,
    digest,
    inside_entries,
    leaked,
    outside_entries,
)

pytestmark = pytest.mark.skipif(not fts5_available(), reason="this Python's SQLite has no FTS5")

CLAUDE_MARKER = "0UTSIDE-CLAUDE-MARKER"
PROJ = "/w/proj"


def outside_claude() -> list[Any]:
    lines = claude_lines()
    for v in lines:
        if v.get("uuid") == "u1":
            v["message"]["content"] = f"{CLAUDE_MARKER} list the files please"
    return lines


class World:
    """An allowed root with the agent dir and a HOME (Claude Code's projects) inside, an
    outside dir with the marked sessions, and a daemon whose search index is in the cache."""

    def __init__(self, tmp: Path, agent_name: str = "agent", rescan: str = "3600") -> None:
        self.tmp = tmp
        self.root = tmp / "root"
        self.agent = self.root / agent_name
        self.sessions = self.agent / "sessions" / "--w-proj--"
        self.sessions.mkdir(parents=True)
        self.home = self.root / "home"
        self.home.mkdir(exist_ok=True)
        self.outside = tmp / "outside"
        self.outside.mkdir(exist_ok=True)
        self.secret = self.outside / "secret.jsonl"
        if not self.secret.exists():
            write_session(self.secret, outside_entries())
        self.secret_claude = self.outside / "claude-secret.jsonl"
        if not self.secret_claude.exists():
            write_jsonl(self.secret_claude, outside_claude())
        self.env = {
            "HOME": str(self.home),
            "XDG_CACHE_HOME": str(tmp / "cache"),
            "XDG_STATE_HOME": str(tmp / "xdg-state"),
            "PI_CODING_AGENT_DIR": str(self.agent),
            "SESSIONTREE_STATE_DIR": str(tmp / "state"),
            "SESSIONTREE_SEARCH_RESCAN_SECONDS": rescan,
        }
        self.daemon: RawLsp | None = None

    def start(self, watch: bool = False) -> RawLsp:
        self.daemon = RawLsp(env=self.env)
        res = self.daemon.initialize(
            {"agentDir": str(self.agent), "allowedRoots": [str(self.root)], "watch": watch}
        )
        assert "result" in res, res
        return self.daemon

    def search(self, query: str, **params: Any) -> dict[str, Any]:
        assert self.daemon is not None
        res = self.daemon.request("session/search", {"query": query, "paths": False, **params}, 60)
        assert "result" in res, res
        return res["result"]  # type: ignore[no-any-return]

    def listed(self) -> set[str]:
        assert self.daemon is not None
        res = self.daemon.request("session/list", {"all": True, "agent": "all"}, 30)
        return {s["path"] for s in res["result"]["sessions"]}

    def close(self) -> None:
        if self.daemon is not None:
            self.daemon.close()
            self.daemon = None


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    w = World(tmp_path)
    try:
        yield w
    finally:
        w.close()


def _paths(result: dict[str, Any]) -> set[str]:
    return {h["path"] for h in result["hits"]}


def _plant_links(w: World) -> Path:
    """An inside session and every kind of way to the outside ones; returns the inside one."""
    inside = w.sessions / "inside.jsonl"
    write_session(inside, inside_entries())
    (w.sessions / "evil-link.jsonl").symlink_to(w.secret)
    os.link(w.secret, w.sessions / "evil-hard.jsonl")
    (w.agent / "sessions" / "--evil-dir--").symlink_to(w.outside, target_is_directory=True)
    projects = Path(claude_project_dir(PROJ, {"HOME": str(w.home)}))
    projects.mkdir(parents=True)
    (projects / "11111111-link.jsonl").symlink_to(w.secret_claude)
    os.link(w.secret_claude, projects / "22222222-hard.jsonl")
    (Path(claude_project_dir("/w/other", {"HOME": str(w.home)}))).symlink_to(
        w.outside, target_is_directory=True
    )
    return inside


def test_links_and_hard_links_to_outside_sessions_are_not_searched(world: World) -> None:
    inside = _plant_links(world)
    before = (digest(world.secret), digest(world.secret_claude))
    world.start()
    for query in (OUTSIDE_TEXT, CLAUDE_MARKER, "first message", "list the files"):
        res = world.search(query)
        assert not leaked(res) and CLAUDE_MARKER not in json.dumps(res), (query, res)
        assert _paths(res) <= {str(inside)}, (query, res)
    assert _paths(world.search("inside first message")) == {str(inside)}
    # what search answers, the listing lists (a word every session holds)
    listed = world.listed()
    assert str(inside) in listed
    for query in ("text", "user", "files"):
        assert _paths(world.search(query, limit=200)) <= listed, query
    assert (digest(world.secret), digest(world.secret_claude)) == before


def test_rows_another_reader_indexed_through_a_link_are_not_answered(world: World) -> None:
    """The CLI (no allowed roots) follows links as its `ls` does and indexes the outside
    text into the shared index; the daemon answers none of it."""
    inside = _plant_links(world)
    env = {**os.environ, **world.env}
    cli = subprocess.run(
        [sys.executable, "-m", "sessiontree", "search", "--all", "--json", OUTSIDE_TEXT],
        env=env,
        capture_output=True,
        timeout=120,
    )
    assert cli.returncode == 0, cli.stderr
    assert json.loads(cli.stdout)["total"] > 0, "the CLI did not index the linked file"
    world.start()
    for query in (OUTSIDE_TEXT, CLAUDE_MARKER, "first message"):
        res = world.search(query)
        assert not leaked(res) and CLAUDE_MARKER not in json.dumps(res), (query, res)
        assert _paths(res) <= {str(inside)}, (query, res)


def test_a_session_replaced_by_a_link_after_it_was_indexed_is_not_answered(world: World) -> None:
    inside = world.sessions / "inside.jsonl"
    write_session(inside, inside_entries())
    world.start(watch=False)  # and no rescan for an hour: only the answer's check can see it
    assert _paths(world.search("inside first message")) == {str(inside)}
    os.unlink(inside)
    inside.symlink_to(world.secret)
    res = world.search("inside first message")
    assert res["hits"] == [], res
    assert not leaked(res)
    # a hard link of an outside file renamed over it: the listing refuses it, so does search
    inside.unlink()
    write_session(inside, inside_entries())
    world.close()
    world.start(watch=False)  # a new daemon's first search brings the index up to date
    assert _paths(world.search("inside first message")) == {str(inside)}
    staged = world.sessions / ".staged"
    os.link(world.secret, staged)
    os.rename(staged, inside)
    res = world.search("inside first message")
    assert res["hits"] == [] and not leaked(res), res


def test_an_agent_dir_differing_only_in_case_is_another_agent_dir(tmp_path: Path) -> None:
    """Two agent dirs share the one search index; a daemon rooted at ``.../Agent`` answers
    nothing of ``.../agent`` (the root is compared byte for byte)."""
    lower = World(tmp_path, "agent")
    write_session(lower.sessions / "lower.jsonl", outside_entries())
    upper = World(tmp_path, "Agent")
    if os.path.samefile(upper.agent, lower.agent):
        pytest.skip("this file system folds case")
    mine = upper.sessions / "mine.jsonl"
    write_session(mine, inside_entries())
    try:
        lower.start()
        assert lower.search(OUTSIDE_TEXT)["hits"], "the other agent dir was not indexed"
        lower.close()
        upper.start()
        res = upper.search(OUTSIDE_TEXT)
        assert res["hits"] == [] and not leaked(res), res
        assert _paths(upper.search("text", limit=200)) == {str(mine)}
    finally:
        lower.close()
        upper.close()
