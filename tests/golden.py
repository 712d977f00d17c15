"""Golden files: one helper for every test that compares output with a checked-in file.

A golden file is rewritten only with the explicit flag ``SESSIONTREE_REGEN_GOLDEN=1``
(CONVENTIONS 7); without it a missing or different file fails the test, so a change of
the disk or wire format is always a reviewed diff of ``tests/fixtures/golden/``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

GOLDEN = Path(__file__).resolve().parent / "fixtures" / "golden"
REGEN_FLAG = "SESSIONTREE_REGEN_GOLDEN"


def regenerating() -> bool:
    """True when golden files are being rewritten (``SESSIONTREE_REGEN_GOLDEN=1``)."""
    return os.environ.get(REGEN_FLAG) == "1"


def check_golden(path: Path, data: bytes | str) -> None:
    """Compare ``data`` with the golden file at ``path`` (rewrite it under the flag)."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    if regenerating():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(raw)
    if not path.exists():
        pytest.fail(f"golden file {path} is missing; write it with {REGEN_FLAG}=1 and review the diff")
    assert raw == path.read_bytes(), (
        f"output differs from {path} (rewrite it with {REGEN_FLAG}=1 if intended)"
    )
