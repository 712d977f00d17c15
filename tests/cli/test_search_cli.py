"""`sessiontree search`: the command line over the cross-session index."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sessiontree.cli import main
from sessiontree.core.fts import fts5_available

pytestmark = pytest.mark.skipif(not fts5_available(), reason="this Python's SQLite has no FTS5")


def _write(agent: Path, project: str, name: str, lines: list[dict]) -> Path:
    d = agent / "sessions" / ("--" + project.strip("/").replace("/", "-") + "--")
    d.mkdir(parents=True, exist_ok=True)
    p = d / name
    p.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return p


def _msg(eid: str, parent: str | None, role: str, text: str) -> dict:
    return {
        "type": "message",
        "id": eid,
        "parentId": parent,
        "timestamp": "2026-03-01T12:00:00.000Z",
        "message": {"role": role, "content": text},
    }


@pytest.fixture
def agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    agent = tmp_path / "agent"
    head = {
        "type": "session",
        "version": 3,
        "id": "s1",
        "timestamp": "2026-03-01T00:00:00.000Z",
        "cwd": "/w/proj",
    }
    _write(
        agent,
        "/w/proj",
        "a.jsonl",
        [
            head,
            _msg("u1", None, "user", "where is the sierra tango"),
            _msg("a1", "u1", "assistant", "sierra is here"),
        ],
    )
    head2 = dict(head, id="s2", cwd="/w/other")
    _write(agent, "/w/other", "b.jsonl", [head2, _msg("u9", None, "user", "sierra elsewhere")])
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent))
    return agent


def test_json_hits_name_session_entry_role_time_and_path(
    agent: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["search", "sierra", "--cwd", "/w/proj", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    hits = {h["entry_id"]: h for h in out["hits"]}
    assert set(hits) == {"u1", "a1"}
    assert hits["a1"]["role"] == "assistant" and hits["a1"]["ancestors"] == ["u1"]
    assert hits["a1"]["on_active_branch"] is True
    assert hits["a1"]["timestamp"] == "2026-03-01T12:00:00.000Z"
    assert out["index"]["bytes"] > 0
    assert main(["search", "sierra", "--all", "--role", "user", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert sorted(h["entry_id"] for h in out["hits"]) == ["u1", "u9"]


def test_text_output_marks_the_matched_words(agent: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["search", "tan*", "--all"]) == 0
    out = capsys.readouterr().out
    assert "«tango»" in out and "u1" in out and "1 of 1 match" in out


def test_no_match_and_fts_syntax(agent: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for q in ['"', "NEAR(", "a AND (", "*", "-x"]:
        assert main(["search", "--all", "--", q]) == 0
    assert "no matches" in capsys.readouterr().out


def test_bad_date_is_a_usage_error(agent: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["search", "sierra", "--since", "yesterday-ish"]) == 2
    assert "bad date" in capsys.readouterr().err
    assert main(["search", "sierra", "--all", "--since", "2026-03-02", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["hits"] == []
