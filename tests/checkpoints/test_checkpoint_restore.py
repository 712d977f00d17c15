"""Restoring a real git working tree to nodes of a session whose calls really changed it.

Each test plays a pi agent (tests/checkpoint_agent.py: its calls carried out on the disk and
written to the session file as pi writes them), then plans and applies restores with the
core (core/checkpoints) and checks the files on disk and `git status`.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import orjson
import pytest
from checkpoint_agent import Agent, git_repo, git_status
from sessiontree.core.checkpoints import SnapshotStore, apply_plan, files_at, plan_restore, recover, undo_last
from sessiontree.core.errors import ConflictError
from sessiontree.core.session.manager import SessionManager


def _read(ws: str, rel: str) -> str | None:
    try:
        return Path(ws, rel).read_text()
    except FileNotFoundError:
        return None


def _by(plan: object) -> dict[str, object]:
    return {f.display: f for f in plan.files}  # type: ignore[attr-defined]


@pytest.fixture
def world(tmp_path: Path) -> tuple[str, Agent, SnapshotStore]:
    ws = git_repo(str(tmp_path / "ws"))
    agent = Agent(str(tmp_path / "session.jsonl"), ws)
    return ws, agent, SnapshotStore(str(tmp_path / "data"))


def _two_branches(agent: Agent, store: SnapshotStore) -> tuple[str, str, str]:
    """root: app.py written; branch A: edits app.py, writes a.txt; then the files restored to
    the fork (the restore this feature is for: a.txt stays, nothing says it was not there
    before) and branch B: edits app.py, writes b.txt."""
    agent.user("start")
    agent.write("app.py", "def main():\n    return 1\n\n\ndef helper():\n    return 'h'\n")
    fork = agent.leaf
    agent.edit("app.py", ("return 1", "return 'A'"))
    agent.write("a.txt", "from A\n")
    leaf_a = agent.leaf
    assert fork is not None
    to_fork = plan_restore(_open(agent), fork, [agent.cwd], store=store)
    apply_plan(to_fork, store, [agent.cwd], token=to_fork.token)
    agent.at(fork)
    agent.user("try B")
    agent.edit("app.py", ("return 1", "return 'B'"))
    agent.write("b.txt", "from B\n")
    assert fork and leaf_a and agent.leaf
    return fork, leaf_a, agent.leaf


def _open(agent: Agent, leaf: str | None = None) -> SessionManager:
    m = SessionManager.open(agent.session, read_only=True)
    if leaf:
        m.branch(leaf)
    return m


def test_restore_to_a_node_of_another_branch_keeps_the_users_edits(
    world: tuple[str, Agent, SnapshotStore],
) -> None:
    ws, agent, store = world
    _, leaf_a, leaf_b = _two_branches(agent, store)
    # the user's own edit since: a line neither branch touches
    app = Path(ws, "app.py")
    app.write_text(app.read_text().replace("return 'h'", "return 'mine'"))
    m = _open(agent, leaf_b)
    plan = plan_restore(m, leaf_a, [ws], store=store)
    files = _by(plan)
    assert files["app.py"].status == "change"  # type: ignore[attr-defined]
    assert "-    return 'B'\n+    return 'A'\n" in files["app.py"].diff  # type: ignore[attr-defined]
    assert files["b.txt"].status == "unknown"  # type: ignore[attr-defined]  # made by B's write: existed before?
    assert files["a.txt"].status == "unchanged"  # type: ignore[attr-defined]  # still on disk from A
    before_b = Path(ws, "b.txt").read_bytes()
    applied = apply_plan(plan, store, [ws], token=plan.token)
    assert [f.display for f in applied.written] == ["app.py"]
    assert _read(ws, "app.py") == "def main():\n    return 'A'\n\n\ndef helper():\n    return 'mine'\n"
    assert Path(ws, "b.txt").read_bytes() == before_b
    # the backups: the old bytes are in the store under the journal's hash
    rec = applied.record
    assert rec.state == "done" and store.get(rec.files[0]["before"]) is not None
    # the workspace is now at A: restoring to B's leaf brings B's line back
    assert files_at(store, agent.session, m.get_leaf_id()) == leaf_a
    back = plan_restore(m, leaf_b, [ws], store=store, base_id=files_at(store, agent.session, m.get_leaf_id()))
    apply_plan(back, store, [ws], token=back.token)
    assert "return 'B'" in (_read(ws, "app.py") or "") and "return 'mine'" in (_read(ws, "app.py") or "")


def test_a_conflict_is_shown_with_markers_and_never_written(world: tuple[str, Agent, SnapshotStore]) -> None:
    ws, agent, store = world
    _, leaf_a, leaf_b = _two_branches(agent, store)
    app = Path(ws, "app.py")
    app.write_text(app.read_text().replace("return 'B'", "return 'user'"))
    mine = app.read_bytes()
    plan = plan_restore(_open(agent, leaf_b), leaf_a, [ws], store=store)
    f = _by(plan)["app.py"]
    assert (f.status, f.conflicts) == ("conflict", 1)  # type: ignore[attr-defined]
    assert "+<<<<<<< disk (your version)\n" in f.diff and "+>>>>>>> restore target\n" in f.diff  # type: ignore[attr-defined]
    apply_plan(plan, store, [ws], token=plan.token)
    assert app.read_bytes() == mine


def test_a_file_a_command_edited_is_unknown_and_left_alone(world: tuple[str, Agent, SnapshotStore]) -> None:
    ws, agent, store = world
    agent.user("go")
    agent.write("conf.ini", "level=1\n")
    target = agent.leaf
    agent.edit("conf.ini", ("level=1", "level=2"))
    agent.bash("sed -i s/level=2/level=3/ conf.ini")
    assert _read(ws, "conf.ini") == "level=3\n"
    plan = plan_restore(_open(agent), target, [ws], store=store)
    f = _by(plan)["conf.ini"]
    assert f.status == "unknown" and "command" in f.reason  # type: ignore[attr-defined]
    assert plan.commands == [(plan.commands[0][0], "sed -i s/level=2/level=3/ conf.ini")]
    apply_plan(plan, store, [ws], token=plan.token)
    assert _read(ws, "conf.ini") == "level=3\n"
    # the user may choose to include it: the target's content over it, with a backup
    plan = plan_restore(_open(agent), target, [ws], store=store, include_unknown=True)
    assert _by(plan)["conf.ini"].status == "change"  # type: ignore[attr-defined]
    apply_plan(plan, store, [ws], token=plan.token)
    assert _read(ws, "conf.ini") == "level=1\n"
    undo_last(store, agent.session, [ws])
    assert _read(ws, "conf.ini") == "level=3\n"


def test_a_command_that_only_reads_leaves_files_known(world: tuple[str, Agent, SnapshotStore]) -> None:
    ws, agent, store = world
    agent.user("go")
    agent.write("x.py", "x = 1\n")
    target = agent.leaf
    agent.edit("x.py", ("x = 1", "x = 2"))
    agent.bash("cat x.py | grep x && git status --short")
    plan = plan_restore(_open(agent), target, [ws], store=store)
    assert _by(plan)["x.py"].status == "change"  # type: ignore[attr-defined]
    assert plan.commands == []


def test_a_live_snapshot_makes_a_file_known_after_a_command(world: tuple[str, Agent, SnapshotStore]) -> None:
    ws, agent, store = world
    agent.user("go")
    agent.write("x.py", "x = 1\n")
    target = agent.leaf
    agent.bash("npm run nothing-real || true")
    result = agent.edit("x.py", ("x = 1", "x = 2"))
    # the daemon's follower saw the edit's result appended and snapshotted the file
    store.capture(agent.session, result, [os.path.join(ws, "x.py")])
    plan = plan_restore(_open(agent), target, [ws], store=store)
    assert _by(plan)["x.py"].status == "change"  # type: ignore[attr-defined]
    without = plan_restore(_open(agent), target, [ws], store=SnapshotStore(os.path.join(store.root, "other")))
    assert _by(without)["x.py"].status == "unknown"  # type: ignore[attr-defined]


def test_undo_puts_back_every_byte_and_leaves_files_changed_since(
    world: tuple[str, Agent, SnapshotStore],
) -> None:
    ws, agent, store = world
    agent.user("go")
    agent.write("one.txt", "1\n")
    agent.write("two.txt", "2\n")
    target = agent.leaf
    agent.edit("one.txt", ("1", "one"))
    agent.edit("two.txt", ("2", "two"))
    agent.write("three.txt", "3\n")
    status_before = git_status(ws)
    snapshot = {p: Path(ws, p).read_bytes() for p in ("one.txt", "two.txt", "three.txt")}
    plan = plan_restore(_open(agent), target, [ws], store=store, include_unknown=True)
    assert {f.display: f.status for f in plan.files} == {
        "one.txt": "change",
        "two.txt": "change",
        "three.txt": "delete",
    }
    apply_plan(plan, store, [ws], token=plan.token)
    assert not Path(ws, "three.txt").exists() and _read(ws, "one.txt") == "1\n"
    Path(ws, "two.txt").write_text("edited after the restore\n")
    undone = undo_last(store, agent.session, [ws])
    assert undone is not None
    assert sorted(f.display for f in undone.written) == ["one.txt", "three.txt"]
    assert [(f.display, f.status) for f in undone.skipped] == [("two.txt", "conflict")]
    assert Path(ws, "one.txt").read_bytes() == snapshot["one.txt"]
    assert Path(ws, "three.txt").read_bytes() == snapshot["three.txt"]
    assert _read(ws, "two.txt") == "edited after the restore\n"
    assert undo_last(store, agent.session, [ws]) is None  # one undo of the last restore
    Path(ws, "two.txt").write_bytes(snapshot["two.txt"])
    assert git_status(ws) == status_before


def test_apply_refuses_when_the_disk_changed_since_the_preview(
    world: tuple[str, Agent, SnapshotStore],
) -> None:
    ws, agent, store = world
    _, leaf_a, leaf_b = _two_branches(agent, store)
    preview = plan_restore(_open(agent, leaf_b), leaf_a, [ws], store=store)
    journals = sorted(os.listdir(os.path.join(store.root, "restores")))
    Path(ws, "app.py").write_text(Path(ws, "app.py").read_text() + "# later\n")
    fresh = plan_restore(_open(agent, leaf_b), leaf_a, [ws], store=store)
    with pytest.raises(ConflictError):
        apply_plan(fresh, store, [ws], token=preview.token)
    hashes = {f.path: f.hash_before for f in preview.files}
    with pytest.raises(ConflictError):
        apply_plan(fresh, store, [ws], expected=hashes)
    with pytest.raises(ConflictError):  # hashes that leave out a file the restore writes
        apply_plan(fresh, store, [ws], expected={})
    assert Path(ws, "app.py").read_text().endswith("# later\n")
    assert sorted(os.listdir(os.path.join(store.root, "restores"))) == journals


def test_nothing_is_written_outside_the_workspace(tmp_path: Path) -> None:
    ws = git_repo(str(tmp_path / "ws"))
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, os.path.join(ws, "link"))
    agent = Agent(str(tmp_path / "session.jsonl"), ws)
    store = SnapshotStore(str(tmp_path / "data"))
    agent.user("go")
    target = agent.leaf
    agent.write("link/escape.txt", "through a symlink\n")
    agent.write("../dotdot.txt", "through ..\n")
    agent.write(str(outside / "absolute.txt"), "absolute\n")
    agent.write("inside.txt", "fine\n")
    before = {p.name: p.read_bytes() for p in outside.iterdir()}
    assert set(before) == {"escape.txt", "absolute.txt"}
    for include in (False, True):
        plan = plan_restore(_open(agent), target, [ws], store=store, include_unknown=include)
        statuses = {f.path: f.status for f in plan.files}
        assert statuses[os.path.join(ws, "link/escape.txt")] == "outside-workspace"
        assert statuses[str(tmp_path / "dotdot.txt")] == "outside-workspace"
        assert statuses[str(outside / "absolute.txt")] == "outside-workspace"
        assert statuses[os.path.join(ws, "inside.txt")] == ("delete" if include else "unknown")
        apply_plan(plan, store, [ws], token=plan.token)
    assert {p.name: p.read_bytes() for p in outside.iterdir()} == before
    assert (tmp_path / "dotdot.txt").read_text() == "through ..\n"
    assert not Path(ws, "inside.txt").exists()


_CRASH = textwrap.dedent(
    """
    import os, signal, sys
    from sessiontree.core.checkpoints import SnapshotStore, apply_plan, plan_restore
    from sessiontree.core.session.manager import SessionManager

    session, target, ws, data = sys.argv[1:5]
    store = SnapshotStore(data)
    plan = plan_restore(SessionManager.open(session, read_only=True), target, [ws], store=store)

    def die(i):
        if i == 1:  # two files written, the others not yet
            os.kill(os.getpid(), signal.SIGKILL)

    apply_plan(plan, store, [ws], token=plan.token, after_each=die)
    """
)


def test_a_crash_mid_restore_leaves_every_file_old_or_new_and_the_next_start_rolls_back(
    world: tuple[str, Agent, SnapshotStore],
) -> None:
    ws, agent, store = world
    agent.user("go")
    names = [f"f{i}.txt" for i in range(5)]
    for n in names:
        agent.write(n, f"{n} v1\n")
    target = agent.leaf
    for n in names:
        agent.edit(n, ("v1", "v2"))
    old = {n: f"{n} v2\n" for n in names}
    new = {n: f"{n} v1\n" for n in names}
    proc = subprocess.run(
        [sys.executable, "-c", _CRASH, agent.session, str(target), ws, store.root],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == -9, proc.stderr
    now = {n: _read(ws, n) for n in names}
    assert all(now[n] in (old[n], new[n]) for n in names), now
    assert sum(now[n] == new[n] for n in names) == 2
    # the journal says a restore was under way, and every file's old bytes are kept
    journals = [orjson.loads(p.read_bytes()) for p in Path(store.root, "restores").glob("*.json")]
    assert [j["state"] for j in journals] == ["applying"]
    assert all(
        store.get(f["before"]) == old[os.path.basename(f["real"])].encode() for f in journals[0]["files"]
    )
    # the backups of every file are in the store, and the next start rolls the restore back
    left = recover(store)
    assert left == []
    assert {n: _read(ws, n) for n in names} == old
    assert not [p for p in os.listdir(ws) if ".sessiontree-" in p]


def test_claude_code_backups_tell_a_file_at_a_turns_start(tmp_path: Path) -> None:
    # a Claude Code transcript (read through its reader) whose Edit result carries no
    # originalFile: only the file-history backup tells a.txt before the edit
    ws = git_repo(str(tmp_path / "ws"))
    Path(ws, "a.txt").write_text("edited by Claude\n")
    history = tmp_path / "claude" / "file-history"
    (history / "S1").mkdir(parents=True)
    (history / "S1" / "b1@v1").write_text("before Claude\n")
    base = {"sessionId": "S1", "cwd": ws, "version": "2.0.0", "isSidechain": False, "userType": "external"}
    lines = [
        {
            **base,
            "type": "user",
            "uuid": "u1",
            "parentUuid": None,
            "timestamp": "2026-01-01T00:00:01Z",
            "message": {"role": "user", "content": "go"},
        },
        {
            "type": "file-history-snapshot",
            "messageId": "u1",
            "snapshot": {
                "messageId": "u1",
                "trackedFileBackups": {"a.txt": {"backupFileName": "b1@v1", "version": 1}},
            },
            "isSnapshotUpdate": True,
        },
        {
            **base,
            "type": "assistant",
            "uuid": "a1",
            "parentUuid": "u1",
            "timestamp": "2026-01-01T00:00:02Z",
            "message": {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "t1",
                        "name": "Edit",
                        "input": {
                            "file_path": os.path.join(ws, "a.txt"),
                            "old_string": "before",
                            "new_string": "edited by",
                        },
                    }
                ],
            },
        },
        {
            **base,
            "type": "user",
            "uuid": "u2",
            "parentUuid": "a1",
            "timestamp": "2026-01-01T00:00:03Z",
            "message": {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}],
            },
            "toolUseResult": {
                "filePath": os.path.join(ws, "a.txt"),
                "oldString": "before",
                "newString": "edited by",
            },
        },
    ]
    transcript = tmp_path / "claude" / "projects" / "p" / "S1.jsonl"
    transcript.parent.mkdir(parents=True)
    transcript.write_text("".join(orjson.dumps(x).decode() + "\n" for x in lines))
    m = SessionManager.open(str(transcript), read_only=True)
    store = SnapshotStore(str(tmp_path / "data"))
    kw = {"store": store, "claude_history": str(history)}
    plan = plan_restore(m, "u1", [ws], **kw)  # type: ignore[arg-type]
    assert [(f.display, f.status, f.target) for f in plan.files] == [
        ("a.txt", "change", "known (Claude Code backup)")
    ]
    assert "-edited by Claude\n+before Claude\n" in plan.files[0].diff
    without = plan_restore(m, "u1", [ws], store=store)
    assert [f.status for f in without.files] == ["unknown"]


def test_the_warm_up_reads_ahead_what_a_first_preview_reads(world: tuple[str, Agent, SnapshotStore]) -> None:
    from sessiontree.core.checkpoints.events import _cache_of, path_events, warm_events

    _, agent, _ = world
    agent.user("go")
    for i in range(6):
        agent.write(f"f{i}.txt", f"{i}\n")
        agent.bash("true")
    m = _open(agent)
    steps = 1
    while not warm_events(m, 3):  # three entries of the path a step
        steps += 1
    assert steps == 9  # 25 entries on the path
    cache = _cache_of(m.index)
    held = dict(cache.events)
    ids, found = path_events(m, m.get_leaf_id())
    assert cache.events == held  # nothing more was read
    assert [e["message"]["role"] for _, e in found].count("toolResult") == 12
    assert len(ids) == 25
