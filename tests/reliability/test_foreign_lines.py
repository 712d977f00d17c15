"""One bad line of another agent's transcript hides nothing else.

Claude Code and Codex write their own JSONL; a line with a field of a type they never write
(``"type": {"weird": 1}``, a list for a uuid, a number for a payload's type) used to raise
out of the reader, and the listing dropped every session of that agent (`ls --agent claude`
exited 2). Every foreign reader (the session reader, the listing summary, the sniffer, the
search index's reader, the read-only session with its view and context) is fed every line of
a transcript with each field replaced by wrong-typed values (every field of the test
transcripts, exhaustively; any JSON value at any field of the real transcripts in
``../shared``, by hypothesis): nothing raises, and the other lines' entries are all there.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import shared_data
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from other_agents_data import CLAUDE_ID, claude_lines, codex_lines, write_jsonl
from sessiontree.client import Client
from sessiontree.core.fts.sources import read_foreign
from sessiontree.core.session.manager import SessionManager
from sessiontree.core.sources import foreign, sniff
from sessiontree.core.sources.claude import feed_lines
from sessiontree.core.sources.model import Translation
from sessiontree.core.view.page import build_view

REPO = Path(__file__).resolve().parents[2]

#: Values no agent writes where a field is, each of another JSON type.
WRONG = [None, True, 0, -1, 1.5, 2**70, "", "x", "<", [], [None], [{}], {}, {"weird": 1}, [[1]]]


def key_paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every place in a JSON value: each key of each object, each item of each list."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield (*prefix, k)
            yield from key_paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield (*prefix, i)
            yield from key_paths(v, (*prefix, i))


def replaced(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    out = copy.deepcopy(value)
    cur = out
    for p in path[:-1]:
        cur = cur[p]
    cur[path[-1]] = new
    return out


def data_of(lines: list[Any]) -> bytes:
    return b"".join(json.dumps(v).encode() + b"\n" for v in lines)


def read_everything(agent: str, data: bytes, path: Path | None = None) -> Translation:
    """Every reader of ``agent``'s transcripts on ``data``; with ``path``, the read-only
    session over the file too, its tree, views and context."""
    t = foreign.read(agent, data)
    foreign.summarize(agent, data)
    assert foreign.agent_of(data[: foreign.SNIFF_BYTES]) in (agent, None)
    sniff.not_a_session_reason(data)
    if path is not None:
        path.write_bytes(data)
        if foreign.agent_of(data[: foreign.SNIFF_BYTES]) == agent:
            res = read_foreign(str(path))
            assert res is not None
            list(res.batches)
            m = SessionManager.open(str(path), read_only=True)
            m.get_tree()
            m.build_session_context()
            build_view(m, filter="all", limit=500)
            build_view(m, limit=500)
    return t


def _claude_ids(lines: list[Any]) -> set[str]:
    return {v["uuid"] for v in lines if isinstance(v, dict) and isinstance(v.get("uuid"), str)}


@pytest.mark.parametrize("agent", ["claude", "codex"])
def test_every_field_of_every_line_with_a_wrong_type(agent: str, tmp_path: Path) -> None:
    lines = claude_lines() if agent == "claude" else codex_lines()
    tried = 0
    for i, line in enumerate(lines):
        others = lines[:i] + lines[i + 1 :]
        for where in list(key_paths(line)):
            for value in WRONG:
                bad = replaced(line, where, value)
                data = data_of([*lines[:i], bad, *lines[i + 1 :]])
                t = read_everything(agent, data, tmp_path / "t.jsonl" if tried % 7 == 0 else None)
                tried += 1
                ids = {e["id"] for e in t.entries}
                if agent == "claude":
                    # every other line's entry is there (a uuid line keeps its uuid as its id)
                    missing = _claude_ids(others) - ids - {o for o in _claude_ids([bad])}
                    assert not missing, (i, where, value, missing)
                else:
                    # a rollout maps each line to one entry: none is lost
                    assert len(t.entries) == len(lines), (i, where, value, t.damage)
    print(f"\n[{agent}] {tried} transcripts with one wrong-typed field read")
    assert tried > 1000


def test_the_reported_case_hides_nothing(tmp_path: Path) -> None:
    lines = claude_lines()
    bad = dict(lines[2], type={"weird": 1})
    t = read_everything("claude", data_of([*lines[:2], bad, *lines[3:]]), tmp_path / "c.jsonl")
    assert t.leaf_id == "a8" and t.title == "List the files"
    summary = foreign.summarize("claude", data_of([*lines[:2], bad, *lines[3:]]))
    assert summary.session_id == CLAUDE_ID and summary.title == "List the files"


class _Picky:
    """A reader that cannot take one line (what `feed_lines` must survive whatever the reader)."""

    def __init__(self) -> None:
        self.t = Translation(agent="claude")
        self.seen: list[int] = []

    def feed(self, v: Any, lineno: int, offset: int) -> None:
        self.t.lines += 1
        if v.get("boom"):
            raise TypeError("cannot take this line")
        self.seen.append(lineno)


def test_a_line_the_reader_cannot_take_is_skipped_and_counted() -> None:
    reader = _Picky()
    data = b'{"a":1}\n{"boom":true}\n{"a":2}\n'
    assert feed_lines(reader, data) == len(data)
    assert reader.seen == [1, 3]
    assert [(d.line, d.offset) for d in reader.t.damage] == [(2, 8)]
    assert "TypeError" in reader.t.damage[0].reason


# ------------------------------------------------------------------ real transcripts


def _real_lines(prefix: str) -> list[tuple[str, list[Any]]]:
    out = []
    if not shared_data.REAL_CORPUS.is_dir():
        return out
    for p in sorted(shared_data.REAL_CORPUS.glob(prefix + "*.jsonl")):
        values = [json.loads(x) for x in p.read_bytes().splitlines() if x.strip()]
        # one line of each shape (type, subtype, payload type), so each kind is fuzzed
        seen: dict[Any, Any] = {}
        for v in values:
            payload = v.get("payload") if isinstance(v.get("payload"), dict) else {}
            msg = v.get("message") if isinstance(v.get("message"), dict) else {}
            content = msg.get("content")
            blocks = (
                tuple(b.get("type") for b in content if isinstance(b, dict))
                if isinstance(content, list)
                else ()
            )
            seen.setdefault((v.get("type"), v.get("subtype"), payload.get("type"), blocks), v)
        out.append((p.name, list(seen.values())[:60]))
    return out


REAL = [("claude", name, lines) for name, lines in _real_lines("claudecode-")] + [
    ("codex", name, lines) for name, lines in _real_lines("codex-")
]

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)


@pytest.mark.skipif(
    not REAL, reason="../shared/fixtures/real is not present (read from ../shared, never copied)"
)
@settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(data=st.data(), value=JSON)
def test_any_json_value_at_any_field_of_a_real_line(data: Any, value: Any, tmp_path: Path) -> None:
    agent, _name, lines = data.draw(st.sampled_from(REAL))
    i = data.draw(st.integers(0, len(lines) - 1))
    places = list(key_paths(lines[i]))
    if not places:
        return
    where = data.draw(st.sampled_from(places))
    mutated = [*lines[:i], replaced(lines[i], where, value), *lines[i + 1 :]]
    read_everything(agent, data_of(mutated), tmp_path / "r.jsonl")


# ------------------------------------------------------------------ the listing, CLI and daemon


@pytest.fixture
def home(tmp_path: Path) -> Path:
    h = tmp_path / "home"
    projects = h / ".claude" / "projects" / "-work-proj"
    write_jsonl(projects / f"{CLAUDE_ID}.jsonl", claude_lines())
    bad = claude_lines()
    for v in bad:
        v["sessionId"] = "22222222-2222-3333-4444-555555555555"
    bad.insert(3, dict(bad[2], uuid="weird-1", type={"weird": 1}))
    write_jsonl(projects / "22222222-2222-3333-4444-555555555555.jsonl", bad)
    (h / "agent" / "sessions").mkdir(parents=True)
    return h


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CLAUDE_CONFIG_DIR", "CODEX_HOME")}
    env.update(
        HOME=str(home),
        PI_CODING_AGENT_DIR=str(home / "agent"),
        PYTHONPATH=os.pathsep.join(p for p in sys.path if p),
        XDG_CACHE_HOME=str(home.parent / "cache"),
    )
    return env


def test_ls_agent_claude_lists_every_session_beside_a_bad_line(home: Path) -> None:
    res = subprocess.run(
        [sys.executable, "-m", "sessiontree", "ls", "--agent", "claude", "--all", "--json"],
        capture_output=True,
        text=True,
        env=_env(home),
        timeout=60,
    )
    assert res.returncode == 0, res.stderr
    ids = sorted(s["id"] for s in json.loads(res.stdout)["sessions"])
    assert ids == [CLAUDE_ID, "22222222-2222-3333-4444-555555555555"], res.stdout


def test_the_daemon_lists_and_opens_a_transcript_with_a_bad_line(home: Path) -> None:
    c = Client.spawn(
        env=_env(home),
        init_options={"agentDir": str(home / "agent"), "stateDir": str(home.parent / "state")},
    )
    try:
        listed = c.request("session/list", {"all": True, "agent": "claude"})["sessions"]
        assert sorted(s["id"] for s in listed) == [CLAUDE_ID, "22222222-2222-3333-4444-555555555555"]
        bad = next(s for s in listed if s["id"].startswith("2222"))
        opened = c.request("session/open", {"path": bad["path"]})
        assert opened["agent"] == "claude" and opened["leafId"] == "a8"
        rows = c.request("session/view", {"session": opened["session"], "filter": "all", "limit": 200})[
            "rows"
        ]
        assert {"u1", "a8", "weird-1"} <= {r["id"] for r in rows}
        hits = c.request("session/search", {"query": "list the files"})["hits"]
        assert {h["path"] for h in hits} >= {s["path"] for s in listed}
    finally:
        c.close()
