"""A SessionManager beside other writers: ingesting, reloading, guarded writes (core/live.py).

Other writers are real: a second SessionManager on the same file (in this process, or in
a child process), raw byte appends, atomic renames, truncation, deletion.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import orjson
import pytest
from sessiontree.core.errors import ConflictError
from sessiontree.core.ids import FixedClock, IdSource
from sessiontree.core.live import ChangeKind
from sessiontree.core.session import SessionManager


def user(text: str) -> dict:
    return {"role": "user", "content": text, "timestamp": 1}


def assistant(text: str) -> dict:
    return {
        "role": "assistant",
        "content": [{"type": "text", "text": text}],
        "stopReason": "stop",
        "timestamp": 2,
    }


def make_session(tmp_path: Path, seed: int = 1) -> SessionManager:
    m = SessionManager.create(
        str(tmp_path), str(tmp_path / "sessions"), ids=IdSource(seed=seed), clock=FixedClock(step_ms=1)
    )
    m.append_message(user("q1"))
    m.append_message(assistant("a1"))
    return m


def open_other(path: str, seed: int) -> SessionManager:
    return SessionManager.open(
        path, ids=IdSource(seed=seed), clock=FixedClock(start_ms=1_767_225_700_000, step_ms=1)
    )


def file_entries(path: str) -> list[dict]:
    return [orjson.loads(line) for line in Path(path).read_bytes().splitlines() if line.strip()]


def test_external_appends_are_ingested_and_leaf_follows(tmp_path: Path) -> None:
    a = make_session(tmp_path)
    path = a.get_session_file()
    assert path is not None
    b = open_other(path, seed=2)
    b1 = b.append_message(user("from b"))
    b2 = b.append_message(assistant("answer b"))
    b.close()
    old_leaf = a.get_leaf_id()
    res = a.sync_with_file()
    assert res.kind is ChangeKind.APPENDED
    assert res.appended == [b1, b2]
    assert res.old_leaf_id == old_leaf and res.leaf_id == b2
    assert a.get_leaf_id() == b2
    assert a.get_entry(b1)["message"]["content"] == "from b"  # type: ignore[index]
    assert [e["id"] for e in a.get_branch()][-2:] == [b1, b2]
    # Nothing new: nothing to do.
    again = a.sync_with_file()
    assert again.kind is ChangeKind.UNCHANGED and again.appended == []


def test_library_writer_in_another_process(tmp_path: Path) -> None:
    a = make_session(tmp_path)
    path = a.get_session_file()
    script = textwrap.dedent(
        """
        import sys
        from sessiontree.core.session import SessionManager
        m = SessionManager.open(sys.argv[1])
        ids = [m.append_message({"role": "user", "content": f"child {i}", "timestamp": 3}) for i in range(5)]
        m.close()
        print(" ".join(ids))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script, str(path)], check=True, capture_output=True, text=True
    )
    child_ids = out.stdout.split()
    res = a.sync_with_file()
    assert res.appended == child_ids
    assert a.get_leaf_id() == child_ids[-1]
    assert a.get_entry(child_ids[0])["parentId"] == res.old_leaf_id  # type: ignore[index]


def test_torn_line_is_ingested_only_once_complete(tmp_path: Path) -> None:
    a = make_session(tmp_path)
    path = a.get_session_file()
    assert path is not None
    leaf = a.get_leaf_id()
    line = (
        orjson.dumps(
            {
                "type": "message",
                "id": "ext00001",
                "parentId": leaf,
                "timestamp": "2026-01-01T00:00:09.000Z",
                "message": user("torn"),
            }
        )
        + b"\n"
    )
    with open(path, "ab") as f:
        f.write(line[:25])
    res = a.sync_with_file()
    assert res.appended == [] and "ext00001" not in a.index
    with open(path, "ab") as f:
        f.write(line[25:])
    res = a.sync_with_file()
    assert res.appended == ["ext00001"]
    assert a.get_entry("ext00001")["message"]["content"] == "torn"  # type: ignore[index]


