"""Agent dir, XDG rules, cwd encodings (found, never moved), terminal breadcrumbs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from sessiontree.core import paths
from sessiontree.core.paths import (
    PathEnv,
    blobs_dir,
    breadcrumb_path,
    encode_cwd,
    encode_cwd_legacy,
    get_agent_dir,
    get_data_dir,
    get_default_session_dir,
    get_sessions_root,
    get_state_dir,
    get_terminal_id,
    read_breadcrumb,
    sessions_root,
    write_breadcrumb,
)


@pytest.fixture
def machine(tmp_path: Path) -> PathEnv:
    home = tmp_path / "home" / "u"
    tmp = tmp_path / "systmp"
    home.mkdir(parents=True)
    tmp.mkdir()
    return PathEnv(env={}, home=str(home), tmp=str(tmp), platform="linux", tty=None)


def with_env(base: PathEnv, **env: str) -> PathEnv:
    return PathEnv(env=env, home=base.home, tmp=base.tmp, platform=base.platform, tty=base.tty)


# ------------------------------------------------------------------ agent, data and state dirs


def test_default_agent_dir(machine: PathEnv) -> None:
    assert get_agent_dir(machine) == os.path.join(machine.home, ".xcsh", "agent")
    assert sessions_root(penv=machine) == os.path.join(machine.home, ".xcsh", "agent", "sessions")
    assert get_sessions_root is sessions_root
    assert blobs_dir(penv=machine) == os.path.join(machine.home, ".xcsh", "agent", "blobs")


def test_env_override_is_made_absolute(
    machine: PathEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    penv = with_env(machine, PI_CODING_AGENT_DIR="rel/agent")
    assert get_agent_dir(penv) == str(tmp_path / "rel" / "agent")
    assert sessions_root(penv=penv) == str(tmp_path / "rel" / "agent" / "sessions")


def test_xdg_dirs_apply_only_to_the_default_agent_dir_when_they_exist(
    machine: PathEnv, tmp_path: Path
) -> None:
    data, state = tmp_path / "xdg-data", tmp_path / "xdg-state"
    penv = with_env(machine, XDG_DATA_HOME=str(data), XDG_STATE_HOME=str(state))
    default = get_agent_dir(penv)
    # Not there yet: the agent dir is used.
    assert get_data_dir(penv=penv) == default and get_state_dir(penv=penv) == default
    (data / "xcsh").mkdir(parents=True)
    (state / "xcsh").mkdir(parents=True)
    assert sessions_root(penv=penv) == str(data / "xcsh" / "sessions")
    assert blobs_dir(penv=penv) == str(data / "xcsh" / "blobs")
    assert get_state_dir(penv=penv) == str(state / "xcsh")
    # An explicit agent dir, the env override or another platform turn XDG off.
    assert sessions_root(str(tmp_path / "a"), penv) == str(tmp_path / "a" / "sessions")
    overridden = with_env(machine, XDG_DATA_HOME=str(data), PI_CODING_AGENT_DIR=str(tmp_path / "o"))
    assert get_data_dir(penv=overridden) == str(tmp_path / "o")
    windows = PathEnv(env={"XDG_DATA_HOME": str(data)}, home=machine.home, tmp=machine.tmp, platform="win32")
    assert get_data_dir(penv=windows) == get_agent_dir(windows)
    mac = PathEnv(env={"XDG_DATA_HOME": str(data)}, home=machine.home, tmp=machine.tmp, platform="darwin")
    assert get_data_dir(penv=mac) == str(data / "xcsh")


# ------------------------------------------------------------------ cwd encoding


def test_encode_cwd_forms(machine: PathEnv, tmp_path: Path) -> None:
    home, tmp = Path(machine.home), Path(machine.tmp)
    (home / "Projects" / "app").mkdir(parents=True)
    (tmp / "x" / "y").mkdir(parents=True)
    other = tmp_path / "srv" / "x"
    other.mkdir(parents=True)
    assert encode_cwd(str(home / "Projects" / "app"), penv=machine) == "-Projects-app"
    assert encode_cwd(str(home), penv=machine) == "-"
    assert encode_cwd(str(tmp), penv=machine) == "-tmp"
    assert encode_cwd(str(tmp / "x" / "y"), penv=machine) == "-tmp-x-y"
    assert encode_cwd(str(other), penv=machine) == "--" + str(other).lstrip("/").replace("/", "-") + "--"
    assert encode_cwd("/srv/x", home=machine.home, tmp=machine.tmp) == "--srv-x--"
    assert encode_cwd("/", home=machine.home, tmp=machine.tmp) == "----"
    assert encode_cwd(str(home / "a:b\\c"), penv=machine) == "-a-b-c"
    # A sibling whose name starts like home is not inside home.
    assert encode_cwd(machine.home + "2", penv=machine).startswith("--")
    assert encode_cwd_legacy("/srv/x") == "--srv-x--"


def test_encode_cwd_resolves_symlinks(machine: PathEnv, tmp_path: Path) -> None:
    real = Path(machine.home) / "code" / "proj"
    real.mkdir(parents=True)
    link = tmp_path / "link-to-proj"
    link.symlink_to(real)
    assert encode_cwd(str(link), penv=machine) == "-code-proj"
    # A home given through a symlink is resolved too.
    home_link = tmp_path / "homelink"
    home_link.symlink_to(machine.home)
    assert encode_cwd(str(real), home=str(home_link), tmp=machine.tmp) == "-code-proj"
    # Paths that do not exist fall back to the absolute path.
    assert encode_cwd(str(Path(machine.home) / "ghost" / "dir"), penv=machine) == "-ghost-dir"


# ------------------------------------------------------------------ default session dir and migrations


def tree_snapshot(root: Path) -> list[tuple[str, str]]:
    """Every name under ``root`` with its kind: what "nothing moved" compares."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames:
            out.append((os.path.relpath(os.path.join(dirpath, name), root), "dir"))
        for name in filenames:
            full = os.path.join(dirpath, name)
            out.append((os.path.relpath(full, root), Path(full).read_text()))
    return sorted(out)


