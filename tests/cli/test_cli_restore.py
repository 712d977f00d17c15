"""`sessiontree restore`: a dry run prints each file's diff and writes nothing; a restore
writes, keeps the user's edits, and `--undo` puts the bytes back; `--conversation` moves the
leaf the daemon remembers; bad ids and files exit 2; the session file is never written."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from checkpoint_agent import Agent, git_repo, git_status
from sessiontree.cli import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture
def project(tmp_path: Path) -> tuple[Agent, str, str]:
    ws = git_repo(str(tmp_path / "ws"))
    agent = Agent(str(tmp_path / "session.jsonl"), ws)
    agent.user("go")
    agent.write("app.py", "a = 1\nb = 2\nc = 3\n")
    target = agent.leaf
    agent.edit("app.py", ("c = 3", "c = 30"))
    assert target is not None
    return agent, ws, target


def _sha(path: str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def test_dry_run_prints_the_diff_and_writes_nothing(
    capsys: pytest.CaptureFixture[str], project: tuple[Agent, str, str]
) -> None:
    agent, ws, target = project
    session_hash = _sha(agent.session)
    rc, out, _ = run(capsys, "restore", agent.session, "--to", target, "--dry-run")
    assert rc == 0
    assert "change  app.py\n" in out
    assert "--- a/app.py\n+++ b/app.py\n@@ -1,3 +1,3 @@\n a = 1\n b = 2\n-c = 30\n+c = 3\n" in out
    assert Path(ws, "app.py").read_text() == "a = 1\nb = 2\nc = 30\n"
    assert _sha(agent.session) == session_hash


def test_restore_keeps_the_users_edit_and_undo_puts_every_byte_back(
    capsys: pytest.CaptureFixture[str], project: tuple[Agent, str, str]
) -> None:
    agent, ws, target = project
    app = Path(ws, "app.py")
    app.write_text("a = 1  # mine\nb = 2\nc = 30\n")
    before, status = app.read_bytes(), git_status(ws)
    session_hash = _sha(agent.session)
    rc, out, _ = run(capsys, "restore", agent.session, "--to", target, "--json")
    assert rc == 0
    res = json.loads(out)
    assert [(f["displayPath"], f["status"]) for f in res["files"]] == [("app.py", "change")]
    assert res["backupId"]
    assert app.read_text() == "a = 1  # mine\nb = 2\nc = 3\n"
    rc, out, _ = run(capsys, "restore", agent.session, "--undo")
    assert rc == 0 and "undid restore" in out
    assert app.read_bytes() == before and git_status(ws) == status
    rc, out, _ = run(capsys, "restore", agent.session, "--undo")
    assert rc == 0 and "nothing to undo" in out
    assert _sha(agent.session) == session_hash


def test_roots_limit_what_is_written(
    capsys: pytest.CaptureFixture[str], project: tuple[Agent, str, str], tmp_path: Path
) -> None:
    agent, ws, target = project
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    rc, out, _ = run(capsys, "restore", agent.session, "--to", target, "--root", str(elsewhere))
    assert rc == 0 and "outside-workspace" in out
    assert Path(ws, "app.py").read_text() == "a = 1\nb = 2\nc = 30\n"


def test_conversation_moves_the_leaf_the_daemon_remembers(
    capsys: pytest.CaptureFixture[str], project: tuple[Agent, str, str]
) -> None:
    agent, ws, target = project
    rc, out, _ = run(capsys, "restore", agent.session, "--to", target, "--conversation")
    assert rc == 0 and f"-> {target}" in out
    assert Path(ws, "app.py").read_text() == "a = 1\nb = 2\nc = 30\n"  # files are a separate choice
    from sessiontree.client import Client

    with Client.spawn(init_options={"allowedRoots": [str(Path(agent.session).parent)], "watch": False}) as c:
        opened = c.request("session/open", {"path": agent.session})
    assert opened["leafId"] == target


def test_bad_ids_and_files_exit_2(
    capsys: pytest.CaptureFixture[str], project: tuple[Agent, str, str], tmp_path: Path
) -> None:
    agent, _, _ = project
    assert run(capsys, "restore", agent.session, "--to", "nope")[0] == 2
    assert run(capsys, "restore", str(tmp_path / "missing.jsonl"), "--to", "x")[0] == 2
