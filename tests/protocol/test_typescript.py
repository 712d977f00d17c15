"""The VS Code extension's protocol types are generated from the checked-in JSON Schema.

`editors/vscode/src/protocol.generated.ts` is the output of `protocol/generate_typescript.py`
over `sessiontree-protocol.schema.json`: this fails when it is stale, when it does not
compile, or when the filter modes it lists differ from the daemon's.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
from pathlib import Path
from types import ModuleType
from typing import get_args

import pytest
from sessiontree_protocol import types as t

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "protocol" / "generate_typescript.py"
TSC = ROOT / "editors" / "vscode" / "node_modules" / ".bin" / "tsc"


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("generate_typescript", SCRIPT)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_generated_file_is_fresh() -> None:
    gen = _generator()
    assert gen.OUTPUT.read_text(encoding="utf-8") == gen.render(), (
        "editors/vscode/src/protocol.generated.ts is stale: run python protocol/generate_typescript.py"
    )


def test_every_definition_and_method_is_there() -> None:
    import json

    gen = _generator()
    schema = json.loads(gen.SCHEMA.read_text(encoding="utf-8"))
    text = gen.render()
    for name in schema["definitions"]:
        assert f"export interface {name} {{" in text, name
    for method in schema["x-methods"]:
        assert f"'{method}': " in text, method


def test_the_filter_modes_are_the_daemons() -> None:
    from sessiontree.core.view import FILTER_MODES

    text = _generator().render()
    listed = re.search(r"export const VIEW_FILTERS = \[(.*?)\] as const;", text)
    assert listed is not None
    assert tuple(re.findall(r"'([^']*)'", listed.group(1))) == get_args(t.ViewFilter) == tuple(FILTER_MODES)
    assert "filter?: ViewFilter;" in text


def test_a_changed_schema_changes_the_output(tmp_path: Path) -> None:
    import json

    gen = _generator()
    schema = json.loads(gen.SCHEMA.read_text(encoding="utf-8"))
    schema["x-enums"]["ViewFilter"].append("everything")
    changed = tmp_path / "schema.json"
    changed.write_text(json.dumps(schema), encoding="utf-8")
    assert "'all', 'everything'] as const;" in gen.render(changed)
    assert gen.main(["--check"]) == 0


@pytest.mark.skipif(
    not TSC.exists() or shutil.which("node") is None, reason="no TypeScript compiler (run make setup-editors)"
)
def test_the_generated_file_compiles_strictly(tmp_path: Path) -> None:
    src = tmp_path / "protocol.generated.ts"
    src.write_text(_generator().render(), encoding="utf-8")
    use = tmp_path / "use.ts"
    use.write_text(
        "import { VIEW_FILTERS, ViewFilter, Requests, AppendParams } from './protocol.generated';\n"
        "export const first: ViewFilter = VIEW_FILTERS[0];\n"
        "export const entry: AppendParams['entry'] = { type: 'custom', customType: 'x' };\n"
        "export type Rows = Requests['session/view']['result']['rows'];\n",
        encoding="utf-8",
    )
    res = subprocess.run(
        [
            str(TSC),
            "--ignoreConfig",
            "--noEmit",
            "--strict",
            "--noUnusedLocals",
            "--target",
            "es2022",
            str(use),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert res.returncode == 0, res.stdout + res.stderr
