"""A store that stops answering: the PostgreSQL server stopped with SIGSTOP (a frozen VM, a
network path that drops packets without a reset). Nothing refuses the connection, nothing
answers: only the client's own bounds end a wait (docs/reliability.md, "The shared store").

Each test runs its own server, so the stop disturbs no other test, and continues it
(SIGCONT) before anything else ends; every wait of the test itself is bounded, so a daemon
or a sync that hangs fails the test instead of hanging the run.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from machines import SESSION_ID, Machine, header, ids_in, message
from pg import PgServer, pg_unavailable
from sessiontree.core.store.pg_schema import migrate
from test_daemons import daemon
from test_sync_crash import assert_complete, big_session, wait_for_progress

#: What the test waits for any one answer at most (the daemon's bound is LIST_WAIT = 3 s).
ANSWER_WAIT = 20


@pytest.fixture
def server() -> Iterator[PgServer]:
    reason = pg_unavailable()
    if reason:
        pytest.skip(reason)
    s = PgServer()
    try:
        s.init()
        yield s
    finally:
        s.destroy()


@pytest.fixture
def url(server: PgServer) -> str:
    u = server.new_database()
    with psycopg.connect(u, autocommit=True) as conn:
        migrate(conn)
    return u


def test_a_stopped_store_holds_neither_a_list_nor_a_view(tmp_path: Path, server: PgServer, url: str) -> None:
    alpha = Machine(tmp_path, "alpha", url)
    pa = alpha.sessions / f"s_{SESSION_ID}.jsonl"
    alpha.write(pa, header(), message("m1", None, "from alpha"), message("m2", "m1", "alpha again"))
    alpha.sync()
    beta = Machine(tmp_path, "beta", url)
    mine = "0193c0de-0000-7000-8000-00000000beta"
    beta.write(beta.sessions / f"s_{mine}.jsonl", header(mine), message("b1", None, "beta's own"))
    with daemon(tmp_path, "beta", beta.agent_dir, url) as b:
        listed = b.request("session/list", {"all": True})
        assert listed["store"]["reachable"] is True
        assert sorted(s["id"] for s in listed["sessions"]) == sorted([mine, SESSION_ID])
        hb = b.request("session/openShared", {"sessionId": SESSION_ID})["session"]
        view = b.request("session/view", {"session": hb})
        assert [r["id"] for r in view["rows"]] == ["m1", "m2"]
        with server.frozen():
            t0 = time.monotonic()
            listed = b.request("session/list", {"all": True}, timeout=ANSWER_WAIT)
            first = time.monotonic() - t0
            # The local sessions, the shared ones as last listed, and the store said to be away.
            assert listed["store"]["reachable"] is False and listed["store"]["error"]
            assert sorted(s["id"] for s in listed["sessions"]) == sorted([mine, SESSION_ID])
            t0 = time.monotonic()
            again = b.request("session/list", {"all": True}, timeout=ANSWER_WAIT)
            second = time.monotonic() - t0
            assert again["store"]["reachable"] is False
            # The open shared session answers from what it holds.
            t0 = time.monotonic()
            assert b.request("session/view", {"session": hb}, timeout=ANSWER_WAIT)["rows"] == view["rows"]
            entries = b.request("session/entries", {"session": hb}, timeout=ANSWER_WAIT)
            viewing = time.monotonic() - t0
            assert entries["total"] == 2
            print(
                f"store stopped: session/list {first * 1000:.0f} ms, again {second * 1000:.0f} ms;"
                f" view + entries of the open shared session {viewing * 1000:.0f} ms"
            )
        # Back: the local list and the open session carry on.
        assert b.request("session/view", {"session": hb}, timeout=ANSWER_WAIT)["rows"] == view["rows"]


def test_a_sync_whose_store_stops_answering_ends(tmp_path: Path, server: PgServer, url: str) -> None:
    alpha = Machine(tmp_path, "alpha", url)
    pa = big_session(alpha)
    p = alpha.cli("--batch", "200", env={"SESSIONTREE_STORE_TIMEOUT": "2"})
    try:
        wait_for_progress(p, "pushed", 2)
        with server.frozen():
            t0 = time.monotonic()
            _out, err = p.communicate(timeout=60)
            took = time.monotonic() - t0
        assert p.returncode == 2, err
        assert "did not answer within 2 s" in err and "rerun to resume" in err, err
        print(f"sync with its store stopped mid-push: ended after {took:.1f} s (timeout 2 s + 2 s grace)")
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    code, out = alpha.run_cli("--batch", "200")
    assert code == 0, out
    assert_complete(pa, url)
    assert len(ids_in(pa)) == len(set(ids_in(pa)))


def test_every_connection_carries_the_timeouts_and_the_urls_own_win(pg_url: str) -> None:
    # The server's side of the bounds (a slow statement, a row lock another machine holds):
    # set on every connection of the pool, under what the URL itself asks for.
    from sessiontree.core.store.postgres import PostgresSessionStorage

    shown = "SELECT current_setting('statement_timeout'), current_setting('lock_timeout')"
    storage = PostgresSessionStorage(pg_url, timeout=7)
    with storage.pool.connection() as conn:
        assert conn.execute(shown).fetchone() == ("7s", "7s")
    storage.close()
    own = PostgresSessionStorage(pg_url + "&options=-c%20statement_timeout%3D5000", timeout=7)
    with own.pool.connection() as conn:
        assert conn.execute(shown).fetchone() == ("5s", "7s")
    own.close()
