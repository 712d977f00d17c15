"""The daemon without an agent dir set (issue 34): `session/list` and `session/recent` look in
every agent dir of pi's family that exists, each session marked with its agent (`dialect`)
and named by its agent's rule; the sessions open (the dirs are allowed roots); with no agent
dir at all the answer says so (`hint`). Nothing is created in any agent dir."""

from __future__ import annotations

import os
from pathlib import Path

from face import place
from sessiontree.client import Client

REPO = Path(__file__).resolve().parents[2]


def _spawn(tmp_path: Path, home: Path, root: Path) -> Client:
    env = {
        "HOME": str(home),
        "XDG_CACHE_HOME": str(tmp_path / "xdg-cache"),
        "XDG_STATE_HOME": str(tmp_path / "xdg-state"),
        "XDG_DATA_HOME": str(tmp_path / "xdg-data"),
        "PI_CODING_AGENT_DIR": "",
        "PYTHONPATH": os.pathsep.join([str(REPO / "server"), str(REPO / "protocol")]),
    }
    return Client.spawn(root=str(root), env=env, init_options={"watch": False})


def _tree(root: Path) -> list[tuple[str, int]]:
    return sorted((str(p.relative_to(root)), p.stat().st_mtime_ns) for p in root.rglob("*"))


def test_pi_and_omp_sessions_are_listed_named_and_opened_without_a_setting(tmp_path: Path) -> None:
    home = tmp_path / "home"
    proj = home / "src" / "proj"
    proj.mkdir(parents=True)
    pi = place(
        home / ".pi/agent/sessions", f"--{str(proj).lstrip('/').replace('/', '-')}--", "pi16", str(proj)
    )
    omp = place(home / ".omp/agent/sessions", "-src-proj", "omp18", str(proj))
    os.utime(pi, (1_800_000_000, 1_800_000_000))
    os.utime(omp, (1_800_000_100, 1_800_000_100))
    before = _tree(home)
    with _spawn(tmp_path, home, proj) as c:
        for params in ({"cwd": str(proj)}, {"all": True}):
            res = c.request("session/list", params)
            assert [(s["path"], s["displayName"], s["dialect"]) for s in res["sessions"]] == [
                (str(omp), "Parser refactor", "omp"),
                (str(pi), "Flaky watcher test", "pi"),
            ]
            assert res["agentDirs"] == [str(home / ".pi/agent"), str(home / ".omp/agent")]
            assert "hint" not in res
        recent = c.request("session/recent", {"cwd": str(proj), "limit": 5})["sessions"]
        assert [r["path"] for r in recent] == [str(omp), str(pi)]
        for path, name in ((omp, "Parser refactor"), (pi, "Flaky watcher test")):
            opened = c.request("session/open", {"path": str(path)})
            assert opened["displayName"] == name
            c.request("session/close", {"session": opened["session"]})
    assert _tree(home) == before


def test_no_agent_dir_at_all_is_said_in_the_answer(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "proj").mkdir(parents=True)
    with _spawn(tmp_path, home, home / "proj") as c:
        res = c.request("session/list", {"cwd": str(home / "proj")})
    assert res["sessions"] == []
    assert str(home / ".xcsh/agent") in res["hint"] and ".pi/agent" in res["hint"]
    assert sorted(p.name for p in home.iterdir()) == ["proj"]