def test_own_append_after_external_growth_chains_to_external_entry(tmp_path: Path) -> None:
    a = make_session(tmp_path)
    path = a.get_session_file()
    assert path is not None
    b = open_other(path, seed=3)
    ext = b.append_message(user("external"))
    b.close()
    # No explicit sync: the append itself folds the external entry in first.
    mine = a.append_message(assistant("mine"))
    assert a.get_entry(mine)["parentId"] == ext  # type: ignore[index]
    assert [e.kind for e in a.live_events] == [ChangeKind.APPENDED]
    ids = [e["id"] for e in file_entries(path)[1:]]
    assert ids.count(ext) == 1 and ids.count(mine) == 1
    # Our own line read back later is not reported as external.
    b2 = open_other(path, seed=4)
    ext2 = b2.append_message(user("again"))
    b2.close()
    res = a.sync_with_file()
    assert res.appended == [ext2]


def test_interleaved_writers_lose_nothing(tmp_path: Path) -> None:
    a = make_session(tmp_path)
    path = a.get_session_file()
    assert path is not None
    b = open_other(path, seed=5)
    written = []
    for i in range(20):
        w = a if i % 3 else b
        written.append(w.append_message(user(f"m{i}")))
    a.sync_with_file()
    b.sync_with_file()
    ids = [e["id"] for e in file_entries(path)[1:]]
    for eid in written:
        assert ids.count(eid) == 1
    assert set(written) <= set(a.index.order()) and set(written) <= set(b.index.order())
    known = set(ids)
    for e in file_entries(path)[1:]:
        assert e["parentId"] is None or e["parentId"] in known


def test_atomic_replace_is_reloaded(tmp_path: Path) -> None:
    a = make_session(tmp_path)
    path = a.get_session_file()
    assert path is not None
    b = open_other(path, seed=6)
    b.append_message(user("before rename"))
    assert b.set_session_name("Renamed elsewhere", "user")
    b.close()
    res = a.sync_with_file()
    assert res.kind is ChangeKind.REPLACED and res.reason == "replaced"
    assert a.get_session_name() == "Renamed elsewhere"
    assert a.get_leaf_id() == file_entries(path)[-1]["id"]
    # Writing after the reload goes into the new file.
    mine = a.append_message(assistant("after"))
    assert file_entries(path)[-1]["id"] == mine


def test_append_after_replace_goes_to_new_file(tmp_path: Path) -> None:
    a = make_session(tmp_path)
    path = a.get_session_file()
    assert path is not None
    b = open_other(path, seed=7)
    assert b.set_session_name("x", "user")
    b.close()
    mine = a.append_message(user("no sync before this"))
    assert a.live_events and a.live_events[-1].kind is ChangeKind.REPLACED
    assert file_entries(path)[-1]["id"] == mine
    assert file_entries(path)[0].get("title") == "x"


def test_truncated_and_in_place_rewrite(tmp_path: Path) -> None:
    a = make_session(tmp_path)
    path = a.get_session_file()
    assert path is not None
    data = Path(path).read_bytes()
    lines = data.splitlines(keepends=True)
    os.truncate(path, len(lines[0]) + len(lines[1]))
    res = a.sync_with_file()
    assert res.kind is ChangeKind.TRUNCATED
    assert len(a.index) == 1
    # In place, same inode, the known bytes changed.
    with open(path, "r+b") as f:
        f.write(lines[0].replace(b'"cwd"', b'"title":"t","cwd"') + lines[1])
    res = a.sync_with_file()
    assert res.kind is ChangeKind.REWRITTEN
    assert a.get_header()["title"] == "t"  # type: ignore[index]


def test_emptied_file_is_not_overwritten(tmp_path: Path) -> None:
    a = make_session(tmp_path)
    path = a.get_session_file()
    assert path is not None
    os.truncate(path, 0)
    res = a.sync_with_file()
    assert res.kind is ChangeKind.UNCHANGED
    assert Path(path).read_bytes() == b""


