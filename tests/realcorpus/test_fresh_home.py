"""A fresh HOME as a new user has it: sessions of pi-mono (``--<path>--`` directories), of
older versions (the legacy ``--<home>-proj--`` form) and of the current encoding
(``-proj``), a real v1 file, and, in a second variant, a ``PI_CODING_AGENT_DIR`` that does
not exist.

Looking (``ls``, ``tree``, ``show``, ``context``, ``doctor`` without ``--repair``, and the
daemon's list / open / view / tree / context) leaves every byte, name and directory exactly
as it was (sessiontree's own cache and state dirs aside), finds the sessions of a project
under every encoding of its directory, and reports a missing agent dir clearly.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from sessiontree.client import Client, RpcError
from shared_data import real_corpus_file

from .helpers import CliResult, CliRunner, isolated_env, snapshot, snapshot_diff

V1_NAME = "pimono-large-session.jsonl"
INTERNAL_ERROR = -32603
T0 = 1_764_000_000  # seconds; mtimes of the session files, oldest first


def legacy_name(path: Path) -> str:
    """The ``--<absolute path>--`` directory name pi-mono (and old versions) use."""
    return "--" + str(path).lstrip("/").replace("/", "-") + "--"


def small_session(cwd: Path, sid: str, text: str) -> bytes:
    ts = "2025-12-01T10:00:00.000Z"
    usage = {
        "input": 1,
        "output": 1,
        "cacheRead": 0,
        "cacheWrite": 0,
        "totalTokens": 2,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
    }
    rows: list[dict[str, Any]] = [
        {"type": "session", "version": 3, "id": sid, "timestamp": ts, "cwd": str(cwd)},
        {
            "type": "message",
            "id": f"{sid[:4]}u001",
            "parentId": None,
            "timestamp": ts,
            "message": {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1},
        },
        {
            "type": "message",
            "id": f"{sid[:4]}a002",
            "parentId": f"{sid[:4]}u001",
            "timestamp": ts,
            "message": {
                "role": "assistant",
                "content": [{"type": "text", "text": f"answer to {text}"}],
                "provider": "anthropic",
                "model": "claude-sonnet-4-5",
                "api": "anthropic-messages",
                "stopReason": "stop",
                "usage": usage,
                "timestamp": 2,
            },
        },
    ]
    return b"".join(json.dumps(r).encode() + b"\n" for r in rows)


@dataclass
class FreshHome:
    """The temporary machine: HOME, two projects, the agent's sessions, XDG dirs."""

    root: Path
    missing_agent_dir: bool = False
    home: Path = field(init=False)
    proj: Path = field(init=False)  # a project inside HOME
    app: Path = field(init=False)  # a project outside HOME (pi-mono's form only)
    agent: Path = field(init=False)
    files: dict[str, Path] = field(init=False)

    def __post_init__(self) -> None:
        self.home = self.root / "home"
        self.proj = self.home / "proj"
        self.app = self.root / "work" / "app"
        self.agent = self.home / ".xcsh" / "agent"
        for d in (self.proj, self.app, self.root / "xdg-data", self.root / "xdg-config"):
            d.mkdir(parents=True)
        sessions = self.agent / "sessions"
        pimono = sessions / legacy_name(self.app)
        legacy = sessions / legacy_name(self.proj)
        current = sessions / "-proj"
        for d in (pimono, legacy, current):
            d.mkdir(parents=True)
        self.files = {
            "v1": pimono / "2025-11-20T10-00-00-000Z_large.jsonl",
            "app": pimono / "2025-12-01T10-00-00-000Z_app00001.jsonl",
            "current": current / "2025-12-01T10-00-00-000Z_cur00001.jsonl",
            "legacy": legacy / "2025-12-01T10-00-00-000Z_leg00001.jsonl",
        }
        shutil.copyfile(real_corpus_file(V1_NAME), self.files["v1"])
        self.files["app"].write_bytes(small_session(self.app, "app00001", "hello app"))
        self.files["current"].write_bytes(small_session(self.proj, "cur00001", "hello current"))
        self.files["legacy"].write_bytes(small_session(self.proj, "leg00001", "hello legacy"))
        # newest last: the v1 file is the newest of `app`, the legacy one the newest of `proj`
        for i, key in enumerate(("app", "v1", "current", "legacy")):
            os.utime(self.files[key], (T0 + 100 * i, T0 + 100 * i))

    @property
    def missing(self) -> Path:
        return self.root / "missing-agent"

    def env(self) -> dict[str, str]:
        if self.missing_agent_dir:
            return isolated_env(self.root, PI_CODING_AGENT_DIR=str(self.missing))
        return isolated_env(self.root)

    def snap(self) -> dict[str, Any]:
        return snapshot(self.root, aside=[self.root / "xdg-cache", self.root / "xdg-state"])


