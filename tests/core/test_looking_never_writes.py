"""Looking never writes (DIVERGENCES 11) and ids of files without ids are stable (10).

The library's viewing mode (`viewing=True`, what the daemon uses) and read-only mode (the
command line) leave every byte, name and directory as they were; the first change a
client asks for writes the pending migration after a backup copy of the original bytes.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from sessiontree.core.format.backups import copy_path, is_copy_name
from sessiontree.core.format.migrations import migrate_session_entries
from sessiontree.core.paths import PathEnv
from sessiontree.core.session import SessionManager
from sessiontree.core.store import lock_file_path
from shared_data import real_v1_session


def snapshot(root: Path) -> list[tuple[str, str, str]]:
    """Every path under ``root`` with its kind and the sha256 of its bytes (files)."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames:
            out.append((os.path.relpath(os.path.join(dirpath, name), root), "dir", ""))
        for name in filenames:
            full = os.path.join(dirpath, name)
            digest = hashlib.sha256(Path(full).read_bytes()).hexdigest()
            out.append((os.path.relpath(full, root), "file", digest))
    return sorted(out)


V1 = [
    {"type": "session", "id": "v1-session", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/p"},
    {
        "type": "message",
        "timestamp": "2025-01-01T00:00:01.000Z",
        "message": {"role": "user", "content": "hi"},
    },
    {
        "type": "message",
        "timestamp": "2025-01-01T00:00:02.000Z",
        "message": {"role": "assistant", "content": [{"type": "text", "text": "hello"}]},
    },
    {"type": "compaction", "timestamp": "2025-01-01T00:00:03.000Z", "summary": "s", "firstKeptEntryIndex": 2},
]


def write_v1(path: Path) -> bytes:
    data = b"".join(orjson.dumps(v) + b"\n" for v in V1)
    path.write_bytes(data)
    return data


@pytest.fixture
def agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    d = tmp_path / "agent" / "sessions" / "-p"
    d.mkdir(parents=True)
    return d


def kw(tmp_path: Path) -> dict[str, Any]:
    return {"cache_dir": str(tmp_path / "cache" / "index"), "agent_dir": str(tmp_path / "agent")}


def test_viewing_a_v1_file_writes_nothing(tmp_path: Path, agent: Path) -> None:
    f = agent / "s.jsonl"
    write_v1(f)
    before = snapshot(tmp_path / "agent")
    m = SessionManager.open(str(f), viewing=True, breadcrumbs=False, **kw(tmp_path))
    assert m.load_report.migrated_from == 1
    m.get_tree()
    m.build_session_context()
    m.close()
    assert snapshot(tmp_path / "agent") == before


def test_the_first_change_writes_the_migration_after_a_backup(tmp_path: Path, agent: Path) -> None:
    f = agent / "s.jsonl"
    original = write_v1(f)
    viewed = SessionManager.open(str(f), read_only=True, **kw(tmp_path))
    shown_ids = [e["id"] for e in viewed.get_entries()]
    m = SessionManager.open(str(f), viewing=True, breadcrumbs=False, **kw(tmp_path))
    assert [e["id"] for e in m.get_entries()] == shown_ids
    label = m.append_label_change(shown_ids[0], "start")
    m.close()
    backup = m.load_report.backup_copy
    assert backup is not None and Path(backup).read_bytes() == original
    assert os.path.dirname(backup) == str(agent) and is_copy_name(os.path.basename(backup))
    assert not backup.endswith(".jsonl") and ".backup-v1-" in backup
    lines = [orjson.loads(x) for x in f.read_bytes().splitlines()]
    assert lines[0]["version"] == 3
    # The migration wrote exactly the ids the read-only view showed (DIVERGENCES 10).
    assert [e["id"] for e in lines[1:]] == [*shown_ids, label]
    # Only the session and its backup: no lock file, no temp file in the agent's folder.
    assert sorted(p.name for p in agent.iterdir()) == sorted(["s.jsonl", os.path.basename(backup)])
    # A later change to the now current file needs no second backup.
    m2 = SessionManager.open(str(f), viewing=True, breadcrumbs=False, **kw(tmp_path))
    m2.append_label_change(shown_ids[0], "again")
    m2.close()
    assert len(list(agent.iterdir())) == 2


def test_v1_ids_are_the_same_in_every_process(tmp_path: Path) -> None:
    real = tmp_path / "real.jsonl"
    shutil.copyfile(real_v1_session(), real)
    code = (
        "import sys, json\nfrom sessiontree.core.session import SessionManager\n"
        "m = SessionManager.open(sys.argv[1], read_only=True)\n"
        "print(json.dumps([e['id'] for e in m.get_entries()]))\n"
    )
    runs = [
        subprocess.run(
            [sys.executable, "-c", code, str(real)], capture_output=True, text=True, check=True
        ).stdout
        for _ in range(2)
    ]
    ids = orjson.loads(runs[0])
    assert runs[0] == runs[1]
    assert len(set(ids)) == len(ids) and all(len(i) == 8 for i in ids)
    # The free migration function gives the same ids as the manager's loader.
    values = [orjson.loads(x) for x in real.read_bytes().splitlines() if x.strip()]
    migrate_session_entries(values)
    assert [v["id"] for v in values[1:]] == ids


def test_ids_of_earlier_entries_stay_when_lines_are_appended(tmp_path: Path) -> None:
    f = tmp_path / "s.jsonl"
    write_v1(f)
    first = [e["id"] for e in SessionManager.open(str(f), read_only=True).get_entries()]
    with open(f, "ab") as out:
        out.write(orjson.dumps(V1[1]) + b"\n")
    second = [e["id"] for e in SessionManager.open(str(f), read_only=True).get_entries()]
    assert second[: len(first)] == first and len(second) == len(first) + 1


def test_no_lock_file_is_left_beside_a_session(tmp_path: Path, agent: Path) -> None:
    m = SessionManager.create("/p", str(agent), **kw(tmp_path))
    m.append_message({"role": "user", "content": "hi", "timestamp": 1})
    m.append_message({"role": "assistant", "content": [{"type": "text", "text": "yo"}], "timestamp": 2})
    m.append_label_change(m.get_leaf_id() or "", "x")
    m.close()
    path = m.get_session_file()
    assert path is not None
    assert [p.name for p in agent.iterdir()] == [os.path.basename(path)]
    assert Path(lock_file_path(path)).is_relative_to(tmp_path / "cache")


def test_listing_and_continuing_find_every_encoding_and_move_nothing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    proj = home / "proj"
    proj.mkdir(parents=True)
    penv = PathEnv(env={}, home=str(home), tmp="/nonexistent-tmp")
    root = tmp_path / "agent" / "sessions"
    pimono = root / f"--{str(proj).lstrip('/').replace('/', '-')}--"
    current = root / "-proj"
    pimono.mkdir(parents=True)
    current.mkdir()
    a = pimono / "2025-01-01T00-00-00-000Z_a.jsonl"
    b = current / "2025-01-02T00-00-00-000Z_b.jsonl"
    write_v1(a)
    write_v1(b)
    os.utime(a, (2_000_000_000, 2_000_000_000))  # the pi-mono one is the newest
    before = snapshot(tmp_path / "agent")
    found = SessionManager.list(str(proj), agent_dir=str(tmp_path / "agent"), penv=penv, use_cache=False)
    assert [i.path for i in found] == [str(a), str(b)]
    m = SessionManager.continue_recent(
        str(proj), agent_dir=str(tmp_path / "agent"), penv=penv, viewing=True, breadcrumbs=False
    )
    assert m.get_session_file() == str(a)
    m.close()
    assert snapshot(tmp_path / "agent") == before


def test_copy_names_never_look_like_sessions(tmp_path: Path) -> None:
    f = tmp_path / "2026-01-01T00-00-00-000Z_abc.jsonl"
    first = copy_path(str(f), "backup-v1", "2026-01-01T00:00:00.000Z")
    assert os.path.basename(first) == ".2026-01-01T00-00-00-000Z_abc.jsonl.backup-v1-2026-01-01T00-00-00-000Z"
    Path(first).write_bytes(b"x")
    second = copy_path(str(f), "backup-v1", "2026-01-01T00:00:00.000Z")
    assert second == first + ".2"
    for name in (first, second, copy_path(str(f), "quarantine", "2026-01-01T00:00:00.000Z")):
        assert is_copy_name(os.path.basename(name)) and not name.endswith(".jsonl")


def test_a_current_file_without_ids_gets_stable_ids_and_a_chain(tmp_path: Path) -> None:
    f = tmp_path / "noids.jsonl"
    rows = [{**V1[0], "version": 3}, V1[1], V1[2], {**V1[1], "id": "given", "parentId": None}]
    data = b"".join(orjson.dumps(r) + b"\n" for r in rows)
    f.write_bytes(data)
    first = SessionManager.open(str(f), read_only=True)
    second = SessionManager.open(str(f), read_only=True)
    ids = [e["id"] for e in first.get_entries()]
    assert ids == [e["id"] for e in second.get_entries()] and ids[2] == "given"
    assert [e["id"] for e in first.get_branch(ids[1])] == ids[:2]  # chained like v1 entries
    assert first.get_leaf_id() == "given"
    assert f.read_bytes() == data


@pytest.mark.parametrize("argv", [["ls"], ["ls", "--all"], ["doctor", "--all"], ["tree"]])
def test_a_missing_agent_dir_is_named_and_nothing_is_created(tmp_path: Path, argv: list[str]) -> None:
    missing = tmp_path / "no" / "agent"
    env = {**os.environ, "PI_CODING_AGENT_DIR": str(missing)}
    res = subprocess.run(
        [sys.executable, "-m", "sessiontree", *argv], capture_output=True, text=True, env=env, cwd=tmp_path
    )
    assert str(missing) in res.stderr and "PI_CODING_AGENT_DIR" in res.stderr, res.stderr
    assert "Traceback" not in res.stderr
    # `tree` without a session still draws the bundled demo (what `make run` shows first).
    assert res.returncode == (0 if argv == ["tree"] else 2)
    assert not (tmp_path / "no").exists()


def test_a_loop_closed_by_an_appended_entry_is_cut_as_a_fresh_load_cuts_it(tmp_path: Path) -> None:
    # e1 names e2 before e2 exists; e2 then names e1. The tree built entry by entry as the
    # lines arrive must be the one a fresh load builds (DIVERGENCES 3: the later entry, e2,
    # is the root); found by the tool-call property test.
    def msg(eid: str, parent: str | None) -> bytes:
        body = {"role": "user", "content": eid, "timestamp": 1}
        return orjson.dumps(
            {
                "type": "message",
                "id": eid,
                "parentId": parent,
                "timestamp": V1[1]["timestamp"],
                "message": body,
            }
        )

    f = tmp_path / "s.jsonl"
    f.write_bytes(orjson.dumps({**V1[0], "version": 3}) + b"\n" + msg("e0", None) + b"\n")
    live = SessionManager.open(str(f), read_only=True)
    with open(f, "ab") as out:
        out.write(msg("e1", "e2") + b"\n")
    live.sync_with_file()
    with open(f, "ab") as out:
        out.write(msg("e2", "e1") + b"\n")
    live.sync_with_file()
    fresh = SessionManager.open(str(f), read_only=True)
    assert live.index.roots() == fresh.index.roots() == ["e0", "e2"]
    assert live.index.path_to_root("e1") == fresh.index.path_to_root("e1") == ["e2", "e1"]
