"""A big file scanned on two cores (`core/session/split_scan.py`) is indexed exactly as on one.

The files are generated sessions written to disk; the thresholds are lowered so that a
file of a few megabytes takes the chunked, split path. Each case loads the same file with
`parallel_scan` on and off and compares everything the index holds, the usage, the file
state and the report; a real child process is forked every time, and none is left behind.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
from sessiontree.core.session import SessionManager, loading

GEN = Path(__file__).resolve().parents[2] / "benchmarks" / "gen_corpus.py"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    path = tmp_path_factory.mktemp("split") / "c.jsonl"
    subprocess.run(
        [sys.executable, str(GEN), str(path), "6000", "--branch-every", "9"],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return path.read_bytes()


@pytest.fixture(autouse=True)
def small_thresholds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(loading, "CHUNKED_LOAD_MIN", 0)
    monkeypatch.setattr(loading, "LOAD_CHUNK", 256 << 10)  # several chunks per half
    monkeypatch.setenv("SESSIONTREE_PARALLEL_SCAN_MIN", "0")


def _state(mgr: SessionManager) -> dict[str, Any]:
    idx = mgr.index
    report = mgr.load_report
    fs = mgr.file_state
    return {
        "skeletons": [tuple(getattr(sk, f) for f in sk.__struct_fields__) for sk in idx.skeletons()],
        "usage": mgr.get_usage_statistics(),
        "leaf": mgr.get_leaf_id(),
        "header": mgr.get_header(),
        "end": fs.end if fs is not None else None,
        "report": (report.torn_tail, report.skipped_lines, report.fast_path, len(report.dropped)),
        "branch": [e["id"] for e in mgr.get_branch()],
    }


def _load_both(path: Path) -> tuple[SessionManager, SessionManager]:
    kw: dict[str, Any] = {
        "read_only": True,
        "cache_dir": str(path.parent / "no-cache"),
        "cache_min_bytes": 1 << 40,
    }
    two = SessionManager.open(str(path), parallel_scan=True, **kw)
    one = SessionManager.open(str(path), parallel_scan=False, **kw)
    return two, one


def _children() -> set[str]:
    out: set[str] = set()
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        try:
            out.update((task / "children").read_text().split())
        except OSError:
            pass
    return out


@pytest.fixture(autouse=True)
def children_before() -> set[str]:
    return _children()


def _no_child_left(before: set[str]) -> None:
    """Every child forked during the test has ended and was reaped (none running, no zombie)."""
    deadline = time.monotonic() + 10
    while _children() - before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert _children() - before == set()


def test_a_clean_file_scanned_in_two_halves_is_indexed_as_in_one(
    corpus: bytes, tmp_path: Path, children_before: set[str]
) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(corpus)
    two, one = _load_both(path)
    assert two.load_report.split_scan and not one.load_report.split_scan
    assert _state(two) == _state(one)
    assert [sk.order for sk in two.index.skeletons()] == list(range(len(two.index.skeletons())))
    _no_child_left(children_before)


def test_a_torn_last_line_is_the_second_halfs_and_reported_alike(
    corpus: bytes, tmp_path: Path, children_before: set[str]
) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(corpus + b'{"type":"message","id":"torn00001","parentId":null,"mess')
    two, one = _load_both(path)
    assert two.load_report.torn_tail and two.load_report.split_scan
    assert _state(two) == _state(one)
    _no_child_left(children_before)


@pytest.mark.parametrize("where", [0.25, 0.75])
def test_a_line_that_is_not_clean_takes_the_lenient_path_either_way(
    corpus: bytes, tmp_path: Path, where: float, children_before: set[str]
) -> None:
    # in the parent's half (the child is stopped) or in the child's (the parent tries its half too)
    lines = corpus.split(b"\n")
    at = int(len(lines) * where)
    lines.insert(at, b"[1, 2, 3]")  # not an object: the fast path refuses the file
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"\n".join(lines))
    two, one = _load_both(path)
    assert not two.load_report.fast_path and not one.load_report.fast_path
    assert two.load_report.skipped_lines == one.load_report.skipped_lines == 1
    assert _state(two) == _state(one)
    _no_child_left(children_before)


def _raise_in_the_child() -> None:
    raise MemoryError("the child ran out")


def _kill_the_child() -> None:
    os.kill(os.getpid(), 9)


@pytest.mark.parametrize("fate", [_raise_in_the_child, _kill_the_child], ids=["raises", "killed"])
def test_a_child_that_fails_leaves_the_half_to_the_parent(
    corpus: bytes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, children_before: set[str], fate: Any
) -> None:
    parent = os.getpid()
    scan_range = loading.Loading._scan_range

    def failing_in_the_child(self: Any, *a: Any, **k: Any) -> Any:
        if os.getpid() != parent:
            fate()
        return scan_range(self, *a, **k)

    monkeypatch.setattr(loading.Loading, "_scan_range", failing_in_the_child)
    path = tmp_path / "s.jsonl"
    path.write_bytes(corpus)
    two, one = _load_both(path)
    assert two.load_report.split_scan and two.load_report.fast_path
    assert _state(two) == _state(one)
    _no_child_left(children_before)


def test_appends_after_a_split_load_follow_on(corpus: bytes, tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(corpus)
    two, _ = _load_both(path)
    leaf = two.get_leaf_id()
    with open(path, "ab") as f:
        f.write(
            orjson.dumps(
                {
                    "type": "message",
                    "id": "late0001",
                    "parentId": leaf,
                    "timestamp": "2026-01-02T00:00:00.000Z",
                    "message": {"role": "user", "content": "late", "timestamp": 1},
                }
            )
            + b"\n"
        )
    assert two.ingest_appended_bytes() == ["late0001"]
    # the end of what was read is the file's end, once (it was counted twice before)
    assert two.file_state is not None and two.file_state.end == path.stat().st_size
    _, fresh = _load_both(path)
    assert _state(two) == _state(fresh)
    assert two.ingest_appended_bytes() == []