class Recorder:
    """Runs commands and fails at the first one after which anything had changed."""

    def __init__(self, fh: FreshHome, cli: CliRunner) -> None:
        self.fh = fh
        self.cli = cli
        self.start = fh.snap()
        self.last = self.start

    def check(self, what: str) -> None:
        """Fail at the first command after which anything under the root differs."""
        now = self.fh.snap()
        diff = snapshot_diff(self.last, now)
        self.last = now
        assert not diff, f"looking changed the agent's files, after {what}:\n  " + "\n  ".join(diff)

    def cli_run(self, *argv: str | Path, cwd: Path | None = None) -> CliResult:
        res = self.cli.run([str(a) for a in argv], env=self.fh.env(), cwd=cwd or self.fh.proj)
        assert "Traceback" not in res.err, res.describe()
        self.check(f"`sessiontree {' '.join(res.argv)}`")
        assert res.rc in (0, 1, 2), res.describe()
        return res

    def assert_nothing_changed(self) -> None:
        assert not snapshot_diff(self.start, self.fh.snap())


@pytest.fixture(scope="module")
def cli() -> Iterator[CliRunner]:
    runner = CliRunner()
    yield runner
    runner.close()


def listed(res: CliResult) -> set[str]:
    return {s["path"] for s in res.json()["sessions"]}


def test_looking_in_a_fresh_home_changes_nothing_and_finds_every_encoding(
    tmp_path: Path, cli: CliRunner
) -> None:
    fh = FreshHome(tmp_path)
    rec = Recorder(fh, cli)
    f = fh.files
    proj_sessions = {str(f["current"]), str(f["legacy"])}
    app_sessions = {str(f["v1"]), str(f["app"])}

    res = rec.cli_run("ls")
    assert res.rc == 0, res.describe()
    assert all(p in res.out for p in proj_sessions), f"`ls` in {fh.proj} misses a session:\n{res.out}"
    res = rec.cli_run("ls", "--json")
    assert listed(res) == proj_sessions
    res = rec.cli_run("ls", "--all")
    assert res.rc == 0 and all(str(p) in res.out for p in f.values()), res.out
    res = rec.cli_run("ls", "--all", "--json")
    assert listed(res) == proj_sessions | app_sessions
    res = rec.cli_run("ls", "--cwd", fh.app, "--json")
    assert listed(res) == app_sessions, "the pi-mono `--<path>--` directory is not found"
    res = rec.cli_run("ls", "--cwd", fh.proj, "--json")
    assert listed(res) == proj_sessions, "a project's sessions under its legacy and current names"
    res = rec.cli_run("ls", "--cwd", fh.app)
    assert res.rc == 0 and all(p in res.out for p in app_sessions), res.out

    res = rec.cli_run("tree")
    assert res.rc == 0, res.describe()
    res = rec.cli_run("tree", "--json")
    assert res.json()["path"] == str(f["legacy"]), "tree without FILE: the newest session of the cwd"
    res = rec.cli_run("tree", "--json", cwd=fh.app)
    assert res.json()["path"] == str(f["v1"])
    for verb in (["tree"], ["show"], ["show", "--json"], ["context"], ["context", "--llm"], ["doctor"]):
        res = rec.cli_run(*verb, f["v1"])
        assert res.rc == 0, res.describe()
    res = rec.cli_run("doctor", "--all")
    assert res.rc == 0, res.describe()

    with Client.spawn(env=fh.env(), root=str(fh.proj), init_options={}) as c:

        def call(method: str, params: Any) -> Any:
            try:
                result = c.request(method, params, timeout=30)
            except RpcError as exc:
                raise AssertionError(f"{method} {params}: {exc.code} {exc.message}") from exc
            rec.check(f"the daemon's {method}")
            return result

        got = {s["path"] for s in call("session/list", {"cwd": str(fh.proj)})["sessions"]}
        assert got == proj_sessions
        got = {s["path"] for s in call("session/list", {"cwd": str(fh.app)})["sessions"]}
        assert got == app_sessions
        got = {s["path"] for s in call("session/list", {"all": True})["sessions"]}
        assert got == proj_sessions | app_sessions
        for key in ("v1", "legacy"):
            s = call("session/open", {"path": str(f[key])})["session"]
            call("session/view", {"session": s})
            call("session/tree", {"session": s})
            call("session/context", {"session": s, "llm": True})
            call("session/close", {"session": s})
    rec.check("the daemon's exit")
    rec.assert_nothing_changed()


