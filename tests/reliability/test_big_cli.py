"""Issue 34: the command line on a big session holds a page, not the branch.

`export`, `diff` and `tree` read their entries (and `tree` its rows) a page at a time and
write as they go; the documents are the very documents the whole-document code made
(tests/export_cases.py holds their digests, made by the code before). Memory is measured,
not time (the figures: benchmarks/cli_memory.py, docs/benchmarks.md): what an export or a
comparison allocates does not grow with the branch, and `tree` holds less than the whole
view it used to build.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import stat
import subprocess
import sys
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import export_cases
import pytest
from sessiontree.core.session import SessionManager

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def sessions(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return export_cases.write_sessions(tmp_path_factory.mktemp("cases"))


@pytest.fixture
def case_home(monkeypatch: pytest.MonkeyPatch) -> None:
    """HOME as the digests were made with (tool paths under ``~`` are shown against it)."""
    from sessiontree.core.compare.effects import tool_path

    monkeypatch.setenv("HOME", export_cases.CASE_HOME)
    tool_path.cache_clear()


@pytest.fixture(scope="module")
def digests() -> dict[str, str]:
    return dict(json.loads(export_cases.DIGESTS.read_text(encoding="utf-8")))


def _differing(sessions: dict[str, Path], digests: dict[str, str], keep: Callable[[str], bool]) -> list[str]:
    wrong = []
    ran = 0
    for name, make in export_cases.cases(sessions):
        if not keep(name):
            continue
        ran += 1
        try:
            got = make()
        except Exception as exc:
            got = f"error {type(exc).__name__}"
        if digests.get(name) != got:
            wrong.append(name)
    assert ran, "no case ran"
    return wrong


def test_documents_are_the_whole_document_codes(
    sessions: dict[str, Path], digests: dict[str, str], case_home: None
) -> None:
    """Every export (md, html, jsonl; redacted, not, dry run; paths, other leaves,
    subtrees), comparison and `tree`/`diff` drawing of the demo, the real corpus, generated
    and tricky sessions is the document the code before made."""
    if not export_cases.REAL.is_dir():
        pytest.skip(f"{export_cases.REAL} is missing (../shared is read beside the repository)")
    assert _differing(sessions, digests, lambda name: True) == []


def _ahead(monkeypatch: pytest.MonkeyPatch) -> None:
    """Exports with the triggers looked for ahead by a forked child (`GateAhead`), as the
    command line makes them."""
    import sessiontree.core.export as export_module

    plain = export_module.export_session
    monkeypatch.setattr(export_module, "export_session", lambda *a, **kw: plain(*a, **kw, gate_ahead=True))


@pytest.mark.parametrize(("page", "ahead"), [(1, False), (7, False), (7, True)])
def test_small_pages_make_the_same_documents(
    sessions: dict[str, Path],
    digests: dict[str, str],
    page: int,
    ahead: bool,
    monkeypatch: pytest.MonkeyPatch,
    case_home: None,
) -> None:
    """With pages of one or seven entries (tool results pages after their calls, calls
    answered across many pages, ids redaction changes), the same documents."""
    import sessiontree.core.compare.diff as diff_module
    import sessiontree.core.export.select as select_module

    monkeypatch.setattr(select_module, "PAGE", page)
    monkeypatch.setattr(diff_module, "PAGE", page)
    if ahead:
        _ahead(monkeypatch)
    small = {k: v for k, v in sessions.items() if k.startswith(("tricky", "demo", "gen-1200"))}
    assert _differing(small, digests, lambda name: " cli " not in name) == []


def test_the_gate_ahead_makes_the_same_documents(
    sessions: dict[str, Path], digests: dict[str, str], monkeypatch: pytest.MonkeyPatch, case_home: None
) -> None:
    """Every export of every session (the real corpus's escapes, blobs and secrets among
    them) with the triggers looked for in the lines ahead: the same documents."""
    _ahead(monkeypatch)
    assert _differing(sessions, digests, lambda name: " cli " not in name and " diff " not in name) == []


def _opened(path: Path) -> SessionManager:
    """The session with its index decoded (a cached index is decoded on first use, which is
    the open's memory, not the export's)."""
    mgr = SessionManager.open(str(path), read_only=True)
    assert mgr.index.ids()
    return mgr


def _peak(work: Callable[[], Any]) -> int:
    tracemalloc.start()
    try:
        work()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.fixture(scope="module")
def two_sizes(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    where = tmp_path_factory.mktemp("sizes")
    small, big = where / "small.jsonl", where / "big.jsonl"
    export_cases.generated(small, 3000, 300, 21)
    export_cases.generated(big, 12000, 300, 21)
    for path in (small, big):
        _opened(path)  # the index cache written: every open after this one is alike
    return small, big


class _Sink(io.TextIOBase):
    def write(self, s: str) -> int:
        return len(s)


def _command(*argv: str) -> None:
    """`sessiontree ARGV` in this process, its standard output dropped."""
    from sessiontree.cli import main

    with contextlib.redirect_stdout(_Sink()):
        assert main(list(argv)) == 0


def _beyond_open(path: Path, *argv: str) -> int:
    """What `sessiontree ARGV` allocates at its peak beyond opening ``path`` (the index,
    which grows with the session whatever the command does)."""
    opening = _peak(lambda: _opened(path))
    return _peak(lambda: _command(*argv)) - opening


@pytest.mark.parametrize("fmt", ["md", "html", "jsonl"])
def test_an_export_holds_a_page_not_the_branch(
    two_sizes: tuple[Path, Path], fmt: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`export` of four times the branch: about the same memory (the code before held every
    entry of the branch and the whole document: 3.7 times as much)."""
    peaks = []
    for path in two_sizes:
        out = tmp_path / f"{path.stem}.{fmt}"
        peaks.append(_beyond_open(path, "export", str(path), "-f", fmt, "-o", str(out)))
    small, big = peaks
    assert big < 1.5 * small, (fmt, small, big)


