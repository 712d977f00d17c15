"""Registers every feature module (`features/<noun>.py:setup(server)`)."""

from __future__ import annotations

import importlib
from typing import Any

FEATURES = ("lifecycle", "sessions", "tree", "navigation", "labels", "context", "append", "doctor")


def setup(server: Any) -> None:
    """Call `setup(server)` of each feature module, then of `features/watch.py` if present."""
    for name in FEATURES:
        importlib.import_module(f"sessiontree.lsp.features.{name}").setup(server)
    try:
        watch = importlib.import_module("sessiontree.lsp.features.watch")
    except ModuleNotFoundError as exc:
        if exc.name != "sessiontree.lsp.features.watch":
            raise
    else:
        watch.setup(server)
