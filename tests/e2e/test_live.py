"""Live sessions end to end: the real daemon follows files that other processes write.

Other writers are real processes: a Python script using the library, a shell `>>`, an
atomic rename, `rm`. The client is `sessiontree.client` over stdio.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from sessiontree.client import Client, RpcError
from sessiontree.core.session import SessionManager

REPO = Path(__file__).resolve().parents[2]

WRITER = textwrap.dedent(
    """
    import sys
    from sessiontree.core.session import SessionManager
    m = SessionManager.open(sys.argv[1])
    ids = []
    for i in range(int(sys.argv[2])):
        ids.append(m.append_message({"role": "user", "content": f"external {i}", "timestamp": 1}))
        ids.append(m.append_message({"role": "assistant", "content": [{"type": "text", "text": f"reply {i}"}],
                                     "stopReason": "stop", "timestamp": 2}))
    m.close()
    print(" ".join(ids))
    """
)

RENAMER = textwrap.dedent(
    """
    import sys
    from sessiontree.core.session import SessionManager
    m = SessionManager.open(sys.argv[1])
    m.append_message({"role": "user", "content": "just before the rename", "timestamp": 1})
    m.set_session_name(sys.argv[2], "user")
    m.close()
    """
)


class Env:
    """A temporary agent dir with a sessions dir, and the daemon's environment."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.agent = root / "agent"
        self.sessions = self.agent / "sessions" / "-proj"
        self.sessions.mkdir(parents=True)
        self.state = root / "state"

    def env(self, **extra: str) -> dict[str, str]:
        return {
            "PI_CODING_AGENT_DIR": str(self.agent),
            "SESSIONTREE_STATE_DIR": str(self.state),
            "PYTHONPATH": os.pathsep.join([str(REPO / "server"), str(REPO / "protocol")]),
            **extra,
        }

    def spawn(self, watch: bool = True, **extra_env: str) -> Client:
        return Client.spawn(
            init_options={"agentDir": str(self.agent), "stateDir": str(self.state), "watch": watch},
            env=self.env(**extra_env),
        )

    def new_session(self, name: str = "p") -> Path:
        m = SessionManager.create(str(self.root / name), str(self.sessions))
        m.append_message({"role": "user", "content": "first question", "timestamp": 1})
        m.append_message(
            {"role": "assistant", "content": [{"type": "text", "text": "first answer"}], "timestamp": 2}
        )
        m.close()
        path = m.get_session_file()
        assert path is not None
        return Path(path)


def file_ids(path: Path) -> list[str]:
    return [orjson.loads(line)["id"] for line in path.read_bytes().splitlines()[1:] if line.strip()]


def run_writer(path: Path, rounds: int) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-c", WRITER, str(path), str(rounds)], check=True, capture_output=True, text=True
    )
    return out.stdout.split()


def external_changes(c: Client, session: str, start: int = 0) -> list[dict[str, Any]]:
    return [
        p
        for n, p in c.notifications[start:]
        if n == "session/didChange" and p["session"] == session and p["source"] == "external"
    ]


def wait_external_ids(c: Client, session: str, ids: list[str], start: int, timeout: float = 10) -> list[str]:
    """Wait until the external didChange notifications since `start` cover `ids`."""
    deadline = time.monotonic() + timeout
    while True:
        got = [e["id"] for p in external_changes(c, session, start) for e in p["appended"]]
        if set(ids) <= set(got) or time.monotonic() > deadline:
            return got
        time.sleep(0.02)


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Env:
    return Env(tmp_path_factory.mktemp("live"))


@pytest.fixture(scope="module")
def daemon(env: Env) -> Iterator[Client]:
    with env.spawn() as c:
        yield c


def test_library_writer_in_another_process(env: Env, daemon: Client) -> None:
    path = env.new_session("lib")
    opened = daemon.request("session/open", {"path": str(path)})
    s = opened["session"]
    start = len(daemon.notifications)
    ids = run_writer(path, 5)
    got = wait_external_ids(daemon, s, ids, start)
    assert got == ids  # each exactly once, in file order
    notes = external_changes(daemon, s, start)
    assert notes[0]["oldLeafId"] == opened["leafId"]
    assert notes[-1]["leafId"] == ids[-1]
    first = notes[0]["appended"][0]
    assert (
        first["parentId"] == opened["leafId"]
        and first["text"] == "user: external 0"
        and first["role"] == "user"
    )
    # The daemon's view of the session is the file.
    entries = daemon.request("session/entries", {"session": s})
    assert [e["id"] for e in entries["entries"]] == file_ids(path)
    tree = daemon.request("session/tree", {"session": s})
    assert tree["leafId"] == ids[-1]
    path_ids = [e["id"] for e in daemon.request("session/path", {"session": s})["entries"]]
    assert path_ids == file_ids(path)
    view = daemon.request("session/view", {"session": s, "filter": "all"})
    assert view["rows"][view["selectedIndex"]]["id"] == ids[-1]


