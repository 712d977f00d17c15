"""What the rows near the view's head and leaf show, read ahead in idle time
(`view.warmup.warm_rows`): those entries' parts are kept, and every page built from them,
of any filter or search, is the page a session without them builds."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from sessiontree.core.session import SessionManager
from sessiontree.core.view import build_view, warm_rows, warm_search, warmup
from sessiontree.core.view.adapters import as_tree_source
from sessiontree.core.view.cache import cache_of

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def session_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("warm-rows") / "s.jsonl"
    subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "gen_corpus.py"),
            str(path),
            "3000",
            "--branch-every",
            "250",
        ],
        check=True,
        capture_output=True,
    )
    return path


def _open(path: Path) -> SessionManager:
    return SessionManager.open(str(path), viewing=True, breadcrumbs=False)


def _page(mgr: SessionManager, **kw: Any) -> tuple[Any, ...]:
    p = build_view(mgr, **kw)
    return p.total, p.selected_index, [(r.id, r.line(), r.label, r.timestamp) for r in p.rows]


def _warm(mgr: SessionManager) -> int:
    calls = 1
    while not warm_rows(mgr, 200):
        calls += 1
    return calls


def test_the_rows_of_the_head_and_around_the_leaf_are_read_ahead(
    session_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(warmup, "WARM_ROWS", 400)
    mgr = _open(session_file)
    view = build_view(mgr)
    sel = view.selected_index
    assert sel is not None and sel > 800, "the leaf lies beyond the head: two spans"
    calls = _warm(mgr)
    assert calls == 4  # 400 rows of the head and 400 around the leaf, 200 a call
    assert warm_rows(mgr) is True  # done: nothing more to read
    parts = cache_of(as_tree_source(mgr)).row_parts
    wanted = [r.id for r in view.rows[:400]] + [r.id for r in view.rows[sel - 200 : sel + 200]]
    kept = [eid for eid in wanted if eid in parts]
    # every row's parts but a tool result's whose call no message has alone
    assert len(kept) >= 0.9 * len(wanted)
    assert not any(r.id in parts for r in view.rows[400 : sel - 200])


@pytest.mark.parametrize(
    "kw",
    [
        {"offset": 0, "limit": 300},
        {"search": "neovim", "offset": 0, "limit": 300},
        {"search": "tool e", "offset": 100, "limit": 500},
        {"filter": "user-only", "offset": 0, "limit": 300},
        {"filter": "no-tools", "offset": 0, "limit": None},
        {"filter": "all", "search": "read", "offset": 0, "limit": None},
    ],
)
def test_pages_built_from_warmed_rows_are_the_pages_without_them(
    session_file: Path, kw: dict[str, Any]
) -> None:
    warmed = _open(session_file)
    while not warm_search(warmed):
        pass
    _warm(warmed)
    assert _page(warmed, **kw) == _page(_open(session_file), **kw)


def test_rows_are_read_again_for_new_content_and_follow_labels(session_file: Path, tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(session_file.read_bytes())
    mgr = SessionManager.open(str(path), breadcrumbs=False)
    _warm(mgr)
    head = build_view(mgr, limit=5).rows
    mgr.append_label_change(head[2].id, "warm-label")
    mgr.append_message({"role": "user", "content": "after the warm-up", "timestamp": 1})
    mgr.flush()
    for kw in ({"limit": 50}, {"search": "warm-label"}, {"search": "after the warm-up"}):
        assert _page(mgr, **kw) == _page(_open(path), **kw)


def test_nothing_is_read_ahead_above_the_kept_texts_bound(
    session_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A session too big to keep its texts is viewed lazily around its leaf; reading the
    rows around its leaf ahead would walk the whole view."""
    monkeypatch.setenv("SESSIONTREE_SEARCH_TEXTS_MAX", "1000")
    mgr = _open(session_file)
    build_view(mgr, limit=50)
    assert warm_rows(mgr) is True
    cache = cache_of(as_tree_source(mgr))
    assert cache.warm_rows_todo is None and len(cache.row_parts) <= 50