def test_default_session_dir_is_computed_not_created(machine: PathEnv, tmp_path: Path) -> None:
    cwd = Path(machine.home) / "p"
    cwd.mkdir()
    agent = tmp_path / "agent"
    d = get_default_session_dir(str(cwd), str(agent), machine)
    assert d == str(agent / "sessions" / "-p")
    assert not agent.exists()
    assert get_default_session_dir(str(cwd), str(agent), machine, create=True) == d
    assert os.path.isdir(d)


def test_every_encoding_of_a_cwd_is_found_and_nothing_moves(machine: PathEnv, tmp_path: Path) -> None:
    agent = tmp_path / "agent"
    root = agent / "sessions"
    proj = Path(machine.home) / "proj"
    proj.mkdir()
    enc = machine.home.lstrip("/").replace("/", "-")
    # pi-mono's form (also the legacy one), the current form, and an unrelated project.
    (root / f"--{enc}-proj--").mkdir(parents=True)
    (root / f"--{enc}-proj--" / "b.jsonl").write_text("B")
    (root / "-proj").mkdir()
    (root / "-proj" / "c.jsonl").write_text("C")
    (root / f"--{enc}--").mkdir()
    (root / f"--{enc}--" / "a.jsonl").write_text("A")
    (root / "--srv-x--").mkdir()
    before = tree_snapshot(root)

    assert paths.session_dirs_of(str(proj), str(agent), machine) == [
        str(root / "-proj"),
        str(root / f"--{enc}-proj--"),
    ]
    assert get_default_session_dir(str(proj), str(agent), machine) == str(root / "-proj")
    assert paths.session_dirs_of(machine.home, str(agent), machine) == [str(root / f"--{enc}--")]
    # Only the legacy dir exists: new sessions go beside the agent's own files.
    assert get_default_session_dir(machine.home, str(agent), machine) == str(root / f"--{enc}--")
    assert tree_snapshot(root) == before


def test_pi_mono_dir_of_a_cwd_outside_home_is_found(machine: PathEnv, tmp_path: Path) -> None:
    cwd = Path(machine.tmp) / "work"
    cwd.mkdir()
    agent = tmp_path / "agent"
    legacy = agent / "sessions" / encode_cwd_legacy(str(cwd))
    legacy.mkdir(parents=True)
    (legacy / "s.jsonl").write_text("S")
    assert paths.session_dir_names(str(cwd), machine.home, machine.tmp)[0] == "-tmp-work"
    assert paths.session_dirs_of(str(cwd), str(agent), machine) == [str(legacy)]
    assert get_default_session_dir(str(cwd), str(agent), machine) == str(legacy)
    assert (legacy / "s.jsonl").read_text() == "S"
    assert not (agent / "sessions" / "-tmp-work").exists()


