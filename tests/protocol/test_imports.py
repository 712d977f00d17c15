"""Layering rules (CONVENTIONS habit 1), checked by parsing every import with `ast`."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module)
    return names


def _violations(package: Path, forbidden: tuple[str, ...]) -> list[str]:
    found = []
    for path in sorted(package.rglob("*.py")):
        for name in _imports(path):
            if any(name == f or name.startswith(f + ".") for f in forbidden):
                found.append(f"{path.relative_to(ROOT)} imports {name}")
    return found


def test_protocol_imports_nothing_of_the_project() -> None:
    pkg = ROOT / "protocol" / "sessiontree_protocol"
    assert list(pkg.rglob("*.py"))
    assert _violations(pkg, ("sessiontree", "pygls", "lsprotocol")) == []


def test_core_imports_no_daemon_or_wire_code() -> None:
    pkg = ROOT / "server" / "sessiontree" / "core"
    forbidden = ("pygls", "lsprotocol", "sessiontree_protocol", "sessiontree.lsp")
    assert _violations(pkg, forbidden) == []


def test_the_checker_sees_violations(tmp_path: Path) -> None:
    bad = tmp_path / "pkg"
    bad.mkdir()
    (bad / "m.py").write_text("import pygls.server\nfrom sessiontree_protocol.types import X\n")
    global ROOT
    saved = ROOT
    ROOT = tmp_path
    try:
        assert len(_violations(bad, ("pygls", "sessiontree_protocol"))) == 2
    finally:
        ROOT = saved
