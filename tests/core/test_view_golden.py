"""Golden renderings of the tree view (regenerate with SESSIONTREE_REGEN_GOLDEN=1).

Each golden file holds the full lines of one rendering, then a line with the row count,
the selected row and the filter suffix. The demo session and the real v1 session are
opened with the real SessionManager (read-only); the constructed trees go through
EntriesTreeSource.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from golden import GOLDEN as GOLDEN_ROOT
from golden import check_golden
from sessiontree.core.session import SessionManager
from sessiontree.core.view import FILTER_MODES, EntriesTreeSource, ViewPage, build_view
from shared_data import real_v1_session

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = GOLDEN_ROOT / "view"
DEMO = ROOT / "server" / "sessiontree" / "data" / "demo-session.jsonl"
HOME = "/home/tester"


def render(page: ViewPage) -> str:
    lines = [r.line() for r in page.rows]
    sel = page.rows[page.selected_index].id if page.selected_index is not None else None
    lines.append(f"-- {page.total} rows, selected #{page.selected_index} ({sel}){page.footer_suffix()}")
    return "\n".join(lines) + "\n"


def check(name: str, text: str) -> None:
    check_golden(GOLDEN / f"{name}.txt", text)


def ent(eid: str, parent: str | None, etype: str = "message", sec: int = 0, **kw: Any) -> dict[str, Any]:
    d: dict[str, Any] = {
        "type": etype,
        "id": eid,
        "parentId": parent,
        "timestamp": f"2026-01-01T00:00:{sec:02d}.000Z",
    }
    d.update(kw)
    return d


def user(eid: str, parent: str | None, text: str, sec: int = 0) -> dict[str, Any]:
    return ent(eid, parent, sec=sec, message={"role": "user", "content": text})


def asst(
    eid: str, parent: str | None, text: str | None, sec: int = 0, stop: str = "stop", calls: Any = ()
) -> dict[str, Any]:
    content: list[Any] = [] if text is None else [{"type": "text", "text": text}]
    content += [{"type": "toolCall", "id": c[0], "name": c[1], "arguments": c[2]} for c in calls]
    return ent(eid, parent, sec=sec, message={"role": "assistant", "content": content, "stopReason": stop})


def result(eid: str, parent: str, call: str, name: str, text: str, sec: int = 0) -> dict[str, Any]:
    return ent(
        eid,
        parent,
        sec=sec,
        message={
            "role": "toolResult",
            "toolCallId": call,
            "toolName": name,
            "content": [{"type": "text", "text": text}],
        },
    )


def constructed() -> list[dict[str, Any]]:
    """Three roots, nested branch points, labels, hidden entry types and tool calls."""
    return [
        user("r1", None, "first root", 1),
        asst("a1", "r1", "answer one", 2),
        user("b1", "a1", "branch one", 3),
        asst(
            "t1",
            "b1",
            None,
            4,
            "toolUse",
            [("c1", "read", {"path": f"{HOME}/p/a.py", "offset": 3, "limit": 4})],
        ),
        result("t1r", "t1", "c1", "read", "file body", 5),
        asst("b1e", "t1r", "read it", 6),
        user("b2", "a1", "branch two", 7),
        user("b2a", "b2", "deeper a", 8),
        user("b2b", "b2", "deeper b", 9),
        asst("b2b1", "b2b", None, 10, "toolUse", [("c2", "mystery", {"k": [1, 2.5], "s": "x" * 40})]),
        result("b2b1r", "b2b1", "c2", "mystery", "ok", 11),
        ent("mc", "b2b1r", "model_change", 12, model="openai/gpt-4o"),
        ent("tl", "mc", "thinking_level_change", 13, thinkingLevel="high"),
        asst("b2b2", "tl", "after the model change", 14),
        ent("lb1", "b2b2", "label", 15, targetId="b2", label="two"),
        ent("lb2", "lb1", "label", 16, targetId="b1e", label="read done"),
        user("b3", "a1", "branch three", 17),
        ent("cp", "b3", "compaction", 18, summary="S", firstKeptEntryId="b3", tokensBefore=1500),
        ent("bs", "cp", "branch_summary", 19, fromId="cp", summary="came back"),
        asst("err", "bs", None, 20, "error"),
        ent("si", "err", "session_init", 21, systemPrompt="", task="", tools=[]),
        user("r2", None, "second root", 22),
        ent("cm", "r2", "custom_message", 23, customType="hint", content="a hint", display=True),
        ent("cu", "cm", "custom", 24, customType="state"),
        user("r3", "missing-parent", "orphan root", 25),
        ent("lb3", "r3", "label", 26, targetId="r2", label="root two"),
    ]


@pytest.mark.parametrize("mode", FILTER_MODES)
@pytest.mark.parametrize("leaf", ["b2b2", "b1e", "r2", None])
def test_constructed_tree(mode: str, leaf: str | None) -> None:
    page = build_view(EntriesTreeSource(constructed()), filter=mode, leaf_id=leaf, home=HOME)
    check(f"constructed-{leaf or 'noleaf'}-{mode}", render(page))


@pytest.mark.parametrize("search", ["branch", "root two", "deeper B", "model", "file body", "zzz"])
def test_constructed_search(search: str) -> None:
    page = build_view(
        EntriesTreeSource(constructed()), filter="all", search=search, leaf_id="b2b2", home=HOME
    )
    check("constructed-search-" + search.replace(" ", "_").lower(), render(page))


@pytest.mark.parametrize("mode", FILTER_MODES)
def test_demo_session(mode: str) -> None:
    mgr = SessionManager.open(str(DEMO), read_only=True)
    check(f"demo-{mode}", render(build_view(mgr, filter=mode, home=HOME)))


def test_demo_from_the_abandoned_branch() -> None:
    mgr = SessionManager.open(str(DEMO), read_only=True)
    target = next(
        e["id"] for e in mgr.get_entries() if "keep coming back" in str(e.get("message", {}).get("content"))
    )
    check("demo-abandoned-leaf", render(build_view(mgr, leaf_id=target, home=HOME)))


@pytest.mark.parametrize("mode", ["default", "no-tools", "user-only"])
def test_real_v1_session(mode: str, tmp_path: Path) -> None:
    copy = tmp_path / "real-v1.jsonl"
    shutil.copyfile(real_v1_session(), copy)
    mgr = SessionManager.open(str(copy))
    page = build_view(mgr, filter=mode, home="/Users/badlogic")
    # the migration gives new random ids: keep them out of the golden text
    text = (
        "\n".join(r.line() for r in page.rows) + f"\n-- {page.total} rows, selected #{page.selected_index}\n"
    )
    check(f"real-v1-{mode}", text)
