"""Big listed sessions indexed ahead of a click (lsp/features/preindex.py): over stdio, a
real daemon, a real cache directory, real forked copies.

The size from which a listed session is indexed ahead is lowered for these tests
(``SESSIONTREE_PREINDEX_MIN_BYTES``); the sessions are generated ones of a few MB."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

import msgspec
import pytest
from e2e_helpers import generate
from sessiontree.client import Client
from sessiontree.core.index.cache import IndexCache
from sessiontree.core.session.split_scan import fork_child
from sessiontree.lsp.features.preindex import Preindexer, clean_after
from sessiontree.lsp.setup import create_server

REPO = Path(__file__).resolve().parents[2]
PAGE = 500
MIN_BYTES = 2 << 20

pytestmark = pytest.mark.timeout(180)


def _daemon(tmp_path: Path, agent: Path, **options: Any) -> Client:
    env = {
        "PI_CODING_AGENT_DIR": str(agent),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "SESSIONTREE_PREINDEX_MIN_BYTES": str(MIN_BYTES),
        "PYTHONPATH": os.pathsep.join([str(REPO / "server"), str(REPO / "protocol")]),
    }
    init = {"agentDir": str(agent), "stateDir": str(tmp_path / "state"), "watch": False, **options}
    return Client.spawn(init_options=init, env=env)


def _pages(c: Client, handle: str) -> list[dict[str, Any]]:
    head = c.request("session/view", {"session": handle, "offset": 0, "limit": PAGE})
    sel = head["selectedIndex"]
    off = max(PAGE, min(sel - PAGE // 2, head["total"] - PAGE))
    return [head, c.request("session/view", {"session": handle, "offset": off, "limit": PAGE})]


def _files(root: Path) -> dict[str, tuple[int, int, bytes]]:
    """Every file under `root`: its size, mtime and bytes."""
    return {
        str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns, p.read_bytes())
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _kept(cache: Path) -> list[Path]:
    return sorted(cache.rglob("*.view")) if cache.exists() else []


def _sessions(tmp_path: Path) -> tuple[Path, Path, Path, Path]:
    """The agent dir, and in its project dir: an older big session, the newest big one, and a
    small one (newest of all), by mtime."""
    agent = tmp_path / "agent"
    d = agent / "sessions" / "--p--"
    d.mkdir(parents=True)
    older = generate(d / "2026-01-01T00-00-00-000Z_older.jsonl", 6000, "--seed", "3")
    newest = generate(d / "2026-01-02T00-00-00-000Z_newest.jsonl", 6000, "--seed", "4")
    small = generate(d / "2026-01-03T00-00-00-000Z_small.jsonl", 200, "--seed", "5")
    assert older.stat().st_size >= MIN_BYTES and small.stat().st_size < MIN_BYTES
    for age, p in ((300, older), (200, newest), (100, small)):
        t = time.time() - age
        os.utime(p, (t, t))
    return agent, older, newest, small


def test_the_newest_big_listed_session_is_indexed_ahead_and_a_click_reads_it(tmp_path: Path) -> None:
    agent, older, newest, _small = _sessions(tmp_path)
    cache = tmp_path / "cache"
    # what a click shows without any of it
    with _daemon(tmp_path / "cold", agent, preindex=0) as c:
        want = _pages(c, c.request("session/open", {"path": str(newest)})["session"])
    before = _files(agent)
    with _daemon(tmp_path, agent, preindex=1) as c:
        listed = c.request("session/list", {"cwd": "/p"})["sessions"]
        assert [s["path"] for s in listed][:2] == [str(newest.parent / n.name) for n in (_small, newest)]
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and not _kept(cache):
            time.sleep(0.05)
        kept = _kept(cache)
        assert len(kept) == 1, "the newest big session was not indexed ahead"
        stem = kept[0].with_suffix("")
        assert {p.name for p in cache.rglob("*") if p.suffix in (".idx", ".ctx", ".view")} == {
            stem.name + s for s in (".idx", ".ctx", ".view")
        }, "one session indexed (preindex 1): the newest big one, not the small or the older"
        # the rows kept for it are the ones a click shows: mark them to see them used
        fields = msgspec.msgpack.decode(kept[0].read_bytes())
        for window in fields[-1]:
            for row in window[1]:
                row[9] = "KEPT " + row[9]
        kept[0].write_bytes(msgspec.msgpack.encode(fields))
        # listed again: nothing is indexed again
        mtimes = {p: p.stat().st_mtime_ns for p in cache.rglob("*") if p.is_file()}
        c.request("session/list", {"cwd": "/p"})
        time.sleep(2.5)
        assert {p: p.stat().st_mtime_ns for p in cache.rglob("*") if p.is_file()} == mtimes
        shown = _pages(c, c.request("session/open", {"path": str(newest)})["session"])
    assert all(r["text"].startswith("KEPT ") for p in shown for r in p["rows"]), (
        "the click read the kept rows"
    )
    for got, page in zip(shown, want, strict=True):
        assert [r["id"] for r in got["rows"]] == [r["id"] for r in page["rows"]]
        assert [r["text"].removeprefix("KEPT ") for r in got["rows"]] == [r["text"] for r in page["rows"]]
        assert (got["total"], got["selectedIndex"], got["leafId"]) == (
            page["total"],
            page["selectedIndex"],
            page["leafId"],
        )
    assert _files(agent) == before, "indexing ahead wrote nothing in the agent's directory"
    assert older.exists()


def test_preindex_0_indexes_nothing(tmp_path: Path) -> None:
    agent, *_ = _sessions(tmp_path)
    with _daemon(tmp_path, agent, preindex=0) as c:
        c.request("session/list", {"cwd": "/p"})
        time.sleep(3)
        assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").rglob("*.idx"))


def test_a_bad_preindex_option_is_refused_with_a_warning_and_keeps_the_default(tmp_path: Path) -> None:
    agent, _older, newest, _small = _sessions(tmp_path)
    with _daemon(tmp_path, agent, preindex="many") as c:
        c.request("session/list", {"cwd": "/p"})
        warnings = [p for m, p in c.notifications if m == "window/showMessage"]
        assert any("preindex" in str(w) for w in warnings), warnings
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and not _kept(tmp_path / "cache"):
            time.sleep(0.05)
        assert _kept(tmp_path / "cache"), "the default (3) indexed the big sessions ahead"
    assert newest.exists()


def test_an_open_stops_the_copy_at_work_and_takes_its_session_again_later() -> None:
    """A real forked copy standing for one at work: an open of another session kills it and
    puts its session first in the queue; an open of its own session leaves it out."""
    ls = create_server()
    p = ls.preindex
    assert isinstance(p, Preindexer)
    for opened, queue_after in (("/s/b", ["/s/a", "/s/c"]), ("/s/a", ["/s/b", "/s/c"])):
        pid = fork_child(lambda: time.sleep(60) is None)
        assert pid is not None
        p.child = (pid, "/s/a")
        p.queue = ["/s/b", "/s/c"]
        p.stop_for_open(opened)
        _, status = os.waitpid(pid, 0)
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
        assert p.queue == [q for q in queue_after if q != opened]
        p.child = None


def test_what_a_stopped_copy_half_wrote_is_removed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A copy killed while it writes leaves `<cache file>.<its pid>.tmp`: removed after it,
    and nothing of another process."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    cache_dir = Path(IndexCache().dir)
    cache_dir.mkdir(parents=True)

    def write_then_wait() -> bool:
        (cache_dir / f"abc.idx.{os.getpid()}.tmp").write_bytes(b"half")
        time.sleep(60)
        return True

    pid = fork_child(write_then_wait)
    assert pid is not None
    other = cache_dir / "abc.idx.1.tmp"
    other.write_bytes(b"another process's")
    kept = cache_dir / "abc.idx"
    kept.write_bytes(b"a cache")
    mine = cache_dir / f"abc.idx.{pid}.tmp"
    deadline = time.monotonic() + 20
    while not mine.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert mine.exists()
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    clean_after(pid)
    assert not mine.exists()
    assert other.read_bytes() == b"another process's" and kept.read_bytes() == b"a cache"
