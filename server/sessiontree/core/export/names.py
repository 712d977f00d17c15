"""The file name an export suggests: a plain name, whatever the session holds.

The name is made from the session id and an entry id, both written by whoever wrote the
session file; an editor writes the export under it in its working directory. So the name
holds only ``[A-Za-z0-9._-]`` (no separator, no control character), never ``..``, never a
leading dot or dash, and at most `NAME_MAX` characters. `is_plain_file_name` is the test the
editors repeat before they write (editors/nvim `pictures.lua`, editors/vscode `pictures.ts`).
"""

from __future__ import annotations

import re

__all__ = ["NAME_MAX", "export_file_name", "is_plain_file_name"]

NAME_MAX = 120
_NOT_NAME = re.compile(r"[^A-Za-z0-9._\-]")
_DOTS = re.compile(r"\.{2,}")
_PLAIN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._\-]*")


def _clean(part: str, limit: int) -> str:
    part = _DOTS.sub(".", _NOT_NAME.sub("_", part[: limit * 2]))
    return part.strip("._- ")[:limit].rstrip(".")


def export_file_name(session_id: str, node_id: str | None, fmt: str) -> str:
    """``<session id>-<node id>.<fmt>`` made plain (`is_plain_file_name` holds for it)."""
    ext = _clean(fmt, 8) or "txt"
    stem = "-".join(p for p in (_clean(session_id, 60), _clean(node_id or "empty", 40)) if p)
    stem = stem[: NAME_MAX - len(ext) - 1].rstrip(".") or "export"
    return f"{stem}.{ext}"


def is_plain_file_name(name: str) -> bool:
    """Whether ``name`` is a plain file name: ``[A-Za-z0-9._-]`` only, not starting with a
    dot or dash, no ``..``, at most `NAME_MAX` characters."""
    return 0 < len(name) <= NAME_MAX and _PLAIN.fullmatch(name) is not None and ".." not in name
