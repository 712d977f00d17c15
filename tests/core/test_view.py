"""The tree view model: the rules of tree-view-rules.md, one by one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sessiontree.core.errors import EntryNotFoundError
from sessiontree.core.view import (
    FILTER_MODES,
    EntriesTreeSource,
    EntrySummary,
    build_view,
    display_text,
    entry_summary,
    format_tool_call,
    next_filter,
    searchable_text,
    window_start,
)

HOME = "/home/tester"


def ent(
    eid: str, parent: str | None, etype: str = "message", ts: str = "2026-01-01T00:00:00.000Z", **kw: Any
) -> dict[str, Any]:
    d: dict[str, Any] = {"type": etype, "id": eid, "parentId": parent, "timestamp": ts}
    d.update(kw)
    return d


def user(
    eid: str, parent: str | None, text: Any = None, ts: str = "2026-01-01T00:00:00.000Z"
) -> dict[str, Any]:
    return ent(eid, parent, ts=ts, message={"role": "user", "content": text if text is not None else eid})


def asst(
    eid: str, parent: str | None, text: str | None = None, stop: str | None = "stop", **kw: Any
) -> dict[str, Any]:
    content: list[dict[str, Any]] = [] if text is None else [{"type": "text", "text": text}]
    content += kw.pop("blocks", [])
    msg: dict[str, Any] = {"role": "assistant", "content": content, **kw}
    if stop is not None:
        msg["stopReason"] = stop
    return ent(eid, parent, message=msg)


def lines(entries: list[dict[str, Any]], **kw: Any) -> list[str]:
    kw.setdefault("home", HOME)
    return [r.line() for r in build_view(EntriesTreeSource(entries), **kw).rows]


# --- ordering, indent, gutters, prefix --------------------------------------------------


def test_single_chain_is_flat() -> None:
    entries = [user("1", None), asst("2", "1", "a"), user("3", "2")]
    assert lines(entries) == ["• user: 1", "• assistant: a", "• user: 3"]


def test_branch_point_active_branch_first_and_gutters() -> None:
    entries = [
        user("1", None),
        asst("2", "1", "a"),
        user("3", "2"),  # branch x (older)
        asst("4", "3", "x"),
        user("5", "2"),  # branch y, holds the leaf
        asst("6", "5", "y"),
        user("7", "6"),
    ]
    assert lines(entries, leaf_id="7") == [
        "• user: 1",
        "• assistant: a",
        "├─ • user: 5",
        "│     • assistant: y",
        "│     • user: 7",
        "└─ user: 3",
        "      assistant: x",
    ]
    # no leaf: nothing reordered, no marker
    assert lines(entries, leaf_id=None) == [
        "user: 1",
        "assistant: a",
        "├─ user: 3",
        "│     assistant: x",
        "└─ user: 5",
        "      assistant: y",
        "      user: 7",
    ]


def test_branch_child_that_branches_gets_one_level_and_single_chain_steps_once() -> None:
    entries = [
        user("r", None),
        user("a", "r"),
        user("b", "r"),
        user("a1", "a"),
        user("a2", "a"),
        user("b1", "b"),
        user("b2", "b1"),
    ]
    assert lines(entries, leaf_id=None) == [
        "user: r",
        "├─ user: a",
        "│  ├─ user: a1",
        "│  └─ user: a2",
        "└─ user: b",
        "      user: b1",
        "      user: b2",
    ]


def test_several_roots_are_shifted_left_without_connectors() -> None:
    entries = [
        user("r1", None),
        user("c1", "r1"),
        user("r2", None),
        user("c2", "r2"),
        user("c3", "r2"),
    ]
    # the leaf's root comes first; roots have no connector; root children step in once
    assert lines(entries, leaf_id="c3") == [
        "• user: r2",
        "├─ • user: c3",
        "└─ user: c2",
        "user: r1",
        "   user: c1",
    ]


def test_children_sorted_by_timestamp_with_ties_in_file_order() -> None:
    entries = [
        user("p", None),
        user("late", "p", ts="2026-01-01T00:00:09.000Z"),
        user("early", "p", ts="2026-01-01T00:00:01.000Z"),
        user("tie", "p", ts="2026-01-01T00:00:09.000Z"),
    ]
    assert lines(entries, leaf_id=None) == ["user: p", "├─ user: early", "├─ user: late", "└─ user: tie"]


def test_orphans_and_self_parent_are_roots() -> None:
    entries = [user("a", None), user("o", "missing"), user("s", "s")]
    assert lines(entries, leaf_id="o") == ["• user: o", "user: a", "user: s"]


def test_a_hidden_branch_head_hands_its_connector_to_its_first_visible_row() -> None:
    entries = [
        user("1", None),
        ent("m", "1", "model_change", model="a/b"),
        user("2", "1"),
        user("3", "m"),
        user("4", "3"),
    ]
    assert lines(entries, leaf_id="4", filter="all") == [
        "• user: 1",
        "├─ • [model: a/b]",
        "│     • user: 3",
        "│     • user: 4",
        "└─ user: 2",
    ]
    # m (a branch's first row) hidden: its connector goes to user 3, the rest keep their art
    # (before: "│     • user: 3", a gutter with no branch to belong to)
    assert lines(entries, leaf_id="4") == ["• user: 1", "├─    • user: 3", "│     • user: 4", "└─ user: 2"]
    rows = build_view(EntriesTreeSource(entries, leaf_id="4")).rows
    assert [(r.id, r.depth, r.head_depth) for r in rows] == [
        ("1", 0, None),
        ("3", 2, 1),
        ("4", 2, None),
        ("2", 1, None),
    ]


# --- display text ---------------------------------------------------------------------


def test_message_display_texts() -> None:
    assert display_text(user("u", None, "hi\tthere\nyou ")) == "user: hi there you"
    assert display_text(user("u", None, "")) == "user: "
    long = "x" * 250
    assert display_text(user("u", None, long)) == "user: " + "x" * 200
    blocks = [{"type": "text", "text": "a" * 150}, {"type": "image"}, {"type": "text", "text": "b" * 100}]
    assert display_text(user("u", None, blocks)) == "user: " + "a" * 150 + "b" * 50
    assert display_text(asst("a", None, " ok ")) == "assistant: ok"
    assert display_text(asst("a", None, None, stop="aborted", errorMessage="boom")) == "assistant: (aborted)"
    assert (
        display_text(asst("a", None, None, stop="error", errorMessage="e\n" + "y" * 100))
        == "assistant: e " + "y" * 78
    )
    assert display_text(asst("a", None, "  ", stop="stop")) == "assistant: (no content)"
    bash = ent("b", None, message={"role": "bashExecution", "command": "ls\n-la"})
    assert display_text(bash) == "[bash]: ls -la"
    for role in ("custom", "pythonExecution", "fileMention", "developer"):
        assert display_text(ent("x", None, message={"role": role})) == f"[{role}]"


def test_tool_result_display() -> None:
    result = ent("r", None, message={"role": "toolResult", "toolCallId": "t1", "toolName": "read"})
    calls = {"t1": {"name": "read", "arguments": {"path": f"{HOME}/x.py", "offset": 5, "limit": 10}}}
    assert display_text(result, calls, HOME) == "[read: ~/x.py:5-14]"
    assert display_text(result, {}, HOME) == "[read]"
    nameless = ent("r", None, message={"role": "toolResult", "toolCallId": "zz"})
    assert display_text(nameless, {}, HOME) == "[tool]"


@pytest.mark.parametrize(
    ("name", "args", "shown"),
    [
        ("read", {"path": "/home/tester/a.py"}, "[read: ~/a.py]"),
        ("read", {"path": "/home/tester2/a.py"}, "[read: ~2/a.py]"),
        ("read", {"path": "", "file_path": "/etc/x"}, "[read: /etc/x]"),
        ("read", {"path": "a", "offset": 3}, "[read: a:3]"),
        ("read", {"path": "a", "limit": 5}, "[read: a:1-5]"),
        ("read", {"path": "a", "offset": 0, "limit": 1}, "[read: a:0]"),
        ("write", {"file_path": "/home/tester/w"}, "[write: ~/w]"),
        ("edit", {"path": "e.txt"}, "[edit: e.txt]"),
        ("bash", {"command": "echo hi"}, "[bash: echo hi]"),
        ("bash", {"command": "x" * 51}, "[bash: " + "x" * 50 + "...]"),
        ("bash", {"command": "  " + "y" * 49 + "\n"}, "[bash: " + "y" * 49 + "...]"),
        ("bash", {"command": "a\tb\nc"}, "[bash: a b c]"),
        ("grep", {"pattern": "foo", "path": "/home/tester/src"}, "[grep: /foo/ in ~/src]"),
        ("grep", {"pattern": "foo"}, "[grep: /foo/ in .]"),
        ("find", {"pattern": "*.py"}, "[find: *.py in .]"),
        ("ls", {}, "[ls: .]"),
        ("ls", {"path": "/home/tester"}, "[ls: ~]"),
        ("Read", {"path": "x"}, '[Read: {"path":"x"}]'),
        ("web", {"query": "a" * 50}, '[web: {"query":"' + "a" * 30 + "...]"),
        (
            "calc",
            {"b": 1.0, "2": [1e-7, 0.00001, True, None], "a": "é\n"},
            '[calc: {"2":[1e-7,0.00001,true,null],"b":1,"a":...]',
        ),
    ],
)
def test_tool_call_display(name: str, args: dict[str, Any], shown: str) -> None:
    assert format_tool_call(name, args, HOME) == shown


@pytest.mark.parametrize(
    ("tokens", "shown"), [(500, "1k"), (1499, "1k"), (1500, "2k"), (2500, "3k"), (0, "0k"), (48500, "49k")]
)
def test_compaction_rounds_half_up(tokens: int, shown: str) -> None:
    assert display_text(ent("c", None, "compaction", tokensBefore=tokens)) == f"[compaction: {shown} tokens]"


def test_other_entry_display_texts() -> None:
    assert display_text(
        ent("x", None, "custom_message", customType="note", content=[{"type": "text", "text": "a\nb" * 150}])
    ) == ("[note]: " + "a b" * 150)
    assert display_text(ent("x", None, "branch_summary", summary="")) == "[branch summary]: "
    assert display_text(ent("x", None, "model_change", model="openai/gpt-4o")) == "[model: openai/gpt-4o]"
    assert display_text(ent("x", None, "thinking_level_change", thinkingLevel=None)) == "[thinking: off]"
    assert display_text(ent("x", None, "custom", customType="ct")) == "[custom: ct]"
    assert display_text(ent("x", None, "label", targetId="a", label="L")) == "[label: L]"
    assert display_text(ent("x", None, "label", targetId="a", label="")) == "[label: (cleared)]"
    # Beyond the reference's selector every row says what it is (docs/divergences.md)
    assert display_text(ent("x", None, "session_init")) == "[session init]"
    assert display_text(ent("x", None, "mode_change", mode="plan")) == "[mode: plan]"
    assert display_text(ent("x", None, "ttsr_injection")) == "[ttsr injection]"
    assert display_text(ent("x", None, "service_tier_change", serviceTier="flex")) == "[service tier: flex]"
    assert display_text(ent("x", None, "service_tier_change", serviceTier={"openai": "priority"})) == (
        "[service tier: openai:priority]"
    )
    assert (
        display_text(ent("x", None, "service_tier_change", serviceTier=None)) == "[service tier: (default)]"
    )
    assert display_text(ent("x", None, "mcp_tool_selection")) == "[mcp tool selection]"
    assert display_text(ent("x", None, "context_change")) == "[context change]"
    assert display_text(ent("x", None, "future_entry")) == "[future entry]"
    # pi 1.6's words
    assert display_text(ent("x", None, "session_info", name="Refactor")) == "[title: Refactor]"
    assert display_text(ent("x", None, "session_info", name="")) == "[title: empty]"
    assert (
        display_text(ent("x", None, "context_edit", targetId="a1", replacement=None)) == "[context omit: a1]"
    )
    assert display_text(ent("x", None, "context_edit", targetId="a1", replacement={"content": "x"})) == (
        "[context replace: a1]"
    )
    assert display_text(ent("x", None, "usage", kind="cache_warm")) == "[usage: cache_warm]"
    # oh-my-pi 18's words
    assert display_text(ent("x", None, "title_change", title="New\nname")) == "[title: New name]"
    assert (
        display_text(
            ent("x", None, "model_usage", purpose="title", role="tiny", provider="openai", model="gpt-5-mini")
        )
        == "[model usage: title tiny openai/gpt-5-mini]"
    )
    assert (
        display_text(ent("x", None, "credential_pin", provider="anthropic")) == "[credential pin: anthropic]"
    )
    assert display_text(ent("x", None, "reset_boundary")) == "[reset boundary]"


# --- filters, search, selection ---------------------------------------------------------


def _mixed() -> list[dict[str, Any]]:
    call = {"type": "toolCall", "id": "t1", "name": "bash", "arguments": {"command": "make test"}}
    return [
        user("u1", None, "fix the build"),
        asst("a1", "u1", None, stop="toolUse", blocks=[call]),
        ent(
            "r1",
            "a1",
            message={
                "role": "toolResult",
                "toolCallId": "t1",
                "toolName": "bash",
                "content": [{"type": "text", "text": "OK all good"}],
            },
        ),
        asst("a2", "r1", "Build fixed"),
        ent("lb", "a2", "label", targetId="u1", label="start"),
        ent("mc", "lb", "model_change", model="x/y"),
        ent("tl", "mc", "thinking_level_change", thinkingLevel="high"),
        ent("cu", "tl", "custom", customType="state"),
        ent("si", "cu", "session_init", systemPrompt="s", task="t", tools=[]),
        ent("cm", "si", "custom_message", customType="hint", content="remember tests", display=True),
        asst("ae", "cm", None, stop="error", errorMessage="rate limited"),
        asst("al", "ae", None, stop="length"),
        asst("an", "al", None, stop=None),
        user("u2", "an", "next"),
    ]


def test_filter_modes() -> None:
    entries = _mixed()
    ids = {m: [r.id for r in build_view(EntriesTreeSource(entries), filter=m).rows] for m in FILTER_MODES}
    assert ids["default"] == ["u1", "r1", "a2", "si", "cm", "ae", "al", "u2"]
    assert ids["no-tools"] == ["u1", "a2", "si", "cm", "ae", "al", "u2"]
    assert ids["user-only"] == ["u1", "u2"]
    assert ids["labeled-only"] == ["u1"]
    assert ids["all"] == ["u1", "r1", "a2", "lb", "mc", "tl", "cu", "si", "cm", "ae", "al", "u2"]
    # the current leaf is shown even when it is an assistant message without text
    assert "an" in [r.id for r in build_view(EntriesTreeSource(entries), leaf_id="an").rows]
    texts = [r.line() for r in build_view(EntriesTreeSource(entries), filter="all").rows]
    assert "• [bash: make test]" in texts and "• [start] user: fix the build" in texts
    assert "• assistant: rate limited" in texts and "• assistant: (no content)" in texts


def test_search_tokens_and_searchable_text() -> None:
    entries = _mixed()
    src = EntriesTreeSource(entries)

    def found(q: str, mode: str = "all") -> list[str]:
        return [r.id for r in build_view(src, filter=mode, search=q).rows]

    assert found("FIX") == ["u1", "a2"]
    assert found("start user") == ["u1"]  # label plus role
    # DIVERGENCE 9: a toolResult is also searched by its displayed call (the reference: [])
    assert found("make") == ["r1"]
    assert found("all good") == ["r1"]
    assert found("model x/y") == ["mc"]
    assert found("thinking high") == ["tl"]
    assert found("hint remember") == ["cm"]
    assert found("custom state") == ["cu"]
    assert found("label start") == ["lb"]
    assert found("   ") == found("")
    # the reference's parts, then the display text (DIVERGENCE 9)
    assert searchable_text(entries[4], None) == "label start [label: start]"
    assert searchable_text(entries[0], "L") == "L user fix the build user: fix the build"
    assert searchable_text(ent("c", None, "compaction"), None) == "compaction [compaction: NaNk tokens]"
    assert searchable_text(ent("b", None, "branch_summary", summary="S"), None) == (
        "branch summary S [branch summary]: S"
    )


def test_selection_leaf_nearest_visible_ancestor_or_last_row() -> None:
    entries = _mixed()
    src = EntriesTreeSource(entries)
    page = build_view(src, leaf_id="u2")
    assert page.rows[page.selected_index].id == "u2"  # type: ignore[index]
    page = build_view(src, leaf_id="cu")  # hidden in default: nearest visible ancestor a2
    assert page.rows[page.selected_index].id == "a2"  # type: ignore[index]
    page = build_view(src, leaf_id="cu", filter="user-only")
    assert page.rows[page.selected_index].id == "u1"  # type: ignore[index]
    page = build_view(src, leaf_id=None)
    assert page.selected_index == page.total - 1
    page = build_view(src, search="nothing matches this")
    assert (page.total, page.selected_index, page.rows) == (0, None, [])


def test_paging_and_window() -> None:
    entries = [user("0", None)] + [user(str(i), str(i - 1)) for i in range(1, 30)]
    src = EntriesTreeSource(entries)
    page = build_view(src, offset=10, limit=5)
    assert [r.id for r in page.rows] == ["10", "11", "12", "13", "14"]
    assert (page.total, page.selected_index, page.offset) == (30, 29, 10)
    assert build_view(src, offset=28, limit=5).rows[-1].id == "29"
    assert build_view(src, offset=40, limit=5).rows == []
    assert window_start(29, 30, 10) == 20 and window_start(0, 30, 10) == 0 and window_start(15, 30, 10) == 10
    assert window_start(3, 5, 10) == 0


def test_row_fields_and_wire_form() -> None:
    entries = [user("1", None), ent("l", "1", "label", targetId="1", label="L"), asst("2", "l", "hi")]
    row = build_view(EntriesTreeSource(entries)).rows[0]
    assert (row.id, row.parent_id, row.type, row.role, row.depth, row.prefix) == (
        "1",
        None,
        "message",
        "user",
        0,
        "",
    )
    assert (row.on_active_path, row.is_leaf, row.label, row.text) == (True, False, "L", "user: 1")
    assert row.to_dict() == {
        "id": "1",
        "parentId": None,
        "type": "message",
        "role": "user",
        "depth": 0,
        "prefix": "",
        "onActivePath": True,
        "isLeaf": False,
        "label": "L",
        "text": "user: 1",
        "timestamp": "2026-01-01T00:00:00.000Z",
    }


def test_next_filter_cycles() -> None:
    assert next_filter("default") == "no-tools"
    assert next_filter("all") == "default"
    assert next_filter("default", -1) == "all"
    with pytest.raises(ValueError):
        build_view([user("1", None)], filter="nope")


def test_entry_summary() -> None:
    call = {"type": "toolCall", "id": "t1", "name": "ls", "arguments": {"path": "/srv"}}
    entries = [
        user("1", None),
        asst("2", "1", None, stop="toolUse", blocks=[call]),
        ent("3", "2", message={"role": "toolResult", "toolCallId": "t1", "toolName": "ls"}),
        ent("4", "3", "custom_message", customType="ct", content="c", display=False),
        ent("5", "4", "label", targetId="3", label="here"),
    ]
    src = EntriesTreeSource(entries)
    s = entry_summary(src, "3")
    assert (s.text, s.role, s.label, s.parent_id) == ("[ls: /srv]", "toolResult", "here", "2")
    assert entry_summary(src, "4") == EntrySummary(
        id="4",
        parent_id="3",
        type="custom_message",
        timestamp="2026-01-01T00:00:00.000Z",
        role=None,
        custom_type="ct",
        text="[ct]: c",
        label=None,
    )
    with pytest.raises(EntryNotFoundError):
        entry_summary(src, "zz")


def test_tool_call_found_outside_the_ancestors_and_duplicates() -> None:
    # a result whose call sits on another branch still resolves (full map fallback)
    call = {"type": "toolCall", "id": "t9", "name": "ls", "arguments": {"path": "elsewhere"}}
    entries = [
        user("1", None),
        asst("2", "1", "x", blocks=[call]),
        user("3", "1"),
        ent("4", "3", message={"role": "toolResult", "toolCallId": "t9", "toolName": "ls"}),
    ]
    assert "[ls: elsewhere]" in " ".join(lines(entries, filter="all"))


def test_cache_follows_appends() -> None:
    src = EntriesTreeSource([user("1", None)])
    assert build_view(src).total == 1
    src.append(user("2", "1"))
    page = build_view(src)
    assert page.total == 2 and page.leaf_id == "2"
    src.append(ent("l", "2", "label", targetId="1", label="x"))
    assert build_view(src, filter="labeled-only").total == 1


def test_rows_kept_from_earlier_pages_follow_home_labels_and_calls() -> None:
    """A page takes what earlier pages showed of their entries (`page._row_parts`) only while
    it is what a fresh build shows: another home, a label, a call found later."""
    call = {"type": "toolCall", "id": "t1", "name": "read", "arguments": {"path": "/home/u/x.py"}}
    entries = [user("1", None), asst("2", "1", "", blocks=[call])]
    result = ent("3", "2", message={"role": "toolResult", "toolCallId": "t1", "toolName": "read"})
    orphan = ent("4", "3", message={"role": "toolResult", "toolCallId": "t7", "toolName": "ls"})
    written = [*entries, result, orphan]
    src = EntriesTreeSource(list(written))

    def same(**kw: Any) -> list[str]:
        got = [r.line() for r in build_view(src, filter="all", **kw).rows]
        fresh = EntriesTreeSource(list(written))
        assert got == [r.line() for r in build_view(fresh, filter="all", **kw).rows]
        return got

    assert "[read: ~/x.py]" in " ".join(same(home="/home/u"))
    assert "[read: /home/u/x.py]" in " ".join(same(home="/elsewhere"))
    assert "[ls]" in " ".join(same(home="/home/u"))  # no message has t7 (yet)
    later = [
        ent(
            "5",
            "4",
            message={"role": "assistant", "content": [{**call, "id": "t7"}], "stopReason": "toolUse"},
        ),
        ent("6", "5", "label", targetId="1", label="mark"),
    ]
    for e in later:
        src.append(e)
        written.append(e)
        shown = same(home="/home/u")
    assert not any("[ls]" in line for line in shown)  # the call appended later is found
    assert any("[mark] user: 1" in line for line in shown)


def test_manager_view_follows_appends_and_new_sessions() -> None:
    from sessiontree.core.session import SessionManager

    m = SessionManager.in_memory("/tmp")
    u = m.append_message({"role": "user", "content": "one", "timestamp": 1})
    assert [r.text for r in build_view(m).rows] == ["user: one"]
    m.append_label_change(u, "L")
    assert [r.line() for r in build_view(m, filter="labeled-only").rows] == ["• [L] user: one"]
    m.append_message({"role": "user", "content": "two", "timestamp": 2})
    assert build_view(m).total == 2
    m.new_session()
    assert build_view(m).total == 0
    m.append_message({"role": "user", "content": "three", "timestamp": 3})
    assert [r.text for r in build_view(m).rows] == ["user: three"]


def test_search_cache_survives_appends_but_not_a_new_index() -> None:
    from sessiontree.core.session import SessionManager

    m = SessionManager.in_memory("/tmp")
    m.append_message({"role": "user", "content": "alpha", "timestamp": 1})
    assert build_view(m, search="alpha").total == 1
    m.append_message({"role": "user", "content": "alpha beta", "timestamp": 2})
    assert [r.text for r in build_view(m, search="alpha").rows] == ["user: alpha", "user: alpha beta"]
    m.new_session()
    m.append_message({"role": "user", "content": "gamma", "timestamp": 3})
    assert build_view(m, search="alpha").total == 0
    assert build_view(m, search="gamma").total == 1


def test_a_message_entry_whose_message_is_no_object_is_drawn(tmp_path: Path) -> None:
    """Another writer's message entry holding a string (or a number) where the message object
    goes: every command draws it instead of failing on it."""
    import subprocess
    import sys

    p = tmp_path / "s.jsonl"
    p.write_text(
        '{"type":"session","version":3,"id":"0123456789abcdef","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}\n'
        '{"type":"message","id":"a","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":"a string"}\n'
        '{"type":"message","id":"b","parentId":"a","timestamp":"2026-01-01T00:00:02.000Z","message":{"role":"user","content":"hi","timestamp":1}}\n'
    )
    for verb in (["tree", "--filter", "all"], ["context"], ["show"], ["export", "-f", "md"]):
        r = subprocess.run(
            [sys.executable, "-m", "sessiontree", *verb, str(p)], capture_output=True, text=True
        )
        assert r.returncode == 0 and "Traceback" not in r.stderr, (verb, r.stderr)
    from sessiontree.core.session import SessionManager
    from sessiontree.core.view import build_view

    rows = build_view(SessionManager.open(str(p), read_only=True), filter="all").rows
    assert [r.text for r in rows] == ["[undefined]", "user: hi"]
