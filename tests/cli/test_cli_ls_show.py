"""The `sessiontree ls` and `sessiontree show` commands, run as real processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson


def run(*args: str, env_extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    env.update(env_extra or {})
    return subprocess.run(
        [sys.executable, "-m", "sessiontree", *args], capture_output=True, text=True, env=env, timeout=60
    )


def write(path: Path, rows: list[Any], mtime: int = 1000) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join((r if isinstance(r, bytes) else orjson.dumps(r)) + b"\n" for r in rows))
    os.utime(path, (mtime, mtime))
    return path


def header(sid: str, **extra: Any) -> dict[str, Any]:
    return {
        "type": "session",
        "version": 3,
        "id": sid,
        "timestamp": "2025-01-01T00:00:00.000Z",
        "cwd": "/w",
        **extra,
    }


def msg(eid: str, parent: str | None, role: str, text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "id": eid,
        "parentId": parent,
        "timestamp": "2025-01-01T00:00:01.000Z",
        "message": {"role": role, "content": text},
    }


def test_ls_session_dir_text_and_json(tmp_path: Path) -> None:
    d = tmp_path / "sessions"
    write(d / "a.jsonl", [header("aaa", title="Alpha"), msg("1", None, "user", "hi")], 1000)
    write(
        d / "b.jsonl",
        [header("bbb"), msg("1", None, "user", "first question"), msg("2", "1", "assistant", "x")],
        2000,
    )
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    res = run("ls", "--session-dir", str(d), env_extra=env)
    assert res.returncode == 0, res.stderr
    out = res.stdout.splitlines()
    assert len(out) == 2
    assert "first question" in out[0] and str(d / "b.jsonl") in out[0] and "2 msgs" in out[0]
    assert "Alpha" in out[1]
    res = run("ls", "--session-dir", str(d), "--json", env_extra=env)
    data = json.loads(res.stdout)
    assert [s["id"] for s in data["sessions"]] == ["bbb", "aaa"]
    assert (
        data["sessions"][0]["messageCount"] == 2 and data["sessions"][0]["firstMessage"] == "first question"
    )


def test_ls_cwd_and_all_with_agent_dir(tmp_path: Path) -> None:
    agent = tmp_path / "agent"
    env = {
        "PI_CODING_AGENT_DIR": str(agent),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "HOME": str(tmp_path / "home"),
    }
    (tmp_path / "home" / "proj").mkdir(parents=True)
    write(agent / "sessions" / "-proj" / "x.jsonl", [header("xxx"), msg("1", None, "user", "in proj")])
    write(agent / "sessions" / "-other" / "y.jsonl", [header("yyy"), msg("1", None, "user", "elsewhere")])
    res = run("ls", "--cwd", str(tmp_path / "home" / "proj"), "--json", env_extra=env)
    assert res.returncode == 0, res.stderr
    assert [s["id"] for s in json.loads(res.stdout)["sessions"]] == ["xxx"]
    res = run("ls", "--all", "--json", env_extra=env)
    assert sorted(s["id"] for s in json.loads(res.stdout)["sessions"]) == ["xxx", "yyy"]


def test_ls_missing_dir_fails(tmp_path: Path) -> None:
    res = run("ls", "--session-dir", str(tmp_path / "nope"))
    assert res.returncode == 2 and "nope" in res.stderr


def test_show_counts_leaf_and_drops_without_writing(tmp_path: Path) -> None:
    p = write(
        tmp_path / "s.jsonl",
        [
            header("sss", title="T"),
            msg("1", None, "user", "q"),
            b"garbage",
            msg("2", "1", "assistant", "a"),
            {"type": "label", "id": "3", "parentId": "2", "timestamp": "t", "targetId": "1", "label": "L"},
        ],
    )
    before = p.read_bytes()
    res = run("show", str(p), "--json")
    assert res.returncode == 0, res.stderr
    info = json.loads(res.stdout)
    assert info["header"]["id"] == "sss" and info["entryCount"] == 3
    assert info["types"] == {"label": 1, "message": 2} and info["roles"] == {"assistant": 1, "user": 1}
    assert info["leafId"] == "3"
    assert info["labels"] == [{"targetId": "1", "label": "L"}]
    assert info["dropped"]["skippedLines"] == 1 and info["dropped"]["regions"][0]["line"] == 3
    text = run("show", str(p))
    assert text.returncode == 0 and "leaf:     3" in text.stdout and "1 unreadable line" in text.stdout
    assert p.read_bytes() == before


def test_show_old_version_is_not_rewritten(tmp_path: Path) -> None:
    p = write(
        tmp_path / "v1.jsonl",
        [
            {"type": "session", "id": "v", "timestamp": "t", "cwd": "/"},
            {"type": "message", "timestamp": "t", "message": {"role": "user", "content": "x"}},
        ],
    )
    before = p.read_bytes()
    res = run("show", str(p), "--json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["migratedFrom"] == 1
    assert p.read_bytes() == before


def test_show_errors_name_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b"not a session\n")
    res = run("show", str(bad))
    assert res.returncode == 2 and str(bad) in res.stderr and "not a session file" in res.stderr
    assert bad.read_bytes() == b"not a session\n"
    res = run("show", str(tmp_path / "missing.jsonl"))
    assert res.returncode == 2 and "missing.jsonl" in res.stderr and "no such file" in res.stderr
    assert not (tmp_path / "missing.jsonl").exists()


def isolated_env(tmp_path: Path) -> dict[str, str]:
    """HOME, the XDG dirs and the agent dir inside the test's directory."""
    return {
        "HOME": str(tmp_path / "home"),
        "XDG_CACHE_HOME": str(tmp_path / "xdg-cache"),
        "XDG_STATE_HOME": str(tmp_path / "xdg-state"),
        "XDG_DATA_HOME": str(tmp_path / "xdg-data"),
        "XDG_CONFIG_HOME": str(tmp_path / "xdg-config"),
        "PI_CODING_AGENT_DIR": str(tmp_path / "agent"),
    }


