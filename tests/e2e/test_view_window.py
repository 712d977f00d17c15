"""`session/view` with `selectedWindow` over stdio with a real daemon: the first page and the
rows around the selected row in one answer (docs/protocol.md, ViewWindow)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from e2e_helpers import generate
from sessiontree.client import Client, RpcError

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Any:
    tmp = tmp_path_factory.mktemp("window")
    agent = tmp / "agent"
    d = agent / "sessions" / "--p--"
    d.mkdir(parents=True)
    path = generate(d / "2026-01-01T00-00-00-000Z_s.jsonl", 3000, "--seed", "5", "--branch-every", "40")
    env = {
        "PI_CODING_AGENT_DIR": str(agent),
        "XDG_CACHE_HOME": str(tmp / "cache"),
        "PYTHONPATH": os.pathsep.join([str(REPO / "server"), str(REPO / "protocol")]),
    }
    init = {
        "agentDir": str(agent),
        "stateDir": str(tmp / "state"),
        "allowedRoots": [str(agent)],
        "watch": False,
    }
    with Client.spawn(init_options=init, env=env) as c:
        handle = c.request("session/open", {"path": str(path)})["session"]
        yield c, handle


def _view(c: Client, handle: str, **params: Any) -> dict[str, Any]:
    return c.request("session/view", {"session": handle, **params})


def test_the_window_is_the_page_around_the_selected_row(daemon: Any) -> None:
    c, handle = daemon
    # the current leaf (the last rows), an old entry as the leaf (the middle), searches
    whole = _view(c, handle)
    middle = whole["rows"][len(whole["rows"]) // 2]["id"]
    cases: list[dict[str, Any]] = [
        {},
        {"filter": "all"},
        {"filter": "user-only"},
        {"leafId": middle},
        {"search": "the", "partial": True},
    ]
    seen = 0
    for params in cases:
        for limit, size in ((50, 50), (50, 120), (200, 30)):
            got = _view(c, handle, offset=0, limit=limit, selectedWindow=size, **params)
            plain = _view(c, handle, offset=0, limit=limit, **params)
            assert {k: v for k, v in got.items() if k != "window"} == plain, params
            sel, total = got["selectedIndex"], got["total"]
            assert sel is not None
            if sel < limit:
                assert "window" not in got, (params, limit, sel)
                continue
            seen += 1
            win = got["window"]
            assert win["offset"] == max(limit, min(sel - size // 2, total - size)), (params, limit, size)
            page = _view(c, handle, offset=win["offset"], limit=size, **params)
            assert win["rows"] == page["rows"], params
            assert win["offset"] <= sel < win["offset"] + len(win["rows"])
            row = win["rows"][sel - win["offset"]]
            assert row["onActivePath"], params  # the leaf's row or its nearest shown ancestor's
            if "filter" not in params and "search" not in params:
                assert row["id"] == got["leafId"] == params.get("leafId", got["leafId"])
    assert seen >= 8


def test_no_window_when_the_rows_hold_or_pass_the_selected_row(daemon: Any) -> None:
    c, handle = daemon
    head = _view(c, handle, limit=0)
    total, sel = head["total"], head["selectedIndex"]
    assert sel is not None and sel > 100
    # the rows asked for hold it, or lie past it, or no window is asked for
    for params in (
        {"offset": sel - 10, "limit": 50, "selectedWindow": 50},
        {"offset": sel + 1, "limit": 50, "selectedWindow": 50},
        {"offset": 0, "limit": total, "selectedWindow": 50},
        {"offset": 0, "limit": 50, "selectedWindow": 0},
        {"offset": 0, "limit": 50},
    ):
        assert "window" not in _view(c, handle, **params), params
    # a window never starts before the end of the rows asked for
    got = _view(c, handle, offset=0, limit=sel, selectedWindow=400)
    assert got["window"]["offset"] == sel
    assert got["window"]["rows"][0]["id"] == got["leafId"] and got["window"]["rows"][0]["isLeaf"]


def test_a_negative_window_is_refused(daemon: Any) -> None:
    c, handle = daemon
    with pytest.raises(RpcError) as err:
        _view(c, handle, limit=10, selectedWindow=-1)
    assert err.value.code == -32602
    assert "selectedWindow" in err.value.message
