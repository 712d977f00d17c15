"""The real daemon on Claude Code and Codex sessions: listed with their agent, viewed,
read-only (-32008), followed live, and nothing written under ~/.claude or ~/.codex."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from other_agents_data import (
    CLAUDE_ID,
    CODEX_ID,
    assistant,
    claude_lines,
    codex_lines,
    text,
    user,
    write_jsonl,
)
from sessiontree.client import Client, RpcError

REPO = Path(__file__).resolve().parents[2]


def snapshot(root: Path) -> list[tuple[str, str]]:
    import hashlib

    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        out.extend((os.path.join(dirpath, d), "dir") for d in dirnames)
        out.extend(
            (os.path.join(dirpath, f), hashlib.sha256(Path(dirpath, f).read_bytes()).hexdigest())
            for f in filenames
        )
    return sorted(out)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    h = tmp_path / "home"
    write_jsonl(h / ".claude" / "projects" / "-work-proj" / f"{CLAUDE_ID}.jsonl", claude_lines())
    write_jsonl(
        h / ".codex" / "sessions" / "2026" / "06" / "19" / f"rollout-2026-06-19T02-14-27-{CODEX_ID}.jsonl",
        codex_lines(),
    )
    pi = h / "agent" / "sessions" / "--work-proj--"
    pi.mkdir(parents=True)
    header = {
        "type": "session",
        "version": 3,
        "id": "pi-1",
        "timestamp": "2026-06-01T00:00:00.000Z",
        "cwd": "/work/proj",
    }
    msg = {
        "type": "message",
        "id": "e1",
        "parentId": None,
        "timestamp": "2026-06-01T00:00:01.000Z",
        "message": {"role": "user", "content": "pi says hi", "timestamp": 1},
    }
    (pi / "2026-06-01T00-00-00-000Z_pi-1.jsonl").write_text(
        json.dumps(header) + "\n" + json.dumps(msg) + "\n"
    )
    return h


def spawn(home: Path) -> Client:
    env = {
        **os.environ,
        "HOME": str(home),
        "PI_CODING_AGENT_DIR": str(home / "agent"),
        "PYTHONPATH": os.pathsep.join([str(REPO / "server"), str(REPO / "protocol")]),
    }
    env.pop("CLAUDE_CONFIG_DIR", None)
    env.pop("CODEX_HOME", None)
    return Client.spawn(
        [sys.executable, "-m", "sessiontree", "serve"],
        env=env,
        init_options={"agentDir": str(home / "agent"), "stateDir": str(home.parent / "state")},
    )


def _rows(c: Client, session: str, mode: str = "default") -> list[dict[str, Any]]:
    return c.request("session/view", {"session": session, "filter": mode, "limit": 200})["rows"]  # type: ignore[no-any-return]


def test_list_view_context_and_read_only(home: Path) -> None:
    before = snapshot(home / ".claude"), snapshot(home / ".codex")
    with spawn(home) as c:
        listed = c.request("session/list", {"all": True})["sessions"]
        agents = {s["agent"] for s in listed}
        assert agents == {"pi", "claude", "codex"}
        by_agent = {s["agent"]: s for s in listed}
        assert by_agent["claude"]["resumeCommand"] == f"claude --resume {CLAUDE_ID}"
        assert by_agent["codex"]["resumeCommand"] == f"codex resume {CODEX_ID}"
        assert by_agent["claude"]["displayName"] == "List the files"
        assert "resumeCommand" not in by_agent["pi"]
        only = c.request("session/list", {"all": True, "agent": "codex"})["sessions"]
        assert [s["agent"] for s in only] == ["codex"]
        here = c.request("session/list", {"cwd": "/work/proj"})["sessions"]
        assert {s["agent"] for s in here} == {"pi", "claude", "codex"}

        opened = c.request("session/open", {"path": by_agent["claude"]["path"]})
        sid = opened["session"]
        assert opened["agent"] == "claude" and opened["leafId"] == "a8"
        assert opened["resumeCommand"] == f"claude --resume {CLAUDE_ID}"
        texts = [r["text"] for r in _rows(c, sid)]
        assert "[bash: ls -la]" in texts and "user: now read a.txt" in texts
        assert any("claude:progress" in r["text"] for r in _rows(c, sid, "all"))
        ctx = c.request("session/context", {"session": sid})
        assert [m["role"] for m in ctx["messages"]] == ["compactionSummary", "user", "assistant"]
        entry = c.request("session/entry", {"session": sid, "id": "a2"})
        assert entry["entry"]["message"]["content"][0]["name"] == "bash"
        found = c.request("session/view", {"session": sid, "search": "a.txt says"})["rows"]
        assert [r["id"] for r in found] == ["a5"]

        writes: list[tuple[str, dict[str, Any]]] = [
            (
                "session/append",
                {"session": sid, "entry": {"type": "message", "message": {"role": "user", "content": "x"}}},
            ),
            ("session/setLabel", {"session": sid, "targetId": "a5", "label": "x"}),
            ("session/setName", {"session": sid, "name": "x"}),
            ("session/branchWithSummary", {"session": sid, "branchFromId": "a5", "summary": "x"}),
            ("session/fork", {"session": sid}),
            ("session/branchToNewSession", {"session": sid, "entryId": "u2"}),
        ]
        for method, params in writes:
            with pytest.raises(RpcError) as err:
                c.request(method, params)
            assert err.value.code == -32008, method
            assert err.value.message == "read-only: claude session", method
        report = c.request("session/doctor", {"path": by_agent["claude"]["path"]})
        assert [p["kind"] for p in report["problems"]] == ["foreign-transcript"]
        with pytest.raises(RpcError) as err:
            c.request("session/doctor", {"path": by_agent["codex"]["path"], "repair": True})
        assert err.value.code == -32008
        # nothing is ever created under another agent's directory
        with pytest.raises(RpcError) as err:
            c.request(
                "session/open", {"path": str(home / ".claude" / "projects" / "-work-proj" / "new.jsonl")}
            )
        assert err.value.code == -32008
        with pytest.raises(RpcError) as err:
            c.request(
                "session/create", {"cwd": "/work/proj", "sessionDir": str(home / ".codex" / "sessions")}
            )
        assert err.value.code == -32008

        x = c.request("session/open", {"path": by_agent["codex"]["path"]})
        assert x["agent"] == "codex"
        assert "user: count the files" in [r["text"] for r in _rows(c, x["session"])]
    assert (snapshot(home / ".claude"), snapshot(home / ".codex")) == before


def test_appends_to_a_claude_transcript_arrive_live(home: Path) -> None:
    path = home / ".claude" / "projects" / "-work-proj" / f"{CLAUDE_ID}.jsonl"
    with spawn(home) as c:
        sid = c.request("session/open", {"path": str(path)})["session"]
        start = len(c.notifications)
        with path.open("a", encoding="utf-8") as f:
            f.write(json.dumps(user("u9", "a8", 40, "live line")) + "\n")
            f.write(json.dumps(assistant("a10", "u9", 41, text("live answer"))) + "\n")
        deadline = time.monotonic() + 15
        got: list[str] = []
        while time.monotonic() < deadline and "a10" not in got:
            got = [
                e["id"]
                for n, p in c.notifications[start:]
                if n == "session/didChange" and p["session"] == sid
                for e in p.get("appended", [])
            ]
            time.sleep(0.05)
        assert got == ["u9", "a10"]
        assert "assistant: live answer" in [r["text"] for r in _rows(c, sid)]
        view = c.request("session/view", {"session": sid, "limit": 1})
        assert view["leafId"] == "a10"


def test_a_new_transcript_is_announced(home: Path) -> None:
    with spawn(home) as c:
        c.request("session/list", {"all": True})
        time.sleep(0.5)  # the watcher is started at `initialized`
        start = len(c.notifications)
        write_jsonl(
            home / ".claude" / "projects" / "-work-new" / "22222222-0000-4000-8000-000000000000.jsonl",
            claude_lines()[:4],
        )
        c.wait_for_notification("session/didChangeList", start=start, timeout=15)
        listed = c.request("session/list", {"all": True, "agent": "claude"})["sessions"]
        assert len(listed) == 2
