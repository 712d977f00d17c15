"""Registers every feature module's handlers (`features/<noun>.py:setup(server)`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sessiontree.lsp.features import (
    append,
    context,
    doctor,
    labels,
    lifecycle,
    navigation,
    sessions,
    tree,
    watch,
)

if TYPE_CHECKING:
    from sessiontree.lsp.server import SessionTreeServer

FEATURES = (lifecycle, sessions, tree, navigation, labels, context, append, doctor, watch)
"""The feature modules, in registration order."""


def setup(server: SessionTreeServer) -> None:
    """Call `setup(server)` of each feature module."""
    for feature in FEATURES:
        feature.setup(server)
