"""One display-name rule for a session (core.discovery.display_name): listings, titles, CLI."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from sessiontree.core import SessionManager
from sessiontree.core.discovery import (
    DISPLAY_NAME_LIMIT,
    NO_MESSAGES,
    display_name,
    display_name_of_manager,
    list_sessions,
)


def test_the_rule() -> None:
    assert display_name("Title", "hello", "/s/x.jsonl") == "Title"
    assert display_name(None, "/mode\nswitch to plan mode", "/s/x.jsonl") == "/mode"
    assert display_name("", "\n\n  first  real\tline \nmore", "/s/x.jsonl") == "first real line"
    assert display_name(None, NO_MESSAGES, "/s/2026-01-01_abc.jsonl") == "2026-01-01_abc"
    assert display_name(None, "", "/s/abc.jsonl") == "abc"
    assert display_name("  \n ", None, None, "sid-1") == "sid-1"
    assert display_name("a\x1b[31mb", None, None) == "a [31mb"  # control characters are a space
    long = "x" * (DISPLAY_NAME_LIMIT + 5)
    cut = display_name(None, long, None)
    assert len(cut) == DISPLAY_NAME_LIMIT and cut.endswith("…") and cut[:-1] == long[: DISPLAY_NAME_LIMIT - 1]
    assert display_name(None, "x" * DISPLAY_NAME_LIMIT, None) == "x" * DISPLAY_NAME_LIMIT
    assert display_name("cut \ud83d here", None, None) == "cut \ufffd here"  # a lone surrogate


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _header(**extra: Any) -> dict[str, Any]:
    return {
        "type": "session",
        "version": 3,
        "id": "sid",
        "timestamp": "2026-01-01T00:00:00.000Z",
        "cwd": "/w",
        **extra,
    }


def _msg(eid: str, parent: str | None, role: str, content: Any) -> dict[str, Any]:
    return {
        "type": "message",
        "id": eid,
        "parentId": parent,
        "timestamp": "2026-01-01T00:00:01.000Z",
        "message": {"role": role, "content": content, "timestamp": 1},
    }


CASES: dict[str, tuple[list[dict[str, Any]], str]] = {
    "untitled": (
        [_header(), _msg("1", None, "user", "/mode\nplan it"), _msg("2", "1", "assistant", "ok")],
        "/mode",
    ),
    "titled": ([_header(title="Fix the build\nsecond line"), _msg("1", None, "user", "hi")], "Fix the build"),
    "blocks": (
        [
            _header(),
            _msg("1", None, "user", [{"type": "text", "text": "look"}, {"type": "text", "text": "here"}]),
        ],
        "look here",
    ),
    "compacted": (
        [
            _header(),
            _msg("1", None, "user", "start"),
            {
                "type": "compaction",
                "id": "c",
                "parentId": "1",
                "timestamp": "2026-01-01T00:00:02.000Z",
                "summary": "s",
                "shortSummary": "Short one",
                "firstKeptEntryId": "1",
                "tokensBefore": 5,
            },
        ],
        "Short one",
    ),
    "no-user": ([_header(), _msg("1", None, "assistant", "only me")], "no-user"),
    "empty": ([_header()], "empty"),
    "long": ([_header(), _msg("1", None, "user", "w" * 100)], "w" * (DISPLAY_NAME_LIMIT - 1) + "…"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_listing_and_an_open_session_have_one_name(tmp_path: Path, case: str) -> None:
    rows, want = CASES[case]
    path = _write(tmp_path / "sessions" / f"{case}.jsonl", rows)
    (listed,) = list_sessions(str(path.parent))
    assert listed.display_name == want
    assert listed.to_dict()["displayName"] == want
    mgr = SessionManager.open(str(path), read_only=True)
    assert display_name_of_manager(mgr) == want


def test_an_in_memory_session_is_named_by_its_first_message_or_id() -> None:
    mgr = SessionManager.in_memory("/w")
    assert display_name_of_manager(mgr) == mgr.get_session_id()
    mgr.append_message({"role": "user", "content": "hello there\nsecond", "timestamp": 1})
    assert display_name_of_manager(mgr) == "hello there"


def test_ls_prints_the_display_name(tmp_path: Path) -> None:
    d = tmp_path / "sessions"
    for case, (rows, _) in CASES.items():
        _write(d / f"{case}.jsonl", rows)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    res = subprocess.run(
        [sys.executable, "-m", "sessiontree", "ls", "--session-dir", str(d)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=True,
    )
    lines = {line.rsplit("  ", 1)[1]: line for line in res.stdout.splitlines()}
    for case, (_, want) in CASES.items():
        # "1 msg ", "2 msgs": the column of names stays where it is
        assert re.search(rf" msgs? +{re.escape(want)}  ", lines[str(d / f"{case}.jsonl")]), (case, lines)
