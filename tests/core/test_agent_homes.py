"""Which agent dirs a listing looks in (core/discovery/homes.py): the one set, else every one
of pi's family that exists, xcsh's first; nothing is created to look."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from sessiontree.core.discovery import agent_homes, missing_agent_dir, session_dirs_of_homes
from sessiontree.core.paths import PathEnv


@pytest.fixture
def home(tmp_path: Path) -> Path:
    h = tmp_path / "home"
    h.mkdir()
    return h


def penv(home: Path, **env: str) -> PathEnv:
    return PathEnv(env=env, home=str(home), tmp="/nonexistent-tmp", platform="linux")


def _tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def test_without_a_setting_every_agent_dir_that_exists_is_listed(home: Path) -> None:
    for d in (".pi/agent", ".omp/agent", ".omp/profiles/work/agent", ".omp/profiles/play/agent"):
        (home / d).mkdir(parents=True)
    before = _tree(home)
    homes = agent_homes(penv=penv(home))
    assert [(h.agent, h.data_dir, h.profile) for h in homes] == [
        ("pi", str(home / ".pi/agent"), None),
        ("omp", str(home / ".omp/agent"), None),
        ("omp", str(home / ".omp/profiles/play/agent"), "play"),
        ("omp", str(home / ".omp/profiles/work/agent"), "work"),
    ]
    assert homes[0].sessions_root == str(home / ".pi/agent/sessions")
    (home / ".xcsh/agent").mkdir(parents=True)
    assert [h.agent for h in agent_homes(penv=penv(home))] == ["xcsh", "pi", "omp", "omp", "omp"]
    assert missing_agent_dir(penv=penv(home)) is None
    assert _tree(home) == [*before, ".xcsh", ".xcsh/agent"]  # looking created nothing


def test_omp_on_xdg_dirs_and_pi_config_dir(home: Path, tmp_path: Path) -> None:
    xdg = tmp_path / "xdg-data"
    (xdg / "omp" / "profiles" / "work").mkdir(parents=True)
    (home / ".ompx" / "profiles" / "work" / "agent").mkdir(parents=True)
    homes = agent_homes(penv=penv(home, XDG_DATA_HOME=str(xdg), PI_CONFIG_DIR=".ompx"))
    # omp's default profile lives in $XDG_DATA_HOME/omp once that exists; a profile in its XDG
    # dir when that exists (omp's own rule), else in ~/<PI_CONFIG_DIR>/profiles/<name>/agent
    assert [(h.agent, h.data_dir, h.profile) for h in homes] == [
        ("omp", str(xdg / "omp"), None),
        ("omp", str(xdg / "omp" / "profiles" / "work"), "work"),
    ]


def test_a_setting_or_the_variable_names_the_only_agent_dir(home: Path, tmp_path: Path) -> None:
    (home / ".pi/agent").mkdir(parents=True)
    mine = tmp_path / "mine" / ".omp" / "agent"
    homes = agent_homes(str(mine), penv(home))
    assert [(h.agent, h.data_dir) for h in homes] == [("omp", str(mine))]
    homes = agent_homes(penv=penv(home, PI_CODING_AGENT_DIR=str(home / ".pi/agent")))
    assert [(h.agent, h.data_dir) for h in homes] == [("pi", str(home / ".pi/agent"))]
    note = missing_agent_dir(str(mine), penv(home))
    assert note is not None and str(mine) in note and "--agent-dir" in note


def test_no_agent_dir_at_all_names_the_default_and_the_others(home: Path) -> None:
    homes = agent_homes(penv=penv(home))
    assert [(h.agent, h.data_dir) for h in homes] == [("xcsh", str(home / ".xcsh/agent"))]
    note = missing_agent_dir(penv=penv(home))
    assert note is not None
    assert str(home / ".xcsh/agent") in note and ".pi/agent" in note and ".omp/agent" in note
    assert not any(home.iterdir())


def test_a_projects_dirs_in_every_home(home: Path) -> None:
    cwd = str(home / "src" / "proj")
    os.makedirs(cwd)
    (home / ".pi/agent/sessions" / f"--{cwd.lstrip('/').replace('/', '-')}--").mkdir(parents=True)
    (home / ".omp/agent/sessions/-src-proj").mkdir(parents=True)
    p = penv(home)
    dirs = session_dirs_of_homes(cwd, agent_homes(penv=p), p)
    assert dirs == [
        str(home / ".pi/agent/sessions" / f"--{cwd.lstrip('/').replace('/', '-')}--"),
        str(home / ".omp/agent/sessions/-src-proj"),
    ]