def test_a_missing_agent_dir_is_reported_and_nothing_is_created(tmp_path: Path, cli: CliRunner) -> None:
    fh = FreshHome(tmp_path, missing_agent_dir=True)
    rec = Recorder(fh, cli)
    for argv in (["ls"], ["ls", "--all"], ["ls", "--cwd", str(fh.proj)], ["ls", "--json"]):
        res = rec.cli_run(*argv)
        assert res.rc != 0, f"a missing agent dir is not an error: {res.describe()}\nstdout: {res.out}"
        assert str(fh.missing) in res.err and "PI_CODING_AGENT_DIR" in res.err, res.describe()
    for argv in (["tree"], ["doctor", "--all"], ["show", str(fh.files["current"])]):
        rec.cli_run(*argv)
    with Client.spawn(env=fh.env(), root=str(fh.proj), init_options={}) as c:
        for params in ({"cwd": str(fh.proj)}, {"all": True}):
            try:
                c.request("session/list", params, timeout=30)
            except RpcError as exc:
                assert exc.code != INTERNAL_ERROR, exc
            rec.check(f"the daemon's session/list {params}")
    rec.check("the daemon's exit")
    assert not fh.missing.exists()
    rec.assert_nothing_changed()


def test_show_json_twice_gives_the_same_leaf_and_context_accepts_it(tmp_path: Path) -> None:
    """Two separate interpreters (`python -m sessiontree`), no cache shared between them."""
    src = real_corpus_file(V1_NAME)
    copy = tmp_path / "s.jsonl"
    shutil.copyfile(src, copy)
    leaves = []
    for i in range(2):
        env = isolated_env(tmp_path, XDG_CACHE_HOME=str(tmp_path / f"cache{i}"))
        out = subprocess.run(
            [sys.executable, "-m", "sessiontree", "show", str(copy), "--json"],
            capture_output=True,
            text=True,
            env=env,
            check=True,
        )
        leaves.append(json.loads(out.stdout)["leafId"])
    assert leaves[0] is not None and leaves[0] == leaves[1]
    ctx = subprocess.run(
        [sys.executable, "-m", "sessiontree", "context", str(copy), "--leaf", leaves[0]],
        capture_output=True,
        text=True,
        env=env,
    )
    assert ctx.returncode == 0, ctx.stderr
    assert copy.read_bytes() == src.read_bytes()
