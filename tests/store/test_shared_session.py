"""A shared session opened straight from the store (`SessionManager` over
`PostgresSessionStorage`): read like a file, written with the same guards, following the
other machines' appends, and its writes reaching the owning machine's file through sync."""

from __future__ import annotations

from pathlib import Path

import pytest
from machines import SESSION_ID, Machine, header, ids_in, loads_cleanly, message
from sessiontree.core.session import SessionManager
from sessiontree.core.store.postgres import PostgresSessionStorage


@pytest.fixture
def a(tmp_path: Path, pg_url: str) -> Machine:
    return Machine(tmp_path, "alpha", pg_url)


def shared(pg_url: str, session_id: str = SESSION_ID) -> tuple[PostgresSessionStorage, str]:
    storage = PostgresSessionStorage(pg_url, machine="viewer")
    info = storage.find_session(session_id)
    assert info is not None
    return storage, info.path


def test_open_write_follow_and_reach_the_owner(a: Machine, pg_url: str) -> None:
    pa = a.sessions / f"s_{SESSION_ID}.jsonl"
    a.write(pa, header(), message("m1", None, "hello"), message("m2", "m1", "again", role="user"))
    a.sync()
    storage, path = shared(pg_url)
    sm = SessionManager.open(path, storage=storage)
    assert [e["id"] for e in sm.get_entries()] == ["m1", "m2"]
    assert sm.get_leaf_id() == "m2"
    # The owner's agent appends; its sync pushes; the open session folds it in.
    a.write(pa, message("m3", "m2", "from the agent"))
    a.sync()
    res = sm.sync_with_file()
    assert res.appended == ["m3"] and sm.get_leaf_id() == "m3"
    # A write from here goes to the store, then to the owner's file by its sync.
    new_id = sm.append_label_change("m1", "start")
    sm.flush() if hasattr(sm, "flush") else None
    [r] = a.sync()
    assert r.pulled == 1
    assert ids_in(pa) == ["m1", "m2", "m3", new_id]
    loads_cleanly(pa)
    # Reopened from the store, it holds the same entries in the same order.
    again = SessionManager.open(path, storage=PostgresSessionStorage(pg_url))
    assert [e["id"] for e in again.get_entries()] == ["m1", "m2", "m3", new_id]


#: An xcsh session (its snowflake id): a rename rewrites its header.
XCSH_SESSION_ID = "0123456789abcdef"


def test_a_shared_session_is_append_only_in_the_store(a: Machine, pg_url: str) -> None:
    pa = a.sessions / f"s_{XCSH_SESSION_ID}.jsonl"
    a.write(pa, header(XCSH_SESSION_ID), message("m1", None, "hello"))
    a.sync()
    storage, path = shared(pg_url, XCSH_SESSION_ID)
    with pytest.raises(PermissionError, match="append-only"):
        storage.write_atomic(path, b"")
    sm = SessionManager.open(path, storage=storage)
    # An xcsh rename rewrites the header: refused in the store (the owner renames its file).
    with pytest.raises(Exception, match="append-only"):
        sm.set_session_name("renamed", source="user")
    assert [e["id"] for e in SessionManager.open(path, storage=storage).get_entries()][:1] == ["m1"]


def test_a_pi_sessions_rename_is_an_append_that_reaches_the_owner(a: Machine, pg_url: str) -> None:
    pa = a.sessions / f"s_{SESSION_ID}.jsonl"  # a UUID: pi's session, named by session_info
    a.write(pa, header(), message("m1", None, "hello"))
    a.sync()
    storage, path = shared(pg_url)
    sm = SessionManager.open(path, storage=storage)
    assert sm.set_session_name("renamed", source="user")
    sm.close()
    a.sync()
    assert SessionManager.open(str(pa), read_only=True).get_session_name() == "renamed"
