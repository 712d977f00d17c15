"""Snapshots of the files the agent touches, taken while the daemon follows a live session.

When another process (the agent) appends a tool result of a write or edit call, the files
the call named are copied into the store (`snapshots.SnapshotStore`) under the result's
entry: the file as the call left it. The replay then knows the file exactly at that node,
even after a command had made it unknown. The agent's next change to the same file needs a
new call (seconds of model time); the follower reads within milliseconds of the append, so
the copy is of the call's own result. Only files inside the workspace roots are read.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..compare.effects import effects_of_call, tool_path
from ..view.tool_calls import calls_of
from .restore import inside_roots
from .snapshots import SnapshotStore

__all__ = ["capture_appended"]

#: How far up from a result its call is looked for (parallel calls' results chain).
_CALL_DEPTH = 64


def _call_of(manager: Any, entry: Mapping[str, Any], call_id: str) -> Mapping[str, Any] | None:
    pid = entry.get("parentId")
    for _ in range(_CALL_DEPTH):
        if not isinstance(pid, str):
            return None
        parent = manager.get_entry(pid)
        if parent is None:
            return None
        for call in calls_of(parent):
            if call.get("id") == call_id:
                return call
        pid = parent.get("parentId")
    return None


def capture_appended(
    store: SnapshotStore,
    manager: Any,
    entry_ids: Iterable[str],
    roots: Sequence[str],
    excluded: Sequence[str] = (),
) -> int:
    """Snapshot the files of the write and edit results among ``entry_ids``; how many."""
    session_file = manager.get_session_file()
    if not session_file or not roots:
        return 0
    cwd = manager.get_cwd()
    taken = 0
    for eid in entry_ids:
        entry = manager.get_entry(eid)
        msg = entry.get("message") if isinstance(entry, Mapping) and entry.get("type") == "message" else None
        if not isinstance(msg, Mapping) or msg.get("role") != "toolResult" or msg.get("isError") is True:
            continue
        cid = msg.get("toolCallId")
        call = _call_of(manager, entry, cid) if isinstance(cid, str) else None  # type: ignore[arg-type]
        if call is None or not isinstance(call.get("arguments"), Mapping):
            continue
        effects = effects_of_call(str(call.get("name")), call["arguments"], eid, cid, cap=False)
        paths = []
        for eff in effects:
            path = tool_path(eff.path, cwd)
            if inside_roots(path, roots, excluded) is not None:
                paths.append(path)
        if paths:
            taken += store.capture(session_file, eid, paths)
    return taken
