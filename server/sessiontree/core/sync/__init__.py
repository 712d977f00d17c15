"""sessiontree.core.sync: two-way sync of local session files with a shared store.

`engine.Syncer` pushes a file's new entries to the store and appends the entries other
machines added to the local file (the union by id; same id, other content is a reported
conflict); `state.SyncState` keeps the per-file high-water marks that make it incremental and
resumable; `placement` is the one place a store row becomes a local path; `watch.watch`
follows the files and the store's notifications. docs/shared-store.md.
"""

from .engine import FileResult, Syncer, SyncOptions
from .placement import RefusedRow
from .state import FileMark, SyncState

__all__ = ["FileMark", "FileResult", "RefusedRow", "SyncOptions", "SyncState", "Syncer"]
