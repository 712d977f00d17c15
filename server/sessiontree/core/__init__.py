"""sessiontree.core: the session store as a plain synchronous library.

The public names mirror the reference agent's SessionManager API in Python naming (see
`docs/architecture.md`). Names are loaded on first access so
that importing one part of the core does not import all of it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .discovery import (
        RecentSessionInfo,
        SessionInfo,
        find_most_recent_session,
        get_recent_sessions,
        list_all_sessions,
        list_sessions,
    )
    from .errors import (
        AccessDeniedError,
        BlobError,
        ConflictError,
        EntryNotFoundError,
        InvalidSessionFileError,
        PersistError,
        SessionTreeError,
    )
    from .format.jsonl import load_entries_from_file, parse_session_entries
    from .format.migrations import CURRENT_SESSION_VERSION, migrate_session_entries
    from .index import EntryIndex, Skeleton
    from .session import LoadReport, SessionManager, SessionTreeNode
    from .store import FileSessionStorage, MemorySessionStorage
    from .store.blobs import BlobStore
    from .tree.context import SessionContext, build_session_context
    from .tree.messages import convert_to_llm

# public name -> module that defines it
_EXPORTS: dict[str, str] = {
    "SessionManager": "session",
    "SessionTreeNode": "session",
    "LoadReport": "session",
    "SessionInfo": "discovery",
    "RecentSessionInfo": "discovery",
    "get_recent_sessions": "discovery",
    "find_most_recent_session": "discovery",
    "list_sessions": "discovery",
    "list_all_sessions": "discovery",
    "SessionContext": "tree.context",
    "build_session_context": "tree.context",
    "convert_to_llm": "tree.messages",
    "FileSessionStorage": "store",
    "MemorySessionStorage": "store",
    "BlobStore": "store.blobs",
    "parse_session_entries": "format.jsonl",
    "load_entries_from_file": "format.jsonl",
    "migrate_session_entries": "format.migrations",
    "CURRENT_SESSION_VERSION": "format.migrations",
    "EntryIndex": "index",
    "Skeleton": "index",
    "SessionTreeError": "errors",
    "InvalidSessionFileError": "errors",
    "EntryNotFoundError": "errors",
    "PersistError": "errors",
    "ConflictError": "errors",
    "AccessDeniedError": "errors",
    "BlobError": "errors",
}

__all__ = [
    "CURRENT_SESSION_VERSION",
    "AccessDeniedError",
    "BlobError",
    "BlobStore",
    "ConflictError",
    "EntryIndex",
    "EntryNotFoundError",
    "FileSessionStorage",
    "InvalidSessionFileError",
    "LoadReport",
    "MemorySessionStorage",
    "PersistError",
    "RecentSessionInfo",
    "SessionContext",
    "SessionInfo",
    "SessionManager",
    "SessionTreeError",
    "SessionTreeNode",
    "Skeleton",
    "build_session_context",
    "convert_to_llm",
    "find_most_recent_session",
    "get_recent_sessions",
    "list_all_sessions",
    "list_sessions",
    "load_entries_from_file",
    "migrate_session_entries",
    "parse_session_entries",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'sessiontree.core' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
