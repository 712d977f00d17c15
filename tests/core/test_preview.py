"""The rows around a session's leaf from the end of its file (core/view/preview.py), against
the whole view of the same file opened by `SessionManager`: real sessions from
``../shared/fixtures/real/`` (read from there) and generated branched ones, whole and
through windows of a few KB."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from sessiontree.core import SessionManager
from sessiontree.core import view as core_view
from sessiontree.core.store import FileSessionStorage
from sessiontree.core.view.preview import preview
from shared_data import real_corpus_file, real_corpus_params

REPO = Path(__file__).resolve().parents[2]
GEN_CORPUS = REPO / "benchmarks" / "gen_corpus.py"


def _generate(path: Path, entries: int, *extra: str) -> Path:
    subprocess.run([sys.executable, str(GEN_CORPUS), str(path), str(entries), *extra], check=True)
    return path


def _window(monkeypatch: pytest.MonkeyPatch, first: int, most: int) -> None:
    monkeypatch.setenv("SESSIONTREE_PREVIEW_BYTES", str(first))
    monkeypatch.setenv("SESSIONTREE_PREVIEW_MAX_BYTES", str(most))


def _whole_view(path: Path, filter: str = "default", leaf: Any = None) -> tuple[list[Any], int | None, int]:
    m = SessionManager.open(str(path), viewing=True, breadcrumbs=False)
    try:
        if leaf is not None:
            m.branch(leaf)
        page = core_view.build_view(m, filter=filter)
        roots = len(m.index.roots())
        return page.rows, page.selected_index, roots
    finally:
        m.close_quietly()


def _is_fallback(text: str) -> bool:
    # a tool result whose call is in an assistant message before the window
    return text.startswith("[") and text.endswith("]") and ":" not in text


def _assert_aligned(found: Any, rows: list[Any], selected: int | None, roots: int) -> int:
    """The preview's rows are the whole view's rows around the selected one: same entries,
    texts, labels and markers; the same prefixes when it read the whole tree."""
    assert found.rows, found.reason
    assert found.selected_index is not None and selected is not None
    shift = selected - found.selected_index
    assert shift >= 0
    for i, got in enumerate(found.rows):
        want = rows[shift + i]
        assert (got.id, got.type, got.role, got.on_active_path, got.is_leaf, got.label) == (
            want.id,
            want.type,
            want.role,
            want.on_active_path,
            want.is_leaf,
            want.label,
        ), i
        assert got.parent_id == want.parent_id, i
        if got.text != want.text:
            assert got.role == "toolResult" and _is_fallback(got.text), (got.text, want.text)
        if not found.above and roots == 1:
            assert got.prefix == want.prefix, i
    assert found.rows[found.selected_index].id == rows[selected].id
    return shift


def _current_pi(path: Path) -> bool:
    with open(path, "rb") as f:
        try:
            header = orjson.loads(f.readline())
        except orjson.JSONDecodeError:
            return False
    return isinstance(header, dict) and header.get("type") == "session" and header.get("version") == 3


@pytest.mark.parametrize("name", real_corpus_params())
def test_real_sessions_whole_and_through_small_windows(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    path = real_corpus_file(name)
    storage = FileSessionStorage()
    before = (path.stat().st_mtime_ns, path.read_bytes())
    if not _current_pi(path):
        found = preview(storage, str(path))
        assert found.rows == [] and found.reason
        return
    rows, selected, roots = _whole_view(path)
    _window(monkeypatch, 1 << 30, 1 << 30)
    found = preview(storage, str(path), limit=10_000)
    if selected is None:
        assert found.rows == [] or found.selected_index is None
        return
    assert found.bytes_read == path.stat().st_size - len(path.read_bytes().split(b"\n", 1)[0]) - 1
    last = orjson.loads(path.read_bytes().rstrip(b"\n").rsplit(b"\n", 1)[-1])
    if not isinstance(last.get("id"), str):
        # ids the open fills in from every entry's place: not drawn from the end
        assert found.rows == [] and found.reason == "no leaf"
        return
    _assert_aligned(found, rows, selected, roots)
    for window in (4096, 32768):
        _window(monkeypatch, window, window)
        small = preview(storage, str(path), limit=60)
        if small.rows:
            _assert_aligned(small, rows, selected, roots)
            assert len(small.rows) <= 60
        else:
            assert small.reason in ("leaf not in the bytes read", "no entries")
    assert (path.stat().st_mtime_ns, path.read_bytes()) == before


@pytest.mark.parametrize("filter", ["default", "no-tools", "user-only", "all"])
def test_a_branched_session_through_windows_that_grow(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, filter: str
) -> None:
    path = _generate(tmp_path / "s.jsonl", 3000, "--seed", "11", "--branch-every", "40")
    rows, selected, roots = _whole_view(path, filter)
    storage = FileSessionStorage()
    _window(monkeypatch, 8192, 1 << 20)
    found = preview(storage, str(path), filter=filter, limit=80)
    shift = _assert_aligned(found, rows, selected, roots)
    assert found.above and shift > 0
    # it read on (four times the window each time) until half the rows come before the leaf's
    assert found.selected_index is not None and found.selected_index >= 40
    assert found.bytes_read in (8192, 32768, 131072, 524288, 1 << 20)
    assert len(found.rows) <= 80


def test_the_remembered_leaf_while_the_last_entry_is_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _generate(tmp_path / "s.jsonl", 2000, "--seed", "12", "--branch-every", "30")
    entries = [orjson.loads(line) for line in path.read_bytes().splitlines()[1:]]
    last = entries[-1]["id"]
    # a user message among the last few hundred entries, off the last entry's path
    m = SessionManager.open(str(path), viewing=True, breadcrumbs=False)
    on_path = {sk.id for sk in m.index.path_skeletons(last)}
    m.close_quietly()
    leaf = next(
        e["id"]
        for e in reversed(entries[-400:])
        if e["id"] not in on_path and e.get("message", {}).get("role") == "user"
    )
    rows, selected, roots = _whole_view(path, leaf=leaf)
    storage = FileSessionStorage()
    _window(monkeypatch, 1 << 20, 1 << 20)
    found = preview(storage, str(path), restore=(leaf, last))
    assert found.leaf_id == leaf
    _assert_aligned(found, rows, selected, roots)
    assert found.rows[found.selected_index].id == leaf
    # the file moved on since: the last entry is the leaf, as a fresh open has it
    moved = preview(storage, str(path), restore=(leaf, "not-the-last"))
    assert moved.leaf_id == last
    # a remembered leaf that is gone from the bytes read: no rows, and why
    _window(monkeypatch, 4096, 4096)
    early = preview(storage, str(path), restore=(entries[5]["id"], last))
    assert early.rows == [] and early.reason == "leaf not in the bytes read"
    nothing = preview(storage, str(path), restore=(None, last))
    assert nothing.rows == [] and nothing.reason == "no leaf"


def test_a_torn_last_line_is_left_out_as_the_open_leaves_it(tmp_path: Path) -> None:
    path = _generate(tmp_path / "s.jsonl", 500, "--seed", "13")
    whole = path.read_bytes()
    with open(path, "ab") as f:
        f.write(b'{"type":"message","id":"torn0001","parentId":')
    rows, selected, roots = _whole_view(path)
    found = preview(FileSessionStorage(), str(path), limit=50)
    _assert_aligned(found, rows, selected, roots)
    assert found.leaf_id == orjson.loads(whole.splitlines()[-1])["id"]


def test_files_it_does_not_draw(tmp_path: Path) -> None:
    storage = FileSessionStorage()
    cases = {
        "empty.jsonl": b"",
        "garbage.jsonl": b"not json\n{}\n",
        "not-a-session.jsonl": b'{"type":"message","id":"a"}\n',
        "header-only.jsonl": b'{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00Z","cwd":"/"}\n',
        "v2.jsonl": b'{"type":"session","version":2,"id":"s","timestamp":"2026-01-01T00:00:00Z","cwd":"/"}\n'
        b'{"type":"message","id":"a","parentId":null,"timestamp":"2026-01-01T00:00:00Z",'
        b'"message":{"role":"user","content":"hi"}}\n',
    }
    reasons = {}
    for name, data in cases.items():
        p = tmp_path / name
        p.write_bytes(data)
        found = preview(storage, str(p))
        assert found.rows == [] and found.selected_index is None
        reasons[name] = found.reason
        assert p.read_bytes() == data
    assert reasons == {
        "empty.jsonl": "no readable header",
        "garbage.jsonl": "no readable header",
        "not-a-session.jsonl": "no session header",
        "header-only.jsonl": "no entries",
        "v2.jsonl": "an older version (it is migrated on open)",
    }
    v3 = tmp_path / "v3.jsonl"
    v3.write_bytes(cases["v2.jsonl"].replace(b'"version":2', b'"version":3'))
    with pytest.raises(ValueError, match="unknown filter mode"):
        preview(storage, str(v3), filter="nope")


def test_a_leaf_branched_from_an_old_entry_is_drawn_from_the_first_window(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The last entry's parent is far back (the agent went on from an old entry): more bytes
    would not reach it, so the preview draws the leaf's part of the first window only."""
    path = _generate(tmp_path / "s.jsonl", 3000, "--seed", "14")
    entries = [orjson.loads(line) for line in path.read_bytes().splitlines()[1:]]
    old = entries[100]
    with open(path, "ab") as f:
        f.write(
            orjson.dumps(
                {
                    "type": "message",
                    "id": "jumped01",
                    "parentId": old["id"],
                    "timestamp": "2026-02-01T00:00:00.000Z",
                    "message": {"role": "user", "content": "back to an old entry", "timestamp": 1},
                }
            )
            + b"\n"
        )
    rows, selected, roots = _whole_view(path)
    _window(monkeypatch, 8192, 1 << 20)
    found = preview(FileSessionStorage(), str(path), limit=80)
    assert found.bytes_read == 8192 and found.above
    assert [r.id for r in found.rows] == ["jumped01"]
    assert found.rows[0].parent_id == old["id"]
    _assert_aligned(found, rows, selected, roots)


def test_a_remembered_leaf_further_back_is_found_by_its_id_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _generate(tmp_path / "s.jsonl", 3000, "--seed", "15", "--branch-every", "25")
    entries = [orjson.loads(line) for line in path.read_bytes().splitlines()[1:]]
    leaf = next(e["id"] for e in reversed(entries[-900:-600]) if e.get("message", {}).get("role") == "user")
    rows, selected, roots = _whole_view(path, leaf=leaf)
    _window(monkeypatch, 8192, 4 << 20)
    found = preview(FileSessionStorage(), str(path), limit=40, restore=(leaf, entries[-1]["id"]))
    assert found.leaf_id == leaf and found.bytes_read > 8192
    _assert_aligned(found, rows, selected, roots)
    assert found.rows[found.selected_index].id == leaf
