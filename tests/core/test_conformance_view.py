"""Conformance of the tree view with tree-view-rules.md, written from the spec text.

Every expected line below is computed by hand from the rules (indent rules 1-3, gutters,
prefix cells, ordering, display text, filters, search and selection).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from sessiontree.core import SessionManager
from sessiontree.core.view import EntriesTreeSource, build_view


class _Builder:
    """Builds entry dicts with ascending timestamps (so getTree order is file order)."""

    def __init__(self) -> None:
        self.entries: list[dict[str, Any]] = []

    def _ts(self) -> str:
        n = len(self.entries)
        return f"2026-01-01T00:{n // 60:02d}:{n % 60:02d}.000Z"

    def add(self, eid: str, parent: str | None, type_: str = "message", **fields: Any) -> dict[str, Any]:
        e: dict[str, Any] = {"type": type_, "id": eid, "parentId": parent, "timestamp": self._ts()}
        e.update(fields)
        self.entries.append(e)
        return e

    def user(self, eid: str, parent: str | None, text: str = "") -> dict[str, Any]:
        return self.add(eid, parent, message={"role": "user", "content": text or eid.upper(), "timestamp": 1})

    def asst(self, eid: str, parent: str | None, content: Any = None, **msg: Any) -> dict[str, Any]:
        if content is None:
            content = [{"type": "text", "text": eid.upper()}]
        m = {"role": "assistant", "content": content, "timestamp": 1}
        m.update(msg)
        return self.add(eid, parent, message=m)

    def lines(self, leaf: Any = "last", **kw: Any) -> list[str]:
        src = EntriesTreeSource(self.entries) if leaf == "last" else EntriesTreeSource(self.entries, leaf)
        return [r.line() for r in build_view(src, **kw).rows]

    def texts(self, leaf: Any = "last", **kw: Any) -> dict[str, str]:
        src = EntriesTreeSource(self.entries) if leaf == "last" else EntriesTreeSource(self.entries, leaf)
        return {r.id: r.text for r in build_view(src, **kw).rows}


# --- indent, gutters, prefix, ordering ---------------------------------------------------


def test_branch_point_children_and_gutters() -> None:
    b = _Builder()
    b.user("a", None)
    b.asst("b", "a")
    b.user("c", "b")
    b.user("d", "b")
    b.asst("e", "c")
    b.user("f", "d")
    # leaf f: d's subtree comes first (not last: `├─`, gutter `│`); c is last (`└─`, blank).
    # f and e: rule 2 (single child of a just-branched parent with indent 1 > 0) -> indent 2.
    assert b.lines() == [
        "• user: A",
        "• assistant: B",
        "├─ • user: D",
        "│     • user: F",
        "└─ user: C",
        "      assistant: E",
    ]


def test_branching_child_of_branch_point_gets_one_extra_level() -> None:
    b = _Builder()
    b.user("a", None)
    b.user("b", "a")
    b.user("c", "a")
    b.user("d", "b")
    b.user("e", "b")
    b.user("g", "d")
    b.user("h", "g")
    # leaf h. b (indent 1) branches: d, e get indent 2 (rule 1 only, not 1+2).
    # g: single child of just-branched d (indent 2) -> 3; h: g not just branched -> 3 (rule 3).
    # gutters of g: from b {0, show}, from d {1, show} (d is not last).
    assert b.lines() == [
        "• user: A",
        "├─ • user: B",
        "│  ├─ • user: D",
        "│  │     • user: G",
        "│  │     • user: H",
        "│  └─ user: E",
        "└─ user: C",
    ]


def test_single_child_chain_under_root_stays_flat() -> None:
    b = _Builder()
    b.user("a", None)
    b.asst("b", "a")
    b.user("c", "b")
    assert b.lines() == ["• user: A", "• assistant: B", "• user: C"]


def test_multiple_roots_display_one_level_left_and_no_root_connectors() -> None:
    b = _Builder()
    b.user("r1", None)
    b.user("x", "r1")
    b.user("r2", None)
    b.user("y", "r2")
    b.user("z1", "y")
    b.user("z2", "y")
    # leaf z2: root r2 first. Roots: indent 1, displayed at 0, connector never drawn (so no
    # gutter either). y: rule 2 -> indent 2, displayed 1, no connector -> "   ".
    # z2, z1: indent 3, displayed 2, connector in cell 1.
    assert b.lines() == [
        "• user: R2",
        "   • user: Y",
        "   ├─ • user: Z2",
        "   └─ user: Z1",
        "user: R1",
        "   user: X",
    ]


def test_active_branch_first_is_a_stable_partition() -> None:
    b = _Builder()
    b.user("a", None)
    for k in ("p", "q", "r", "s"):
        b.user(k, "a")
    b.user("leaf", "r")
    out = b.lines()
    assert out == [
        "• user: A",
        "├─ • user: R",
        "│     • user: LEAF",
        "├─ user: P",
        "├─ user: Q",
        "└─ user: S",
    ]


def test_null_leaf_reorders_nothing_and_selects_last_row() -> None:
    b = _Builder()
    b.user("a", None)
    b.user("p", "a")
    b.user("q", "a")
    src = EntriesTreeSource(b.entries, None)
    page = build_view(src)
    assert [r.line() for r in page.rows] == ["user: A", "├─ user: P", "└─ user: Q"]
    assert page.selected_index == 2


def test_children_sorted_by_timestamp_with_ties_in_file_order() -> None:
    b = _Builder()
    b.user("a", None)
    late = b.user("late", "a")
    b.user("tie1", "a")
    b.user("tie2", "a")
    early = b.user("early", "a")
    late["timestamp"] = "2026-01-01T05:00:00.000Z"
    early["timestamp"] = "2025-01-01T00:00:00.000Z"
    b.entries[2]["timestamp"] = b.entries[3]["timestamp"] = "2026-01-01T01:00:00.000Z"
    out = b.lines(leaf=None)
    assert out == ["user: A", "├─ user: EARLY", "├─ user: TIE1", "├─ user: TIE2", "└─ user: LATE"]


def test_rows_keep_prefix_when_neighbours_are_filtered() -> None:
    b = _Builder()
    b.user("a", None)
    b.user("p", "a")
    b.user("o", "a")
    b.add("m", "p", "model_change", model="x/y")
    b.user("q", "m")
    # leaf q; m hidden in default mode, q keeps its flattened indent (2, gutter of p).
    assert b.lines() == ["• user: A", "├─ • user: P", "│     • user: Q", "└─ user: O"]


# --- display text ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tokens", "expected"),
    [(499, "0k"), (500, "1k"), (1499, "1k"), (1500, "2k"), (2500, "3k"), (3500, "4k"), (0, "0k")],
)
def test_compaction_rounds_half_up(tokens: int, expected: str) -> None:
    b = _Builder()
    b.user("a", None)
    b.add("c", "a", "compaction", summary="s", firstKeptEntryId="a", tokensBefore=tokens)
    assert b.texts()["c"] == f"[compaction: {expected} tokens]"


def test_label_and_marker_in_line() -> None:
    b = _Builder()
    b.user("a", None)
    b.user("b", "a")
    b.add("l", "b", "label", targetId="a", label="start")
    page = build_view(EntriesTreeSource(b.entries))
    assert [r.line() for r in page.rows] == ["• [start] user: A", "• user: B"]
    # the leaf (the label entry) is hidden in default mode -> its nearest visible ancestor
    assert page.selected_index == 1


def test_cleared_label_is_not_rendered() -> None:
    b = _Builder()
    b.user("a", None)
    b.add("l1", "a", "label", targetId="a", label="x")
    b.add("l2", "l1", "label", targetId="a", label="")
    assert b.lines(filter="all") == ["• user: A", "• [label: x]", "• [label: (cleared)]"]
    assert b.lines(filter="labeled-only") == []


def test_user_text_normalization_and_empty() -> None:
    b = _Builder()
    b.add("a", None, message={"role": "user", "content": "  line1\nline2\tx  ", "timestamp": 1})
    b.add("b", "a", message={"role": "user", "content": "", "timestamp": 1})
    b.add(
        "c",
        "b",
        message={
            "role": "user",
            "content": [
                {"type": "text", "text": "x" * 150},
                {"type": "image", "data": "AAAA", "mimeType": "image/png"},
                {"type": "text", "text": "y" * 100},
                {"type": "text", "text": "z" * 10},
            ],
            "timestamp": 1,
        },
    )
    t = b.texts()
    assert t["a"] == "user: line1 line2 x"
    assert t["b"] == "user: "
    assert t["c"] == "user: " + "x" * 150 + "y" * 50


def test_assistant_hiding_rule() -> None:
    b = _Builder()
    b.user("u", None)
    think = [{"type": "thinking", "thinking": "hmm"}]
    b.asst("missing", "u", think)
    b.asst("stop", "missing", [{"type": "text", "text": " \n "}], stopReason="stop")
    b.asst("tooluse", "stop", think, stopReason="toolUse")
    b.asst("error", "tooluse", think, stopReason="error", errorMessage="  boom\nbad  ")
    b.asst("aborted", "error", think, stopReason="aborted", errorMessage="ignored")
    b.asst("length", "aborted", [], stopReason="length")
    b.asst("long", "length", [], stopReason="error", errorMessage="E" * 100)
    b.asst("leaf", "long", [], stopReason="stop")
    for mode in ("default", "all"):
        t = b.texts(filter=mode)
        assert list(t) == ["u", "error", "aborted", "length", "long", "leaf"]
        assert t["error"] == "assistant: boom bad"
        assert t["aborted"] == "assistant: (aborted)"
        assert t["length"] == "assistant: (no content)"
        assert t["long"] == "assistant: " + "E" * 80
        assert t["leaf"] == "assistant: (no content)"


def test_entry_type_displays() -> None:
    b = _Builder()
    b.user("u", None)
    b.add("m", "u", "model_change", model="prov/mod")
    b.add("t1", "m", "thinking_level_change", thinkingLevel="high")
    b.add("t2", "t1", "thinking_level_change", thinkingLevel=None)
    b.add("cu", "t2", "custom", customType="ext", data={})
    b.add(
        "cm",
        "cu",
        "custom_message",
        customType="note",
        content=[{"type": "text", "text": "a\nb"}],
        display=True,
    )
    b.add("cs", "cm", "custom_message", customType="note", content="  s  ", display=True)
    b.add("bs", "cs", "branch_summary", fromId="u", summary="did\tthings")
    b.add("be", "bs", "branch_summary", fromId="u", summary="")
    b.add("bx", "be", message={"role": "bashExecution", "command": "ls\n-la", "output": "", "timestamp": 1})
    b.add("py", "bx", message={"role": "pythonExecution", "code": "1", "timestamp": 1})
    b.add("fm", "py", message={"role": "fileMention", "files": [], "timestamp": 1})
    b.add("cr", "fm", message={"role": "custom", "customType": "x", "content": "c", "timestamp": 1})
    t = b.texts(filter="all")
    assert t["m"] == "[model: prov/mod]"
    assert t["t1"] == "[thinking: high]"
    assert t["t2"] == "[thinking: off]"
    assert t["cu"] == "[custom: ext]"
    assert t["cm"] == "[note]: a b"
    assert t["cs"] == "[note]: s"
    assert t["bs"] == "[branch summary]: did things"
    assert t["be"] == "[branch summary]: "
    assert t["bx"] == "[bash]: ls -la"
    assert t["py"] == "[pythonExecution]"
    assert t["fm"] == "[fileMention]"
    assert t["cr"] == "[custom]"


def test_custom_message_text_has_no_200_cap() -> None:
    b = _Builder()
    b.user("u", None)
    b.add(
        "cm",
        "u",
        "custom_message",
        customType="n",
        content=[{"type": "text", "text": "q" * 300}],
        display=True,
    )
    assert b.texts()["cm"] == "[n]: " + "q" * 300


def test_state_entries_say_what_they_are() -> None:
    b = _Builder()
    b.add("si", None, "session_init", systemPrompt="p", task="t", tools=[])
    b.add("mc", "si", "mode_change", mode="plan")
    b.add("tt", "mc", "ttsr_injection", injectedRules=["r"])
    b.add("st", "tt", "service_tier_change", serviceTier="flex")
    b.add("mt", "st", "mcp_tool_selection", selectedToolNames=["a"])
    b.add("cc", "mt", "context_change", contextName="n", tenant="t", namespace="ns")
    b.user("u", "cc")
    for mode in ("default", "no-tools", "all"):
        t = b.texts(filter=mode)
        assert list(t) == ["si", "mc", "tt", "st", "mt", "cc", "u"]
        # the reference's selector draws these as empty rows; every row here says what it
        # is (docs/divergences.md, "Every row says what it is")
        assert [t[k] for k in ("si", "mc", "tt", "st", "mt", "cc")] == [
            "[session init]",
            "[mode: plan]",
            "[ttsr injection]",
            "[service tier: flex]",
            "[mcp tool selection]",
            "[context change]",
        ]
    assert b.lines()[0] == "• [session init]"


# --- tool calls ------------------------------------------------------------------------


def _tool_view(calls: list[tuple[str, dict[str, Any]]], home: str | None = None) -> list[str]:
    b = _Builder()
    b.user("u", None)
    content = [
        {"type": "toolCall", "id": f"c{i}", "name": n, "arguments": a} for i, (n, a) in enumerate(calls)
    ]
    b.asst("a", "u", content, stopReason="toolUse")
    parent = "a"
    for i in range(len(calls)):
        b.add(
            f"r{i}",
            parent,
            message={
                "role": "toolResult",
                "toolCallId": f"c{i}",
                "toolName": "zz",
                "content": [],
                "timestamp": 1,
            },
        )
        parent = f"r{i}"
    t = b.texts(home=home) if home else b.texts()
    assert "a" not in t  # no text, stopReason toolUse, not the leaf
    return [t[f"r{i}"] for i in range(len(calls))]


def test_read_ranges() -> None:
    out = _tool_view(
        [
            ("read", {"path": "/p/a.py"}),
            ("read", {"path": "/p/a.py", "offset": 10, "limit": 5}),
            ("read", {"path": "/p/a.py", "offset": 10}),
            ("read", {"path": "/p/a.py", "limit": 5}),
            ("read", {"path": "/p/a.py", "offset": 1, "limit": 0}),
            ("read", {"path": "", "file_path": "/p/b.py"}),
            ("write", {"file_path": "/p/c.py"}),
            ("edit", {"path": "/p/d.py"}),
        ]
    )
    assert out == [
        "[read: /p/a.py]",
        "[read: /p/a.py:10-14]",
        "[read: /p/a.py:10]",
        "[read: /p/a.py:1-5]",
        "[read: /p/a.py:1]",
        "[read: /p/b.py]",
        "[write: /p/c.py]",
        "[edit: /p/d.py]",
    ]


def test_shorten_path_is_a_plain_prefix() -> None:
    out = _tool_view(
        [("read", {"path": "/home/tester/x"}), ("read", {"path": "/home/tester2/x"})], home="/home/tester"
    )
    assert out == ["[read: ~/x]", "[read: ~2/x]"]


def test_bash_grep_find_ls_and_unknown() -> None:
    long_args = {"query": "x" * 50}
    js = json.dumps(long_args, separators=(",", ":"))
    out = _tool_view(
        [
            ("bash", {"command": "echo a\n\techo b"}),
            ("bash", {"command": "ls" + " " * 49}),
            ("bash", {"command": "c" * 50}),
            ("bash", {"command": "d" * 51}),
            ("grep", {"pattern": "foo"}),
            ("grep", {"pattern": "foo", "path": "src"}),
            ("find", {"pattern": "*.py"}),
            ("ls", {}),
            ("Read", {"path": "/a"}),
            ("mytool", long_args),
        ]
    )
    assert out == [
        "[bash: echo a  echo b]",
        "[bash: ls...]",
        "[bash: " + "c" * 50 + "]",
        "[bash: " + "d" * 50 + "...]",
        "[grep: /foo/ in .]",
        "[grep: /foo/ in src]",
        "[find: *.py in .]",
        "[ls: .]",
        '[Read: {"path":"/a"}]',
        "[mytool: " + js[:40] + "...]",
    ]


def test_tool_result_without_call_and_duplicate_ids_across_branches() -> None:
    b = _Builder()
    b.user("u", None)
    b.asst(
        "a1",
        "u",
        [{"type": "toolCall", "id": "t1", "name": "read", "arguments": {"path": "/one"}}],
        stopReason="toolUse",
    )
    b.asst(
        "a2",
        "u",
        [{"type": "toolCall", "id": "t1", "name": "read", "arguments": {"path": "/two"}}],
        stopReason="toolUse",
    )
    b.add(
        "tr",
        "a2",
        message={"role": "toolResult", "toolCallId": "t1", "toolName": "read", "content": [], "timestamp": 1},
    )
    b.add(
        "n1",
        "tr",
        message={"role": "toolResult", "toolCallId": "zz", "toolName": "grep", "content": [], "timestamp": 1},
    )
    b.add("n2", "n1", message={"role": "toolResult", "toolCallId": "zz", "content": [], "timestamp": 1})
    # flattened order (leaf n2): u, a2, tr, n1, n2, a1 -> the later duplicate (a1) wins
    t = b.texts()
    assert t["tr"] == "[read: /one]"
    assert t["n1"] == "[grep]"
    assert t["n2"] == "[tool]"


def test_migrated_hook_message_shows_custom(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    lines = [
        {
            "type": "session",
            "version": 2,
            "id": "sess",
            "timestamp": "2026-01-01T00:00:00.000Z",
            "cwd": str(tmp_path),
        },
        {
            "type": "message",
            "id": "u",
            "parentId": None,
            "timestamp": "2026-01-01T00:00:01.000Z",
            "message": {"role": "user", "content": "hi", "timestamp": 1},
        },
        {
            "type": "message",
            "id": "h",
            "parentId": "u",
            "timestamp": "2026-01-01T00:00:02.000Z",
            "message": {
                "role": "hookMessage",
                "customType": "k",
                "content": "x",
                "display": True,
                "timestamp": 2,
            },
        },
    ]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    m = SessionManager.open(str(path), session_dir=str(tmp_path))
    assert [r.text for r in build_view(m).rows] == ["user: hi", "[custom]"]


# --- filters, search, selection -------------------------------------------------------


def _mixed() -> _Builder:
    b = _Builder()
    b.user("u1", None, "first question")
    b.asst(
        "a1",
        "u1",
        [
            {"type": "text", "text": "answer"},
            {"type": "toolCall", "id": "c", "name": "bash", "arguments": {"command": "make"}},
        ],
    )
    b.add(
        "tr",
        "a1",
        message={
            "role": "toolResult",
            "toolCallId": "c",
            "toolName": "bash",
            "content": [{"type": "text", "text": "Secret Output"}],
            "timestamp": 1,
        },
    )
    b.add("m", "tr", "model_change", model="prov/mod")
    b.add("th", "m", "thinking_level_change", thinkingLevel="low")
    b.add("cu", "th", "custom", customType="ext")
    b.add("cm", "cu", "custom_message", customType="note", content="hello note", display=True)
    b.add("lb", "cm", "label", targetId="u1", label="mark")
    b.user("u2", "lb", "second question")
    return b


def test_filter_modes() -> None:
    b = _mixed()
    assert list(b.texts()) == ["u1", "a1", "tr", "cm", "u2"]
    assert list(b.texts(filter="no-tools")) == ["u1", "a1", "cm", "u2"]
    assert list(b.texts(filter="user-only")) == ["u1", "u2"]
    assert list(b.texts(filter="labeled-only")) == ["u1"]
    assert list(b.texts(filter="all")) == ["u1", "a1", "tr", "m", "th", "cu", "cm", "lb", "u2"]


def test_search_tokens_all_must_match() -> None:
    b = _mixed()
    assert list(b.texts(search="QUESTION")) == ["u1", "u2"]
    assert list(b.texts(search="question second")) == ["u2"]
    assert list(b.texts(search="question  missing")) == []
    # label text is searchable; the toolResult by its content
    assert list(b.texts(search="mark")) == ["u1"]
    assert list(b.texts(search="secret")) == ["tr"]
    # The reference finds nothing for "make" (a toolResult is searched by its content, not
    # its displayed call); DIVERGENCE 9 also matches the display "[bash: make]". The
    # reference's result ([]) stays a subset of sessiontree's.
    assert list(b.texts(search="make")) == ["tr"]
    assert list(b.texts(search="toolresult output")) == ["tr"]
    assert list(b.texts(search="note hello")) == ["cm"]
    assert list(b.texts(filter="all", search="model prov")) == ["m"]
    assert list(b.texts(filter="all", search="thinking low")) == ["th"]
    assert list(b.texts(filter="all", search="custom ext")) == ["cu"]
    # u1's searchable text is "mark user first question": no "label" in it
    assert list(b.texts(filter="all", search="label mark")) == ["lb"]


def test_search_branch_summary_and_compaction() -> None:
    b = _Builder()
    b.user("u", None)
    b.add("bs", "u", "branch_summary", fromId="u", summary="Went Elsewhere")
    b.add("c", "bs", "compaction", summary="zzz", firstKeptEntryId="u", tokensBefore=1)
    b.add("x", "c", message={"role": "bashExecution", "command": "pytest -q", "output": "", "timestamp": 1})
    assert list(b.texts(search="branch elsewhere")) == ["bs"]
    assert list(b.texts(search="compaction")) == ["c"]
    assert list(b.texts(search="zzz")) == []
    assert list(b.texts(search="bashexecution pytest")) == ["x"]


def test_selection_nearest_visible_ancestor_and_fallback() -> None:
    b = _mixed()
    src = EntriesTreeSource(b.entries, "th")
    page = build_view(src)
    assert [r.id for r in page.rows] == ["u1", "a1", "tr", "cm", "u2"]
    assert page.selected_index == 2  # th hidden -> m hidden -> tr
    page = build_view(src, filter="user-only")
    assert page.selected_index == 0
    page = build_view(src, search="second")
    assert page.selected_index == 0  # no ancestor visible -> last row
    page = build_view(src, search="nothing-matches")
    assert page.total == 0 and page.rows == []
