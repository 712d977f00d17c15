"""Where the search index lives: sessiontree's own cache directory, never the agent's."""

from __future__ import annotations

import os

__all__ = ["default_index_path"]

INDEX_NAME = "sessions.db"


def default_index_path() -> str:
    """``$SESSIONTREE_SEARCH_INDEX``, else ``<cache>/search/sessions.db`` where ``<cache>`` is
    ``$SESSIONTREE_CACHE_DIR/..`` (beside the index cache, as listings are), else
    ``$XDG_CACHE_HOME/sessiontree``, else ``~/.cache/sessiontree``."""
    env = os.environ.get("SESSIONTREE_SEARCH_INDEX")
    if env:
        return os.path.abspath(env)
    cache = os.environ.get("SESSIONTREE_CACHE_DIR")
    if cache:
        base = os.path.dirname(os.path.abspath(cache))
    else:
        xdg = os.environ.get("XDG_CACHE_HOME")
        root = xdg if xdg and os.path.isabs(xdg) else os.path.join(os.path.expanduser("~"), ".cache")
        base = os.path.join(root, "sessiontree")
    return os.path.join(base, "search", INDEX_NAME)
