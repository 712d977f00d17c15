"""Big files are indexed chunk by chunk: the same index, usage, file state and report as whole."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import msgspec
import orjson
import pytest
from sessiontree.core.session import SessionManager
from sessiontree.core.session import loading as mm
from sessiontree.core.store import FileSessionStorage


def write_session(path: Path, n: int, tail: bytes = b"") -> None:
    lines = [
        {
            "type": "session",
            "version": 3,
            "id": "0123456789abcdef",
            "timestamp": "2026-01-01T00:00:00.000Z",
            "cwd": "/p",
        }
    ]
    parent = None
    for i in range(n):
        eid = f"{i:08x}"
        if i % 3 == 2:
            msg = {
                "role": "assistant",
                "content": [{"type": "text", "text": ("  " if i % 9 == 2 else "answer ") + "y" * (i % 50)}],
                "stopReason": "stop",
                "usage": {"input": i, "output": 1, "cacheRead": 0, "cacheWrite": 0, "cost": {"total": 0.5}},
                "timestamp": i,
            }
        else:
            msg = {"role": "user", "content": "q" * (i % 200), "timestamp": i}
        lines.append(
            {
                "type": "message",
                "id": eid,
                "parentId": parent,
                "timestamp": "2026-01-01T00:00:01.000Z",
                "message": msg,
            }
        )
        parent = eid
        if i % 97 == 5:
            lines.append(
                {
                    "type": "label",
                    "id": f"l{i:07x}",
                    "parentId": parent,
                    "timestamp": "2026-01-01T00:00:02.000Z",
                    "targetId": eid,
                    "label": f"L{i}",
                }
            )
    path.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in lines) + tail)


def both(
    path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int, whole_read_allowed: bool = False
) -> tuple[SessionManager, SessionManager]:
    monkeypatch.setenv("SESSIONTREE_NO_INDEX_CACHE", "1")
    monkeypatch.setattr(mm, "CHUNKED_LOAD_MIN", 0)
    monkeypatch.setattr(mm, "LOAD_CHUNK", chunk)
    if not whole_read_allowed:

        def no_whole_read(self: object, p: str) -> bytes:
            raise AssertionError("the file was read whole")

        monkeypatch.setattr(FileSessionStorage, "read_bytes", no_whole_read)
    chunked = SessionManager.open(str(path), read_only=True)
    monkeypatch.undo()
    monkeypatch.setenv("SESSIONTREE_NO_INDEX_CACHE", "1")
    monkeypatch.setattr(mm, "CHUNKED_LOAD_MIN", 1 << 62)
    whole = SessionManager.open(str(path), read_only=True)
    return chunked, whole


@pytest.mark.parametrize("chunk", [300, 4096, 1 << 20])
@pytest.mark.parametrize(
    "tail",
    [
        b"",
        b'{"type":"message","id":"torn0001","parentId":null,"mess',
        b'{"type":"custom","id":"nonl0001","parentId":null,"timestamp":"x"}',
    ],
    ids=["clean", "torn", "no-newline"],
)
def test_chunked_equals_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int, tail: bytes
) -> None:
    path = tmp_path / "s.jsonl"
    write_session(path, 600, tail)
    chunked, whole = both(path, monkeypatch, chunk)
    assert chunked.load_report.fast_path and whole.load_report.fast_path
    assert chunked.index.skeletons() == whole.index.skeletons()
    assert len(chunked.index) == 600 + len([i for i in range(600) if i % 97 == 5]) + (
        tail.startswith(b'{"type":"custom"')
    )
    assert chunked.index.usage == whole.index.usage
    assert chunked.index.labels == whole.index.labels
    assert chunked.file_state == whole.file_state
    assert chunked.load_report.to_dict() == whole.load_report.to_dict()
    assert chunked.load_report.torn_tail == (tail.startswith(b'{"type":"message"'))
    # content is read back from the right byte ranges
    for eid in ("00000000", "00000100", "00000257", f"{599:08x}"):
        assert chunked.get_entry(eid) == whole.get_entry(eid)
    assert chunked.build_session_context().messages == whole.build_session_context().messages


def test_unclean_file_falls_back_to_the_lenient_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "s.jsonl"
    write_session(path, 300)
    data = path.read_bytes().split(b"\n")
    data.insert(150, b"this is not json")
    path.write_bytes(b"\n".join(data))
    chunked, whole = both(path, monkeypatch, 1000, whole_read_allowed=True)
    assert not chunked.load_report.fast_path
    assert chunked.load_report.to_dict() == whole.load_report.to_dict()
    assert [e["id"] for e in chunked.get_entries()] == [e["id"] for e in whole.get_entries()]
    assert len(chunked.load_report.dropped) == 1


def test_chunked_load_writes_the_index_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "s.jsonl"
    write_session(path, 400)
    monkeypatch.setattr(mm, "CHUNKED_LOAD_MIN", 0)
    monkeypatch.setattr(mm, "LOAD_CHUNK", 2048)
    cache = tmp_path / "cache"
    a = SessionManager.open(str(path), read_only=True, cache_dir=str(cache), cache_min_bytes=0)
    assert a.load_report.fast_path and not a.load_report.from_cache
    assert os.listdir(cache)
    b = SessionManager.open(str(path), read_only=True, cache_dir=str(cache), cache_min_bytes=0)
    assert b.load_report.from_cache
    assert b.index.skeletons() == a.index.skeletons()


@pytest.fixture
def chunked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, dict[str, Any]]:
    """A session file that loads through the chunked path, its cache dir and the open's options."""
    path = tmp_path / "s.jsonl"
    write_session(path, 400)
    monkeypatch.setattr(mm, "CHUNKED_LOAD_MIN", 0)
    monkeypatch.setattr(mm, "LOAD_CHUNK", 2048)
    cache = tmp_path / "cache"
    return path, cache, {"read_only": True, "cache_dir": str(cache), "cache_min_bytes": 0}


