"""Fixtures of the shared-store tests: one PostgreSQL server for the run (tests/pg.py), a
fresh database with the current schema for each test."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator

import pytest
from pg import PgServer, pg_unavailable

# Without psycopg (a dependency, so only in a broken install) the modules cannot even be
# imported: they are left out and the reason shows in the pg_server fixture's skip elsewhere.
if importlib.util.find_spec("psycopg") is None:
    collect_ignore_glob = ["test_*.py"]


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    reason = pg_unavailable()
    if reason:
        pytest.skip(reason)
    server = PgServer()
    try:
        server.init()
        yield server
    finally:
        server.destroy()


@pytest.fixture
def pg_empty_url(pg_server: PgServer) -> str:
    """A database with no schema."""
    return pg_server.new_database()


@pytest.fixture
def pg_url(pg_empty_url: str) -> str:
    """A database brought to the current schema (as `sessiontree store init` does)."""
    import psycopg
    from sessiontree.core.store.pg_schema import migrate

    with psycopg.connect(pg_empty_url, autocommit=True) as conn:
        migrate(conn)
    return pg_empty_url
