"""The text of a message's content as stored: a string, or a list of blocks.

One home for "the text blocks of a content, joined": the reference joins them with nothing
where it builds display and branch texts, and with a space where it lists sessions.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["content_text"]


def content_text(content: Any, sep: str = "") -> str:
    """A string content as it is; the ``text`` of its ``type: "text"`` blocks joined with
    ``sep``; ``""`` for anything else."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return sep.join(
            b["text"]
            for b in content
            if isinstance(b, Mapping) and b.get("type") == "text" and isinstance(b.get("text"), str)
        )
    return ""
