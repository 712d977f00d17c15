"""The graph of a session tree: every entry drawn once, lanes that never collide, marks."""

from __future__ import annotations

import itertools
import subprocess
import sys
from pathlib import Path

import pytest
from golden import GOLDEN, check_golden
from sessiontree.core.graph import Graph, build_graph, render_html, render_svg
from sessiontree.core.session import SessionManager
from sessiontree.core.view import build_view
from shared_data import REAL_CORPUS

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "server" / "sessiontree" / "data" / "demo-session.jsonl"
GEN = ROOT / "benchmarks" / "gen_corpus.py"


def open_ro(path: Path) -> SessionManager:
    return SessionManager.open(str(path), read_only=True)


def assert_well_formed(mgr: SessionManager, g: Graph) -> None:
    """Every entry in exactly one node; parents before children; no lane shared by two
    edges over the same rows."""
    assert sum(n.count for n in g.nodes) == len(mgr.index) == g.entries
    assert [n.row for n in g.nodes] == list(range(len(g.nodes)))
    occupied: dict[int, list[tuple[int, int, int]]] = {}
    for i, n in enumerate(g.nodes):
        assert 0 <= n.lane < max(g.lanes, 1)
        if n.parent is None:
            occupied.setdefault(n.lane, []).append((n.row, n.row, i))
            continue
        p = g.nodes[n.parent]
        assert p.row < n.row
        # the edge into a node and the node hold its lane from the row below the parent to its own
        occupied.setdefault(n.lane, []).append((p.row + 1, n.row, i))
    for lane, spans in occupied.items():
        spans.sort()
        for (s0, e0, i0), (s1, e1, i1) in itertools.pairwise(spans):
            assert e0 < s1, (lane, (s0, e0, i0), (s1, e1, i1))


def test_demo_graph_marks_branches_labels_compaction_and_the_leaf() -> None:
    mgr = open_ro(DEMO)
    g = build_graph(mgr, home="")
    assert_well_formed(mgr, g)
    assert not g.collapsed  # small sessions show every entry
    by_id = {n.id: n for n in g.nodes}
    leaf = by_id[mgr.get_leaf_id()]
    assert leaf.leaf and leaf.active and leaf.tip
    assert sum(1 for n in g.nodes if n.leaf) == 1
    assert {n.id for n in g.nodes if n.active} == set(mgr.index.path_to_root(mgr.get_leaf_id()))
    assert [n.type for n in g.nodes if n.type in ("compaction", "branch_summary")] == [
        "branch_summary",
        "compaction",
    ]
    assert sorted(n.label for n in g.nodes if n.label) == ["feature done", "tests green"]
    assert sum(1 for n in g.nodes if n.tip) == 3
    assert sum(1 for n in g.nodes if n.branch_point) == 2
    assert g.lanes == 2


def _drawn_rows(mgr: SessionManager, g: Graph) -> tuple[set[str], set[str]]:
    """The entries drawn as their own node, and the rows the tree view shows (default filter)."""
    drawn = {n.id for n in g.nodes if n.kind == "entry"}
    return drawn, {r.id for r in build_view(mgr).rows}


def test_graph_draws_what_the_tree_view_shows(tmp_path: Path) -> None:
    """Issue 34: a Claude Code transcript was drawn unfolded (a node per line, progress and
    meta lines included); the graph of another agent's transcript now draws the rows the
    sidebar shows and folds the others into the next node of their chain, counted there (a
    branch point, the leaf and a labelled entry keep their node: they shape the tree)."""
    from other_agents_data import claude_lines, codex_lines, write_jsonl

    sessions = [
        write_jsonl(tmp_path / "claude.jsonl", claude_lines()),
        write_jsonl(tmp_path / "codex.jsonl", codex_lines()),
    ]
    sessions += [
        p for p in sorted(REAL_CORPUS.glob("claudecode-*.jsonl")) + sorted(REAL_CORPUS.glob("codex-*.jsonl"))
    ]
    for path in sessions:
        mgr = open_ro(path)
        if len(mgr.index) > 400:  # (runs are folded too in big sessions)
            continue
        g = build_graph(mgr)
        assert_well_formed(mgr, g)
        drawn, rows = _drawn_rows(mgr, g)
        assert rows <= drawn, (path.name, rows - drawn)
        leaf = mgr.get_leaf_id()
        labels = mgr.index.labels
        for eid in drawn - rows:  # drawn though the view hides it: it shapes the tree
            n = next(n for n in g.nodes if n.id == eid)
            assert n.branch_point or eid == leaf or eid in labels, (path.name, eid)
        assert len(g.nodes) < len(mgr.index) or drawn == rows
        # every node holds what it folds, and `collapse=0` still draws every entry
        every = build_graph(mgr, collapse=0)
        assert len(every.nodes) == len(mgr.index)
    # a pi session draws every entry (the demo's model changes and label entries too)
    demo = open_ro(DEMO)
    assert len(build_graph(demo).nodes) == len(demo.index)
    folded = build_graph(demo, fold_hidden=True)
    assert_well_formed(demo, folded)
    assert {n.id for n in folded.nodes if n.kind == "entry"} >= {r.id for r in build_view(demo).rows}


