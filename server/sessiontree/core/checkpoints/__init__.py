"""Checkpoints: the workspace's files at any node of a session, and restoring them
(docs/checkpoints.md).

`replay.py` (a file's state at a node, from the session's own calls and results),
`textedit.py` and `patches.py` (the agents' edits applied as they apply them), `shell.py`
(which commands only read), `events.py` (the entries a replay reads, read once per session), `snapshots.py` (the content-addressed store: the daemon's
snapshots and the restores' backups), `merge.py` (the three-way merge), `restore.py` (the
plan: which files, their status and diff), `apply.py` (writing it: re-check, backups,
journal, undo, crash recovery), `capture.py` (the daemon's snapshots of a live session's
files), `atomic.py` (one file written atomically).
"""

from __future__ import annotations

from .apply import Applied, RestoreRecord, apply_plan, files_at, last_restore, recover, undo_last
from .capture import capture_appended
from .events import path_events, warm_events
from .merge import MergeResult, merge3
from .replay import FileState, Replay, replay_entries
from .restore import (
    STATUSES,
    FilePlan,
    RestorePlan,
    inside_roots,
    never_written,
    plan_restore,
    unified_diff,
)
from .snapshots import SnapshotStore, data_dir

__all__ = [
    "STATUSES",
    "Applied",
    "FilePlan",
    "FileState",
    "MergeResult",
    "Replay",
    "RestorePlan",
    "RestoreRecord",
    "SnapshotStore",
    "apply_plan",
    "capture_appended",
    "data_dir",
    "files_at",
    "inside_roots",
    "last_restore",
    "merge3",
    "never_written",
    "path_events",
    "plan_restore",
    "recover",
    "replay_entries",
    "undo_last",
    "unified_diff",
    "warm_events",
]
