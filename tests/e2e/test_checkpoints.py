"""Checkpoints over stdio: `session/restorePreview`, `session/restore` and
`session/restoreUndo` on a real git working tree, against the real daemon (pytest-lsp);
the live follower's snapshots of a session an agent is writing."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import checkpoint_scenario
import pytest
import pytest_asyncio
from checkpoint_agent import Agent, git_repo, git_status
from e2e_helpers import World, call, start_client, stop_client
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient
from sessiontree.core.checkpoints import SnapshotStore, plan_restore
from sessiontree.core.session.manager import SessionManager

pytestmark = pytest.mark.asyncio(loop_scope="session")


@pytest.fixture(scope="module")
def cworld(tmp_path_factory: pytest.TempPathFactory) -> World:
    root = tmp_path_factory.mktemp("ckpt")
    agent = root / "agent"
    (agent / "sessions").mkdir(parents=True)
    return World(
        root=root, agent_dir=agent, sessions=agent / "sessions", state_dir=root / "state", small=root / "none"
    )


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def daemon(cworld: World) -> AsyncIterator[LanguageClient]:
    c = await start_client(cworld, "visual-studio-code")
    yield c
    await stop_client(c)


def _files(res: dict) -> dict[str, dict]:
    """The preview's files by name (their displayPath is relative to the workspace folder)."""
    return {Path(f["displayPath"]).name: f for f in res["files"]}


async def test_preview_restore_and_undo_keep_the_users_edits(daemon: LanguageClient, cworld: World) -> None:
    ws = git_repo(str(cworld.root / "ws1"))
    agent = Agent(str(cworld.root / "ws1.jsonl"), ws)
    agent.user("go")
    agent.write("app.py", "a = 1\nb = 2\nc = 3\n")
    target = agent.leaf
    agent.edit("app.py", ("c = 3", "c = 30"))
    agent.write("new.txt", "made later\n")
    app = Path(ws, "app.py")
    app.write_text(app.read_text().replace("a = 1", "a = 100  # mine"))
    status_before = git_status(ws)
    h = (await call(daemon, "session/open", {"path": agent.session}))["session"]

    pv = await call(
        daemon, "session/restorePreview", {"session": h, "targetId": target, "conversation": True}
    )
    files = _files(pv)
    assert files["app.py"]["status"] == "change"
    assert files["app.py"]["diff"].startswith("--- a/ws1/app.py\n+++ b/ws1/app.py\n")
    assert "-c = 30\n+c = 3\n" in files["app.py"]["diff"]
    assert "-a = 100" not in files["app.py"]["diff"]  # the user's line is kept
    assert files["new.txt"]["status"] == "unknown"  # a pi write does not say whether it existed before
    assert pv["baseId"] == pv["leafId"] and pv["conversation"] is True
    assert app.read_text() == "a = 100  # mine\nb = 2\nc = 30\n"  # a preview writes nothing

    res = await call(
        daemon,
        "session/restore",
        {"session": h, "targetId": target, "conversation": True, "previewToken": pv["previewToken"]},
    )
    assert [f["displayPath"] for f in res["written"]] == ["ws1/app.py"]
    assert res["backupId"] and res["newLeafId"] == target
    assert app.read_text() == "a = 100  # mine\nb = 2\nc = 3\n"
    assert [p for m, p in daemon.notes if m == "session/didNavigate" and p["session"] == h][-1][
        "newLeafId"
    ] == target  # type: ignore[attr-defined]

    undo = await call(daemon, "session/restoreUndo", {"session": h})
    assert undo["undone"] is True and undo["backupId"] == res["backupId"]
    assert app.read_text() == "a = 100  # mine\nb = 2\nc = 30\n"
    assert git_status(ws) == status_before
    assert (await call(daemon, "session/restoreUndo", {"session": h}))["undone"] is False


async def test_a_stale_preview_and_paths_outside_are_refused(daemon: LanguageClient, cworld: World) -> None:
    ws = git_repo(str(cworld.root / "ws2"))
    agent = Agent(str(cworld.root / "ws2.jsonl"), ws)
    agent.user("go")
    agent.write("x.txt", "1\nsame\nsame\n")
    target = agent.leaf
    agent.edit("x.txt", ("1", "2"))
    h = (await call(daemon, "session/open", {"path": agent.session}))["session"]
    pv = await call(daemon, "session/restorePreview", {"session": h, "targetId": target})
    Path(ws, "x.txt").write_text("2\nsame\nsame\nmore\n")
    with pytest.raises(JsonRpcException) as err:
        await call(
            daemon, "session/restore", {"session": h, "targetId": target, "previewToken": pv["previewToken"]}
        )
    assert err.value.code == -32004
    with pytest.raises(JsonRpcException) as err:
        await call(
            daemon,
            "session/restore",
            {"session": h, "targetId": target, "hashes": [{"path": "/etc/passwd", "hashBefore": None}]},
        )
    assert err.value.code == -32005
    with pytest.raises(JsonRpcException) as err:
        await call(daemon, "session/restore", {"session": h, "targetId": target})
    assert err.value.code == -32602
    with pytest.raises(JsonRpcException) as err:
        await call(daemon, "session/restorePreview", {"session": h, "targetId": "nope"})
    assert err.value.code == -32002
    assert Path(ws, "x.txt").read_text() == "2\nsame\nsame\nmore\n"
    # with the hashes of a fresh preview it goes through, merged with the new line
    pv = await call(daemon, "session/restorePreview", {"session": h, "targetId": target})
    hashes = [{"path": f["path"], "hashBefore": f["hashBefore"]} for f in pv["files"]]
    res = await call(daemon, "session/restore", {"session": h, "targetId": target, "hashes": hashes})
    assert [f["status"] for f in res["written"]] == ["change"]
    assert Path(ws, "x.txt").read_text() == "1\nsame\nsame\nmore\n"


