"""One face (docs/tree-view.md): the CLI's drawing of the sessions of tests/fixtures/face, the
reference the Neovim spec (editors/nvim/tests/spec/face_spec.lua) and the VS Code test
(editors/vscode/test/integration/face.test.js) compare their sidebars with, and the graph's
nodes, which name every entry as the rows do and mark the same leaf."""

from __future__ import annotations

import json

import pytest
from face import FACE, TREE_CASES
from sessiontree.cli import main


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(list(argv)) == 0
    return capsys.readouterr().out


def test_a_hidden_leaf_is_marked_on_its_nearest_shown_ancestor_and_named(
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = _run(capsys, "tree", str(FACE / "hidden-leaf.jsonl"), "--color", "never")
    # before: no ● at all (the model change, the leaf, is hidden by the default filter)
    assert out.splitlines() == [
        "• user: Rename the config loader",
        "● assistant: Renamed it to load_config.  (leaf: [model: openai/gpt-5])",
        "(2 of 3 entries, leaf m1)",
    ]
    out = _run(capsys, "tree", str(FACE / "label-leaf.jsonl"), "--color", "never")
    assert (
        out.splitlines()[-2] == "● assistant: Added tests/test_due.py; it passes.  (leaf: [label: due flag])"
    )


def test_branches_whose_first_rows_are_hidden_still_fan_out(capsys: pytest.CaptureFixture[str]) -> None:
    out = _run(
        capsys, "tree", str(FACE / "hidden-branches.jsonl"), "--filter", "no-tools", "--color", "never"
    )
    # before: "│     • assistant: It is TOML now." and "      assistant: It is YAML.", gutters
    # of two branches without the connectors that start them
    assert out.splitlines() == [
        "• user: Read the config",
        "├─    • assistant: It is TOML now.",
        "│     ├─ • user: Plan B: leave it",
        "│     │     ● assistant: Left as it is.",
        "│     └─ user: Plan A: convert it",
        "│           assistant: Converted.",
        "└─    assistant: It is YAML.",
        "      user: Keep YAML then",
        "(8 of 12 entries, leaf q2) [no-tools]",
    ]


def test_every_row_says_what_it_is(capsys: pytest.CaptureFixture[str]) -> None:
    out = _run(capsys, "tree", str(FACE / "unknown-types.jsonl"), "--filter", "all", "--color", "never")
    assert out.splitlines()[:-1] == [
        "• user: Start",
        "• [future entry]",
        "• assistant: Started.",
        "• [mode: plan]",
        "• user: Go on",
        "● [hologram snapshot]",
    ]


@pytest.mark.parametrize("case", TREE_CASES)
def test_the_graph_names_and_marks_as_the_rows_do(case: str, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(FACE / f"{case}.jsonl")
    rows = json.loads(_run(capsys, "tree", path, "--filter", "all", "--json"))
    graph = json.loads(_run(capsys, "graph", path, "--json"))
    nodes = {n["id"]: n for n in graph["nodes"] if n["kind"] == "entry"}
    for row in rows["rows"]:
        node = nodes[row["id"]]
        assert (node["text"], node.get("label")) == (row["text"], row.get("label")), row["id"]
    assert all(n["text"] for n in nodes.values()), "a node without a name"
    (leaf,) = [i for i, n in nodes.items() if n.get("leaf")]
    (marked,) = [r["id"] for r in rows["rows"] if r.get("marksLeaf")]
    assert leaf == marked == rows["leafId"] == graph["leafId"]