def test_shell_append_of_a_json_line(env: Env, daemon: Client) -> None:
    path = env.new_session("shell")
    s = daemon.request("session/open", {"path": str(path)})["session"]
    leaf = daemon.request("session/tree", {"session": s})["leafId"]
    line = orjson.dumps(
        {
            "type": "message",
            "id": "5he11a01",
            "parentId": leaf,
            "timestamp": "2026-01-01T00:00:05.000Z",
            "message": {"role": "user", "content": "typed in a shell"},
        }
    ).decode()
    start = len(daemon.notifications)
    subprocess.run(["sh", "-c", 'printf "%s\\n" "$1" >> "$2"', "sh", line, str(path)], check=True)
    assert wait_external_ids(daemon, s, ["5he11a01"], start) == ["5he11a01"]
    note = external_changes(daemon, s, start)[0]
    assert note["appended"][0]["text"] == "user: typed in a shell"
    assert note["leafId"] == "5he11a01" and note["oldLeafId"] == leaf
    entry = daemon.request("session/entry", {"session": s, "id": "5he11a01"})["entry"]
    assert entry["message"]["content"] == "typed in a shell"


def test_torn_line_waits_for_its_end(env: Env, daemon: Client) -> None:
    path = env.new_session("torn")
    s = daemon.request("session/open", {"path": str(path)})["session"]
    leaf = daemon.request("session/tree", {"session": s})["leafId"]
    line = orjson.dumps(
        {
            "type": "message",
            "id": "70a11a02",
            "parentId": leaf,
            "timestamp": "2026-01-01T00:00:06.000Z",
            "message": {"role": "user", "content": "written in two halves"},
        }
    )
    start = len(daemon.notifications)
    with open(path, "ab") as f:
        f.write(line[:40])
    time.sleep(0.6)
    assert external_changes(daemon, s, start) == []
    with pytest.raises(RpcError) as err:
        daemon.request("session/entry", {"session": s, "id": "70a11a02"})
    assert err.value.code == -32002
    with open(path, "ab") as f:
        f.write(line[40:] + b"\n")
    assert wait_external_ids(daemon, s, ["70a11a02"], start) == ["70a11a02"]
    entry = daemon.request("session/entry", {"session": s, "id": "70a11a02"})["entry"]
    assert entry["message"]["content"] == "written in two halves"


def test_atomic_rewrite_by_another_process_reloads(env: Env, daemon: Client) -> None:
    path = env.new_session("rename")
    s = daemon.request("session/open", {"path": str(path)})["session"]
    start = len(daemon.notifications)
    subprocess.run([sys.executable, "-c", RENAMER, str(path), "Renamed by the agent"], check=True)
    note = daemon.wait_for_notification(
        "session/didReload", lambda p: p["session"] == s, start=start, timeout=10
    )
    assert note["reason"] in ("replaced", "rewritten")
    entries = daemon.request("session/entries", {"session": s})["entries"]
    assert [e["id"] for e in entries] == file_ids(path)
    assert entries[-1]["message"]["content"] == "just before the rename"
    listed = daemon.request("session/list", {"all": True})["sessions"]
    assert [x.get("title") for x in listed if x["path"] == str(path)] == ["Renamed by the agent"]
    # The daemon writes into the new file afterwards.
    appended = daemon.request(
        "session/append",
        {"session": s, "entry": {"type": "message", "message": {"role": "user", "content": "after"}}},
    )
    assert file_ids(path)[-1] == appended["id"]


def test_deleted_file_is_announced_and_writes_refused(env: Env, daemon: Client) -> None:
    path = env.new_session("deleted")
    s = daemon.request("session/open", {"path": str(path)})["session"]
    before = daemon.request("session/entries", {"session": s})["entries"]
    start = len(daemon.notifications)
    subprocess.run(["rm", str(path)], check=True)
    note = daemon.wait_for_notification(
        "session/didReload", lambda p: p["session"] == s, start=start, timeout=10
    )
    assert note["reason"] == "deleted"
    # What the session held is still there.
    assert daemon.request("session/entries", {"session": s})["entries"] == before
    with pytest.raises(RpcError) as err:
        daemon.request(
            "session/append",
            {"session": s, "entry": {"type": "message", "message": {"role": "user", "content": "lost?"}}},
        )
    assert err.value.code == -32004
    assert not path.exists()


