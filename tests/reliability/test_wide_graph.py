"""Issue 32, item 11: a graph answer is bounded whatever the session.

60,000 sidechains off one root used to give `session/graph` 60,001 nodes and lanes and a
33 MB answer (61 s). A wide fan is now folded like a long run: a page of its branches (the
leaf's always among them) and "more" nodes that a client pages through; and no graph holds
more than `nodes_max()` nodes. Sizes are counted, not timed (figures:
benchmarks/graph_export.py, docs/graph-export-compare.md).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from sessiontree.client import Client
from sessiontree.core.graph import build_graph, render_html
from sessiontree.core.session import SessionManager

pytestmark = pytest.mark.timeout(300)

WIDE = 60_000
FAN_MAX = 24  # the default fan (`core.graph.model.FAN_MAX`)


def _fan_session(path: Path, width: int, *, leaf_at: int) -> list[str]:
    """A root with ``width`` one-entry sidechains; the last line is child ``leaf_at`` again
    (a label on it), so the leaf is in the middle of the fan. The children's ids, in order."""
    lines = [
        json.dumps(
            {"type": "session", "version": 3, "id": "wide", "timestamp": "2026-01-01T00:00:00Z", "cwd": "/"}
        )
    ]
    lines.append(
        json.dumps(
            {
                "type": "message",
                "id": "root",
                "parentId": None,
                "timestamp": "2026-01-01T00:00:00Z",
                "message": {"role": "user", "content": "start"},
            }
        )
    )
    kids = [f"k{i:05d}" for i in range(width)]
    order = [i for i in range(width) if i != leaf_at] + [leaf_at]
    for i in order:
        lines.append(
            json.dumps(
                {
                    "type": "message",
                    "id": kids[i],
                    "parentId": "root",
                    "timestamp": f"2026-01-01T00:{i // 3600 % 60:02d}:{i // 60 % 60:02d}.{i % 60:03d}Z",
                    "message": {"role": "user", "content": f"side chain {i}"},
                }
            )
        )
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return kids


def test_a_wide_fan_is_folded_and_paged(tmp_path: Path) -> None:
    path = tmp_path / "wide.jsonl"
    kids = _fan_session(path, WIDE, leaf_at=31_337)
    mgr = SessionManager.open(str(path), read_only=True)
    order = mgr.index.children("root")
    leaf = mgr.get_leaf_id()
    assert leaf == kids[31_337] and len(order) == WIDE
    g = build_graph(mgr)
    size = len(json.dumps(g.to_dict()))
    assert len(g.nodes) <= FAN_MAX + 4 and g.lanes <= FAN_MAX + 2, (len(g.nodes), g.lanes)
    assert size < 50_000 and len(render_html(g)) < 100_000
    more = [n for n in g.nodes if n.kind == "more"]
    assert [(m.fan_parent, m.fan_offset, m.count) for m in more] == [("root", FAN_MAX, WIDE - FAN_MAX)]
    assert any(n.leaf and n.id == leaf for n in g.nodes)  # the leaf's branch is always drawn
    # paging through the "more" nodes draws every branch exactly once
    seen: list[str] = []
    offset: int | None = 0
    pages = 0
    while offset is not None:
        page = build_graph(mgr, pages={"root": offset})
        seen += [n.id for n in page.nodes if n.kind == "entry" and n.id != "root" and not n.leaf]
        nxt = [
            n for n in page.nodes if n.kind == "more" and n.fan_offset is not None and n.fan_offset > offset
        ]
        offset = nxt[0].fan_offset if nxt else None
        pages += 1
        assert len(page.nodes) <= FAN_MAX + 4
        assert pages <= WIDE // FAN_MAX + 2
    assert sorted({*seen, leaf}) == sorted(order)
    # an "earlier" node leads back
    back = build_graph(mgr, pages={"root": 600})
    assert any(n.kind == "more" and n.fan_offset == 600 - FAN_MAX and n.count == 600 for n in back.nodes)


def test_no_graph_holds_more_than_its_node_bound(tmp_path: Path) -> None:
    # nothing folded (collapse 0): only the bound keeps the answer small
    gen = Path(__file__).resolve().parents[2] / "benchmarks" / "gen_corpus.py"
    path = tmp_path / "bushy.jsonl"
    subprocess.run(
        [sys.executable, str(gen), str(path), "3000", "--seed", "3", "--branch-every", "5"],
        check=True,
        capture_output=True,
    )
    mgr = SessionManager.open(str(path), read_only=True)
    g = build_graph(mgr, collapse=0, max_nodes=500)
    assert g.truncated and len(g.nodes) == 500 and g.lanes <= 500
    assert "cut at 500 nodes" in render_html(g)
    assert not build_graph(mgr, collapse=0, max_nodes=100_000).truncated


def test_the_daemon_and_the_command_line_answer_a_wide_fan_in_bounded_size(tmp_path: Path) -> None:
    path = tmp_path / "wide.jsonl"
    _fan_session(path, WIDE, leaf_at=7)
    env = {"HOME": str(tmp_path), "PI_CODING_AGENT_DIR": str(tmp_path / "agent")}
    opts: dict[str, Any] = {
        "agentDir": str(tmp_path / "agent"),
        "allowedRoots": [str(tmp_path)],
        "watch": False,
    }
    with Client.spawn(init_options=opts, env=env) as c:
        s = c.request("session/open", {"path": str(path)}, timeout=120)["session"]
        r = c.request("session/graph", {"session": s, "nonce": "abc"}, timeout=120)
        assert len(r["nodes"]) <= FAN_MAX + 4 and r["lanes"] <= FAN_MAX + 2
        assert len(json.dumps(r)) < 200_000
        more = [n for n in r["nodes"] if n["kind"] == "more"]
        assert more and more[0]["fanParent"] == "root"
        nxt = c.request("session/graph", {"session": s, "pages": {"root": more[0]["fanOffset"]}}, timeout=120)
        assert {n["id"] for n in nxt["nodes"] if n["kind"] == "entry"} - {n["id"] for n in r["nodes"]}
    out = subprocess.run(
        [sys.executable, "-m", "sessiontree", "graph", str(path), "--json", "--page", "root:48"],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert len(data["nodes"]) <= FAN_MAX + 4 and len(out.stdout) < 50_000
