"""The command line on a HOME holding pi, Claude Code and Codex sessions: `ls --agent`,
`tree` (the Claude Code rewind drawn as a branch), `show`, `context`, `doctor`; looking
never writes (every name and byte under ~/.claude and ~/.codex as it was)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from other_agents_data import CLAUDE_ID, CODEX_ID, claude_lines, codex_lines, write_jsonl


def snapshot(root: Path) -> list[tuple[str, str]]:
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        out.extend((os.path.join(dirpath, d), "dir") for d in dirnames)
        for f in filenames:
            st = os.stat(os.path.join(dirpath, f))
            digest = hashlib.sha256(Path(dirpath, f).read_bytes()).hexdigest()
            out.append((os.path.join(dirpath, f), f"{digest} {st.st_size} {st.st_mtime_ns}"))
    return sorted(out)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    h = tmp_path / "home"
    write_jsonl(
        h / ".claude" / "projects" / "-work-proj" / f"{CLAUDE_ID}.jsonl", claude_lines(), damaged_at=5
    )
    write_jsonl(
        h / ".codex" / "sessions" / "2026" / "06" / "19" / f"rollout-x-{CODEX_ID}.jsonl", codex_lines()
    )
    pi = h / ".xcsh" / "agent" / "sessions" / "--work-proj--"
    header = {
        "type": "session",
        "version": 3,
        "id": "pi-1",
        "timestamp": "2026-06-01T00:00:00.000Z",
        "cwd": "/work/proj",
    }
    msg = {
        "type": "message",
        "id": "e1",
        "parentId": None,
        "timestamp": "2026-06-01T00:00:01.000Z",
        "message": {"role": "user", "content": "pi says hi", "timestamp": 1},
    }
    write_jsonl(pi / "2026-06-01T00-00-00-000Z_pi-1.jsonl", [header, msg])
    return h


def run(home: Path, *args: str, cwd: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "PI_CODING_AGENT_DIR")
    }
    env["HOME"] = str(home)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    return subprocess.run(
        [sys.executable, "-m", "sessiontree", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        cwd=cwd or str(home),
    )


def test_ls_lists_every_agent_and_looking_never_writes(home: Path) -> None:
    before = snapshot(home)
    res = run(home, "ls", "--all", "--json")
    assert res.returncode == 0, res.stderr
    sessions: list[dict[str, Any]] = json.loads(res.stdout)["sessions"]
    assert sorted(s.get("agent", "pi") for s in sessions) == ["claude", "codex", "pi"]
    for agent in ("pi", "claude", "codex"):
        only = json.loads(run(home, "ls", "--all", "--json", "--agent", agent).stdout)["sessions"]
        assert [s.get("agent", "pi") for s in only] == [agent]
    human = run(home, "ls", "--all").stdout
    assert "claude" in human and "codex" in human and "List the files" in human
    # the cwd's sessions of every agent
    here = json.loads(run(home, "ls", "--json", "--cwd", "/work/proj").stdout)["sessions"]
    assert sorted(s.get("agent", "pi") for s in here) == ["claude", "codex", "pi"]
    claude = next(s for s in sessions if s.get("agent") == "claude")
    codex = next(s for s in sessions if s.get("agent") == "codex")

    tree = run(home, "tree", claude["path"], "--ids")
    assert tree.returncode == 0, tree.stderr
    lines = tree.stdout.splitlines()
    # the rewind: two turns below the same entry, drawn as a branch
    assert any("├─" in ln and "now read a.txt" in ln for ln in lines) or any(
        "├─" in ln and "count the lines" in ln for ln in lines
    ), tree.stdout
    assert "a8" in lines[-1]  # the leaf Claude Code resumes
    assert "[bash: ls -la]" in tree.stdout
    for verb in (
        ["show"],
        ["context"],
        ["tree", "--filter", "all"],
        ["context", "--llm"],
        ["tree", "--json"],
    ):
        for path in (claude["path"], codex["path"]):
            r = run(home, *verb, path)
            assert r.returncode == 0, (verb, r.stderr)
            assert "not a pi session" not in r.stderr
    ctx = run(home, "context", claude["path"], "--leaf", "a5").stdout
    assert "a.txt says hello." in ctx
    doc = run(home, "doctor", claude["path"], "--json")
    assert doc.returncode == 1  # the damaged line is a problem
    report = json.loads(doc.stdout)["files"][0]
    assert report["agent"] == "claude"
    assert {p["kind"] for p in report["problems"]} >= {"dropped-line", "foreign-transcript"}
    assert run(home, "doctor", codex["path"]).returncode == 0
    rep = run(home, "doctor", claude["path"], "--repair", "--json")
    assert json.loads(rep.stdout)["files"][0]["repair"]["refused"] == "read-only: claude session"
    assert snapshot(home) == before


def test_ls_without_a_pi_agent_dir_lists_the_other_agents_and_names_the_missing_dir(home: Path) -> None:
    shutil.rmtree(home / ".xcsh")
    res = run(home, "ls", "--all", "--json")
    assert res.returncode == 0, res.stderr
    assert sorted(s["agent"] for s in json.loads(res.stdout)["sessions"]) == ["claude", "codex"]
    assert str(home / ".xcsh" / "agent") in res.stderr and "other agents" in res.stderr
    assert not (home / ".xcsh").exists()
    res = run(home, "ls", "--all", "--agent", "pi")
    assert res.returncode == 2 and str(home / ".xcsh" / "agent") in res.stderr


def test_search_finds_every_agents_sessions_and_looking_never_writes(home: Path, tmp_path: Path) -> None:
    """`sessiontree search` indexes the Claude Code and Codex transcripts beside pi's
    sessions (read-only: the index lives in sessiontree's cache), each hit naming its agent
    and the entry id the session opened in sessiontree has."""
    from sessiontree.core.fts import fts5_available

    if not fts5_available():
        pytest.skip("this Python's SQLite has no FTS5")
    before = snapshot(home)
    index = str(tmp_path / "search.db")
    got = {}
    for words, agent in (
        ("pi says hi", "pi"),
        ("b.txt has one line", "claude"),
        ("There are 2 files", "codex"),
    ):
        res = run(home, "search", "--all", "--json", "--index", index, words)
        assert res.returncode == 0, res.stderr
        hits = json.loads(res.stdout)["hits"]
        assert hits, (words, res.stdout)
        assert hits[0]["agent"] == agent, hits[0]
        got[agent] = hits[0]
    # the hit's entry is one the transcript opened in sessiontree has, with that text
    from sessiontree.core.session import SessionManager

    for agent in ("claude", "codex"):
        mgr = SessionManager.open(got[agent]["session_path"], read_only=True, viewing=True)
        assert got[agent]["entry_id"] in mgr.index.ids()
    assert snapshot(home) == before
