"""SessionManager on real files: DIVERGENCES 1-4, v1/v2/v3 files, continue_recent."""

from __future__ import annotations

import itertools
import os
import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest
from sessiontree.core.errors import InvalidSessionFileError
from sessiontree.core.ids import FixedClock, IdSource
from sessiontree.core.paths import PathEnv
from sessiontree.core.session import SessionManager
from sessiontree.core.store import FileSessionStorage
from sessiontree.core.store.blobs import BlobStore
from shared_data import real_v1_session


def kw(tmp_path: Path, seed: int = 1) -> dict[str, Any]:
    clock = FixedClock(step_ms=1000)
    return {
        "clock": clock,
        "ids": IdSource(seed=seed, clock=clock),
        "blobs": BlobStore(str(tmp_path / "blobs")),
        "cache_dir": str(tmp_path / "cache"),
        "storage": FileSessionStorage(),
        "penv": PathEnv(env={}, home=str(tmp_path / "home"), tmp="/nonexistent-tmp"),
        "agent_dir": str(tmp_path / "agent"),
    }


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text, "timestamp": 1}


def assistant(text: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [{"type": "text", "text": text}],
        "provider": "p",
        "model": "m",
        "stopReason": "stop",
        "timestamp": 2,
    }


HEADER = b'{"type":"session","version":3,"id":"sess1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}\n'


def entry(eid: str, parent: str | None, text: str = "x", role: str = "user") -> bytes:
    msg = user(text) if role == "user" else assistant(text)
    return (
        orjson.dumps(
            {
                "type": "message",
                "id": eid,
                "parentId": parent,
                "timestamp": "2025-01-01T00:00:01.000Z",
                "message": msg,
            }
        )
        + b"\n"
    )


def file_lines(path: str | Path) -> list[Any]:
    return [orjson.loads(x) for x in Path(path).read_bytes().splitlines() if x.strip()]


# ---------------------------------------------------------------- DIVERGENCE 1


@pytest.mark.parametrize(
    "content",
    [
        b"garbage\n",
        b"not json at all",
        b'{"type":"message","id":"a","parentId":null}\n',
        b'{"type":"session"}\n',
        b"\n\n",
    ],
)
def test_unreadable_file_is_refused_and_untouched(tmp_path: Path, content: bytes) -> None:
    p = tmp_path / "bad.jsonl"
    p.write_bytes(content)
    with pytest.raises(InvalidSessionFileError) as ei:
        SessionManager.open(str(p), **kw(tmp_path))
    assert ei.value.path == str(p)
    assert ei.value.reason
    assert p.read_bytes() == content
    assert sorted(x.name for x in tmp_path.iterdir() if x.name != "blobs") == ["bad.jsonl"]


@pytest.mark.parametrize("make", ["missing", "empty"])
def test_missing_or_empty_path_starts_a_session_there(tmp_path: Path, make: str) -> None:
    p = tmp_path / "s" / "new.jsonl"
    p.parent.mkdir()
    if make == "empty":
        p.write_bytes(b"")
    m = SessionManager.open(str(p), **kw(tmp_path))
    assert m.get_session_file() == str(p)
    rows = file_lines(p)
    assert len(rows) == 1 and rows[0]["type"] == "session" and rows[0]["id"] == m.get_session_id()
    m.append_message(user("q"))  # ensuredOnDisk: persisted without an assistant
    assert len(file_lines(p)) == 2


# ---------------------------------------------------------------- DIVERGENCE 2


def test_dropped_lines_are_reported_and_appends_go_after_them(tmp_path: Path) -> None:
    p = tmp_path / "s.jsonl"
    original = HEADER + entry("a", None) + b"this is garbage\n" + entry("b", "a", "y", "assistant")
    p.write_bytes(original)
    inode = p.stat().st_ino
    m = SessionManager.open(str(p), **kw(tmp_path))
    rep = m.load_report
    assert rep.skipped_lines == 1 and not rep.torn_tail and rep.recovered
    assert rep.dropped[0].line == 3
    assert p.read_bytes() == original  # loading writes nothing
    assert [e["id"] for e in m.get_entries()] == ["a", "b"]
    new_id = m.append_message(user("next"))
    m.close()
    # An append, not a rewrite by rename: an agent keeping the file open keeps its file,
    # and the agent's bytes (the damage included) are left as they were.
    assert p.stat().st_ino == inode and rep.quarantined_copy is None
    data = p.read_bytes()
    assert data.startswith(original) and data.count(b"\n") == original.count(b"\n") + 1
    again = SessionManager.open(str(p), read_only=True)
    assert [e["id"] for e in again.get_entries()] == ["a", "b", new_id]


