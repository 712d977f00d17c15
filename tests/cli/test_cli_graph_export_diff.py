"""The `graph`, `export` and `diff` commands: outputs, exit codes, and nothing written beside
the session."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from sessiontree.cli import main
from sessiontree.core.session import SessionManager

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "server" / "sessiontree" / "data" / "demo-session.jsonl"
FIXTURE_TIP, LEAF = "1a2caaa9", "1a2ebbb8"


@pytest.fixture
def demo(tmp_path: Path) -> Path:
    d = tmp_path / "sessions"
    d.mkdir()
    shutil.copyfile(DEMO, d / "demo.jsonl")
    return d / "demo.jsonl"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def test_graph_writes_a_page(capsys: pytest.CaptureFixture[str], demo: Path, tmp_path: Path) -> None:
    before = hashlib.sha256(demo.read_bytes()).hexdigest()
    out = tmp_path / "out.html"
    rc, _, err = run(capsys, "graph", str(demo), "-o", str(out))
    assert rc == 0 and "56 entries, 56 nodes, 2 lanes" in err
    page = out.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and 'data-entries="56"' in page
    rc, svg, _ = run(capsys, "graph", str(demo), "--svg", "--collapse", "2")
    assert rc == 0 and svg.startswith("<svg") and "⋯" in svg
    rc, js, _ = run(capsys, "graph", str(demo), "--json", "--leaf", FIXTURE_TIP)
    data = json.loads(js)
    assert data["leafId"] == FIXTURE_TIP
    assert hashlib.sha256(demo.read_bytes()).hexdigest() == before
    assert sorted(p.name for p in demo.parent.iterdir()) == ["demo.jsonl"]


def test_export_formats_and_report(capsys: pytest.CaptureFixture[str], demo: Path, tmp_path: Path) -> None:
    rc, md, err = run(capsys, "export", str(demo))
    assert rc == 0 and md.startswith("# Add a due-date column") and "redacted: nothing found" in err
    out = tmp_path / "b.jsonl"
    rc, _, err = run(capsys, "export", str(demo), "--leaf", FIXTURE_TIP, "--format", "jsonl", "-o", str(out))
    assert rc == 0 and "not redacted" in err
    back = SessionManager.open(str(out), read_only=True)
    assert back.get_leaf_id() == FIXTURE_TIP
    rc, html, _ = run(capsys, "export", str(demo), "--subtree", "1a2c4443", "-f", "html")
    assert rc == 0 and html.count("Branch from") == 2


def test_export_dry_run_lists_findings(
    capsys: pytest.CaptureFixture[str], demo: Path, tmp_path: Path
) -> None:
    config = tmp_path / "redact.toml"
    config.write_text("[[patterns]]\nname = 'todo'\nregex = 'todo'\n", encoding="utf-8")
    rc, out, _ = run(capsys, "export", str(demo), "--dry-run", "--redact-config", str(config))
    assert rc == 0 and "would redact" in out and "todo" in out
    rc, out, _ = run(capsys, "export", str(demo), "--dry-run", "--json", "--redact-config", str(config))
    data = json.loads(out)
    assert data["counts"]["todo"] == len(data["findings"]) > 0


@pytest.mark.parametrize(
    "argv",
    [
        ["export", "{demo}", "--leaf", "nope"],
        ["export", "{demo}", "--subtree", "nope"],
        ["export", "{missing}"],
        ["export", "{demo}", "--redact-config", "{badcfg}"],
        ["graph", "{demo}", "--leaf", "nope"],
        ["graph", "{demo}", "--collapse", "-1"],
        ["diff", "{demo}", LEAF, "nope"],
        ["diff", "{missing}", LEAF, LEAF],
    ],
)
def test_unusable_input_exits_2(
    capsys: pytest.CaptureFixture[str], demo: Path, tmp_path: Path, argv: list[str]
) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[[patterns]]\nregex = '(['\n", encoding="utf-8")
    args = [a.format(demo=demo, missing=tmp_path / "none.jsonl", badcfg=bad) for a in argv]
    rc, _, err = run(capsys, *args)
    assert rc == 2 and err.startswith(f"sessiontree {argv[0]}: ")


def test_diff_lists_the_files_of_each_side(capsys: pytest.CaptureFixture[str], demo: Path) -> None:
    rc, out, _ = run(capsys, "diff", str(demo), FIXTURE_TIP, LEAF, "--files")
    assert rc == 0
    lines = out.splitlines()
    assert lines[0].startswith("common ancestor: 1a2c4443")
    table = {ln.split()[0]: ln.split()[1:] for ln in lines[lines.index("") + 2 :]}
    assert table == {
        "tests/fixtures/tasks.json": ["write", "—"],
        "src/store.py": ["—", "edit"],
        "src/cli.py": ["—", "edit"],
        "tests/test_due.py": ["—", "write"],
    }
    rc, out, _ = run(capsys, "diff", str(demo), FIXTURE_TIP, LEAF)
    assert (
        f"# A: {FIXTURE_TIP}" in out
        and f"# B: {LEAF}" in out
        and "## Messages since the common ancestor" in out
    )
    rc, out, _ = run(capsys, "diff", str(demo), FIXTURE_TIP, LEAF, "--json")
    assert json.loads(out)["ancestorId"] == "1a2c4443"


@pytest.mark.parametrize("verb", ["graph", "export", "diff"])
@pytest.mark.parametrize(
    ("content", "needle"),
    [
        (b"", "empty file: no session header"),
        (b"hello\nworld\n", "not a session file: no line is a JSON object"),
        (None, "o such file"),
    ],
)
def test_unusable_files_one_error_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, verb: str, content: bytes | None, needle: str
) -> None:
    path = tmp_path / "x.jsonl"
    if content is not None:
        path.write_bytes(content)
    extra = ["a", "b"] if verb == "diff" else []
    rc, out, err = run(capsys, verb, str(path), *extra)
    assert rc == 2 and out == ""
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"sessiontree {verb}: ") and needle in lines[0]
