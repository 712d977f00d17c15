"""The one name a session is shown under: in listings, tree titles and the CLI."""

from __future__ import annotations

import os
import re
from typing import Any

from ..format.jsonl import scrub_text
from .summary import NO_MESSAGES, message_text

__all__ = ["DISPLAY_NAME_LIMIT", "display_name", "display_name_of_manager"]

DISPLAY_NAME_LIMIT = 60
"""Characters of a session's display name (a longer one is cut and ends with "…")."""


_CONTROL_OR_SPACE = re.compile("[\x00-\x1f\x7f-\x9f\\s]+")


def _name_line(s: str) -> str:
    """The first line of ``s`` with something to show, on one line."""
    for line in s.split("\n"):
        name = _CONTROL_OR_SPACE.sub(" ", line).strip()
        if name:
            return name
    return ""


def display_name(
    title: str | None,
    first_message: str | None,
    path: str | None,
    session_id: str | None = None,
    limit: int = DISPLAY_NAME_LIMIT,
) -> str:
    """The one name a session is shown under: in listings, tree titles and the CLI.

    The title (the header's, else the last compaction's short summary: `SessionInfo.title`),
    else the first line of the first user message (``first_message``, ``NO_MESSAGES`` or
    empty: none), else the file name without ``.jsonl``, else the session id. Control
    characters and runs of whitespace are one space; cut to ``limit`` characters.
    """
    name = ""
    for candidate in (title, None if first_message == NO_MESSAGES else first_message):
        if isinstance(candidate, str):
            name = _name_line(candidate)
            if name:
                break
    if not name and path:
        base = os.path.basename(path)
        name = _name_line(base[: -len(".jsonl")] if base.endswith(".jsonl") else base)
    if not name and session_id:
        name = _name_line(session_id)
    name = scrub_text(name)
    return name if len(name) <= limit else name[: max(0, limit - 1)] + "…"


def display_name_of_manager(manager: Any) -> str:
    """`display_name` of an open session, from the inputs a listing uses (`SessionInfo`).

    The title is the session's name (`SessionManager.get_session_name`), else the short summary of the last compaction in file
    order; the first message is the text of the first user message in file order; so an
    open session has the name its listing row has.
    """
    header = manager.get_header() or {}
    title = manager.get_session_name()  # by the rule of the file's agent
    index = manager.index
    user, last = index.display_skeletons()
    if title is None:
        entry = index.entry_of(last) if last is not None else None
        short = entry.get("shortSummary") if entry is not None else None
        title = short if isinstance(short, str) else None
    first: str | None = None
    msg = index.entry_of(user).get("message") if user is not None else None
    if isinstance(msg, dict):
        first = message_text(msg.get("content"))
    path = manager.get_session_file() if manager.is_persisted() else None
    sid = header.get("id")
    return display_name(
        title if isinstance(title, str) else None,
        scrub_text(first) if first is not None else None,
        path,
        sid if isinstance(sid, str) else None,
    )
