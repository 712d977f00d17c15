"""The storage contract suite (tests/core/test_storage_contract.py) on the PostgreSQL backend.

The contract's tests are imported here and run against `PostgresSessionStorage` in a fresh
database of the tests' own server, so the one suite stays the single statement of the rules.
"""

from __future__ import annotations

from collections.abc import Iterator

import core.test_storage_contract as contract
import pytest
from core.test_storage_contract import (  # noqa: F401  (collected here, on this module's `env`)
    test_append_never_glues_onto_a_torn_line,
    test_append_separator_after_unterminated_tails,
    test_append_whole_lines,
    test_concurrent_appends_do_not_interleave,
    test_ensure_dir_exists_and_stat,
    test_implements_the_protocol,
    test_list_files,
    test_lock_excludes_other_holders_and_times_out,
    test_reads,
    test_rename_files_and_dirs,
    test_unlink_and_remove_tree,
    test_write_atomic_creates_replaces_and_leaves_no_temp,
    test_write_atomic_failure_leaves_target_and_no_temp,
    test_writer_appends_lines_lazily,
    test_writer_latches_the_first_error,
    test_writer_starts_a_new_line_after_another_writers_torn_line,
)
from sessiontree.core.store import FaultInjectingStorage
from sessiontree.core.store.postgres import PgPool, PostgresSessionStorage


@pytest.fixture(params=["postgres", "faulty-postgres"])
def env(request: pytest.FixtureRequest, pg_url: str) -> Iterator[contract.Env]:
    storage = PostgresSessionStorage(pg_url, machine="test")
    wrapped = FaultInjectingStorage(storage) if request.param == "faulty-postgres" else storage
    e = contract.Env(wrapped, "/pg/root")
    e.storage.ensure_dir(e.root)
    try:
        yield e
    finally:
        storage.close()


def test_a_lock_timeout_leaves_no_timeout_on_pooled_connections(pg_url: str) -> None:
    from sessiontree.core.errors import LockTimeoutError

    s = PostgresSessionStorage(pg_url)
    other = PostgresSessionStorage(pg_url)
    with other.lock("/f", timeout=1), pytest.raises(LockTimeoutError), s.lock("/f", timeout=0.01):
        pass
    shown = "SELECT current_setting('lock_timeout'), current_setting('statement_timeout')"
    with PgPool(pg_url).connection() as fresh:
        defaults = fresh.execute(shown).fetchone()
    assert defaults == ("1min", "1min")  # the store's timeouts (pg_timeouts), not the lock's
    with s.pool.connection() as conn:
        assert conn.execute(shown).fetchone() == defaults
    s.close()
    other.close()
