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


def test_ls_and_conflicts_show_what_the_store_holds(pg_url: str, tmp_path: object) -> None:
    import json
    from pathlib import Path

    from machines import SESSION_ID, Machine, header, message

    a, b = Machine(Path(str(tmp_path)), "alpha", pg_url), Machine(Path(str(tmp_path)), "beta", pg_url)
    pa = a.sessions / "s.jsonl"
    a.write(pa, header(), message("m1", None, "hi"), message("same", "m1", "alpha's"))
    a.sync()
    pb = Path(b.syncer().fetch(SESSION_ID, str(b.sessions)))
    pb.write_text(pb.read_text().replace("alpha's", "beta's"))  # same id, other content
    b.sync()
    code, out = st("store", "ls", pg_url)
    assert code == 0 and out.splitlines()[0] == "alpha:" and SESSION_ID in out and "2 entries" in out
    code, out = st("store", "ls", "--json", pg_url)
    [row] = json.loads(out)
    assert (row["session_id"], row["machine"], row["entries"]) == (SESSION_ID, "alpha", 2)
    code, out = st("store", "conflicts", pg_url)
    assert code == 1 and "entry same: beta's copy differs" in out
