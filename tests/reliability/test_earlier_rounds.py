"""Checks of the earlier hardening rounds (issues 9 and 20) that failed again on newer code.

- **Lone surrogates end to end** (issue 20): one session whose title, text, label or tool
  call holds a lone surrogate (a JavaScript writer cut a string inside an emoji) made every
  `session/search` fail (-32603) and `sessiontree search` exit 2: SQLite takes no string
  without a UTF-8 form. The index now stores them as U+FFFD, the rule of every output, and
  leaves out files whose names are not UTF-8.
- **A FIFO never hangs a request** (issues 9 and 20): Codex's thread names are read from
  `~/.codex/session_index.jsonl` with a plain `open()`; a FIFO there hung `session/list`, the
  open of a Codex session and `sessiontree ls` for ever.
- **Slow work cannot starve other work** (issue 20): every `session/search` that came while
  the index's first build ran took a worker of the session-less pool to wait on the build's
  lock; eight of them (an editor's search box, typed into) left none for opening a session,
  which then waited for the whole build.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from other_agents_data import CODEX_ID, codex_lines, write_jsonl
from sessiontree.core.fts import fts5_available

from .helpers import chain, header, message, write_session
from .rawlsp import RawLsp
from .test_search_busy import Holder

needs_fts = pytest.mark.skipif(not fts5_available(), reason="this Python's SQLite has no FTS5")


def _env(tmp: Path, **extra: str) -> dict[str, str]:
    return {
        "HOME": str(tmp / "home"),
        "XDG_CACHE_HOME": str(tmp / "cache"),
        "XDG_STATE_HOME": str(tmp / "xdg-state"),
        "PI_CODING_AGENT_DIR": str(tmp / "home" / "agent"),
        "SESSIONTREE_STATE_DIR": str(tmp / "state"),
        **extra,
    }


def _cli(tmp: Path, *args: str | bytes, timeout: float = 60) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "sessiontree", *args],
        env={**os.environ, **_env(tmp)},
        capture_output=True,
        timeout=timeout,
    )


# ------------------------------------------------------------------ lone surrogates in search

#: Lines as a JavaScript writer leaves them: lone surrogate escapes in a title, a text, a
#: label, a tool call (its id, name and arguments) and its result.
SURROGATE_SESSION = "\n".join(
    [
        '{"type":"session","version":3,"id":"b1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w/p",'
        '"title":"cut \\ud83d here"}',
        '{"type":"message","id":"m1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z",'
        '"message":{"role":"user","content":"papaya \\ud800 lone"}}',
        '{"type":"message","id":"m2","parentId":"m1","timestamp":"2026-01-01T00:00:02.000Z",'
        '"message":{"role":"assistant","content":[{"type":"toolCall","id":"c\\udfff","name":"bash",'
        '"arguments":{"command":"echo papaya \\udc80"}}],"api":"a","provider":"p","model":"m",'
        '"stopReason":"toolUse"}}',
        '{"type":"message","id":"m3","parentId":"m2","timestamp":"2026-01-01T00:00:03.000Z",'
        '"message":{"role":"toolResult","toolCallId":"c\\udfff","toolName":"bash",'
        '"content":[{"type":"text","text":"papaya out \\udbff"}],"isError":false}}',
        '{"type":"label","id":"l1","parentId":"m3","timestamp":"2026-01-01T00:00:04.000Z",'
        '"targetId":"m1","label":"lab \\udc00"}',
        "",
    ]
)


@needs_fts
def test_a_lone_surrogate_in_one_session_fails_no_search(tmp_path: Path) -> None:
    sessions = tmp_path / "home" / "agent" / "sessions" / "--w-p--"
    sessions.mkdir(parents=True)
    (sessions / "bad.jsonl").write_text(SURROGATE_SESSION)
    write_session(
        sessions / "good.jsonl", [header("g1", cwd="/w/p"), message("g-u1", None, "user", "papaya good")]
    )
    # a file name that is not UTF-8 (a path no index row and no answer can hold)
    odd = Path(os.fsdecode(os.fsencode(sessions) + b"/\xffx.jsonl"))
    write_session(odd, [header("x1", cwd="/w/p"), message("x-u1", None, "user", "papaya odd name")])
    before = {p.name: p.read_bytes() for p in sessions.iterdir()}

    res = _cli(tmp_path, "search", "--all", "--json", "papaya")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    by_session = {h["session_id"] for h in out["hits"]}
    assert by_session == {"b1", "g1"}, out  # the file whose name is not UTF-8 is left out
    texts = json.dumps(out, ensure_ascii=False)
    assert "\ufffd" in texts and "lab \ufffd" in texts and "cut \ufffd here" in texts
    # a label given on the command line in bytes that are not UTF-8
    assert _cli(tmp_path, "search", "--all", "--label", b"lab \xff", "papaya").returncode == 0

    d = RawLsp(env=_env(tmp_path))
    try:
        assert "result" in d.initialize({"agentDir": str(tmp_path / "home" / "agent")})
        for params in (
            {"query": "papaya"},
            {"query": "papaya", "role": "tool"},
            {"query": "lone", "label": "lab \ufffd"},
            {"query": "echo"},
        ):
            got = d.request("session/search", params, 60)
            assert "result" in got, (params, got)
            assert got["result"]["hits"], (params, got)
        hits = d.request("session/search", {"query": "papaya", "limit": 50}, 60)["result"]["hits"]
        assert {h["sessionId"] for h in hits} == {"b1", "g1"}
        assert next(h for h in hits if h["entryId"] == "m1")["pathLabels"] == [
            {"id": "m1", "label": "lab \ufffd"}
        ]
    finally:
        d.close()
    assert {p.name: p.read_bytes() for p in sessions.iterdir()} == before


# ------------------------------------------------------------------ a FIFO for Codex's thread names


@pytest.fixture
def codex_home(tmp_path: Path) -> Iterator[Path]:
    home = tmp_path / "home"
    (home / "agent" / "sessions").mkdir(parents=True)
    write_jsonl(
        home / ".codex" / "sessions" / "2026" / "06" / "19" / f"rollout-x-{CODEX_ID}.jsonl", codex_lines()
    )
    yield home


@pytest.mark.parametrize("kind", ["fifo", "link to /dev/zero"])
def test_a_fifo_for_codex_thread_names_hangs_nothing(tmp_path: Path, codex_home: Path, kind: str) -> None:
    names = codex_home / ".codex" / "session_index.jsonl"
    if kind == "fifo":
        os.mkfifo(names)
    else:
        names.symlink_to("/dev/zero")
    try:
        res = _cli(tmp_path, "ls", "--all", "--agent", "codex", "--json", timeout=30)
    except subprocess.TimeoutExpired:
        pytest.fail(f"sessiontree ls hung on a {kind} at {names}")
    assert res.returncode == 0, res.stderr
    listed = json.loads(res.stdout)["sessions"]
    assert [s["id"] for s in listed] == [CODEX_ID]
    d = RawLsp(env=_env(tmp_path))
    try:
        assert "result" in d.initialize({"agentDir": str(codex_home / "agent")})
        try:
            got = d.request("session/list", {"all": True, "agent": "all"}, 30)
        except TimeoutError:
            pytest.fail(f"session/list hung on a {kind} at {names}")
        assert [s["id"] for s in got["result"]["sessions"]] == [CODEX_ID]
        opened = d.request("session/open", {"path": listed[0]["path"]}, 30)
        assert opened["result"]["agent"] == "codex", opened
    finally:
        d.close()


# ------------------------------------------------------------------ searches during the first build


@needs_fts
def test_searches_during_the_first_build_leave_workers_for_opening_sessions(tmp_path: Path) -> None:
    """Twelve searches while the first build runs (held at its write lock by another process,
    so that it runs as long as the test needs), then a click on a session: the open is
    answered while the build still runs (before its progress ends)."""
    agent = tmp_path / "home" / "agent"
    sessions = agent / "sessions" / "--w-p--"
    sessions.mkdir(parents=True)
    write_session(sessions / "a.jsonl", chain(40, seed=1))
    write_session(sessions / "b.jsonl", chain(40, seed=2))
    index = tmp_path / "cache" / "search.db"
    env = _env(tmp_path, SESSIONTREE_SEARCH_INDEX=str(index), SESSIONTREE_SEARCH_BUSY_MS="120000")
    made = subprocess.run(
        [sys.executable, "-m", "sessiontree", "search", "--all", "text"],
        env={**os.environ, **env},
        capture_output=True,
        timeout=60,
    )
    assert made.returncode == 0, made.stderr
    holder = Holder(index, "write")
    d = RawLsp(env=env)
    try:
        assert "result" in d.initialize({"agentDir": str(agent)})
        ids = []
        for i in range(12):
            rid = d.next_id()
            params: dict[str, Any] = {"query": "text", "paths": False}
            if i == 0:
                params["workDoneToken"] = "first-build"
            d.send({"jsonrpc": "2.0", "id": rid, "method": "session/search", "params": params})
            ids.append(rid)
        d.wait_for(lambda m: m.get("method") == "$/progress" and m["params"]["value"]["kind"] == "begin", 30)
        opened = d.request("session/open", {"path": str(sessions / "b.jsonl")}, 300)
        assert "result" in opened, opened
        ended = [
            n
            for n in d.notifications
            if n.get("method") == "$/progress" and n["params"]["value"].get("kind") == "end"
        ]
        assert not ended, "the open waited for the whole first build"
        holder.release()
        for rid in ids:
            assert "result" in d.response(rid, 120)
    finally:
        holder.kill()
        d.close()
