"""Copies of a session file's original bytes kept beside it: one naming scheme for all.

Before sessiontree rewrites a file in a way that changes bytes the agent wrote, it keeps
the original beside it as ``.<file name>.<kind>-<timestamp>``:

- ``quarantine``: the loader dropped lines (garbage, a torn tail) that the rewrite leaves
  out (DIVERGENCES 2; also `doctor --repair`);
- ``backup-v<N>``: the file was version N and the rewrite writes the migrated version
  (DIVERGENCES 4 and 11).

The leading dot and the suffix after ``.jsonl`` mean that no agent and no sessiontree
listing ever takes a copy for a session (listings match ``*.jsonl`` only). The timestamp
is the ISO time with ``:`` and ``.`` turned into ``-`` (``2026-01-01T00-00-00-000Z``), so
copies sort by age.
"""

from __future__ import annotations

import os
import re

__all__ = ["COPY_KINDS", "copy_path", "is_copy_name"]

#: The kinds of copies, as they appear in the name (``backup-v`` is followed by a version).
COPY_KINDS = ("quarantine", "backup-v")

_COPY_NAME = re.compile(r"^\..+\.(quarantine|backup-v\d+)-[0-9TZ-]+(\.\d+)?$")


def copy_path(path: str, kind: str, now_iso: str) -> str:
    """The path of a new copy of ``path``: ``.<name>.<kind>-<timestamp>`` beside it.

    A copy already at that name (two rewrites within one millisecond) gets ``.2``, ``.3``...
    so that an earlier copy is never overwritten.
    """
    directory, name = os.path.split(path)
    stamp = now_iso.replace(":", "-").replace(".", "-")
    base = os.path.join(directory, f".{name}.{kind}-{stamp}")
    candidate, n = base, 1
    while os.path.lexists(candidate):
        n += 1
        candidate = f"{base}.{n}"
    return candidate


def is_copy_name(name: str) -> bool:
    """True for a file name made by :func:`copy_path`."""
    return _COPY_NAME.match(name) is not None
