"""The import path of `SessionManager` before `core/session/` (kept so that old imports work)."""

from .session.manager import (
    LoadReport,
    RecentSessionInfo,
    SessionInfo,
    SessionManager,
    SessionTreeNode,
    sanitize_session_name,
)

__all__ = [
    "LoadReport",
    "RecentSessionInfo",
    "SessionInfo",
    "SessionManager",
    "SessionTreeNode",
    "sanitize_session_name",
]