def wait_watching(env: Env, daemon: Client) -> None:
    """Until the daemon's watcher hears a new session file: it starts after the initialize,
    and a file made before its watches are set is in its first listing, not announced."""
    deadline = time.monotonic() + 20
    while True:
        start = len(daemon.notifications)
        env.new_session("probe")
        try:
            daemon.wait_for_notification(
                "session/didChangeList",
                lambda p: p.get("cwd") == str(env.root / "probe"),
                start=start,
                timeout=2,
            )
            return
        except TimeoutError:
            if time.monotonic() > deadline:
                raise


def test_new_session_file_changes_the_list(env: Env, daemon: Client) -> None:
    wait_watching(env, daemon)
    # The daemon is shared: an earlier test's directory may still be announced (a second
    # after its writes), so each wait is for the announcement of this project's list.
    listed_dir = str(env.root / "listed")
    start = len(daemon.notifications)
    path = env.new_session("listed")
    daemon.wait_for_notification("session/didChangeList", lambda p: p.get("cwd") == listed_dir, start=start)
    listed = daemon.request("session/list", {"all": True})["sessions"]
    assert str(path) in [x["path"] for x in listed]
    # A vanished file's project is the one it had when it was read (its neighbours here are
    # other projects' sessions): this project's list is announced, or the whole list.
    start = len(daemon.notifications)
    path.unlink()
    note = daemon.wait_for_notification(
        "session/didChangeList", lambda p: p.get("cwd") in (None, listed_dir), start=start
    )
    assert note.get("cwd") == listed_dir


def test_an_append_to_a_listed_session_changes_the_list(env: Env, daemon: Client) -> None:
    """A session the client only lists (not open) gets a line from its agent: its count and
    place in the list change, so its project's list is announced (the VS Code Sessions view
    kept a stale count until something else refreshed it)."""
    path = env.new_session("appended")
    # what the file's appearance announces has come and gone: what follows is the append's
    _quiet_until(daemon, "session/didChangeList", 2.5)
    listed = daemon.request("session/list", {"all": True})["sessions"]
    assert [x["messageCount"] for x in listed if x["path"] == str(path)] == [2]
    start = len(daemon.notifications)
    run_writer(path, 1)
    note = daemon.wait_for_notification("session/didChangeList", start=start, timeout=10)
    assert note.get("cwd") in (None, str(env.root / "appended"))
    listed = daemon.request("session/list", {"all": True})["sessions"]
    (count,) = [x["messageCount"] for x in listed if x["path"] == str(path)]
    assert count > 2


def _quiet_until(daemon: Client, method: str, seconds: float) -> None:
    """Wait until ``method`` has not come for ``seconds`` (what earlier changes announce)."""
    while True:
        start = len(daemon.notifications)
        try:
            daemon.wait_for_notification(method, start=start, timeout=seconds)
        except TimeoutError:
            return


def test_expected_leaf_id_sees_external_appends(env: Env, daemon: Client) -> None:
    path = env.new_session("cas")
    opened = daemon.request("session/open", {"path": str(path)})
    s = opened["session"]
    stale = opened["leafId"]
    # Stop following for a moment is not possible from outside, so append and check at
    # once: the append request itself folds the external entry in before the check.
    ids = run_writer(path, 1)
    with pytest.raises(RpcError) as err:
        daemon.request(
            "session/append",
            {
                "session": s,
                "entry": {"type": "message", "message": {"role": "user", "content": "stale"}},
                "expectedLeafId": stale,
            },
        )
    assert err.value.code == -32004
    ok = daemon.request(
        "session/append",
        {
            "session": s,
            "entry": {"type": "message", "message": {"role": "user", "content": "fresh"}},
            "expectedLeafId": ids[-1],
        },
    )
    entry = daemon.request("session/entry", {"session": s, "id": ok["id"]})["entry"]
    assert entry["parentId"] == ids[-1]
    assert file_ids(path).count(ok["id"]) == 1


def test_watch_false_follows_nothing(env: Env) -> None:
    path = env.new_session("nowatch")
    with env.spawn(watch=False) as c:
        s = c.request("session/open", {"path": str(path)})["session"]
        run_writer(path, 1)
        env.new_session("nowatch2")
        time.sleep(0.8)
        assert [n for n, _ in c.notifications if n.startswith("session/did")] == []
        # Writes stay safe: the append folds the external entries in first.
        appended = c.request(
            "session/append",
            {"session": s, "entry": {"type": "message", "message": {"role": "user", "content": "x"}}},
        )
        ids = file_ids(path)
        entry = c.request("session/entry", {"session": s, "id": appended["id"]})["entry"]
        assert entry["parentId"] == ids[-2]