def test_show_empty_file_invents_no_session(tmp_path: Path) -> None:
    # A read-only open of a 0-byte file used to start a new session in memory and print
    # its random id as if the file held it.
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    env = isolated_env(tmp_path)
    for extra in ([], ["--json"]):
        res = run("show", str(empty), *extra, env_extra=env)
        assert res.returncode == 2, res.stdout
        assert res.stdout == ""
        assert (
            res.stderr
            == f"sessiontree show: {empty}: empty file: no session header (no session has been written to it yet)\n"
        )
    assert empty.read_bytes() == b""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty.jsonl"]  # nothing created anywhere


def test_show_leaves_absent_values_out(tmp_path: Path) -> None:
    only_header = write(tmp_path / "h.jsonl", [{"type": "session", "version": 3, "id": "hhh"}])
    env = isolated_env(tmp_path)
    res = run("show", str(only_header), env_extra=env)
    assert res.returncode == 0, res.stderr
    assert "None" not in res.stdout
    assert "leaf:     none (no entries)" in res.stdout
    assert "session:  hhh  version 3\n" in res.stdout  # no cwd in the header: none shown
    assert "created:" not in res.stdout
    info = json.loads(run("show", str(only_header), "--json", env_extra=env).stdout)
    assert info["leafId"] is None

    no_role = write(
        tmp_path / "r.jsonl",
        [header("rrr"), {"type": "message", "id": "1", "parentId": None, "timestamp": "t", "message": {}}],
    )
    res = run("show", str(no_role), env_extra=env)
    assert res.returncode == 0, res.stderr
    assert "None" not in res.stdout and "(no role) 1" in res.stdout
    assert json.loads(run("show", str(no_role), "--json", env_extra=env).stdout)["roles"] == {"(no role)": 1}


def test_show_lists_a_few_dropped_regions(tmp_path: Path) -> None:
    rows: list[Any] = [header("ggg"), msg("1", None, "user", "q")]
    rows += [b"\x00\xff garbage %d" % i for i in range(20)]
    p = write(tmp_path / "g.jsonl", rows)
    res = run("show", str(p), env_extra=isolated_env(tmp_path))
    assert res.returncode == 0, res.stderr
    region_lines = [ln for ln in res.stdout.splitlines() if ln.startswith("  line ")]
    assert len(region_lines) == 5
    assert "dropped:  20 unreadable line(s)" in res.stdout
    assert "... and 15 more region(s); `sessiontree doctor` lists them all" in res.stdout
    regions = json.loads(run("show", str(p), "--json", env_extra=isolated_env(tmp_path)).stdout)["dropped"]
    assert len(regions["regions"]) == 20
