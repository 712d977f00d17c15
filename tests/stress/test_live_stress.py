"""Two daemons and one library writer on the same session file, at the same time.

Each round, the three writers each do one random operation (append, label, navigate)
concurrently. Afterwards every entry written by anyone is in the file exactly once, the
file loads cleanly, every parent exists, and both daemons hold exactly the file.
Seeded and bounded (30 rounds).
"""

from __future__ import annotations

import os
import random
import threading
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
from sessiontree.client import Client, RpcError
from sessiontree.core.session import SessionManager

REPO = Path(__file__).resolve().parents[2]
ROUNDS = 30


def spawn(agent: Path, state: Path) -> Client:
    return Client.spawn(
        init_options={"agentDir": str(agent), "stateDir": str(state)},
        env={
            "PI_CODING_AGENT_DIR": str(agent),
            "SESSIONTREE_STATE_DIR": str(state),
            "PYTHONPATH": os.pathsep.join([str(REPO / "server"), str(REPO / "protocol")]),
        },
    )


def file_lines(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


class DaemonWriter:
    """One daemon with the session open; operations through the protocol."""

    def __init__(self, name: str, client: Client, path: Path) -> None:
        self.name = name
        self.c = client
        self.s = client.request("session/open", {"path": str(path)})["session"]

    def append(self, text: str) -> str:
        r = self.c.request(
            "session/append",
            {"session": self.s, "entry": {"type": "message", "message": {"role": "user", "content": text}}},
        )
        return str(r["id"])

    def _retry_unknown(self, call: Any) -> Any:
        # An entry another writer added a moment ago may not be folded in yet.
        deadline = time.monotonic() + 3
        while True:
            try:
                return call()
            except RpcError as exc:
                if exc.code != -32002 or time.monotonic() > deadline:
                    raise
                time.sleep(0.02)

    def label(self, target: str, label: str | None) -> str:
        params: dict[str, Any] = {"session": self.s, "targetId": target}
        if label:
            params["label"] = label
        r = self._retry_unknown(lambda: self.c.request("session/setLabel", params))
        return str(r["entryId"])

    def navigate(self, target: str) -> None:
        self._retry_unknown(lambda: self.c.request("session/branch", {"session": self.s, "entryId": target}))

    def entry_ids(self) -> list[str]:
        return [e["id"] for e in self.c.request("session/entries", {"session": self.s})["entries"]]


class LibraryWriter:
    """The library, in this process (another writer as far as the daemons know)."""

    def __init__(self, path: Path) -> None:
        self.name = "lib"
        self.m = SessionManager.open(str(path))

    def append(self, text: str) -> str:
        return self.m.append_message({"role": "user", "content": text, "timestamp": 1})

    def label(self, target: str, label: str | None) -> str:
        return self.m.append_label_change(target, label)

    def navigate(self, target: str) -> None:
        self.m.sync_with_file()
        self.m.branch(target)


@pytest.mark.timeout(120)
def test_two_daemons_and_a_library_writer(tmp_path: Path) -> None:
    agent = tmp_path / "agent"
    sessions = agent / "sessions" / "-stress"
    sessions.mkdir(parents=True)
    m = SessionManager.create(str(tmp_path), str(sessions))
    m.append_message({"role": "user", "content": "start", "timestamp": 1})
    m.append_message({"role": "assistant", "content": [{"type": "text", "text": "ok"}], "timestamp": 2})
    m.close()
    path = Path(m.get_session_file() or "")
    rng = random.Random(20261129)
    written: list[str] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    with spawn(agent, tmp_path / "state-a") as ca, spawn(agent, tmp_path / "state-b") as cb:
        writers: list[Any] = [DaemonWriter("a", ca, path), DaemonWriter("b", cb, path), LibraryWriter(path)]

        def act(w: Any, op: str, target: str, n: int) -> None:
            try:
                if op == "append":
                    eid = w.append(f"{w.name} round {n}")
                elif op == "label":
                    eid = w.label(target, f"{w.name}{n}" if n % 4 else None)
                else:
                    w.navigate(target)
                    eid = w.append(f"{w.name} after navigating, round {n}")
                with lock:
                    written.append(eid)
            except BaseException as exc:
                errors.append(exc)

        for n in range(ROUNDS):
            known = [e["id"] for e in file_lines(path)[1:]]
            threads = [
                threading.Thread(
                    target=act,
                    args=(w, rng.choice(["append", "append", "label", "navigate"]), rng.choice(known), n),
                )
                for w in writers
            ]
            for t in threads:
                t.start()
            for t in threads:
                t.join(30)
        assert errors == []
        assert len(written) == 3 * ROUNDS

        lines = file_lines(path)  # every line parses
        header, entries = lines[0], lines[1:]
        assert header["type"] == "session"
        ids = [e["id"] for e in entries]
        for eid in written:
            assert ids.count(eid) == 1, eid
        assert len(ids) == len(set(ids))
        known_ids = set(ids)
        for e in entries:
            assert e["parentId"] is None or e["parentId"] in known_ids
            if e["type"] == "label":
                assert e["targetId"] in known_ids
        reloaded = SessionManager.open(str(path))
        assert not reloaded.load_report.recovered
        assert reloaded.index.order() == ids

        # Both daemons converge on the file: the same entries, each once. (Where a
        # daemon's own line and another writer's landed in the other order in the file,
        # its in-memory order keeps its own first until the session is reopened.)
        deadline = time.monotonic() + 5
        for w in writers[:2]:
            while sorted(w.entry_ids()) != sorted(ids) and time.monotonic() < deadline:
                time.sleep(0.05)
            assert sorted(w.entry_ids()) == sorted(ids)
        # The daemons' leaves are entries of the file, and their trees hold every entry.
        for w in writers[:2]:
            tree = w.c.request("session/tree", {"session": w.s})
            seen: list[str] = []
            stack = list(tree["roots"])
            while stack:
                node = stack.pop()
                seen.append(node["id"])
                stack.extend(node.get("children", []))
            assert sorted(seen) == sorted(ids)
            assert tree["leafId"] in known_ids