def test_a_file_where_a_dir_would_be_is_not_a_session_dir(machine: PathEnv, tmp_path: Path) -> None:
    agent = tmp_path / "agent"
    (agent / "sessions").mkdir(parents=True)
    enc = machine.home.lstrip("/").replace("/", "-")
    (agent / "sessions" / f"--{enc}-x--").write_text("a file, not a dir")
    x = Path(machine.home) / "x"
    x.mkdir()
    assert paths.session_dirs_of(str(x), str(agent), machine) == []
    assert get_default_session_dir(str(x), str(agent), machine) == str(agent / "sessions" / "-x")
    assert (agent / "sessions" / f"--{enc}-x--").is_file()


# ------------------------------------------------------------------ terminals and breadcrumbs


@pytest.mark.parametrize(
    ("tty", "env", "expected"),
    [
        ("/dev/pts/3", {"KITTY_WINDOW_ID": "1"}, "pts-3"),
        ("/dev/ttys004", {}, "ttys004"),
        (None, {"KITTY_WINDOW_ID": "7", "TMUX_PANE": "%1"}, "kitty-7"),
        (None, {"TMUX_PANE": "%1", "WT_SESSION": "w"}, "tmux-%1"),
        (None, {"TERM_SESSION_ID": "w0t0p0:ABC"}, "apple-w0t0p0:ABC"),
        (None, {"WT_SESSION": "guid"}, "wt-guid"),
        (None, {"KITTY_WINDOW_ID": ""}, None),
        (None, {}, None),
        (None, {"WT_SESSION": "../../etc"}, "wt-..-..-etc"),
    ],
)
def test_terminal_id(tty: str | None, env: dict[str, str], expected: str | None) -> None:
    assert get_terminal_id(PathEnv(env=env, tty=tty)) == expected


def test_breadcrumb_round_trip(machine: PathEnv, tmp_path: Path) -> None:
    penv = PathEnv(env={}, home=machine.home, tmp=machine.tmp, tty="/dev/pts/9")
    agent = tmp_path / "agent"
    session = tmp_path / "s.jsonl"
    session.write_text("{}\n")
    write_breadcrumb("/work/a", str(session), str(agent), penv)
    crumb = agent / "terminal-sessions" / "pts-9"
    assert breadcrumb_path(str(agent), penv) == str(crumb)
    assert crumb.read_text() == f"/work/a\n{session}\n"
    assert read_breadcrumb("/work/a/", str(agent), penv) == str(session)
    assert read_breadcrumb("/work/b", str(agent), penv) is None
    session.unlink()
    assert read_breadcrumb("/work/a", str(agent), penv) is None
    other_terminal = PathEnv(env={}, tty="/dev/pts/10")
    assert read_breadcrumb("/work/a", str(agent), other_terminal) is None


def test_breadcrumbs_use_the_state_dir(machine: PathEnv, tmp_path: Path) -> None:
    state = tmp_path / "state"
    (state / "xcsh").mkdir(parents=True)
    penv = PathEnv(env={"XDG_STATE_HOME": str(state)}, home=machine.home, tmp=machine.tmp, tty="/dev/pts/1")
    write_breadcrumb("/w", "/w/s.jsonl", penv=penv)
    assert (state / "xcsh" / "terminal-sessions" / "pts-1").read_text() == "/w\n/w/s.jsonl\n"


def test_breadcrumbs_are_fire_and_forget(machine: PathEnv, tmp_path: Path) -> None:
    no_terminal = PathEnv(env={}, home=machine.home, tmp=machine.tmp)
    agent = tmp_path / "agent"
    write_breadcrumb("/w", "/w/s.jsonl", str(agent), no_terminal)
    assert not agent.exists()
    assert read_breadcrumb("/w", str(agent), no_terminal) is None
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the agent dir should be")
    terminal = PathEnv(env={}, tty="/dev/pts/2")
    write_breadcrumb("/w", "/w/s.jsonl", str(blocked), terminal)  # no exception
    assert read_breadcrumb("/w", str(blocked), terminal) is None
