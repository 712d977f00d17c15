"""The navigation state file shared by several daemons (one per editor)."""

from __future__ import annotations

import json
from pathlib import Path

from sessiontree.lsp.state import NavigationState


def test_two_daemons_do_not_lose_each_others_records(tmp_path: Path) -> None:
    a = NavigationState(tmp_path)
    b = NavigationState(tmp_path)
    a.record_jump("/s/one.jsonl", leaf_id="x1", previous_leaf_id="x0", last_entry_id="x9")
    b.record_jump("/s/two.jsonl", leaf_id="y1", previous_leaf_id="y0", last_entry_id="y9")
    a.remember_leaf("/s/one.jsonl", "x2", "x9")
    data = json.loads((tmp_path / "state.json").read_text())
    assert set(data["sessions"]) == {"/s/one.jsonl", "/s/two.jsonl"}
    assert data["sessions"]["/s/one.jsonl"]["leafId"] == "x2"
    # b sees a's latest leaf without restarting
    rec = b.get("/s/one.jsonl")
    assert rec is not None and rec["leafId"] == "x2"
    assert b.history("/s/one.jsonl")[1] == 1


def test_history_is_bounded_and_back_truncates(tmp_path: Path) -> None:
    s = NavigationState(tmp_path)
    for i in range(250):
        s.record_jump("/s/a.jsonl", leaf_id=f"n{i}", previous_leaf_id=f"n{i - 1}", last_entry_id="z")
    items, index = s.history("/s/a.jsonl")
    assert len(items) == 200 and index == 200 and items[-1]["leafId"] == "n249"
    s.step_back("/s/a.jsonl", "n248", "z")
    s.record_jump("/s/a.jsonl", leaf_id="other", previous_leaf_id="n248", last_entry_id="z")
    items, index = s.history("/s/a.jsonl")
    assert index == len(items) == 200 and items[-1]["leafId"] == "other" and items[-2]["leafId"] == "n248"


def test_a_damaged_state_file_is_set_aside(tmp_path: Path) -> None:
    (tmp_path / "state.json").write_text("{ not json")
    s = NavigationState(tmp_path)
    assert s.get("/s/a.jsonl") is None
    assert any(p.name.startswith("state.broken-") for p in tmp_path.iterdir())
    s.remember_leaf("/s/a.jsonl", None, None)
    assert json.loads((tmp_path / "state.json").read_text())["sessions"]["/s/a.jsonl"]["leafId"] is None


def test_memory_only_state_writes_nothing(tmp_path: Path) -> None:
    s = NavigationState(None)
    s.record_jump("h1", leaf_id="a", previous_leaf_id=None, last_entry_id="a")
    assert s.history("h1")[1] == 1
    assert list(tmp_path.iterdir()) == []