async def _followed(daemon: LanguageClient, h: str, leaf: str | None) -> None:
    """Wait until the daemon folded the appends up to ``leaf`` in (a condition, not a time)."""
    for _ in range(400):
        try:
            pv = await call(
                daemon, "session/restorePreview", {"session": h, "targetId": leaf, "files": False}
            )
        except JsonRpcException:
            pv = {}
        if pv.get("leafId") == leaf:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"the daemon never saw {leaf}")


async def test_the_live_follower_snapshots_what_the_agent_writes(
    daemon: LanguageClient, cworld: World
) -> None:
    ws = git_repo(str(cworld.root / "ws3"))  # README.md is in the repository, the session never saw it
    agent = Agent(str(cworld.root / "ws3.jsonl"), ws)
    agent.user("go")
    h = (await call(daemon, "session/open", {"path": agent.session}))["session"]
    # the agent works while the daemon follows the file: an edit of a file the session never
    # showed (its result alone does not tell the file), then another
    target = agent.edit("README.md", ("repo", "repo v2"))
    await _followed(daemon, h, target)  # the agent's next call comes seconds later
    agent.edit("README.md", ("repo v2", "repo v3"))
    await _followed(daemon, h, agent.leaf)
    pv = await call(daemon, "session/restorePreview", {"session": h, "targetId": target})
    readme = _files(pv)["README.md"]
    assert (readme["status"], readme["target"], readme["base"]) == (
        "change",
        "known (snapshot)",
        "known (snapshot)",
    )
    assert "-repo v3\n+repo v2\n" in readme["diff"]
    # without those snapshots the session alone knows neither
    alone = plan_restore(
        SessionManager.open(agent.session, read_only=True),
        target,
        [ws],
        store=SnapshotStore(str(cworld.root / "empty")),
    )
    assert [(f.status, f.target) for f in alone.files] == [
        ("unknown", "unknown: edited while its content was not known")
    ]


async def test_contents_give_each_file_the_text_its_diff_leads_to(
    daemon: LanguageClient, cworld: World
) -> None:
    # the editors' scenario: two branches, the person's own edits, a conflict, an unknown file
    sc = checkpoint_scenario.make(str(cworld.root / "scenario"))
    h = (await call(daemon, "session/open", {"path": sc["session"]}))["session"]
    params = {"session": h, "targetId": sc["target"]}
    plain = _files(await call(daemon, "session/restorePreview", params))
    assert all("after" not in f for f in plain.values())  # whole files only when asked
    pv = await call(daemon, "session/restorePreview", {**params, "contents": True})
    files = _files(pv)
    assert {n: f["status"] for n, f in files.items()} == {
        "app.py": "change",
        "config.py": "conflict",
        "feature.py": "create",
        "notes.md": "unknown",
    }
    assert files["app.py"]["after"] == sc["restored"]["app.py"]  # the person's first line kept
    assert files["feature.py"]["after"] == sc["restored"]["feature.py"]
    conflict = files["config.py"]["after"]
    assert conflict.startswith("debug = False\n<<<<<<< disk (your version)\nlevel = 5\n")
    assert "=======\nlevel = 1\n>>>>>>> restore target\n" in conflict
    assert "after" not in files["notes.md"]
    assert pv["previewToken"] == (await call(daemon, "session/restorePreview", params))["previewToken"]
    # what the preview showed is what is written
    await call(daemon, "session/restore", {**params, "previewToken": pv["previewToken"]})
    ws = Path(sc["workspace"])
    assert (ws / "app.py").read_text() == files["app.py"]["after"]
    assert (ws / "feature.py").read_text() == files["feature.py"]["after"]
    assert (ws / "config.py").read_text() == sc["disk"]["config.py"]  # a conflict is never written
    await call(daemon, "session/restoreUndo", {"session": h})
    assert (ws / "app.py").read_text() == sc["disk"]["app.py"]
    assert not (ws / "feature.py").exists()
