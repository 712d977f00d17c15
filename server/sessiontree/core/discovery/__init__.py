"""sessiontree.core.discovery: finding sessions and the names they are shown under.

`listing` (recent sessions, listings), `summary` (what a listing reads of a file, cached),
`records` (`SessionInfo`), `names` (the display-name rule), `files` (the files of a
directory, read through the guard), `homes` (which agent dirs a listing looks in).
"""

from .homes import AgentHome, agent_homes, missing_agent_dir, session_dirs_of_homes
from .listing import (
    find_most_recent_session,
    find_most_recent_session_of_dirs,
    get_recent_sessions,
    list_all_sessions,
    list_all_sessions_of_homes,
    list_sessions,
    list_sessions_of_dirs,
)
from .names import DISPLAY_NAME_LIMIT, display_name, display_name_of_manager
from .records import RecentSessionInfo, SessionInfo
from .summary import NO_MESSAGES

__all__ = [
    "DISPLAY_NAME_LIMIT",
    "NO_MESSAGES",
    "AgentHome",
    "RecentSessionInfo",
    "SessionInfo",
    "agent_homes",
    "display_name",
    "display_name_of_manager",
    "find_most_recent_session",
    "find_most_recent_session_of_dirs",
    "get_recent_sessions",
    "list_all_sessions",
    "list_all_sessions_of_homes",
    "list_sessions",
    "list_sessions_of_dirs",
    "missing_agent_dir",
    "session_dirs_of_homes",
]
