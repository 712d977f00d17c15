"""Method and notification names of the sessiontree protocol (version 1).

Every name of PROTOCOL.md has a constant here, plus the project's additions (marked).
Clients and the daemon use these constants rather than string literals.
"""

from __future__ import annotations

from typing import Final

PROTOCOL_VERSION: Final = 1

# Sessions
SESSION_LIST: Final = "session/list"
SESSION_RECENT: Final = "session/recent"
SESSION_OPEN: Final = "session/open"
SESSION_CREATE: Final = "session/create"
SESSION_CONTINUE_RECENT: Final = "session/continueRecent"
SESSION_OPEN_IN_MEMORY: Final = "session/openInMemory"
SESSION_FORK_FROM: Final = "session/forkFrom"
SESSION_FORK: Final = "session/fork"
SESSION_CLOSE: Final = "session/close"
SESSION_FLUSH: Final = "session/flush"
SESSION_SET_NAME: Final = "session/setName"

# Tree and entries
SESSION_TREE: Final = "session/tree"
SESSION_VIEW: Final = "session/view"
SESSION_CHILDREN: Final = "session/children"
SESSION_PATH: Final = "session/path"
SESSION_ENTRY: Final = "session/entry"
SESSION_ENTRIES: Final = "session/entries"

# Navigation
SESSION_BRANCH: Final = "session/branch"
SESSION_RESET_LEAF: Final = "session/resetLeaf"
SESSION_BRANCH_WITH_SUMMARY: Final = "session/branchWithSummary"
SESSION_PREPARE_NAVIGATION: Final = "session/prepareNavigation"
SESSION_NAVIGATE: Final = "session/navigate"
SESSION_BRANCH_TO_NEW_SESSION: Final = "session/branchToNewSession"
SESSION_CREATE_BRANCHED_SESSION: Final = "session/createBranchedSession"

# Labels and context
SESSION_SET_LABEL: Final = "session/setLabel"
SESSION_LABELS: Final = "session/labels"
SESSION_CONTEXT: Final = "session/context"

# Appending
SESSION_APPEND: Final = "session/append"

# Additions beyond PROTOCOL.md (documented in docs/protocol.md)
SESSION_HISTORY: Final = "session/history"
SESSION_BACK: Final = "session/back"
SESSION_DOCTOR: Final = "session/doctor"
SESSION_GRAPH: Final = "session/graph"
SESSION_EXPORT: Final = "session/export"
SESSION_DIFF: Final = "session/diff"
# The shared session store (docs/shared-store.md).
SESSION_OPEN_SHARED: Final = "session/openShared"
SESSION_SEARCH: Final = "session/search"
# Rows around a big session's leaf before it is open (docs/preview.md).
SESSION_PREVIEW: Final = "session/preview"
# The workspace's files brought to a node (docs/checkpoints.md).
SESSION_RESTORE_PREVIEW: Final = "session/restorePreview"
SESSION_RESTORE: Final = "session/restore"
SESSION_RESTORE_UNDO: Final = "session/restoreUndo"

# Notifications (server to client)
SESSION_DID_CHANGE: Final = "session/didChange"
SESSION_DID_NAVIGATE: Final = "session/didNavigate"
SESSION_DID_CHANGE_LABEL: Final = "session/didChangeLabel"
SESSION_DID_RELOAD: Final = "session/didReload"
SESSION_DID_CHANGE_LIST: Final = "session/didChangeList"
SESSION_DID_COMPLETE_SEARCH: Final = "session/didCompleteSearch"

REQUESTS: Final[tuple[str, ...]] = (
    SESSION_LIST,
    SESSION_RECENT,
    SESSION_OPEN,
    SESSION_CREATE,
    SESSION_CONTINUE_RECENT,
    SESSION_OPEN_IN_MEMORY,
    SESSION_FORK_FROM,
    SESSION_FORK,
    SESSION_CLOSE,
    SESSION_FLUSH,
    SESSION_SET_NAME,
    SESSION_TREE,
    SESSION_VIEW,
    SESSION_CHILDREN,
    SESSION_PATH,
    SESSION_ENTRY,
    SESSION_ENTRIES,
    SESSION_BRANCH,
    SESSION_RESET_LEAF,
    SESSION_BRANCH_WITH_SUMMARY,
    SESSION_PREPARE_NAVIGATION,
    SESSION_NAVIGATE,
    SESSION_BRANCH_TO_NEW_SESSION,
    SESSION_CREATE_BRANCHED_SESSION,
    SESSION_SET_LABEL,
    SESSION_LABELS,
    SESSION_CONTEXT,
    SESSION_APPEND,
    SESSION_HISTORY,
    SESSION_BACK,
    SESSION_DOCTOR,
    SESSION_GRAPH,
    SESSION_EXPORT,
    SESSION_DIFF,
    SESSION_OPEN_SHARED,
    SESSION_SEARCH,
    SESSION_PREVIEW,
    SESSION_RESTORE_PREVIEW,
    SESSION_RESTORE,
    SESSION_RESTORE_UNDO,
)

NOTIFICATIONS: Final[tuple[str, ...]] = (
    SESSION_DID_CHANGE,
    SESSION_DID_NAVIGATE,
    SESSION_DID_CHANGE_LABEL,
    SESSION_DID_RELOAD,
    SESSION_DID_CHANGE_LIST,
    SESSION_DID_COMPLETE_SEARCH,
)

ADDITIONS: Final[frozenset[str]] = frozenset(
    {
        SESSION_HISTORY,
        SESSION_BACK,
        SESSION_DOCTOR,
        SESSION_GRAPH,
        SESSION_EXPORT,
        SESSION_DIFF,
        SESSION_OPEN_SHARED,
        SESSION_SEARCH,
        SESSION_PREVIEW,
        SESSION_RESTORE_PREVIEW,
        SESSION_RESTORE,
        SESSION_RESTORE_UNDO,
        SESSION_DID_COMPLETE_SEARCH,
    }
)
"""Methods the project adds to PROTOCOL.md."""

# Error codes (PROTOCOL.md "Errors").
INVALID_PARAMS: Final = -32602
REQUEST_CANCELLED: Final = -32800
UNKNOWN_SESSION: Final = -32001
ENTRY_NOT_FOUND: Final = -32002
PERSISTENCE_FAILED: Final = -32003
CONFLICT: Final = -32004
ACCESS_DENIED: Final = -32005
SUMMARY_UNAVAILABLE: Final = -32006
INVALID_SESSION_FILE: Final = -32007
#: Addition: a writing method on another agent's session (read-only: "read-only: <agent> session").
READ_ONLY_SESSION: Final = -32008
#: Addition: `session/export` took longer than its time budget; nothing was exported.
EXPORT_BUDGET_EXCEEDED: Final = -32009
