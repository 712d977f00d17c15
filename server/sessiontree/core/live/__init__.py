"""sessiontree.core.live: following a session file that other processes write to.

`tail` looks at the file (what changed since the last look, the complete lines appended);
`follower` folds that into the session that owns it. See docs/live-sessions.md.
"""

from .follower import DETACHED_REASONS, MAX_LIVE_EVENTS, FileState, FollowedSession, Follower, SyncResult
from .tail import ChangeKind, FileMark, ParsedLines, TailRead, parse_appended, read_appended

__all__ = [
    "DETACHED_REASONS",
    "MAX_LIVE_EVENTS",
    "ChangeKind",
    "FileMark",
    "FileState",
    "FollowedSession",
    "Follower",
    "ParsedLines",
    "SyncResult",
    "TailRead",
    "parse_appended",
    "read_appended",
]
