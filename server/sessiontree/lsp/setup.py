"""The factory of the daemon: a server with every feature module's handlers registered."""

from __future__ import annotations

from sessiontree.lsp.features import (
    append,
    checkpoints,
    context,
    doctor,
    labels,
    lifecycle,
    navigation,
    pictures,
    preindex,
    preview,
    search,
    sessions,
    shared_store,
    tree,
    warm,
    watch,
)
from sessiontree.lsp.server import SessionTreeServer

FEATURES = (
    lifecycle,
    sessions,
    tree,
    navigation,
    labels,
    context,
    append,
    doctor,
    watch,
    warm,
    preindex,
    preview,
    checkpoints,
    pictures,
    shared_store,
    search,
)
"""The feature modules, in registration order."""


def setup(server: SessionTreeServer) -> None:
    """Call `setup(server)` of each feature module."""
    for feature in FEATURES:
        feature.setup(server)


def create_server() -> SessionTreeServer:
    """A configured daemon with every feature registered (one per client connection)."""
    return SessionTreeServer(setup)