def test_torn_tail_is_never_appended_onto(tmp_path: Path) -> None:
    p = tmp_path / "s.jsonl"
    original = (
        HEADER + entry("a", None) + entry("b", "a", "y", "assistant") + b'{"type":"message","id":"c","par'
    )
    p.write_bytes(original)
    old = p.stat().st_mtime - 5  # left by a writer that crashed a while ago
    os.utime(p, (old, old))
    m = SessionManager.open(str(p), **kw(tmp_path))
    assert m.load_report.torn_tail and m.load_report.skipped_lines == 0
    assert m.load_report.fast_path  # a torn tail alone keeps the fast index
    assert m.get_leaf_id() == "b"
    new_id = m.append_message(user("after crash"))
    data = p.read_bytes()
    assert data.startswith(original) and data.endswith(b"\n")
    again = SessionManager.open(str(p), read_only=True)
    assert [e["id"] for e in again.get_entries()] == ["a", "b", new_id]


# ---------------------------------------------------------------- DIVERGENCE 3


def test_parent_loops_terminate_everywhere(tmp_path: Path) -> None:
    p = tmp_path / "s.jsonl"
    p.write_bytes(
        HEADER + entry("self", "self") + entry("x", "y") + entry("y", "x", "b", "assistant") + entry("z", "y")
    )
    m = SessionManager.open(str(p), **kw(tmp_path))
    assert [e["id"] for e in m.get_branch("self")] == ["self"]
    # x -> y -> x: y comes later in the file, so y closes the loop and is treated as a root
    assert [e["id"] for e in m.get_branch("z")] == ["y", "z"]
    assert [e["id"] for e in m.get_branch("x")] == ["y", "x"]
    roots = [n.entry["id"] for n in m.get_tree()]
    assert "self" in roots and "y" in roots  # y closes the x<->y loop (it comes later in the file)
    seen: list[str] = []
    stack = m.get_tree()
    while stack:
        n = stack.pop()
        seen.append(n.entry["id"])
        stack.extend(n.children)
    assert sorted(seen) == ["self", "x", "y", "z"]
    ctx = m.build_session_context()  # the leaf is z
    assert [msg["role"] for msg in ctx.messages] == ["assistant", "user"]
    for eid in ("self", "x", "y", "z"):
        path = m.index.path_to_root(eid)
        assert path[-1] == eid and len(path) == len(set(path))


# ---------------------------------------------------------------- versions (DIVERGENCE 4)


