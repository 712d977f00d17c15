"""`sessiontree tree` on a deep tree, as a real process: short art, the leaf marked, ids, colour.

The corpus comes from the benchmark generator (`benchmarks/gen_corpus.py --branch-every 5`:
a branch point every 5 entries nests the tree 64 levels deep in 3,000 entries).
"""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from sessiontree.core.view.tree_art import CELL, KEPT_CELLS, SHORT_ART_WIDTH

ROOT = Path(__file__).resolve().parents[2]
GEN = ROOT / "benchmarks" / "gen_corpus.py"
ANSI = re.compile(r"\x1b\[[0-9;]*m")
MARKERS = ("● ", "• ")


@pytest.fixture(scope="module")
def deep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("deep") / "deep.jsonl"
    subprocess.run(
        [sys.executable, str(GEN), str(path), "3000", "--branch-every", "5", "--seed", "7"],
        check=True,
        capture_output=True,
    )
    return path


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "TERM")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    env.update(extra)
    return env


def tree(*argv: str, **env: str) -> subprocess.CompletedProcess[str]:
    res = subprocess.run(
        [sys.executable, "-m", "sessiontree", "tree", *argv],
        capture_output=True,
        text=True,
        env=_env(**env),
        timeout=120,
    )
    assert res.returncode == 0, res.stderr
    return res


def tree_on_a_terminal(*argv: str, **env: str) -> str:
    """`tree` with its stdout on a pseudo-terminal (what `--color auto` looks at)."""
    master, slave = pty.openpty()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "sessiontree", "tree", *argv],
            stdout=slave,
            stderr=subprocess.PIPE,
            env=_env(TERM="xterm", **env),
        )
        os.close(slave)
        chunks = []
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
        assert proc.wait(timeout=120) == 0
    finally:
        os.close(master)
    return b"".join(chunks).decode("utf-8").replace("\r\n", "\n")


def rows_of(path: Path, *argv: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = json.loads(tree(str(path), "--json", *argv).stdout)["rows"]
    return rows


def text_start(line: str, row: dict[str, Any]) -> int:
    tail = (f"[{row['label']}] " if row.get("label") else "") + row["text"]
    assert line.endswith(tail), (line, row)
    return len(line) - len(tail)


@pytest.mark.parametrize("mode", ["default", "all"])
def test_every_row_starts_its_text_within_the_bound(deep: Path, mode: str) -> None:
    rows = rows_of(deep, "--filter", mode)
    depth = max(r["depth"] for r in rows)
    assert depth >= 60
    lines = tree(str(deep), "--filter", mode).stdout.splitlines()[:-1]
    assert len(lines) == len(rows)
    # the short art of core.tree_art, then the marker
    bound = max(SHORT_ART_WIDTH, len(f"‹{depth}› ") + KEPT_CELLS * CELL) + len("● ")
    for line, row in zip(lines, rows, strict=True):
        assert text_start(line, row) <= bound, line
        art = row.get("shortPrefix", row["prefix"])
        assert line.startswith(art)
    full = tree(str(deep), "--filter", mode, "--full-art").stdout.splitlines()[:-1]
    assert max(text_start(line, row) for line, row in zip(full, rows, strict=True)) >= 60 * CELL
    for line, row in zip(full, rows, strict=True):
        assert line.startswith(row["prefix"])


def test_the_leaf_row_is_marked_before_its_text(deep: Path) -> None:
    rows = rows_of(deep)
    lines = tree(str(deep)).stdout.splitlines()[:-1]
    for line, row in zip(lines, rows, strict=True):
        after_art = line[len(row.get("shortPrefix", row["prefix"])) :]
        if row["isLeaf"]:
            assert after_art.startswith("● "), line
        elif row["onActivePath"]:
            assert after_art.startswith("• "), line
        else:
            assert not after_art.startswith(MARKERS), line
    assert sum(r["isLeaf"] for r in rows) == 1
    # from another leaf, that row is marked
    other = next(r for r in rows if not r["onActivePath"] and r["depth"] > 40)
    lines = tree(str(deep), "--leaf", other["id"]).stdout.splitlines()[:-1]
    (marked,) = [line for line in lines if "● " in line and line.endswith(other["text"])]
    assert text_start(marked, other) <= len(f"‹{other['depth']}› ") + KEPT_CELLS * CELL + 2


def test_ids_show_each_rows_entry_id_in_a_column(deep: Path) -> None:
    rows = rows_of(deep)
    lines = tree(str(deep), "--ids").stdout.splitlines()
    assert lines[-1].startswith("(")  # the footer has no id
    width = max(len(r["id"]) for r in rows) + 2
    plain = tree(str(deep)).stdout.splitlines()[:-1]
    for line, row, bare in zip(lines[:-1], rows, plain, strict=True):
        assert line.startswith(f"[{row['id']}]")
        assert line[: width + 1] == f"[{row['id']}]".ljust(width) + " "
        assert line[width + 1 :] == bare
    # an id printed by --ids works as --leaf
    some = rows[len(rows) // 2]["id"]
    assert any(line.endswith(f"leaf {some})") for line in tree(str(deep), "--leaf", some).stdout.splitlines())


def test_colour_on_a_terminal_off_when_piped_or_with_no_color(deep: Path) -> None:
    plain = tree(str(deep)).stdout
    assert "\x1b" not in plain  # piped: no colour
    always = tree(str(deep), "--color", "always").stdout
    assert "\x1b[" in always and ANSI.sub("", always) == plain
    leaf_line = next(line for line in always.splitlines() if "● " in ANSI.sub("", line))
    assert "\x1b[1;32m● " in leaf_line  # the leaf in bold green
    assert "\x1b[2m" in always.splitlines()[-1]  # a dim footer
    labelled = tree("--demo", "--filter", "labeled-only", "--color", "always").stdout
    assert "\x1b[33m[" in labelled  # labels in yellow
    on_tty = tree_on_a_terminal(str(deep))
    assert "\x1b[" in on_tty and ANSI.sub("", on_tty) == plain
    assert "\x1b" not in tree_on_a_terminal(str(deep), NO_COLOR="1")
    assert "\x1b" not in tree_on_a_terminal(str(deep), "--color", "never")
    assert "\x1b" not in tree(str(deep), NO_COLOR="1").stdout
    # --color always wins over NO_COLOR (a flag is an explicit request, no-color.org)
    assert "\x1b[" in tree(str(deep), "--color", "always", NO_COLOR="1").stdout
