"""A big session's search in steps (core/view/progressive.py): the first rows at once, every
row after; what it finds is exactly what the search in one pass finds."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from sessiontree.core.session import SessionManager
from sessiontree.core.view import FILTER_MODES, build_view, continue_search, progressive, search_in_progress
from sessiontree.core.view.adapters import as_tree_source
from sessiontree.core.view.cache import cache_of

ROOT = Path(__file__).resolve().parents[2]
QUERIES = ["neovim", "neovim s", "read:", "tool e", "label", "user: the", "zz-in-no-row"]


@pytest.fixture(scope="module")
def session_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A realistic session: branches, labels, compactions, tool calls and results."""
    path = tmp_path_factory.mktemp("progressive") / "s.jsonl"
    gen = ROOT / "benchmarks" / "gen_corpus.py"
    subprocess.run(
        [sys.executable, str(gen), str(path), "4000", "--branch-every", "300"],
        check=True,
        capture_output=True,
    )
    return path


def _open(path: Path) -> SessionManager:
    return SessionManager.open(str(path), viewing=True, breadcrumbs=False)


def _rows(page: Any) -> list[tuple[str, str]]:
    return [(r.id, r.line()) for r in page.rows]


@pytest.fixture
def stepwise(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every search of these sessions goes in steps of few rows."""
    monkeypatch.setattr(progressive, "PARTIAL_SEARCH_MIN", 0)
    monkeypatch.setattr(progressive, "STEP_ROWS", 300)


def _whole(path: Path, **kw: Any) -> Any:
    """The search in one pass, from a session of its own (no steps)."""
    saved = progressive.PARTIAL_SEARCH_MIN
    progressive.PARTIAL_SEARCH_MIN = 10**9
    try:
        return build_view(_open(path), **kw)
    finally:
        progressive.PARTIAL_SEARCH_MIN = saved


def _finish(mgr: SessionManager) -> dict[str, Any]:
    done = None
    for _ in range(10_000):
        more, done = continue_search(mgr, 250)
        if not more:
            break
    assert done is not None, "the search in progress did not complete"
    assert not search_in_progress(mgr)
    return done


@pytest.mark.parametrize("mode", FILTER_MODES)
def test_a_search_in_steps_finds_what_one_pass_finds(session_file: Path, stepwise: None, mode: str) -> None:
    for q in QUERIES:
        whole = _whole(session_file, filter=mode, search=q)
        mgr = _open(session_file)
        first = build_view(mgr, filter=mode, search=q, limit=40, partial=True)
        if first.complete:
            assert (first.total, first.selected_index) == (whole.total, whole.selected_index)
            assert _rows(first) == _rows(whole)[:40]
            continue
        # the rows found so far are the first rows of the whole answer, in its order
        assert first.selected_index is None
        assert first.total <= whole.total
        assert _rows(first) == _rows(whole)[: len(first.rows)]
        assert len(first.rows) == min(40, first.total)
        assert search_in_progress(mgr)
        done = _finish(mgr)
        assert done == {
            "search": q.lower(),
            "filter": mode,
            "leafId": mgr.get_leaf_id(),
            "total": whole.total,
        }
        after = build_view(mgr, filter=mode, search=q)
        assert after.complete
        assert _rows(after) == _rows(whole)
        assert (after.total, after.selected_index) == (whole.total, whole.selected_index)


def test_a_whole_answer_asked_for_runs_every_step(session_file: Path, stepwise: None) -> None:
    """Without ``partial`` a stepwise search answers whole, as in one pass."""
    mgr = _open(session_file)
    for q in QUERIES:
        page = build_view(mgr, search=q, offset=100, limit=200)
        whole = _whole(session_file, search=q, offset=100, limit=200)
        assert page.complete
        assert _rows(page) == _rows(whole)
        assert (page.total, page.selected_index) == (whole.total, whole.selected_index)
    assert not search_in_progress(mgr)


def test_typing_on_from_a_search_in_progress(session_file: Path, stepwise: None) -> None:
    """A query typed on from one still in progress (or complete) finds what a fresh one finds."""
    mgr = _open(session_file)
    for typed in (["n", "ne", "neo", "neovim", "neovim s", "neovim se"], ["t", "to", "tool", "tool e"]):
        for i, q in enumerate(typed):
            page = build_view(mgr, search=q, limit=30, partial=True)
            if i == 2 and not page.complete:
                _finish(mgr)  # the next one types on from a complete search, the others not
        whole = _whole(session_file, search=typed[-1])
        if search_in_progress(mgr):
            _finish(mgr)
        assert _rows(build_view(mgr, search=typed[-1])) == _rows(whole)


def test_too_many_entries_to_keep_texts_lets_each_steps_go(
    session_file: Path, stepwise: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Above `keep_texts_max()` a search holds one step's texts (and tool calls), not all."""
    monkeypatch.setenv("SESSIONTREE_SEARCH_TEXTS_MAX", "0")
    mgr = _open(session_file)
    cache = cache_of(as_tree_source(mgr))
    for q in ("neovim", "read:", "tool e"):
        page = build_view(mgr, search=q, limit=20, partial=True)
        assert not page.complete
        _finish(mgr)
        assert cache.search_text == {}
        assert cache.search_call == {} and cache.search_folded == {}
        assert cache.call_index is not None and cache.call_index.memo == {}
        assert _rows(build_view(mgr, search=q)) == _rows(_whole(session_file, search=q))


def test_a_change_ends_the_search_in_progress(session_file: Path, stepwise: None, tmp_path: Path) -> None:
    """An entry appended (or a label set) meanwhile: the progress is dropped, the next
    request starts over and finds what one pass finds in the session as it is now."""
    path = tmp_path / "s.jsonl"
    path.write_bytes(session_file.read_bytes())
    mgr = SessionManager.open(str(path), breadcrumbs=False)
    first = build_view(mgr, search="neovim", limit=20, partial=True)
    assert not first.complete
    mgr.append_message({"role": "user", "content": "neovim once more", "timestamp": 1})
    assert continue_search(mgr) == (False, None)
    assert not search_in_progress(mgr)
    page = build_view(mgr, search="neovim")
    assert page.complete
    mgr.flush()
    assert _rows(page) == _rows(_whole(path, search="neovim"))


def test_a_small_session_answers_whole(session_file: Path) -> None:
    """Below `PARTIAL_SEARCH_MIN` entries a partial request gets the whole answer."""
    mgr = _open(session_file)
    page = build_view(mgr, search="neovim", limit=20, partial=True)
    assert page.complete and page.selected_index is not None
    assert not search_in_progress(mgr)


def test_texts_built_ahead_end_the_steps(session_file: Path, stepwise: None) -> None:
    """Once idle time built every text (`warm_search`), a search is whole at once, from the
    buffer of every text the warm-up made (the steps are for texts not known)."""
    from sessiontree.core.view import warm_search
    from sessiontree.core.view.search import SearchBuffer

    mgr = _open(session_file)
    first = build_view(mgr, search="neovim", limit=20, partial=True)
    assert not first.complete  # before: in steps
    while not warm_search(mgr, 1000):
        pass
    cache = cache_of(as_tree_source(mgr))
    buf = cache.search_buffer
    assert isinstance(buf, SearchBuffer)
    page = build_view(mgr, search="neovim s", limit=20, partial=True)
    assert page.complete and page.selected_index is not None
    assert cache.search_buffer is buf  # the warm-up's buffer answered it
    assert _rows(page) == _rows(_whole(session_file, search="neovim s", limit=20))