def test_deleted_file_detaches_and_refuses_writes(tmp_path: Path) -> None:
    a = make_session(tmp_path)
    path = a.get_session_file()
    assert path is not None
    n = len(a.index)
    os.unlink(path)
    res = a.sync_with_file()
    assert res.kind is ChangeKind.DELETED and res.reason == "deleted"
    assert len(a.index) == n  # what the session held is kept
    with pytest.raises(ConflictError):
        a.append_message(user("nowhere to go"))
    assert not os.path.exists(path)
    # A file coming back at the path is loaded.
    b = make_session(tmp_path / "other", seed=9)
    other = b.get_session_file()
    assert other is not None
    os.link(other, path)
    res = a.sync_with_file()
    assert res.kind is ChangeKind.REPLACED
    assert a.get_session_id() == b.get_session_id()


def test_rename_rewrite_keeps_external_appends(tmp_path: Path) -> None:
    a = make_session(tmp_path)
    path = a.get_session_file()
    assert path is not None
    b = open_other(path, seed=10)
    ext = b.append_message(user("external before rename"))
    b.close()
    assert a.set_session_name("mine", "user")
    ids = [e["id"] for e in file_entries(path)[1:]]
    assert ext in ids
    assert file_entries(path)[0]["title"] == "mine"


def test_rewrite_refused_when_file_was_replaced(tmp_path: Path) -> None:
    a = make_session(tmp_path)
    path = a.get_session_file()
    assert path is not None
    b = open_other(path, seed=11)
    b.set_session_name("theirs", "user")
    b.close()
    with pytest.raises(ConflictError):
        a.set_session_name("mine", "user")
    assert file_entries(path)[0]["title"] == "theirs"
    # Reloaded meanwhile: a retry works on the new state.
    assert a.set_session_name("mine", "user")
    assert file_entries(path)[0]["title"] == "mine"


def test_torn_tail_at_open_of_an_unclean_file_completes_later(tmp_path: Path) -> None:
    a = make_session(tmp_path)
    path = a.get_session_file()
    assert path is not None
    a.close()
    leaf = file_entries(path)[-1]["id"]
    line = (
        orjson.dumps(
            {
                "type": "message",
                "id": "late0001",
                "parentId": leaf,
                "timestamp": "2026-01-01T00:00:09.000Z",
                "message": user("late"),
            }
        )
        + b"\n"
    )
    with open(path, "ab") as f:
        f.write(b"garbage line\n" + line[:30])  # not clean (lenient path) and torn at the end
    b = open_other(path, seed=12)
    assert "late0001" not in b.index
    with open(path, "ab") as f:
        f.write(line[30:])
    res = b.sync_with_file()
    assert res.appended == ["late0001"]
    assert b.get_entry("late0001")["message"]["content"] == "late"  # type: ignore[index]


def test_torn_tail_after_a_cached_index_completes_later(tmp_path: Path) -> None:
    a = make_session(tmp_path)
    path = a.get_session_file()
    assert path is not None
    a.close()
    cache = str(tmp_path / "cache")
    SessionManager.open(path, cache_dir=cache, cache_min_bytes=1)  # writes the sidecar index
    leaf = file_entries(path)[-1]["id"]
    done = (
        orjson.dumps(
            {
                "type": "message",
                "id": "full0001",
                "parentId": leaf,
                "timestamp": "2026-01-01T00:00:08.000Z",
                "message": user("whole"),
            }
        )
        + b"\n"
    )
    torn = (
        orjson.dumps(
            {
                "type": "message",
                "id": "late0002",
                "parentId": "full0001",
                "timestamp": "2026-01-01T00:00:09.000Z",
                "message": user("late"),
            }
        )
        + b"\n"
    )
    with open(path, "ab") as f:
        f.write(done + torn[:30])
    b = SessionManager.open(path, cache_dir=cache, cache_min_bytes=1)
    assert b.load_report.from_cache
    assert "full0001" in b.index and "late0002" not in b.index
    with open(path, "ab") as f:
        f.write(torn[30:])
    assert b.sync_with_file().appended == ["late0002"]