def test_polling_fallback(env: Env) -> None:
    path = env.new_session("polling")
    with env.spawn(SESSIONTREE_WATCH_POLLING="1") as c:
        s = c.request("session/open", {"path": str(path)})["session"]
        time.sleep(0.3)
        start = len(c.notifications)
        t0 = time.monotonic()
        with open(path, "ab") as f:
            f.write(
                orjson.dumps(
                    {
                        "type": "custom",
                        "customType": "probe",
                        "id": "9011a003",
                        "parentId": None,
                        "timestamp": "2026-01-01T00:00:07.000Z",
                    }
                )
                + b"\n"
            )
        assert wait_external_ids(c, s, ["9011a003"], start) == ["9011a003"]
        assert time.monotonic() - t0 < 1.0
        start = len(c.notifications)
        env.new_session("polling2")
        c.wait_for_notification("session/didChangeList", start=start, timeout=5)


def test_forked_session_follows_its_new_file(env: Env, daemon: Client) -> None:
    path = env.new_session("forked")
    s = daemon.request("session/open", {"path": str(path)})["session"]
    new = Path(daemon.request("session/fork", {"session": s})["newPath"])
    assert new != path
    time.sleep(1.2)  # the new path is picked up at the next poll tick (1 s)
    start = len(daemon.notifications)
    ids = run_writer(new, 1)
    assert wait_external_ids(daemon, s, ids, start) == ids
    entries = daemon.request("session/entries", {"session": s})["entries"]
    assert [e["id"] for e in entries] == file_ids(new)


def test_own_writes_are_not_announced_as_external(env: Env, daemon: Client) -> None:
    path = env.new_session("own")
    s = daemon.request("session/open", {"path": str(path)})["session"]
    start = len(daemon.notifications)
    mine = [
        daemon.request(
            "session/append",
            {"session": s, "entry": {"type": "message", "message": {"role": "user", "content": f"mine {i}"}}},
        )["id"]
        for i in range(3)
    ]
    assert daemon.request("session/setName", {"session": s, "name": "named here"})["changed"]
    # An external append afterwards is announced alone, as the child of our last entry.
    ids = run_writer(path, 1)
    got = wait_external_ids(daemon, s, ids, start)
    assert got == ids
    notes = [n for n, p in daemon.notifications[start:] if p.get("session") == s]
    assert "session/didReload" not in notes
    local = [
        p for n, p in daemon.notifications[start:] if n == "session/didChange" and p["source"] == "local"
    ]
    assert [p["appended"][0]["id"] for p in local] == mine
    assert external_changes(daemon, s, start)[0]["appended"][0]["parentId"] == mine[-1]
    assert file_ids(path) == [*file_ids(path)[:2], *mine, *ids]


LABELLER = textwrap.dedent(
    """
    import sys
    from sessiontree.core.session import SessionManager
    m = SessionManager.open(sys.argv[1])
    print(m.append_label_change(sys.argv[2], sys.argv[3]))
    m.close()
    """
)


def test_leaf_follows_the_external_writer_after_a_local_navigation(env: Env, daemon: Client) -> None:
    path = env.new_session("follow")
    opened = daemon.request("session/open", {"path": str(path)})
    s = opened["session"]
    first = file_ids(path)[0]
    daemon.request("session/branch", {"session": s, "entryId": first})
    assert daemon.request("session/tree", {"session": s})["leafId"] == first
    start = len(daemon.notifications)
    out = subprocess.run(
        [sys.executable, "-c", LABELLER, str(path), first, "checkpoint"],
        check=True,
        capture_output=True,
        text=True,
    )
    label_id = out.stdout.strip()
    assert wait_external_ids(daemon, s, [label_id], start) == [label_id]
    note = external_changes(daemon, s, start)[0]
    assert note["oldLeafId"] == first and note["leafId"] == label_id
    assert note["appended"][0]["type"] == "label"
    lab = daemon.wait_for_notification("session/didChangeLabel", lambda p: p["session"] == s, start=start)
    assert lab == {"session": s, "targetId": first, "label": "checkpoint"}
    assert daemon.request("session/labels", {"session": s})["labels"] == [
        {"targetId": first, "label": "checkpoint"}
    ]
    assert daemon.request("session/tree", {"session": s})["leafId"] == label_id
