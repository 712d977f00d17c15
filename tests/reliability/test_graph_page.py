"""Issue 34: the graph page in a pane narrower than its texts, in a real headless Chromium.

Node text used to show through the sticky header once the page was scrolled sideways (the
header was as wide as the window, the graph wider), and texts were cut by the SVG's fixed
width (~800 px) without a mark. Now the header is outside the scrolling box and the texts
are fitted to the pane: a text too long for it ends in "…" and is whole in the node's
tooltip. Measured with the page's own DOM geometry (`elementFromPoint`, bounding boxes);
``SESSIONTREE_SCREENSHOTS=DIR`` keeps the screenshots (docs/images/graph-*.png are made so).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from headless import chromium_path, load_page

pytestmark = [
    pytest.mark.timeout(240),
    pytest.mark.skipif(chromium_path() is None, reason="no chromium (scripts/setup-system.sh installs it)"),
]

WORDS = [
    "refactor",
    "the",
    "session",
    "loader",
    "so",
    "that",
    "a",
    "torn",
    "last",
    "line",
    "is",
    "kept",
    "aside",
    "and",
    "reported",
]

# What the page shows, measured where a person looks: the header's band (every point of it
# must be the header: nothing of the graph over or beside it), each node's text (inside the
# pane; cut ones end in "…", are a prefix of the whole text, and the tooltip holds it whole).
MEASURE = """
(() => {
  const header = document.querySelector("header");
  const box = document.getElementById("graph");
  const out = { bleed: [], outside: [], wrongCut: [], cut: 0, whole: 0, nodes: 0 };
  const band = () => {
    const h = header.getBoundingClientRect();
    for (let y = h.top + 2; y < h.bottom - 1; y += 5) {
      for (let x = 2; x < window.innerWidth - 1; x += 9) {
        const el = document.elementFromPoint(x, y);
        if (!el || !header.contains(el)) out.bleed.push([x, Math.round(y), el ? el.tagName : null]);
      }
    }
  };
  band();
  // scrolled as far down and sideways as the page goes (the window and the graph's box)
  box.scrollTo(100000, box.scrollHeight / 2);
  window.scrollTo(100000, 600);
  band();
  const pane = box.getBoundingClientRect();
  const right = pane.left + box.clientWidth;
  const data = JSON.parse(document.getElementById("graph-data").textContent).nodes;
  for (const g of document.querySelectorAll("g.node")) {
    out.nodes++;
    const t = g.querySelector("text");
    const r = t.getBoundingClientRect();
    if (r.right > right + 1) out.outside.push(g.dataset.id);
    const n = data[Number(g.dataset.i)];
    const whole = n.kind === "run" ? null : n.text;
    const span = t.querySelector("tspan.t");
    const shown = span ? span.textContent : t.textContent;
    const tip = g.querySelector("title").textContent;
    if (whole === null) continue;
    if (shown === whole) { out.whole++; continue; }
    out.cut++;
    const ok = shown.endsWith("…") && whole.startsWith(shown.slice(0, -1).trimEnd()) && tip.includes(whole);
    if (!ok) out.wrongCut.push([g.dataset.id, shown, whole]);
  }
  return out;
})()
"""

RESIZED = """
(() => {
  // a wider pane: the texts are fitted again, more of each shown
  const pane = document.getElementById("graph");
  pane.style.flex = "none";
  pane.style.width = "1200px";
  window.dispatchEvent(new Event("resize"));
  return new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(() => {
    const box = document.getElementById("graph");
    const right = box.getBoundingClientRect().left + box.clientWidth;
    let outside = 0, cut = 0;
    for (const t of document.querySelectorAll("g.node text")) {
      if (t.getBoundingClientRect().right > right + 1) outside++;
      if (t.textContent.endsWith("…")) cut++;
    }
    done({ outside, cut });
  })));
})()
"""


def _long_session(path: Path) -> None:
    """150 entries of long messages on two branches, with labels."""
    lines: list[dict[str, Any]] = [
        {
            "type": "session",
            "version": 3,
            "id": "layout",
            "timestamp": "2026-01-01T00:00:00.000Z",
            "cwd": "/w",
        }
    ]
    parent = None
    fork = None
    for i in range(150):
        eid = f"e{i:04d}"
        role = "user" if i % 2 == 0 else "assistant"
        text = f"{i}: " + " ".join(WORDS[(i + k) % len(WORDS)] for k in range(10 + i % 40))
        msg: dict[str, Any] = {"role": role, "content": [{"type": "text", "text": text}]}
        if role == "assistant":
            msg.update(provider="p", model="m", stopReason="stop")
        if i == 60:
            fork = parent
        if i == 100:
            parent = fork  # a second branch from entry 59
        lines.append(
            {
                "type": "message",
                "id": eid,
                "parentId": parent,
                "timestamp": f"2026-01-01T00:{i // 60:02d}:{i % 60:02d}.000Z",
                "message": msg,
            }
        )
        parent = eid
        if i % 37 == 5:
            lines.append(
                {
                    "type": "label",
                    "id": f"l{i:04d}",
                    "parentId": parent,
                    "timestamp": f"2026-01-01T00:{i // 60:02d}:{i % 60:02d}.500Z",
                    "targetId": eid,
                    "label": "a label long enough to push the text further right",
                }
            )
            parent = f"l{i:04d}"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")


def _page(tmp_path: Path, session: Path) -> Path:
    out = tmp_path / f"{session.stem}.html"
    env = dict(os.environ, HOME=str(tmp_path))
    subprocess.run(
        [sys.executable, "-m", "sessiontree", "graph", str(session), "-o", str(out)],
        check=True,
        capture_output=True,
        env=env,
    )
    return out


def _keep(shot: Path, name: str) -> None:
    where = os.environ.get("SESSIONTREE_SCREENSHOTS")
    if where:
        Path(where).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, Path(where) / name)


def test_no_node_text_over_the_header_and_long_texts_end_in_an_ellipsis(tmp_path: Path) -> None:
    session = tmp_path / "long.jsonl"
    _long_session(session)
    page = _page(tmp_path, session)
    shot = tmp_path / "narrow.png"
    rep = load_page(page, tmp_path, {"m": MEASURE}, viewport=(640, 420), screenshot=shot)
    wide = load_page(page, tmp_path, {"wide": RESIZED}, viewport=(640, 420)).values["wide"]
    m = rep.values["m"]
    assert m["nodes"] > 100
    assert m["bleed"] == [], m["bleed"][:5]
    assert m["outside"] == [], m["outside"][:5]
    assert m["wrongCut"] == [], m["wrongCut"][:3]
    assert m["cut"] > 20 and m["whole"] > 0, m
    assert wide["outside"] == 0 and wide["cut"] < m["cut"]
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert rep.console == [] and rep.left_the_page == []
    _keep(shot, "graph-narrow.png")


def test_a_claude_transcript_page_is_folded_and_named(tmp_path: Path) -> None:
    """The graph of a Claude Code transcript: its rows as the sidebar shows them (progress and
    meta lines folded into the next node, counted in its tooltip), titled by its name."""
    from other_agents_data import claude_lines, write_jsonl
    from sessiontree.core.discovery import display_name_of_manager
    from sessiontree.core.session import SessionManager
    from sessiontree.core.view import build_view

    session = write_jsonl(tmp_path / "claude.jsonl", claude_lines())
    mgr = SessionManager.open(str(session), read_only=True)
    page = _page(tmp_path, session)
    shot = tmp_path / "claude.png"
    expr = {
        "title": "document.title",
        "h1": "document.querySelector('header h1').textContent",
        "nodes": "document.querySelectorAll('g.node').length",
        "tips": "[...document.querySelectorAll('g.node title')].map(t => t.textContent)",
        "m": MEASURE,
    }
    rep = load_page(page, tmp_path, expr, viewport=(720, 460), screenshot=shot)
    v = rep.values
    name = display_name_of_manager(mgr)
    assert v["title"] == v["h1"] == name
    assert str(mgr.get_session_id()) not in name
    assert len(build_view(mgr).rows) <= v["nodes"] < len(mgr.index)
    assert any("the tree hides" in t and "claude:" in t for t in v["tips"]), v["tips"]
    assert v["m"]["bleed"] == [] and v["m"]["outside"] == []
    _keep(shot, "graph-claude.png")
