"""The daemon's `store` option: read with a readable warning for a bad value; the
environment's store when the option is absent."""

from __future__ import annotations

import pytest
from sessiontree.lsp.config import parse_options


def test_store_option_accepts_urls_and_conninfo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SESSIONTREE_STORE", raising=False)
    for value in (
        "postgresql://u@db/x?sslmode=verify-full",
        "postgres://u@/x?host=/tmp",
        "host=/tmp dbname=x",
    ):
        cfg, warnings = parse_options({"store": value})
        assert (cfg.store, warnings) == (value, [])
    cfg, warnings = parse_options({"store": "mysql://x"})
    assert cfg.store is None
    assert warnings == [
        "initializationOptions.store: expected a postgresql:// URL or a libpq conninfo string, "
        "got 'mysql://x'; using the default"
    ]
    assert parse_options({})[0].resolved_store() is None
    monkeypatch.setenv("SESSIONTREE_STORE", "host=/env dbname=y")
    assert parse_options({})[0].resolved_store() == "host=/env dbname=y"
    assert parse_options({"store": "host=/opt dbname=z"})[0].resolved_store() == "host=/opt dbname=z"
