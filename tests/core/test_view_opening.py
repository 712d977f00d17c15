"""The opening view (core/view/opening.py): the first pages of a big session, kept in the
cache directory, answer its next open while, and only while, nothing they were made from
has changed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec
import orjson
import pytest
from sessiontree.core.session import SessionManager
from sessiontree.core.view import build_view, save_opening_view
from sessiontree.core.view.opening import AROUND_ROWS, HEAD_ROWS, OPENING_MIN_ENTRIES

REPO = Path(__file__).resolve().parents[2]
PAGE = 500


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("corpus") / "s.jsonl"
    n = OPENING_MIN_ENTRIES + 3000
    subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "gen_corpus.py"), str(path), str(n)],
        check=True,
        capture_output=True,
    )
    return path


def _open(path: Path, cache: Path) -> SessionManager:
    return SessionManager.open(str(path), viewing=True, breadcrumbs=False, cache_dir=str(cache))


def _pages(m: Any, **kw: Any) -> list[Any]:
    """What a sidebar asks first: the head page, then the page around the leaf."""
    head = build_view(m, offset=0, limit=PAGE, **kw)
    sel = head.selected_index
    out = [head]
    if sel is not None and sel >= PAGE:
        out.append(build_view(m, offset=max(PAGE, min(sel - PAGE // 2, head.total - PAGE)), limit=PAGE, **kw))
    return out


def _kept_file(m: SessionManager) -> Path:
    target = m.cache_companion(".view")
    assert target is not None
    return Path(target)


def _mark_kept_rows(kept: Path) -> None:
    """Rewrite the kept rows' text: a page that shows it came from the kept view."""
    fields = msgspec.msgpack.decode(kept.read_bytes())
    for window in fields[-1]:
        for row in window[1]:
            row[9] = "KEPT " + row[9]
    kept.write_bytes(msgspec.msgpack.encode(fields))


def _from_kept(pages: list[Any]) -> bool:
    texts = [r.text for p in pages for r in p.rows]
    assert texts
    kept = [t.startswith("KEPT ") for t in texts]
    assert all(kept) or not any(kept), "a page mixes kept and built rows"
    return all(kept)


@pytest.fixture
def session(tmp_path: Path, corpus: Path) -> tuple[Path, Path]:
    path = tmp_path / "agent" / corpus.name
    path.parent.mkdir()
    path.write_bytes(corpus.read_bytes())
    cache = tmp_path / "cache"
    m = _open(path, cache)
    assert save_opening_view(m)
    assert not save_opening_view(m)  # kept already
    assert _kept_file(m).stat().st_mode & 0o777 == 0o600  # the rows hold the session's text
    return path, cache


def test_a_reopened_session_shows_the_kept_pages_exactly(session: tuple[Path, Path]) -> None:
    path, cache = session
    built = _pages(_open(path, cache))  # the kept view's rows are these
    m = _open(path, cache)
    kept = _pages(m)
    assert kept == built
    sel = built[0].selected_index
    assert sel is not None and sel - AROUND_ROWS > HEAD_ROWS + 30  # the leaf is far down
    assert len(kept) == 2 and kept[1].offset > HEAD_ROWS  # its page is from the second window
    # and the pages did come from the kept view
    _mark_kept_rows(_kept_file(m))
    assert _from_kept(_pages(_open(path, cache)))
    # a page outside the kept windows is built
    far = build_view(_open(path, cache), offset=HEAD_ROWS + 10, limit=20)
    assert far.total == built[0].total and not _from_kept([far])


