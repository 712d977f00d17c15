"""The sessions every front end is compared on (tests/fixtures/face, docs/tree-view.md "One
face"), and placing them in an agent's home the way each agent keeps them."""

from __future__ import annotations

import json
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FACE = REPO / "tests" / "fixtures" / "face"

#: The tree cases (the omp 18 and pi 1.6 files are there for their names).
TREE_CASES = ("hidden-leaf", "label-leaf", "hidden-branches", "unknown-types", "omp18", "pi16")


def with_cwd(name: str, cwd: str) -> bytes:
    """A face session's bytes with its header's ``cwd`` set (after omp's title slot, which
    stays byte for byte)."""
    data = (FACE / f"{name}.jsonl").read_bytes()
    lines = data.split(b"\n")
    at = 1 if lines[0].startswith(b'{"type":"title"') else 0
    header = json.loads(lines[at])
    header["cwd"] = cwd
    lines[at] = json.dumps(header, separators=(",", ":")).encode()
    return b"\n".join(lines)


def place(sessions_root: Path, dir_name: str, name: str, cwd: str, file_name: str | None = None) -> Path:
    """Write face session ``name`` as ``<sessions_root>/<dir_name>/<file_name>`` for ``cwd``."""
    directory = sessions_root / dir_name
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / (file_name or f"2026-03-01T09-00-00-000Z_{name}.jsonl")
    path.write_bytes(with_cwd(name, cwd))
    return path