def test_v2_file_is_migrated_and_written_at_once(tmp_path: Path) -> None:
    p = tmp_path / "v2.jsonl"
    rows = [
        {"type": "session", "version": 2, "id": "s2", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/w"},
        {
            "type": "message",
            "id": "a",
            "parentId": None,
            "timestamp": "2025-01-01T00:00:01.000Z",
            "message": {
                "role": "hookMessage",
                "customType": "h",
                "content": "hi",
                "display": True,
                "timestamp": 1,
            },
        },
    ]
    p.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    m = SessionManager.open(str(p), **kw(tmp_path))
    assert m.load_report.migrated_from == 2
    out = file_lines(p)
    assert out[0]["version"] == 3 and out[1]["message"]["role"] == "custom"
    assert [x.name for x in tmp_path.iterdir() if x.name.endswith(".tmp")] == []


def test_v3_and_future_files_are_not_rewritten(tmp_path: Path) -> None:
    for version in (3, 5):
        p = tmp_path / f"v{version}.jsonl"
        data = HEADER.replace(b'"version":3', b'"version":%d' % version) + entry("a", None)
        p.write_bytes(data)
        m = SessionManager.open(str(p), **kw(tmp_path))
        assert m.load_report.migrated_from is None
        assert p.read_bytes() == data


def test_real_v1_session_opens_migrates_and_chains(tmp_path: Path) -> None:
    p = tmp_path / "real.jsonl"
    real_v1 = real_v1_session()
    shutil.copyfile(real_v1, p)
    raw = real_v1.read_bytes()
    n_values = sum(1 for line in raw.splitlines() if line.strip())
    m = SessionManager.open(str(p), **kw(tmp_path))
    assert m.load_report.migrated_from == 1
    assert m.get_cwd() == "/Users/badlogic/workspaces/pi-mono"
    entries = m.get_entries()
    assert len(entries) == n_values - 1
    # a linear chain in file order
    assert entries[0]["parentId"] is None
    for prev, cur in itertools.pairwise(entries):
        assert cur["parentId"] == prev["id"]
    assert len({e["id"] for e in entries}) == len(entries)
    out = file_lines(p)
    assert out[0]["version"] == 3
    assert [e["id"] for e in out[1:]] == [e["id"] for e in entries]
    assert "firstKeptEntryIndex" not in p.read_text()
    # reopening: nothing left to migrate, same ids, the chain is the branch
    m2 = SessionManager.open(str(p), **kw(tmp_path, 2))
    assert m2.load_report.migrated_from is None
    assert [e["id"] for e in m2.get_branch()] == [e["id"] for e in entries]
    assert m2.build_session_context().messages


def test_v1_with_compaction_index(tmp_path: Path) -> None:
    p = tmp_path / "v1.jsonl"
    rows = [
        {"type": "session", "id": "s", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/w"},
        {"type": "message", "timestamp": "2025-01-01T00:00:01.000Z", "message": user("u1")},
        {"type": "message", "timestamp": "2025-01-01T00:00:02.000Z", "message": assistant("a1")},
        {
            "type": "compaction",
            "timestamp": "2025-01-01T00:00:03.000Z",
            "summary": "s",
            "firstKeptEntryIndex": 2,
            "tokensBefore": 10,
        },
        {"type": "message", "timestamp": "2025-01-01T00:00:04.000Z", "message": user("u2")},
    ]
    p.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    m = SessionManager.open(str(p), **kw(tmp_path))
    es = m.get_entries()
    assert es[2]["firstKeptEntryId"] == es[1]["id"]
    ctx = m.build_session_context()
    assert [x["role"] for x in ctx.messages] == ["compactionSummary", "assistant", "user"]


# ---------------------------------------------------------------- continue_recent


def test_continue_recent_prefers_breadcrumb_then_newest_then_new(tmp_path: Path) -> None:
    agent = tmp_path / "agent"
    home = tmp_path / "home"
    home.mkdir()
    cwd = str(home / "proj")
    os.makedirs(cwd)
    penv = PathEnv(
        env={"PI_CODING_AGENT_DIR": str(agent), "TMUX_PANE": "%7"}, home=str(home), tmp="/nonexistent-tmp"
    )
    base = {"penv": penv, "agent_dir": str(agent)}

    first = SessionManager.create(cwd, **{**kw(tmp_path, 1), **base})
    first.append_message(user("one"))
    first.append_message(assistant("a"))
    second = SessionManager.create(cwd, **{**kw(tmp_path, 2), **base})
    second.append_message(user("two"))
    second.append_message(assistant("b"))
    os.utime(first.get_session_file() or "", (1, 1))
    # the breadcrumb names the last created session
    again = SessionManager.continue_recent(cwd, **{**kw(tmp_path, 3), **base})
    assert again.get_session_file() == second.get_session_file()
    # the breadcrumb points at the first one: it wins over the newer file
    from sessiontree.core import paths

    paths.write_breadcrumb(cwd, first.get_session_file() or "", agent_dir=str(agent), penv=penv)
    assert (
        SessionManager.continue_recent(cwd, **{**kw(tmp_path, 4), **base}).get_session_file()
        == first.get_session_file()
    )
    # without a terminal: the newest file
    plain = PathEnv(env={"PI_CODING_AGENT_DIR": str(agent)}, home=str(home), tmp="/nonexistent-tmp")
    got = SessionManager.continue_recent(cwd, **{**kw(tmp_path, 5), **base, "penv": plain})
    assert got.get_session_file() == second.get_session_file()
    # a process without a terminal of its own (the daemon) names the agent's terminal
    named = SessionManager.continue_recent(
        cwd, terminal_id="tmux-%7", **{**kw(tmp_path, 7), **base, "penv": plain}
    )
    assert named.get_session_file() == first.get_session_file()
    other_terminal = SessionManager.continue_recent(
        cwd, terminal_id="pts-9", **{**kw(tmp_path, 8), **base, "penv": plain}
    )
    assert other_terminal.get_session_file() == second.get_session_file()
    # a terminal id is only ever a file name inside the breadcrumb directory
    assert paths.breadcrumb_path(str(agent), plain, "../../etc/x") == os.path.join(
        paths.terminal_sessions_dir(str(agent), plain), "..-..-etc-x"
    )
    # an empty directory: a new session (not written yet)
    other = str(home / "other")
    os.makedirs(other)
    fresh = SessionManager.continue_recent(other, **{**kw(tmp_path, 6), **base, "penv": plain})
    assert fresh.get_entries() == [] and not os.path.exists(fresh.get_session_file() or "")
