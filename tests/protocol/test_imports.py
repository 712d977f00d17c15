"""Layering rules (CONVENTIONS habit 1), checked by parsing every import with `ast`.

Every form is read: `import a.b`, `from a import b`, relative imports (`from ..x import y`,
resolved against the importing module), imports inside functions, and
`importlib.import_module("a.b")` with a constant name or an f-string whose constant head
names a package (`f"sessiontree.commands.{name}"` counts as importing
`sessiontree.commands`). Imports under `if TYPE_CHECKING:` count too: a type-only cycle is
still a knot for a reader.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SERVER = ROOT / "server"
PROTOCOL = ROOT / "protocol"


def module_name(path: Path, base: Path) -> str:
    """`server/sessiontree/core/x.py` -> `sessiontree.core.x` (a package's `__init__` is the package)."""
    parts = list(path.relative_to(base).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _package_of(module: str, path: Path) -> str:
    return module if path.name == "__init__.py" else module.rpartition(".")[0]


def _resolve(package: str, level: int, name: str | None) -> str:
    base = package.split(".")
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join([*base, name] if name else base)


def _importlib_target(call: ast.Call, package: str) -> str | None:
    func = call.func
    named = (isinstance(func, ast.Attribute) and func.attr == "import_module") or (
        isinstance(func, ast.Name) and func.id in ("import_module", "__import__")
    )
    if not named or not call.args:
        return None
    arg = call.args[0]
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        text = arg.value
    elif isinstance(arg, ast.JoinedStr) and arg.values and isinstance(arg.values[0], ast.Constant):
        # f"pkg.sub.{name}": the package part before the first placeholder
        text = str(arg.values[0].value).rpartition(".")[0]
        if arg.values[0].value == ".":
            text = "."
    else:
        return None
    if text.startswith("."):
        level = len(text) - len(text.lstrip("."))
        return _resolve(package, level, text.lstrip(".") or None)
    return text or None


def imports_of(path: Path, base: Path, known: Iterable[str] = ()) -> list[str]:
    """Every module `path` imports, by absolute name.

    `from pkg import name` is `pkg.name` when that is a module of `known`, else `pkg`.
    """
    known_set = set(known)
    module = module_name(path, base)
    package = _package_of(module, path)
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(package, node.level, node.module) if node.level else (node.module or "")
            subs = [f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in known_set]
            names.extend(subs)
            if len(subs) < len(node.names):
                names.append(target)
        elif isinstance(node, ast.Call):
            target = _importlib_target(node, package)
            if target is not None:
                names.append(target)
    return names


def _modules(package: Path, base: Path) -> dict[str, Path]:
    return {module_name(p, base): p for p in sorted(package.rglob("*.py"))}


def _violations(package: Path, forbidden: tuple[str, ...], base: Path = SERVER) -> list[str]:
    found = []
    mods = _modules(package, base)
    for name, path in mods.items():
        for imported in imports_of(path, base, mods):
            if any(imported == f or imported.startswith(f + ".") for f in forbidden):
                found.append(f"{path.relative_to(base)} ({name}) imports {imported}")
    return found


def import_graph(package: Path, base: Path) -> dict[str, set[str]]:
    """Module -> the modules of the same package it imports (parents implied by Python left out)."""
    mods = _modules(package, base)
    graph: dict[str, set[str]] = {}
    for name, path in mods.items():
        edges = set()
        for imported in imports_of(path, base, mods):
            if imported in mods and imported != name and not name.startswith(imported + "."):
                edges.add(imported)
        graph[name] = edges
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0

    def visit(v: str) -> None:
        nonlocal counter
        index[v] = low[v] = counter
        counter += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


# --- the rules ------------------------------------------------------------------------------


def test_protocol_imports_nothing_of_the_project() -> None:
    pkg = PROTOCOL / "sessiontree_protocol"
    assert list(pkg.rglob("*.py"))
    assert _violations(pkg, ("sessiontree", "pygls", "lsprotocol"), base=PROTOCOL) == []


def test_core_imports_no_daemon_cli_or_wire_code() -> None:
    pkg = SERVER / "sessiontree" / "core"
    forbidden = (
        "pygls",
        "lsprotocol",
        "sessiontree_protocol",
        "sessiontree.lsp",
        "sessiontree.commands",
        "sessiontree.cli",
        "sessiontree.client",
    )
    assert _violations(pkg, forbidden) == []


def test_commands_do_not_reach_into_the_daemon_but_to_serve_it() -> None:
    # The CLI verbs read sessions through the core; only `serve` starts the daemon.
    pkg = SERVER / "sessiontree" / "commands"
    found = [
        v
        for v in _violations(pkg, ("sessiontree.lsp", "pygls", "lsprotocol"))
        if "(sessiontree.commands.serve)" not in v
    ]
    assert found == []


def test_the_client_speaks_only_the_wire() -> None:
    path = SERVER / "sessiontree" / "client.py"
    imported = imports_of(path, SERVER)
    bad = [
        n
        for n in imported
        if n.startswith(("sessiontree.core", "sessiontree.lsp", "sessiontree.commands", "pygls"))
    ]
    assert bad == []


def test_no_import_cycle_in_the_core() -> None:
    assert cycles(import_graph(SERVER / "sessiontree" / "core", SERVER)) == []


# What each room of the core may import (docs/architecture.md, "The rooms"); the files at
# the top of core/ (errors, ids, paths, tuning) import no room.
CORE_ROOMS: dict[str, set[str]] = {
    "format": {"errors", "ids"},
    "store": {"format", "errors", "ids"},
    "index": {"format"},
    "session": {
        "format",
        "store",
        "index",
        "live",
        "tree",
        "discovery",
        "sources",
        "errors",
        "ids",
        "paths",
        "tuning",
    },
    "live": {"format", "store", "index", "errors"},
    "tree": {"format", "errors"},
    "view": {"format", "index", "tree", "errors", "tuning"},
    "discovery": {"format", "store", "index", "errors", "paths"},
    "doctor": {"format", "store", "sources", "errors", "paths"},
    "sources": {"format"},
    "fts": {"format", "view", "discovery", "sources", "store", "tuning"},
    "errors": set(),
    "ids": set(),
    "paths": set(),
    "tuning": set(),
    "graph": {"view", "format", "tuning"},
    "export": {"format", "index", "view", "errors", "ids"},
    "compare": {"format", "index", "view", "errors"},
    "checkpoints": {"compare", "view", "sources", "errors", "paths"},
    "sync": {"format", "store", "errors", "paths"},
}


def _room(module: str) -> str:
    parts = module.split(".")
    return parts[2] if len(parts) > 2 else ""


def test_core_rooms_import_only_what_the_map_allows() -> None:
    graph = import_graph(SERVER / "sessiontree" / "core", SERVER)
    found = []
    for module, imported in sorted(graph.items()):
        room = _room(module)
        if room not in CORE_ROOMS:
            continue  # the package's face (__init__) and the old import path (manager)
        for target in sorted(imported):
            other = _room(target)
            if other != room and other not in CORE_ROOMS[room]:
                found.append(
                    f"{module} imports {target} (core/{room}/ may import {sorted(CORE_ROOMS[room])})"
                )
    assert found == []


# --- the checker itself -----------------------------------------------------------------------


def _write(base: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        p = base / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


def test_the_checker_sees_every_form_of_import(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/core/__init__.py": "",
            "pkg/core/a.py": "import pygls.server\nfrom sessiontree_protocol.types import X\n",
            "pkg/core/b.py": "def f():\n    from ..lsp import server\n",
            "pkg/core/c.py": "import importlib\nimportlib.import_module('pkg.lsp.server')\n",
            "pkg/core/d.py": "import importlib\ndef g(n):\n    return importlib.import_module(f'pkg.lsp.{n}')\n",
            "pkg/lsp/__init__.py": "",
            "pkg/lsp/server.py": "",
        },
    )
    found = _violations(
        tmp_path / "pkg" / "core", ("pygls", "sessiontree_protocol", "pkg.lsp"), base=tmp_path
    )
    assert len(found) == 5, found


def test_the_checker_sees_a_cycle_through_relative_imports(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/x/__init__.py": "",
            "pkg/x/a.py": "from . import b\n",
            "pkg/x/b.py": "def f():\n    from ..y.c import C\n",
            "pkg/y/__init__.py": "",
            "pkg/y/c.py": "from ..x.a import A\n",
            "pkg/y/d.py": "from pkg.y import c\n",
        },
    )
    assert cycles(import_graph(tmp_path / "pkg", tmp_path)) == [["pkg.x.a", "pkg.x.b", "pkg.y.c"]]


def test_every_public_name_of_the_core_resolves() -> None:
    # `sessiontree.core` loads its names lazily from a table of module paths, which no
    # import statement checks: a module that moved must move in the table too.
    import sessiontree.core as core

    missing = []
    for name in core.__all__:
        try:
            getattr(core, name)
        except (AttributeError, ImportError) as exc:
            missing.append(f"{name}: {exc}")
    assert missing == []
