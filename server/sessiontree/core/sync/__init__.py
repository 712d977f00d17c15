"""sessiontree.core.sync: two-way sync of local session files with a shared store.

`engine.Syncer` pushes a file's new entries to the store and appends the entries other
machines added to the local file (the union by id; same id, other content is a reported
conflict); `state.SyncState` keeps the per-file high-water marks that make it incremental and
resumable; `watch.watch` follows the files and the store's notifications. docs/shared-store.md.
"""

from .engine import FileResult, Syncer, SyncOptions
from .state import FileMark, SyncState

__all__ = ["FileMark", "FileResult", "SyncOptions", "SyncState", "Syncer"]
