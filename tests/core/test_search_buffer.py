"""A search over many rows matches in one buffer of the kept texts (`view.search.SearchBuffer`).

The rows it finds must be exactly those the row-by-row matching finds, for every filter
mode and query shape, with labels (matched besides the text), tool results (their call's
display folded in), appends (new texts) and label changes, before and after the idle-time
warm-up. The session is a generated one of thousands of entries with branches, written to
disk and opened as a file, once matched with the buffer and once with it turned off.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from sessiontree.core import SessionManager
from sessiontree.core import view as core_view
from sessiontree.core.view import search as search_mod

GEN = Path(__file__).resolve().parents[2] / "benchmarks" / "gen_corpus.py"

QUERIES = [
    "neovim",
    "neovim s",
    "tree file",
    "s",
    "e tree",
    "[read:",
    "bench",
    "pinned",
    "nothing-has-this",
    "probe",
    "NEOVIM Sidebar",
]
MODES = ["user-only", "no-tools", "default", "all", "labeled-only"]


@pytest.fixture(scope="module")
def session_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("buf") / "s.jsonl"
    subprocess.run(
        [sys.executable, str(GEN), str(path), "6000", "--branch-every", "7"],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return path


def _rows(mgr: SessionManager, query: str, mode: str) -> tuple[list[int], int, int | None]:
    """The rows as file positions (the entries appended by each manager get their own ids)."""
    page = core_view.build_view(mgr, search=query, filter=mode)
    index = mgr.index
    return [index.skeleton(r.id).order for r in page.rows], page.total, page.selected_index


def _both(path: Path, monkeypatch: pytest.MonkeyPatch, steps: list) -> None:
    """Run `steps` (callables on a manager) on two managers of copies of one file, one
    matching with the buffer and one row by row, and compare every search after each."""
    copies = []
    for name in ("buffered.jsonl", "rowwise.jsonl"):
        copy = path.parent / name
        copy.write_bytes(path.read_bytes())
        copies.append(copy)
    buffered = SessionManager.open(str(copies[0]))
    rowwise = SessionManager.open(str(copies[1]))
    try:
        for step in [None, *steps]:
            if step is not None:
                step(buffered)
                step(rowwise)
            for mode in MODES:
                for q in QUERIES:
                    got = _rows(buffered, q, mode)
                    with monkeypatch.context() as m:
                        m.setattr(search_mod, "_BUFFER_MIN", 1 << 60)
                        want = _rows(rowwise, q, mode)
                    assert got == want, (mode, q)
    finally:
        buffered.close()
        rowwise.close()


def test_the_buffer_finds_what_row_by_row_matching_finds(
    session_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = SessionManager.open(str(session_file))
    try:
        # the buffer is used at all: more rows than its threshold match a common word
        page = core_view.build_view(seen, search="neovim", filter="all")
        assert page.total > search_mod._BUFFER_MIN
        some = [r.id for r in core_view.build_view(seen, filter="all", limit=3000).rows]
    finally:
        seen.close()
    labelled, other = some[1200], some[2500]

    def label(mgr: SessionManager) -> None:
        # a label's words are matched besides the text (only on rows that have one)
        mgr.append_label_change(labelled, "Pinned Bench")

    def append(mgr: SessionManager) -> None:
        mgr.append_message({"role": "user", "content": "a probe about the neovim sidebar", "timestamp": 1})
        mgr.append_message(
            {
                "role": "assistant",
                "content": [{"type": "text", "text": "probe answered"}],
                "provider": "p",
                "model": "m",
                "stopReason": "stop",
                "timestamp": 2,
            }
        )

    def navigate(mgr: SessionManager) -> None:
        mgr.branch(other)

    def relabel(mgr: SessionManager) -> None:
        mgr.append_label_change(labelled, None)
        mgr.append_label_change(other, "pinned")

    def warm(mgr: SessionManager) -> None:
        while not core_view.warm_search(mgr, 1024):
            pass

    _both(session_file, monkeypatch, [label, append, navigate, warm, relabel, append])


def test_warmed_texts_are_extended_after_an_append(session_file: Path, tmp_path: Path) -> None:
    copy = tmp_path / "w.jsonl"
    copy.write_bytes(session_file.read_bytes())
    mgr = SessionManager.open(str(copy))
    try:
        while not core_view.warm_search(mgr, 1 << 20):
            pass
        before = core_view.build_view(mgr, search="zebra", filter="all").total
        assert before == 0
        mgr.append_message({"role": "user", "content": "a zebra crossing", "timestamp": 3})
        page = core_view.build_view(mgr, search="zebra", filter="all")
        assert page.total == 1
        assert page.rows[0].id == mgr.get_leaf_id()
    finally:
        mgr.close()


def test_no_buffer_above_its_bound(
    session_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the buffer is a second copy of every text: a tree above `_BUFFER_MAX` rows is matched
    # row by row (and finds the same rows)
    from sessiontree.core.view.adapters import as_tree_source
    from sessiontree.core.view.cache import cache_of

    copy = tmp_path / "b.jsonl"
    copy.write_bytes(session_file.read_bytes())
    mgr = SessionManager.open(str(copy))
    try:
        want = _rows(mgr, "neovim s", "all")
        monkeypatch.setattr(search_mod, "_BUFFER_MAX", 1000)
        fresh = SessionManager.open(str(copy))
        try:
            assert _rows(fresh, "neovim s", "all") == want
            assert cache_of(as_tree_source(fresh)).search_buffer is None
        finally:
            fresh.close()
        assert cache_of(as_tree_source(mgr)).search_buffer is not None
    finally:
        mgr.close()


TYPED = ["n", "ne", "neo", "neovim", "neovim s", "neovim si", "neovim sid", "neovim", "neovim sidebar tree"]


def test_typing_narrows_the_last_query_and_finds_what_a_fresh_query_finds(
    session_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each character typed narrows the last query: its rows are tested for the new tokens
    only (no look through the whole buffer once they are few), and they are the rows a
    query typed at once finds, also across a label change (labelled rows are matched
    apart) and an append."""
    copy, fresh_copy = tmp_path / "typed.jsonl", tmp_path / "fresh.jsonl"
    copy.write_bytes(session_file.read_bytes())
    fresh_copy.write_bytes(session_file.read_bytes())
    mgr = SessionManager.open(str(copy))
    fresh = SessionManager.open(str(fresh_copy))
    looks: list[str] = []
    rows_with = search_mod.SearchBuffer.rows_with

    def counted(self: search_mod.SearchBuffer, token: str) -> list[int]:
        looks.append(token)
        return rows_with(self, token)

    monkeypatch.setattr(search_mod.SearchBuffer, "rows_with", counted)
    some = [r.id for r in core_view.build_view(fresh, filter="all", limit=3000).rows]
    try:
        for step in range(3):
            for mode in ("all", "default", "no-tools"):
                looks.clear()
                for q in TYPED:
                    got = _rows(mgr, q, mode)
                    with monkeypatch.context() as m:
                        m.setattr(search_mod, "_BUFFER_MIN", 1 << 60)
                        want = _rows(fresh, q, mode)
                    assert got == want, (step, mode, q)
                    assert got[1] > 0, q
                # through the whole buffer for the first queries only (they match most
                # rows); from "neo" on the tokens are tested on the last query's rows
                assert looks[0] == "n" and set(looks) <= {"n", "ne"}, (step, mode, looks)
            for m_ in (mgr, fresh):
                if step == 0:
                    m_.append_label_change(some[700], "neovim sidebar tree")
                else:
                    m_.append_label_change(some[700], None)
                    m_.append_message(
                        {"role": "user", "content": "neovim sidebar tree probe", "timestamp": 5}
                    )
    finally:
        mgr.close()
        fresh.close()


@pytest.mark.parametrize("drop_share", [0.0, 0.001, 0.02, 0.2, 0.9])
def test_rows_are_taken_out_as_set_operations_would(drop_share: float) -> None:
    """`_without` (bisection and slices for a few rows, a C loop for many) and `_among`
    give exactly the set operations' rows, in order, whatever lies at the ends."""
    import random

    rng = random.Random(int(drop_share * 1000))
    for _ in range(60):
        n = rng.randrange(0, 3000)
        rows = sorted(rng.sample(range(n * 2), n))
        drop = {r for r in range(n * 2) if rng.random() < drop_share}
        if rows and rng.random() < 0.3:
            drop |= {rows[0], rows[-1]}
        assert search_mod._without(rows, drop) == [r for r in rows if r not in drop]
        assert search_mod._among(set(drop), rows) == drop & set(rows)