def test_the_kept_pages_answer_only_what_they_were_made_for(session: tuple[Path, Path]) -> None:
    path, cache = session
    m = _open(path, cache)
    _mark_kept_rows(_kept_file(m))
    other_leaf = build_view(m, offset=3, limit=1).rows[0].id
    # another filter, a search, another leaf, another home: built
    assert not _from_kept(_pages(_open(path, cache), filter="no-tools"))
    assert not _from_kept(_pages(_open(path, cache), search="the"))
    assert not _from_kept(_pages(_open(path, cache), leaf_id=other_leaf))
    assert not _from_kept(_pages(_open(path, cache), home="/elsewhere"))
    # a label set in this session: built from then on, even for the kept leaf
    m = _open(path, cache)
    assert _from_kept(_pages(m))
    m.append_label_change(other_leaf, "here")
    assert not _from_kept(_pages(m))


def test_a_file_changed_since_shows_built_pages(session: tuple[Path, Path]) -> None:
    path, cache = session
    m = _open(path, cache)
    _mark_kept_rows(_kept_file(m))
    leaf = m.get_leaf_id()
    # appended by the agent: the kept view is of a shorter file
    line = {
        "type": "message",
        "id": "appended1",
        "parentId": leaf,
        "timestamp": "2026-01-01T00:00:00.000Z",
        "message": {"role": "user", "content": "one more"},
    }
    data = path.read_bytes()
    with open(path, "ab") as f:
        f.write(orjson.dumps(line) + b"\n")
    grown = _open(path, cache)
    pages = _pages(grown)
    assert not _from_kept(pages) and any(r.id == "appended1" for p in pages for r in p.rows)
    # rewritten in place to the same size and mtime: the tail hash tells
    st = os.stat(path)
    path.write_bytes(data.replace(b'"role":"user"', b'"role":"USER"', 1)[: len(data)])
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert not _from_kept(_pages(_open(path, cache)))


def test_a_kept_view_that_does_not_decode_is_a_miss(session: tuple[Path, Path]) -> None:
    path, cache = session
    m = _open(path, cache)
    want = _pages(m)
    _kept_file(m).write_bytes(b"\x93garbage")
    assert _pages(_open(path, cache)) == want
    # and the next save keeps it again
    assert save_opening_view(_open(path, cache))
    _mark_kept_rows(_kept_file(m))
    assert _from_kept(_pages(_open(path, cache)))


def test_nothing_is_kept_for_small_sessions_or_without_a_cache(tmp_path: Path) -> None:
    small = tmp_path / "small.jsonl"
    subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "gen_corpus.py"), str(small), "200"],
        check=True,
        capture_output=True,
    )
    m = _open(small, tmp_path / "cache")
    assert not save_opening_view(m)
    assert not (tmp_path / "cache").exists() or not list((tmp_path / "cache").rglob("*.view"))
    mem = SessionManager.in_memory("/w")
    assert not save_opening_view(mem)


def test_the_kept_leaf_is_known_without_decoding_the_skeletons(tmp_path: Path, corpus: Path) -> None:
    """The daemon puts a reopened session's leaf back where it left it (its state file); the
    kept view made for that leaf from these very bytes says the entry is there, so moving
    the leaf back decodes none of a cache hit's skeletons, and the pages are the kept ones."""
    from sessiontree.core.view import kept_leaf_is

    path = tmp_path / corpus.name
    path.write_bytes(corpus.read_bytes())
    cache = tmp_path / "cache"
    m = _open(path, cache)
    other = build_view(m, offset=3000, limit=1).rows[0].id
    assert other != m.get_leaf_id()
    m.branch(other)
    assert save_opening_view(m)  # kept for the leaf the daemon moved to
    want = _pages(m)
    r = _open(path, cache)
    assert r.load_report.from_cache and r.index._pending is not None
    assert not kept_leaf_is(r, r.get_leaf_id())  # not the kept view's leaf
    assert kept_leaf_is(r, other)
    assert other in r.index
    r.branch(other)
    assert r.index._pending is not None  # nothing decoded
    assert _pages(r) == want
    assert "not-an-id" not in r.index  # anything else is looked up (decoded)
    assert r.index._pending is None and other in r.index and r.get_leaf_id() == other