def test_a_claude_transcript_is_drawn_folded_and_named(tmp_path: Path) -> None:
    from other_agents_data import claude_lines, write_jsonl
    from sessiontree.core.discovery import display_name_of_manager

    path = write_jsonl(tmp_path / "claude.jsonl", claude_lines())
    mgr = open_ro(path)
    g = build_graph(mgr)
    hidden = [n for n in g.nodes if n.kind == "entry" and n.count > 1]
    assert hidden and all(n.kinds for n in hidden)
    assert any(k.startswith("claude:") for n in hidden for k in n.kinds)
    out = tmp_path / "page.html"
    subprocess.run([sys.executable, "-m", "sessiontree", "graph", str(path), "-o", str(out)], check=True)
    page = out.read_text(encoding="utf-8")
    name = display_name_of_manager(mgr)
    assert name and str(mgr.get_session_id()) not in name
    assert f"<title>{name}</title>" in page and f"<h1>{name}</h1>" in page


def test_demo_graph_page_golden() -> None:
    mgr = open_ro(DEMO)
    g = build_graph(mgr, home="")
    g.title = "demo"
    check_golden(GOLDEN / "graph" / "demo.html", render_html(g))


def test_page_is_self_contained() -> None:
    page = render_html(build_graph(open_ro(DEMO), home=""))
    assert "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "https://" not in page
    assert "<script src" not in page and "<link" not in page


def test_webview_page_carries_the_nonce_in_its_policy() -> None:
    page = render_html(build_graph(open_ro(DEMO), home=""), nonce="abc123", csp_source="vscode-webview:")
    assert "script-src &#x27;nonce-abc123&#x27;" in page
    assert '<script nonce="abc123">' in page
    assert "unsafe-inline" not in page


def test_collapse_folds_linear_runs_and_keeps_every_entry(tmp_path: Path) -> None:
    path = tmp_path / "deep.jsonl"
    subprocess.run(
        [sys.executable, str(GEN), str(path), "3000", "--seed", "7", "--branch-every", "11"], check=True
    )
    mgr = open_ro(path)
    g = build_graph(mgr)
    assert g.collapsed
    assert_well_formed(mgr, g)
    runs = [n for n in g.nodes if n.kind == "run"]
    assert runs and all(n.count >= 2 for n in runs)
    assert len(g.nodes) < len(mgr.index) / 2
    # a run is a chain: its first entry is the path's entry `count - 1` steps above its last
    for n in runs[:50]:
        path_ids = mgr.index.path_to_root(n.id)
        assert path_ids[-n.count] == n.first_id
    full = build_graph(mgr, collapse=0)
    assert_well_formed(mgr, full)
    assert len(full.nodes) == len(mgr.index)
    assert "⋯" in render_svg(g)


PI_FIXTURES = [
    "carlesba-pi-skill-memory-session.jsonl",
    "dexter-v3-pi-session.jsonl",
    "kimchi-dev-session.jsonl",
    "kirgadjello-crew-planner-header-only.jsonl",
    "omp-pinion05-03-raddit-dashboard-pr.jsonl",
    "omp-pinion05-04-awesome-agent-ide.jsonl",
    "paradocs-session.jsonl",
    "pidoctor-v3-no-ids.jsonl",
    "pimono-before-compaction.jsonl",
    "pimono-d5dde00d-root-session.jsonl",
    "pimono-large-session.jsonl",
    "twkrash-pi-0.85.1-branching.jsonl",
    "welpy-session.jsonl",
]


@pytest.mark.parametrize("name", PI_FIXTURES)
def test_real_sessions_draw(name: str) -> None:
    path = REAL_CORPUS / name
    if not path.is_file():
        pytest.skip(f"{path} is missing (../shared is read beside the repository)")
    mgr = open_ro(path)
    for collapse in (None, 0, 2):
        g = build_graph(mgr, collapse=collapse)
        assert_well_formed(mgr, g)
    page = render_html(build_graph(mgr))
    assert page.startswith("<!DOCTYPE html>")


def test_two_roots_each_get_their_chain() -> None:
    path = REAL_CORPUS / "omp-pinion05-04-awesome-agent-ide.jsonl"
    if not path.is_file():
        pytest.skip("../shared is missing")
    g = build_graph(open_ro(path), collapse=0)
    roots = [n for n in g.nodes if n.parent is None]
    assert len(roots) == 2