def test_a_deferred_index_cache_is_written_when_asked(
    tmp_path: Path, chunked: tuple[Path, Path, dict[str, Any]]
) -> None:
    # The daemon's opens answer before the cache is written (defer_index_cache); its
    # idle-time warm-up writes it (`save_index_cache`), valid for the file as it is then.
    path, cache, kw = chunked
    a = SessionManager.open(str(path), defer_index_cache=True, **kw)
    assert a.load_report.fast_path and not os.path.exists(cache)
    assert a.save_index_cache()
    assert not a.save_index_cache()  # once
    b = SessionManager.open(str(path), **kw)
    assert b.load_report.from_cache and b.index.skeletons() == a.index.skeletons()

    # another writer appended before the idle time came: the cache covers what was read
    # then (the next open indexes the rest), never skeletons past the file's bytes
    c_path = tmp_path / "t.jsonl"
    write_session(c_path, 400)
    c = SessionManager.open(str(c_path), defer_index_cache=True, **kw)
    with open(c_path, "ab") as f:
        f.write(
            orjson.dumps(
                {
                    "type": "message",
                    "id": "late0001",
                    "parentId": c.get_leaf_id(),
                    "timestamp": "2026-01-02T00:00:00.000Z",
                    "message": {"role": "user", "content": "late", "timestamp": 1},
                }
            )
            + b"\n"
        )
    assert not c.save_index_cache()  # the file is ahead of what was read: nothing written
    c.ingest_appended_bytes()
    d = SessionManager.open(str(c_path), **kw)
    assert d.get_leaf_id() == "late0001"
    assert [sk.id for sk in d.index.skeletons()] == [sk.id for sk in c.index.skeletons()]


@pytest.mark.parametrize("background", [False, True], ids=["now", "forked"])
def test_a_session_this_process_wrote_to_is_cached_as_its_file_holds_it(
    tmp_path: Path, chunked: tuple[Path, Path, dict[str, Any]], background: bool
) -> None:
    # The daemon labels and appends through the manager (entries held in memory); the
    # cache written then holds those entries as the file has them, so the next open reads
    # the session from the cache and finds what a scan of the file finds.
    path, cache, kw = chunked
    kw = {**kw, "read_only": False}
    a = SessionManager.open(str(path), defer_index_cache=True, **kw)
    target = a.index.skeletons()[5].id
    a.append_label_change(target, "kept")
    a.append_message({"role": "user", "content": "written by the daemon", "timestamp": 9})
    a.flush()
    assert a.index.held_entries()
    assert a.save_index_cache(background=background)
    if background:
        _wait_for_cache(cache)
    b = SessionManager.open(str(path), **kw)
    assert b.load_report.from_cache
    assert not b.index.held_entries() and all(sk.offset >= 0 for sk in b.index.skeletons())
    fresh = SessionManager.open(str(path), **{**kw, "cache_dir": str(tmp_path / "other")})
    assert not fresh.load_report.from_cache
    assert b.index.skeletons() == fresh.index.skeletons()
    assert b.get_entries() == fresh.get_entries() == a.get_entries()
    assert b.get_label(target) == "kept" and b.get_leaf_id() == a.get_leaf_id()


