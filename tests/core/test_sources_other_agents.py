"""Claude Code and Codex transcripts read as pi entries (core/sources, core/session/foreign.py).

Synthetic files written here hold every kind of line (tests/other_agents_data.py); the real
ones are in tests/realcorpus/test_other_agents_real.py.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from other_agents_data import (
    CLAUDE_ID,
    CODEX_CHILD_ID,
    CODEX_FORK_ID,
    CODEX_ID,
    assistant,
    claude_lines,
    codex_lines,
    text,
    tool_result,
    tool_use,
    user,
    write_jsonl,
)
from sessiontree.core.errors import ReadOnlySessionError
from sessiontree.core.live import ChangeKind
from sessiontree.core.session import SessionManager
from sessiontree.core.session.foreign import ForeignSession, list_foreign_sessions
from sessiontree.core.sources import foreign
from sessiontree.core.view import build_view


def _claude(tmp_path: Path, **kw: object) -> Path:
    return write_jsonl(tmp_path / "proj" / f"{CLAUDE_ID}.jsonl", claude_lines(), **kw)  # type: ignore[arg-type]


def _texts(mgr: SessionManager, mode: str = "default") -> list[str]:
    page = build_view(mgr, filter=mode, limit=500)
    return [r.text for r in page.rows]


def test_sniffing_names_the_agent(tmp_path: Path) -> None:
    c = _claude(tmp_path)
    x = write_jsonl(tmp_path / "rollout.jsonl", codex_lines())
    assert foreign.agent_of(c.read_bytes()) == "claude"
    assert foreign.agent_of(x.read_bytes()) == "codex"
    assert foreign.agent_of(b'{"type":"session","version":3,"id":"x","timestamp":"","cwd":"/"}\n') is None


def test_claude_every_line_kind_maps_to_a_pi_entry(tmp_path: Path) -> None:
    t = foreign.read("claude", _claude(tmp_path).read_bytes())
    by_id = {e["id"]: e for e in t.entries}
    assert t.session_id == CLAUDE_ID and t.cwd == "/work/proj"
    assert t.title == "List the files"
    assert t.first_user_text == "list the files please"
    assert by_id["u1"]["message"] == {
        "role": "user",
        "content": [{"type": "text", "text": "list the files please"}],
        "timestamp": by_id["u1"]["message"]["timestamp"],
    }
    call = by_id["a2"]["message"]
    assert call["role"] == "assistant" and call["stopReason"] == "toolUse"
    assert call["content"][0] == {
        "type": "toolCall",
        "id": "toolu_1",
        "name": "bash",
        "arguments": {"command": "ls -la", "description": "list"},
    }
    assert call["usage"]["cacheRead"] == 100
    assert by_id["a1"]["message"]["content"] == [{"type": "thinking", "thinking": "I should run ls"}]
    res = by_id["r1"]["message"]
    assert res["role"] == "toolResult" and res["toolCallId"] == "toolu_1" and res["toolName"] == "bash"
    # hook progress sits in the chain, not beside the tool result
    assert by_id["p1"]["type"] == "custom" and by_id["p1"]["customType"] == "claude:progress"
    assert by_id["r1"]["parentId"] == "p1"
    assert by_id["s1"]["customType"] == "claude:system:turn_duration"
    assert by_id["cb1"]["customType"] == "claude:compact_boundary" and by_id["cb1"]["parentId"] == "a7"
    comp = by_id["cs1"]
    assert comp["type"] == "compaction" and comp["tokensBefore"] == 4242 and "files listed" in comp["summary"]
    assert by_id["m1"]["customType"] == "claude:meta"
    kinds = {e.get("customType") for e in t.entries if e["type"] == "custom"}
    assert {
        "claude:permission-mode",
        "claude:file-history-snapshot",
        "claude:ai-title",
        "claude:last-prompt",
    } <= kinds
    # the leaf Claude Code resumes: the last user/assistant line of the main chain
    assert t.leaf_id == "a8"
    assert t.damage == []


def test_claude_rewind_is_a_branch_and_the_sidechain_its_own_root(tmp_path: Path) -> None:
    mgr = SessionManager.open(str(_claude(tmp_path)), read_only=True)
    assert isinstance(mgr, ForeignSession) and mgr.agent == "claude"
    kids = [c["id"] for c in mgr.get_children("s1")]
    # s1 got the ai-title line below it (no uuid), then both turns that follow s1
    assert len(kids) == 1
    below = [c["id"] for c in mgr.get_children(kids[0])]
    assert sorted(below) == ["u2", "u3"]
    roots = [n.entry["id"] for n in mgr.get_tree()]
    assert "x1" in roots  # the subagent's lines: a separate branch
    assert mgr.get_leaf_id() == "a8"
    texts = _texts(mgr)
    assert "[bash: ls -la]" in texts and "[read: /work/proj/a.txt]" in texts
    assert not any("progress" in x or "file-history" in x for x in texts)
    everything = _texts(mgr, "all")
    assert any("claude:progress" in x for x in everything)
    assert any("claude:file-history-snapshot" in x for x in everything)


def test_claude_context_starts_at_the_compaction(tmp_path: Path) -> None:
    mgr = SessionManager.open(str(_claude(tmp_path)), read_only=True)
    ctx = mgr.build_session_context()
    roles = [m["role"] for m in ctx.messages]
    assert roles == ["compactionSummary", "user", "assistant"]
    assert ctx.models["default"] == "anthropic/claude-opus-4-6"
    before = mgr.build_session_context("a5")
    assert [m["role"] for m in before.messages][:2] == ["user", "assistant"]
    assert before.messages[-1]["content"][0]["text"] == "a.txt says hello."


def test_claude_damaged_line_is_skipped_and_reported(tmp_path: Path) -> None:
    path = _claude(tmp_path, damaged_at=5)
    t = foreign.read("claude", path.read_bytes())
    assert [d.line for d in t.damage] == [6]
    mgr = SessionManager.open(str(path), read_only=True)
    assert mgr.load_report.skipped_lines == 1
    assert mgr.get_leaf_id() == "a8"
    from sessiontree.core.doctor import check_file

    report = check_file(str(path))
    assert report.agent == "claude"
    assert "dropped-line" in report.kinds() and "foreign-transcript" in report.kinds()


def test_every_change_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    path = _claude(tmp_path)
    before = path.read_bytes(), sorted(os.listdir(path.parent))
    mgr = SessionManager.open(str(path), viewing=True, breadcrumbs=False)
    for change in (
        lambda: mgr.append_message({"role": "user", "content": "hi"}),
        lambda: mgr.append_label_change("a8", "x"),
        lambda: mgr.set_session_name("name"),
        lambda: mgr.fork(),
        lambda: mgr.branch_with_summary("a5", "s"),
        lambda: mgr.create_branched_session("a5"),
    ):
        with pytest.raises(ReadOnlySessionError, match="read-only: claude session"):
            change()
    mgr.branch("a5")  # moving the leaf is a view of it: nothing written
    assert mgr.get_leaf_id() == "a5"
    mgr.flush()
    assert (path.read_bytes(), sorted(os.listdir(path.parent))) == before


def test_live_appends_fold_in(tmp_path: Path) -> None:
    path = _claude(tmp_path)
    mgr = SessionManager.open(str(path), read_only=True)
    assert mgr.sync_with_file().kind is ChangeKind.UNCHANGED
    late = json.dumps(user("u6", "a9", 32, "and the last one"))
    with path.open("a", encoding="utf-8") as f:
        f.write(json.dumps(user("u5", "a8", 30, "one more thing")) + "\n")
        f.write(json.dumps(assistant("a9", "u5", 31, text("Sure."))) + "\n")
        f.write(late[:20])  # still being written
    res = mgr.sync_with_file()
    assert res.kind is ChangeKind.APPENDED and res.appended == ["u5", "a9"]
    assert mgr.get_leaf_id() == "a9" and res.old_leaf_id == "a8"
    with path.open("a", encoding="utf-8") as f:
        f.write(late[20:] + "\n")
    res = mgr.sync_with_file()
    assert res.appended == ["u6"] and mgr.get_leaf_id() == "u6"
    assert "user: and the last one" in _texts(mgr)
    # a replaced file is read again
    write_jsonl(path.with_suffix(".tmp"), claude_lines()[:5]).replace(path)
    res = mgr.sync_with_file()
    assert res.kind is ChangeKind.REPLACED and mgr.get_leaf_id() == "a2"


def test_codex_rollout_is_one_linear_path(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "rollout-2026-06-19T02-14-27-x.jsonl", codex_lines())
    mgr = SessionManager.open(str(path), read_only=True)
    assert isinstance(mgr, ForeignSession) and mgr.agent == "codex"
    assert mgr.get_resume_command() == f"codex resume {CODEX_ID}"
    entries = mgr.get_entries()
    assert all(e["parentId"] == (entries[i - 1]["id"] if i else None) for i, e in enumerate(entries))
    texts = _texts(mgr)
    # the reasoning summary is an assistant message with only thinking: hidden like pi's
    assert texts == [
        "user: count the files",
        "[bash: ls | wc -l]",
        '[apply_patch: {"input":"*** Begin Patch"}]',
        "[compaction: 0k tokens]",
        "assistant: There are 2 files.",
    ]
    assert any("codex:developer" in x for x in _texts(mgr, "all"))
    ctx = mgr.build_session_context()
    assert [m["role"] for m in ctx.messages] == ["compactionSummary", "assistant"]
    assert mgr.get_leaf_id() == entries[-2]["id"]  # the last message, not the event after it


def test_codex_fork_and_subagent_link_to_their_parent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "codex" / "sessions" / "2026" / "06" / "19"
    write_jsonl(root / f"rollout-2026-06-19T02-14-27-{CODEX_ID}.jsonl", codex_lines())
    write_jsonl(
        root / f"rollout-2026-06-19T02-20-00-{CODEX_FORK_ID}.jsonl",
        codex_lines(CODEX_FORK_ID, forked_from=CODEX_ID),
    )
    write_jsonl(
        root / f"rollout-2026-06-19T02-16-22-{CODEX_CHILD_ID}.jsonl",
        codex_lines(CODEX_CHILD_ID, parent_thread=CODEX_ID),
    )
    env = {"HOME": str(tmp_path), "CODEX_HOME": str(tmp_path / "codex")}
    infos = {i.id: i for i in list_foreign_sessions("codex", env=env)}
    assert set(infos) == {CODEX_ID, CODEX_FORK_ID, CODEX_CHILD_ID}
    parent_path = infos[CODEX_ID].path
    assert (infos[CODEX_FORK_ID].parent_kind, infos[CODEX_FORK_ID].parent_session_path) == (
        "fork",
        parent_path,
    )
    assert (infos[CODEX_CHILD_ID].parent_kind, infos[CODEX_CHILD_ID].parent_session_path) == (
        "subagent",
        parent_path,
    )
    assert infos[CODEX_ID].agent == "codex" and infos[CODEX_ID].first_message == "count the files"
    assert list_foreign_sessions("codex", cwd="/elsewhere", env=env) == []
    # an opened fork names its parent's file in its header (as pi's parentSession)
    monkeypatch.setenv("CODEX_HOME", env["CODEX_HOME"])
    fork = SessionManager.open(infos[CODEX_FORK_ID].path, read_only=True)
    assert fork.get_header()["parentSession"] == parent_path
    # thread names from Codex's session index (the last line of an id wins)
    index = tmp_path / "codex" / "session_index.jsonl"
    index.write_text(
        json.dumps({"id": CODEX_ID, "thread_name": "old name", "updated_at": "2026-06-19T02:15:00Z"})
        + "\n"
        + json.dumps({"id": CODEX_ID, "thread_name": "Count the files", "updated_at": "2026-06-19T02:16:00Z"})
        + "\n"
    )
    named = {i.id: i for i in list_foreign_sessions("codex", env=env)}
    assert named[CODEX_ID].display_name == "Count the files"
    assert named[CODEX_FORK_ID].title is None
    assert len(list_foreign_sessions("codex", cwd="/work/proj", env=env)) == 3


def test_claude_discovery_by_cwd_and_config_dir(tmp_path: Path) -> None:
    conf = tmp_path / "conf"
    write_jsonl(conf / "projects" / "-work-proj" / f"{CLAUDE_ID}.jsonl", claude_lines())
    write_jsonl(
        conf / "projects" / "-work-proj" / CLAUDE_ID / "subagents" / "agent-1.jsonl", claude_lines()[:4]
    )
    env = {"HOME": str(tmp_path / "nohome"), "CLAUDE_CONFIG_DIR": str(conf)}
    infos = list_foreign_sessions("claude", cwd="/work/proj", env=env)
    assert [i.id for i in infos] == [CLAUDE_ID]
    assert infos[0].resume == f"claude --resume {CLAUDE_ID}"
    assert infos[0].title == "List the files" and infos[0].display_name == "List the files"
    assert list_foreign_sessions("claude", cwd="/work/other", env=env) == []
    assert len(list_foreign_sessions("claude", env=env)) == 1


def test_the_listing_summary_agrees_with_the_reader(tmp_path: Path) -> None:
    from shared_data import REAL_CORPUS, real_corpus_names

    files = [_claude(tmp_path), _claude(tmp_path / "d", damaged_at=5)]
    files += [REAL_CORPUS / n for n in real_corpus_names() if n.startswith("claudecode-")]
    for path in files:
        data = path.read_bytes()
        full, quick = foreign.read("claude", data), foreign.summarize("claude", data)
        got = (
            quick.session_id,
            quick.cwd,
            quick.created,
            quick.title,
            quick.first_user_text,
            quick.message_count,
        )
        want = (full.session_id, full.cwd, full.created, full.title, full.first_user_text, full.message_count)
        assert got == want, path
        assert len(quick.damage) == len(full.damage)


def test_a_summary_of_this_files_leaf_names_it(tmp_path: Path) -> None:
    lines = [
        {"type": "summary", "summary": "This conversation", "leafUuid": "a8"},
        {"type": "summary", "summary": "Another file's conversation", "leafUuid": "elsewhere"},
        *[v for v in claude_lines() if v.get("type") != "ai-title"],
    ]
    path = write_jsonl(tmp_path / "s.jsonl", lines)
    data = path.read_bytes()
    assert foreign.read("claude", data).title == "This conversation"
    assert foreign.summarize("claude", data).title == "This conversation"
    only_other = write_jsonl(tmp_path / "o.jsonl", [lines[1], *lines[2:]]).read_bytes()
    assert foreign.read("claude", only_other).title == "Another file's conversation"


def test_claude_subagent_files_are_branches_of_their_session(tmp_path: Path) -> None:
    path = _claude(tmp_path)
    sub = path.with_suffix("") / "subagents"
    write_jsonl(
        sub / "agent-a1b2.jsonl",
        [
            {"type": "permission-mode", "permissionMode": "default", "sessionId": CLAUDE_ID},
            user("sa1", None, 40, "Explore the repo", isSidechain=True, agentId="a1b2"),
            assistant("sa2", "sa1", 41, text("The repo has two files."), isSidechain=True, agentId="a1b2"),
        ],
    )
    (sub / "agent-a1b2.meta.json").write_text('{"agentType": "Explore"}')
    mgr = SessionManager.open(str(path), read_only=True)
    assert isinstance(mgr, ForeignSession) and mgr.subagent_files == [str(sub / "agent-a1b2.jsonl")]
    roots = [n.entry["id"] for n in mgr.get_tree()]
    assert "sa1" in roots or "agent-a1b2-line1" in roots
    assert mgr.get_entry("sa2")["parentId"] == "sa1"
    assert mgr.get_leaf_id() == "a8"  # the main chain's, not the subagent's
    assert "assistant: The repo has two files." in _texts(mgr)
    # listings show the session once
    env = {"HOME": str(tmp_path / "h"), "CLAUDE_CONFIG_DIR": str(tmp_path / "conf")}
    write_jsonl(tmp_path / "conf" / "projects" / "-p" / path.name, claude_lines())
    assert len(list_foreign_sessions("claude", env=env)) == 1


def test_claude_context_joins_the_lines_of_one_api_message(tmp_path: Path) -> None:
    lines = [
        user("q1", None, 1, "do two things"),
        assistant("l1", "q1", 2, {"type": "thinking", "thinking": "two calls"}),
        assistant("l2", "l1", 3, tool_use("t1", "Bash", {"command": "ls"})),
        assistant("l3", "l2", 4, tool_use("t2", "Read", {"file_path": "/a"})),
        user("r1", "l3", 5, [tool_result("t1", "x")]),
        user("r2", "r1", 6, [tool_result("t2", "y")]),
    ]
    for v in lines[1:4]:
        v["message"]["id"] = "msg_same"
    mgr = SessionManager.open(str(write_jsonl(tmp_path / "s.jsonl", lines)), read_only=True)
    msgs = mgr.build_session_context().messages
    assert [m["role"] for m in msgs] == ["user", "assistant", "toolResult", "toolResult"]
    assert [b["type"] for b in msgs[1]["content"]] == ["thinking", "toolCall", "toolCall"]
    # the tree keeps one row per line, as the file has them
    assert len(mgr.get_entries()) == 6
