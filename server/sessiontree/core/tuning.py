"""Size bounds that tests (and a person who measures) set through the environment.

Each bound is a module constant read through `bound(name, default)`: the environment's value
when it is set to an integer (negative ones count as 0), else the default, read at each call
so that a test can change it for one run.
"""

from __future__ import annotations

import os

__all__ = ["bound"]


def bound(name: str, default: int) -> int:
    """``$name`` as a non-negative integer, or `default` when unset or not an integer."""
    raw = os.environ.get(name)
    if raw:
        try:
            return max(0, int(raw))
        except ValueError:
            pass
    return default