def test_diff_holds_a_page_not_the_sides(two_sizes: tuple[Path, Path]) -> None:
    """`diff` of the first entry and the leaf (every entry on one side): about the same
    memory for four times the entries (the code before: 3.7 times as much)."""
    peaks = []
    for path in two_sizes:
        mgr = _opened(path)
        first, leaf = mgr.index.order()[0], mgr.get_leaf_id()
        assert leaf is not None
        peaks.append(_beyond_open(path, "diff", str(path), first, leaf))
    small, big = peaks
    assert big < 1.5 * small, (small, big)


def test_tree_holds_less_than_the_whole_view(two_sizes: tuple[Path, Path]) -> None:
    """`tree` draws a page of rows at a time: it holds less than the view of every row it
    used to build and print (the code before: more than that view)."""
    from sessiontree.core.view import build_view

    path = two_sizes[1]
    whole = _opened(path)
    view = _peak(lambda: build_view(whole, leaf_id=whole.get_leaf_id()))
    drawn = _beyond_open(path, "tree", str(path), "--ids")
    assert drawn < 0.6 * view, (drawn, view)


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "sessiontree", *args],
        capture_output=True,
        env=dict(os.environ, **(env or {})),
        check=False,
        timeout=300,
    )


@pytest.fixture
def session(tmp_path: Path) -> Path:
    path = tmp_path / "s.jsonl"
    export_cases.tricky_session(path, 5, turns=120)
    return path


def test_out_is_replaced_whole_keeping_its_link_and_mode(session: Path, tmp_path: Path) -> None:
    """-o OUT: the export goes to a temporary file beside the file OUT names, renamed over it
    once whole: a link stays a link, the file keeps its mode, no temporary file is left."""
    real = tmp_path / "real.md"
    real.write_text("an older export\n", encoding="utf-8")
    real.chmod(0o640)
    link = tmp_path / "link.md"
    link.symlink_to(real)
    r = _cli("export", str(session), "-o", str(link))
    assert r.returncode == 0, r.stderr
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert stat.S_IMODE(real.stat().st_mode) == 0o640
    assert real.read_bytes() == _cli("export", str(session)).stdout  # the same as to stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.md", "real.md", "s.jsonl"]