def test_a_deferred_index_cache_written_in_the_background(chunked: tuple[Path, Path, dict[str, Any]]) -> None:
    # `save_index_cache(background=True)`: a forked copy of the process encodes and writes it,
    # from the index as it was at the call, while the caller goes on
    path, cache, kw = chunked
    a = SessionManager.open(str(path), defer_index_cache=True, **kw)
    assert a.save_index_cache(background=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not (
        cache.exists() and any(n.endswith(".idx") for n in os.listdir(cache))
    ):
        time.sleep(0.02)
    b = SessionManager.open(str(path), **kw)
    assert b.load_report.from_cache and b.index.skeletons() == a.index.skeletons()


def _wait_for_cache(cache: Path) -> Path:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        found = list(cache.glob("*.idx")) if cache.exists() else []
        if found:
            return found[0]
        time.sleep(0.02)
    raise AssertionError("no index cache written")


def test_the_last_entrys_context_is_kept_and_answers_without_the_skeletons(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The idle-time save stores the last entry's context skeletons: a warm open's first
    # context (an agent resuming the session) reads its entries by offset, no decode.
    path = tmp_path / "s.jsonl"
    repo = Path(__file__).resolve().parents[2]
    subprocess.run(
        [sys.executable, str(repo / "benchmarks" / "gen_corpus.py"), str(path), "6000"],
        check=True,
        capture_output=True,
    )
    monkeypatch.setattr(mm, "CHUNKED_LOAD_MIN", 0)
    cache = tmp_path / "cache"
    kw = {"read_only": True, "cache_dir": str(cache), "cache_min_bytes": 0}
    a = SessionManager.open(str(path), defer_index_cache=True, **kw)
    want = a.build_session_context()
    assert any(e.get("type") == "compaction" for e in a.materialize_context_path(a.get_leaf_id()))
    assert a.save_index_cache(background=True)
    idx_file = _wait_for_cache(cache)
    b = SessionManager.open(str(path), **kw)
    assert b.load_report.from_cache
    assert b.build_session_context() == want
    assert b.build_session_context(a.index.skeletons()[10].id) == a.build_session_context(
        a.index.skeletons()[10].id
    )  # another leaf: walked over the decoded skeletons
    # the kept skeletons are the ones read: one left out shows
    ctx_file = idx_file.with_suffix(".ctx")
    fields = msgspec.msgpack.decode(ctx_file.read_bytes())
    stored = fields[-1]
    assert stored and stored[-1][0] == a.get_leaf_id()
    drop = max(i for i, sk in enumerate(stored[:-1]) if sk[2] == "message")  # (id, parent, type, ...)
    fields[-1] = stored[:drop] + stored[drop + 1 :]
    ctx_file.write_bytes(msgspec.msgpack.encode(fields))
    c = SessionManager.open(str(path), **kw)
    assert c.load_report.from_cache
    assert len(c.build_session_context().messages) == len(want.messages) - 1
    # kept for another last entry (the file grew since): not used
    fields[-1] = stored[:-1]
    fields[-2] = stored[-2][0]
    ctx_file.write_bytes(msgspec.msgpack.encode(fields))
    d = SessionManager.open(str(path), **kw)
    assert d.build_session_context() == want
    # an entry appended since: the kept ones are of the file before; once kept again
    # (`keep_last_context`, the daemon does it when it closes the session), they answer
    leaf = d.get_leaf_id()
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
    e = SessionManager.open(str(path), **kw)
    grown = e.build_session_context()
    assert grown.messages[-1]["content"] == "late" and len(grown.messages) == len(want.messages) + 1
    assert e.keep_last_context()
    f2 = SessionManager.open(str(path), **kw)
    assert f2.index.deferred_context("late0001") is not None
    assert f2.build_session_context() == grown
    # entries this process wrote are held in memory: kept as the file holds them
    g = SessionManager.open(str(path), cache_dir=str(cache), cache_min_bytes=0)
    g.append_label_change(g.index.skeletons()[-5].id, "mine")
    mine = g.append_message({"role": "user", "content": "written here", "timestamp": 2})
    g.flush()
    assert g.keep_last_context()
    own = g.build_session_context()
    h = SessionManager.open(str(path), **kw)
    assert h.index.deferred_context(mine) is not None
    assert h.build_session_context() == own and own.messages[-1]["content"] == "written here"
