"""`sessiontree store init|migrate|ls|conflicts` against a real server."""

from __future__ import annotations

import os
import subprocess
import sys

import psycopg
from sessiontree.core.store.pg_schema import CURRENT_SCHEMA_VERSION, SCHEMA, migrate, schema_version


def st(*args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    full = dict(os.environ)
    full.update(env or {})
    out = subprocess.run(
        [sys.executable, "-m", "sessiontree", *args], capture_output=True, text=True, env=full
    )
    return out.returncode, out.stdout + out.stderr


def test_init_then_migrate(pg_empty_url: str) -> None:
    code, out = st("store", "migrate", pg_empty_url)
    assert code == 2 and "store init" in out
    code, out = st("store", "init", pg_empty_url)
    assert code == 0 and f"schema version {CURRENT_SCHEMA_VERSION}" in out, out
    code, out = st("store", "init", pg_empty_url)
    assert code == 2 and "already set up" in out
    code, out = st("store", "migrate", env={"SESSIONTREE_STORE": pg_empty_url})
    assert code == 0 and "up to date" in out


def test_migrations_are_single_steps(pg_empty_url: str) -> None:
    with psycopg.connect(pg_empty_url, autocommit=True) as conn:
        assert migrate(conn, target=1) == [1]
        assert schema_version(conn) == 1
        assert migrate(conn) == list(range(2, CURRENT_SCHEMA_VERSION + 1))
        assert migrate(conn) == []
        rows = conn.execute(f"SELECT version FROM {SCHEMA}.schema_version ORDER BY version").fetchall()
        assert [r[0] for r in rows] == list(range(1, CURRENT_SCHEMA_VERSION + 1))


def test_unreachable_store_is_one_clear_line(tmp_path: object) -> None:
    url = "postgresql://nobody@/x?host=/nonexistent-dir&connect_timeout=2"
    code, out = st("store", "ls", url)
    assert code == 2 and out.count("\n") <= 3 and "store ls" in out
    code, out = st("sync", "--store", url, "--all")
    assert code == 2 and "unreachable" in out


def test_ls_groups_by_machine(pg_url: str, tmp_path: object) -> None:
    code, out = st("store", "ls", pg_url)
    assert code == 0 and out == ""
