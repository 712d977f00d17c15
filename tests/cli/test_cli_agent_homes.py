"""A pi or oh-my-pi user without a setting (issue 34): `ls` and `tree` look in every agent dir
of pi's family that exists (core/discovery/homes.py), mark each session with its agent, show
omp 18's and pi 1.6's names, and `tree` opens what `ls` lists first; nothing is created."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from face import place

REPO = Path(__file__).resolve().parents[2]


def _env(tmp_path: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PI_CODING_AGENT_DIR", "CLAUDE_CONFIG_DIR", "CODEX_HOME")
    }
    env.update(
        HOME=str(tmp_path / "home"),
        XDG_CACHE_HOME=str(tmp_path / "xdg-cache"),
        XDG_STATE_HOME=str(tmp_path / "xdg-state"),
        XDG_DATA_HOME=str(tmp_path / "xdg-data"),
        XDG_CONFIG_HOME=str(tmp_path / "xdg-config"),
        PYTHONPATH=os.pathsep.join([str(REPO / "server"), str(REPO / "protocol")]),
    )
    return env


def _cli(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sessiontree", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def _tree(root: Path) -> list[tuple[str, int]]:
    return sorted((str(p.relative_to(root)), p.stat().st_mtime_ns) for p in root.rglob("*"))


def _homes(tmp_path: Path) -> tuple[Path, Path, Path]:
    home = tmp_path / "home"
    proj = home / "src" / "proj"
    proj.mkdir(parents=True)
    pi = place(
        home / ".pi" / "agent" / "sessions",
        f"--{str(proj).lstrip('/').replace('/', '-')}--",
        "pi16",
        str(proj),
    )
    omp = place(home / ".omp" / "agent" / "sessions", "-src-proj", "omp18", str(proj))
    os.utime(pi, (1_800_000_000, 1_800_000_000))
    os.utime(omp, (1_800_000_100, 1_800_000_100))  # the newest
    return home, proj, omp


def test_ls_lists_pi_and_omp_sessions_by_their_names_without_a_setting(tmp_path: Path) -> None:
    home, proj, _ = _homes(tmp_path)
    env = _env(tmp_path)
    before = _tree(home)
    res = _cli(env, proj, "ls")
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert len(lines) == 2 and res.stderr == ""
    assert "omp" in lines[0] and "Parser refactor" in lines[0]
    assert "pi " in lines[1] and "Flaky watcher test" in lines[1]
    res = _cli(env, proj, "ls", "--all", "--json")
    listed = json.loads(res.stdout)["sessions"]
    assert [(s["displayName"], s["dialect"]) for s in listed] == [
        ("Parser refactor", "omp"),
        ("Flaky watcher test", "pi"),
    ]
    assert _tree(home) == before  # looking created and touched nothing in the agents' dirs


def test_tree_opens_the_session_ls_lists_first(tmp_path: Path) -> None:
    home, proj, _ = _homes(tmp_path)
    env = _env(tmp_path)
    before = _tree(home)
    res = _cli(env, proj, "tree", "--color", "never")
    assert res.returncode == 0 and res.stderr == "", res.stderr
    assert res.stdout.splitlines()[:2] == [
        "• user: Refactor the parser",
        "● assistant: Split it into a lexer and a parser.  (leaf: [title: Parser refactor])",
    ]
    assert _tree(home) == before


def test_tree_finds_another_agents_session_ls_lists(tmp_path: Path) -> None:
    """Before: `tree` said "no session found" for a project whose only session `ls` listed
    was Claude Code's."""
    home = tmp_path / "home"
    proj = home / "src" / "proj"
    proj.mkdir(parents=True)
    env = _env(tmp_path)
    subprocess.run(
        [sys.executable, str(REPO / "tests" / "other_agents_home.py"), str(home), str(proj)],
        env=env,
        check=True,
        capture_output=True,
    )
    listed = _cli(env, proj, "ls", "--json")
    first = json.loads(listed.stdout)["sessions"][0]["path"]
    res = _cli(env, proj, "tree", "--json")
    assert res.returncode == 0 and "no session found" not in res.stderr, res.stderr
    assert json.loads(res.stdout)["path"] == first


def test_no_agent_dir_names_where_it_looked(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "proj").mkdir(parents=True)
    res = _cli(_env(tmp_path), home / "proj", "ls")
    assert res.returncode == 2
    assert (
        str(home / ".xcsh" / "agent") in res.stderr
        and ".pi/agent" in res.stderr
        and ".omp/agent" in res.stderr
    )
    assert sorted(p.name for p in home.iterdir()) == ["proj"]
