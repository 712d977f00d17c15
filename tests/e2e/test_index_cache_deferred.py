"""The daemon's open answers before the index cache is written; idle time writes it.

Encoding the skeletons of a big session into the index cache took its share of a click
(about a second for a million entries). The daemon opens with `defer_index_cache` and its
idle-time warm-up (lsp/features/warm.py) writes the cache right after the first pages: the
next daemon's open reads it instead of the file, and nothing is written next to the
agent's files.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sessiontree.client import Client
from sessiontree.core import SessionManager
from sessiontree.core import view as core_view
from sessiontree.core.index.cache import IndexCache
from sessiontree.core.session import loading
from sessiontree.core.session.context_walk import context_skeletons

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.timeout(180)


def _listing(root: Path) -> list[tuple[str, int, int]]:
    return sorted((str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file())


@pytest.mark.parametrize("writer", ["here", "forked"])
def test_the_cache_of_a_big_session_is_written_after_the_open(tmp_path: Path, writer: str) -> None:
    """Written in idle time by the daemon itself, or, from `warm.FORK_CACHE_MIN` entries
    (lowered here), by a forked copy; either way with the last entry's context beside it."""
    agent = tmp_path / "agent"
    path = agent / "sessions" / "--p--" / "big.jsonl"
    path.parent.mkdir(parents=True)
    n = 36000
    subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "gen_corpus.py"), str(path), str(n)],
        check=True,
        capture_output=True,
    )
    assert path.stat().st_size > loading.CHUNKED_LOAD_MIN  # the chunked path, which defers
    # scanned on two cores by the daemon too (core/session/split_scan.py): the bound is lowered
    # below the file's size, so the test writes half the bytes a file over 64 MB would
    before = _listing(agent)
    cache = tmp_path / "cache"
    env = {
        "PI_CODING_AGENT_DIR": str(agent),
        "XDG_CACHE_HOME": str(cache),
        "PYTHONPATH": os.pathsep.join([str(REPO / "server"), str(REPO / "protocol")]),
        "SESSIONTREE_PARALLEL_SCAN_MIN": str(16 << 20),
        "SESSIONTREE_FORK_CACHE_MIN": "1" if writer == "forked" else str(10 * n),
    }
    with Client.spawn(
        init_options={"agentDir": str(agent), "stateDir": str(tmp_path / "state"), "watch": False}, env=env
    ) as c:
        opened = c.request("session/open", {"path": str(path)}, timeout=120)
        page = c.request("session/view", {"session": opened["session"], "limit": 20})
        assert page["total"] > 0
        deadline = time.monotonic() + 60
        found: list[Path] = []
        while time.monotonic() < deadline and not (found and list(cache.rglob("*.ctx"))):
            found = [p for p in cache.rglob("*.idx")]
            time.sleep(0.05)
        assert len(found) == 1, "no index cache written after the open"
        assert len(list(cache.rglob("*.ctx"))) == 1, "no context kept beside it"
        # the session stays usable while and after it is written
        again = c.request("session/view", {"session": opened["session"], "limit": 20})
        assert again["rows"] == page["rows"]
        # the split scan's index is the one-core scan's: the same rows at the leaf
        tail = c.request(
            "session/view", {"session": opened["session"], "offset": page["selectedIndex"] - 5, "limit": 10}
        )
    assert _listing(agent) == before  # looking never writes
    # the daemon's managers scan on two cores (parallel_scan) from the bound its env sets,
    # which this file is over: a library open with the same two is split
    with pytest.MonkeyPatch.context() as m:
        m.setenv("SESSIONTREE_PARALLEL_SCAN_MIN", env["SESSIONTREE_PARALLEL_SCAN_MIN"])
        split = SessionManager.open(
            str(path), read_only=True, cache_dir=str(tmp_path / "o2"), parallel_scan=True
        )
        assert split.load_report.split_scan
        split.close()
    one = SessionManager.open(
        str(path), read_only=True, cache_dir=str(tmp_path / "other"), parallel_scan=False
    )
    try:
        mine = core_view.build_view(one, offset=page["selectedIndex"] - 5, limit=10)
        assert [r["id"] for r in tail["rows"]] == [r.id for r in mine.rows]
        assert (page["total"], page["selectedIndex"]) == (mine.total, mine.selected_index)
    finally:
        one.close()
    warm = SessionManager.open(str(path), read_only=True, cache_dir=str(found[0].parent))
    try:
        assert warm.load_report.from_cache
        # the kept context is the last entry's, as the file holds it
        st = path.stat()
        last = warm.index.last()
        assert last is not None
        kept = IndexCache(str(found[0].parent)).load_context(
            str(path), (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns), n, last.id
        )
        assert kept is not None
        assert [sk.id for sk in kept] == [sk.id for sk in context_skeletons(warm.index, last.id)]
        assert warm.get_leaf_id() == opened["leafId"]
        assert len(warm.get_entries()) == n
    finally:
        warm.close()
