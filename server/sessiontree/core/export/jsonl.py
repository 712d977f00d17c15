"""An exported path as a pi session file of its own: a new header, then the entries.

The header is the one the agent writes when it branches into a new session: a new id, the
current version, the source's cwd, and ``parentSession`` set to the source file's path. The
entries are copied as they are (ids and parent ids kept), so the core and the agent load
every one of them; labels of path entries set outside the path are re-created after it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..format.jsonl import dumps_line
from ..format.migrations import CURRENT_SESSION_VERSION
from ..ids import Clock, IdSource

__all__ = ["render_jsonl"]


def render_jsonl(
    entries: Sequence[Mapping[str, Any]],
    *,
    cwd: str,
    parent_session: str | None,
    labels: Mapping[str, str],
    clock: Clock | None = None,
    ids: IdSource | None = None,
) -> str:
    """The file's text (one JSON object per line, the last line ending with a newline)."""
    clock = clock or Clock()
    ids = ids or IdSource()
    now = clock.now_iso()
    header: dict[str, Any] = {
        "type": "session",
        "version": CURRENT_SESSION_VERSION,
        "id": ids.new_session_id(),
        "timestamp": now,
        "cwd": cwd,
    }
    if parent_session is not None:
        header["parentSession"] = parent_session
    out = [dumps_line(header)]
    kept = {e.get("id") for e in entries}
    labelled_on_path = {e.get("targetId") for e in entries if e.get("type") == "label"}
    taken: set[str] = {i for i in kept if isinstance(i, str)}
    parent = entries[-1].get("id") if entries else None
    for e in entries:
        out.append(dumps_line(dict(e)))
    for target, label in labels.items():
        if target not in kept or target in labelled_on_path:
            continue
        lid = ids.new_entry_id(taken)
        taken.add(lid)
        out.append(
            dumps_line(
                {
                    "type": "label",
                    "id": lid,
                    "parentId": parent,
                    "timestamp": now,
                    "targetId": target,
                    "label": label,
                }
            )
        )
        parent = lid
    return "\n".join(line.decode("utf-8") for line in out) + "\n"
