"""A search index another process holds locked is busy, not corrupt.

Another process (a plain `sqlite3` connection, as a person's shell or a second sessiontree
would) holds the index's write lock, or an exclusive lock that keeps readers out too. The CLI
and the real daemon wait at most the busy bound (`SESSIONTREE_SEARCH_BUSY_MS`), then answer
from what the index holds, or say it is busy; the index file is never removed or rebuilt (the
holder's own transaction commits into the same file afterwards), and once the lock is gone
the next search brings the index up to date.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sessiontree.client import Client
from sessiontree.core.fts import fts5_available

from .helpers import header, line, message

pytestmark = pytest.mark.skipif(not fts5_available(), reason="this Python's SQLite has no FTS5")

BUSY_MS = "400"

HOLDER = r"""
import sqlite3, sys
con = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)
if sys.argv[2] == "exclusive":
    con.execute("PRAGMA journal_mode=DELETE")  # out of WAL: an exclusive lock keeps readers out
    con.execute("BEGIN EXCLUSIVE")
else:
    con.execute("BEGIN IMMEDIATE")
con.execute("INSERT OR REPLACE INTO meta VALUES ('holder', 'was here')")
print("locked", flush=True)
sys.stdin.readline()
con.execute("COMMIT")
print("committed", flush=True)
"""


class Holder:
    """Another process holding the index's lock until `release()`."""

    def __init__(self, db: Path, mode: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", HOLDER, str(db), mode],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        assert self.proc.stdout.readline().strip() == "locked"

    def release(self) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write("\n")
        self.proc.stdin.flush()
        assert self.proc.stdout.readline().strip() == "committed"
        assert self.proc.wait(30) == 0

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


class World:
    def __init__(self, tmp: Path) -> None:
        self.agent = tmp / "agent"
        self.sessions = self.agent / "sessions" / "--w-proj--"
        self.sessions.mkdir(parents=True)
        self.db = tmp / "cache" / "search.db"
        self.env = {
            **os.environ,
            "PI_CODING_AGENT_DIR": str(self.agent),
            "HOME": str(tmp / "home"),
            "XDG_CACHE_HOME": str(tmp / "xdg-cache"),
            "SESSIONTREE_SEARCH_INDEX": str(self.db),
            "SESSIONTREE_SEARCH_BUSY_MS": BUSY_MS,
            "SESSIONTREE_SEARCH_RESCAN_SECONDS": "0.2",
            "SESSIONTREE_STATE_DIR": str(tmp / "state"),
        }
        self.holder: Holder | None = None

    def session(self, name: str, sid: str, text: str) -> Path:
        path = self.sessions / name
        path.write_bytes(line(header(sid, cwd="/w/proj")) + line(message(f"{sid}-u1", None, "user", text)))
        return path

    def cli(self, *words: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "sessiontree", "search", "--all", "--json", *words],
            capture_output=True,
            text=True,
            env=self.env,
            timeout=180,
        )

    def hold(self, mode: str) -> Holder:
        self.holder = Holder(self.db, mode)
        return self.holder

    def identity(self) -> tuple[int, int]:
        st = os.stat(self.db)
        return st.st_dev, st.st_ino

    def holder_row(self) -> str | None:
        con = sqlite3.connect(self.db)
        try:
            row = con.execute("SELECT value FROM meta WHERE key = 'holder'").fetchone()
        finally:
            con.close()
        return row[0] if row else None


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    w = World(tmp_path)
    try:
        yield w
    finally:
        if w.holder is not None:
            w.holder.kill()


def _ids(out: dict[str, Any]) -> set[str]:
    return {h["session_id"] for h in out["hits"]}


def test_the_cli_answers_from_a_write_locked_index_and_never_rebuilds_it(world: World) -> None:
    world.session("a.jsonl", "sa", "kilo alpha")
    first = world.cli("kilo")
    assert first.returncode == 0, first.stderr
    assert _ids(json.loads(first.stdout)) == {"sa"}
    before = world.identity()
    world.session("b.jsonl", "sb", "kilo bravo")
    holder = world.hold("write")
    started = time.monotonic()
    busy = world.cli("kilo")
    waited = time.monotonic() - started
    assert busy.returncode == 0, busy.stderr
    out = json.loads(busy.stdout)
    assert _ids(out) == {"sa"} and out["index"]["busy"] is True, out  # what it held
    assert "busy" in busy.stderr
    print(f"\n[busy] the CLI answered from a write-locked index in {waited:.2f} s (bound {BUSY_MS} ms)")
    assert world.identity() == before
    holder.release()
    assert world.holder_row() == "was here", "the index was replaced under the lock holder"
    again = json.loads(world.cli("kilo").stdout)
    assert _ids(again) == {"sa", "sb"} and again["index"]["busy"] is False


def test_the_cli_says_busy_when_readers_are_locked_out_and_removes_nothing(world: World) -> None:
    world.session("a.jsonl", "sa", "lima alpha")
    assert world.cli("lima").returncode == 0
    before = world.identity()
    holder = world.hold("exclusive")
    res = world.cli("lima")
    assert res.returncode == 2 and "busy" in res.stderr, (res.returncode, res.stderr)
    assert world.identity() == before
    holder.release()
    assert world.holder_row() == "was here"
    after = world.cli("lima")
    assert after.returncode == 0 and _ids(json.loads(after.stdout)) == {"sa"}


def test_the_daemon_answers_busy_then_catches_up(world: World) -> None:
    world.session("a.jsonl", "sa", "mike alpha")
    assert world.cli("mike").returncode == 0
    before = world.identity()
    world.session("b.jsonl", "sb", "mike bravo")
    holder = world.hold("write")
    c = Client.spawn(
        env=world.env, init_options={"agentDir": str(world.agent), "stateDir": str(world.db.parent)}
    )
    try:
        res = c.request("session/search", {"query": "mike", "paths": False}, timeout=120)
        assert {h["sessionId"] for h in res["hits"]} == {"sa"} and res.get("indexBusy") is True, res
        holder.release()
        assert world.identity() == before and world.holder_row() == "was here"
        deadline = time.monotonic() + 30
        while True:
            res = c.request("session/search", {"query": "mike", "paths": False})
            if {h["sessionId"] for h in res["hits"]} == {"sa", "sb"} and "indexBusy" not in res:
                break
            assert time.monotonic() < deadline, res
            time.sleep(0.2)
        # readers locked out too: an empty page that says so, not an error, nothing removed
        before = world.identity()
        c.close()
        holder = world.hold("exclusive")
        c = Client.spawn(
            env=world.env, init_options={"agentDir": str(world.agent), "stateDir": str(world.db.parent)}
        )
        res = c.request("session/search", {"query": "mike", "paths": False}, timeout=120)
        assert res["hits"] == [] and res.get("indexBusy") is True, res
        holder.release()
        assert world.identity() == before and world.holder_row() == "was here"
    finally:
        c.close()