def test_a_failed_export_leaves_out_as_it_was(session: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.md"
    out.write_text("an older export\n", encoding="utf-8")
    r = _cli("export", str(session), "-o", str(out), env={"SESSIONTREE_EXPORT_BUDGET": "0.000001"})
    assert r.returncode == 2 and b"nothing was exported" in r.stderr
    assert out.read_text(encoding="utf-8") == "an older export\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.md", "s.jsonl"]
    r = _cli("export", str(session), env={"SESSIONTREE_EXPORT_BUDGET": "0.000001"})
    assert r.returncode == 2 and r.stdout == b""


def test_out_that_is_a_pipe_gets_the_export(session: Path, tmp_path: Path) -> None:
    """An OUT that is no regular file (a FIFO) is written, not replaced."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    proc = subprocess.Popen([sys.executable, "-m", "sessiontree", "export", str(session), "-o", str(fifo)])
    with open(fifo, "rb") as f:
        got = f.read()
    assert proc.wait(timeout=120) == 0
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    assert got == _cli("export", str(session)).stdout


def test_tree_json_rows_stream_as_one_document(session: Path) -> None:
    """`tree --json` writes its rows a page at a time; the document is one JSON object with
    every row (a page boundary crossed: more rows than a page)."""
    from sessiontree.commands import tree

    r = _cli("tree", str(session), "--json", "--filter", "all")
    doc = json.loads(r.stdout)
    assert doc["total"] == len(doc["rows"]) > 0
    # and with pages of a few rows, in this process
    mgr = SessionManager.open(str(session), read_only=True)
    args = argparse.Namespace(
        leaf=None, filter="all", search=None, json=True, ids=False, full_art=False, color="never"
    )
    buf = io.StringIO()
    old = tree.TREE_PAGE
    tree.TREE_PAGE = 7
    try:
        with contextlib.redirect_stdout(buf):
            tree._print(mgr, str(session), args)
    finally:
        tree.TREE_PAGE = old
    assert json.loads(buf.getvalue()) == doc
    assert buf.getvalue().encode() == r.stdout


def test_a_line_without_a_trigger_holds_an_entry_without_one(
    sessions: dict[str, Path], tmp_path: Path
) -> None:
    """`Redactor.raw_maybe` (what the child looks at) says False only where the gate of the
    entry as read says False too: on the secrets session (escapes, JSON held in strings),
    the tricky and generated sessions and the real corpus."""
    from hostile import write_secret_session
    from sessiontree.core.export.redact import Redactor

    secrets = tmp_path / "secrets.jsonl"
    write_secret_session(secrets)
    escaped = tmp_path / "escaped.jsonl"
    # a trigger spelled with escapes, a blob reference: the line does not show what the entry holds
    escaped.write_text(
        json.dumps(
            {"type": "session", "version": 3, "id": "esc", "timestamp": "2026-01-01T00:00:00Z", "cwd": "/"}
        )
        + "\n"
        + '{"type":"message","id":"a","parentId":null,"timestamp":"2026-01-01T00:00:01Z",'
        '"message":{"role":"user","content":"\\u0073k-ant-api03-\\u0041AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}}\n'
        '{"type":"message","id":"b","parentId":"a","timestamp":"2026-01-01T00:00:02Z",'
        '"message":{"role":"user","content":"see http:\\/\\/user:pw@host"}}\n',
        encoding="utf-8",
    )
    red = Redactor()
    checked = flagged = 0
    for path in [secrets, escaped, *sessions.values()]:
        try:
            mgr = SessionManager.open(str(path), read_only=True)
        except Exception:  # (a file the core does not open: nothing to export either)
            continue
        index = mgr.index
        sks = [sk for sk in index.skeletons() if sk.offset >= 0]
        if not sks or index.raw_loader is None:
            continue
        lines = {id(sk): bytes(mv) for sk, mv in index.raw_loader(sorted(sks, key=lambda sk: sk.offset))}
        entries = index.entries_in_order(sks)
        maybe = red.raw_maybe([lines[id(sk)] for sk in sks])
        gate = red._gate(entries)
        assert not any(g and not m for g, m in zip(gate, maybe, strict=True)), path.name
        checked += len(sks)
        flagged += sum(gate)
    assert checked > 5000 and flagged > 100
