"""Counts in words: ``1 entry``, ``2 entries`` (one rule for every line a person reads)."""

from __future__ import annotations

__all__ = ["counted"]

_IRREGULAR = {"entry": "entries", "branch": "branches", "match": "matches", "was": "were"}


def counted(n: int, noun: str, plural: str | None = None, *, sep: str = " ", grouped: bool = False) -> str:
    """``n`` and ``noun`` in the singular for one, else in the plural (``plural``, else the
    noun's own: ``entries``, ``branches``, ``matches``, or an added ``s``); ``grouped`` writes
    ``n`` with thousands separators."""
    many = plural or _IRREGULAR.get(noun) or f"{noun}s"
    number = f"{n:,}" if grouped else str(n)
    return f"{number}{sep}{noun if n == 1 else many}"
