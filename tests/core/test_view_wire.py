"""A `session/view` page goes out as a dict made without the attrs objects
(`mapping.view_result_wire`): it is the wire form of the typed `ViewResult`, page for page."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from sessiontree.core.errors import InvalidSessionFileError
from sessiontree.core.session import SessionManager
from sessiontree.core.view import FILTER_MODES, build_view
from sessiontree.lsp import mapping
from sessiontree_protocol.converters import unstructure
from shared_data import REAL_CORPUS

ROOT = Path(__file__).resolve().parents[2]


def _pages(mgr: SessionManager) -> list:
    pages = []
    for mode in FILTER_MODES:
        for search in (None, "the", "read: x"):
            head = build_view(mgr, filter=mode, search=search, limit=300)
            pages.append(head)
            if head.selected_index is not None:
                pages.append(
                    build_view(mgr, filter=mode, search=search, offset=head.selected_index, limit=300)
                )
    return pages


def _check(mgr: SessionManager) -> int:
    n = 0
    for page in _pages(mgr):
        assert mapping.view_result_wire(page) == unstructure(mapping.view_result(page))
        n += len(page.rows)
    return n


def test_a_generated_session_pages_as_typed(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    gen = ROOT / "benchmarks" / "gen_corpus.py"
    subprocess.run(
        [sys.executable, str(gen), str(path), "3000", "--branch-every", "40"], check=True, capture_output=True
    )
    mgr = SessionManager.open(str(path), viewing=True, breadcrumbs=False)
    assert _check(mgr) > 0
    # deep art (the short prefix) and labels are among the rows
    rows = [r for p in _pages(mgr) for r in p.rows]
    assert any(len(r.prefix) > 24 for r in rows) and any(r.label for r in rows)


def test_a_partial_search_pages_as_typed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from sessiontree.core.view import progressive

    monkeypatch.setattr(progressive, "PARTIAL_SEARCH_MIN", 0)
    path = tmp_path / "s.jsonl"
    gen = ROOT / "benchmarks" / "gen_corpus.py"
    subprocess.run([sys.executable, str(gen), str(path), "3000"], check=True, capture_output=True)
    mgr = SessionManager.open(str(path), viewing=True, breadcrumbs=False)
    page = build_view(mgr, search="the", limit=20, partial=True)
    assert not page.complete
    wire = mapping.view_result_wire(page)
    assert wire["complete"] is False and wire["selectedIndex"] is None
    assert wire == unstructure(mapping.view_result(page))


def test_a_preview_goes_out_as_typed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from sessiontree.core.store import FileSessionStorage
    from sessiontree.core.view.preview import Preview, preview

    path = tmp_path / "s.jsonl"
    gen = ROOT / "benchmarks" / "gen_corpus.py"
    subprocess.run(
        [sys.executable, str(gen), str(path), "3000", "--branch-every", "40"], check=True, capture_output=True
    )
    monkeypatch.setenv("SESSIONTREE_PREVIEW_BYTES", "65536")
    for mode in FILTER_MODES:
        found = preview(FileSessionStorage(), str(path), filter=mode, limit=300)
        assert found.rows
        assert mapping.preview_result_wire(found) == unstructure(mapping.preview_result(found))
    nothing = Preview(reason="no entries")
    assert mapping.preview_result_wire(nothing) == unstructure(mapping.preview_result(nothing))


@pytest.mark.parametrize("name", sorted(p.name for p in REAL_CORPUS.glob("*.jsonl")) or ["(none)"])
def test_real_sessions_page_as_typed(name: str) -> None:
    path = REAL_CORPUS / name
    if not path.is_file():
        pytest.skip(f"{path} is missing (../shared beside the repository)")
    try:
        mgr = SessionManager.open(str(path), viewing=True, breadcrumbs=False, read_only=True)
    except InvalidSessionFileError:
        pytest.skip(f"{name} is not a session the manager opens (doctor's and other tests' case)")
    _check(mgr)
