"""The made-up words of the ``tags`` column: the entry's role and its session's cwd.

A tag is a letter and hex digits (one token for the index's tokenizer, never a word a
person's query reaches: the query's words are matched in the ``text`` column only).
"""

from __future__ import annotations

import hashlib

__all__ = ["cwd_tag", "file_tags", "role_tag"]


def _h(kind: str, value: str) -> str:
    return kind + hashlib.sha1(value.encode("utf-8", "surrogatepass")).hexdigest()[:12]


def role_tag(role: str) -> str:
    return _h("r", role)


def cwd_tag(directory: str) -> str:
    """The tag of a session's project directory (a trailing ``/`` removed). A filter on a
    directory is the OR of the tags of the indexed directories at or below it."""
    return _h("d", directory.rstrip("/") or "/")


def file_tags(cwd: str | None) -> str:
    """The tags every entry of a session has: its cwd's."""
    return cwd_tag(cwd) if cwd else ""
