"""What a listing gives: `SessionInfo` (a session of a listing), `RecentSessionInfo`."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ..store.guard import PathGuard
from .names import display_name
from .summary import summarize_file

__all__ = ["RecentSessionInfo", "SessionInfo"]


@dataclass
class RecentSessionInfo:
    """A recent session: path, display name (cut to 40 characters), full name, mtime."""

    path: str
    name: str
    full_name: str
    mtime: datetime


class SessionInfo:
    """One session of a listing (reference `SessionInfo`).

    `created` comes from the header timestamp, `modified` is the file's mtime.
    `all_messages_text` (user and assistant texts joined with spaces) is read lazily.
    """

    __slots__ = (
        "_all_text",
        "_guard",
        "agent",
        "created",
        "cwd",
        "dialect",
        "first_message",
        "id",
        "message_count",
        "modified",
        "parent_id",
        "parent_kind",
        "parent_session_path",
        "path",
        "resume",
        "title",
    )

    def __init__(
        self,
        path: str,
        id: str,
        cwd: str,
        title: str | None,
        parent_session_path: str | None,
        created: datetime | None,
        modified: datetime,
        message_count: int,
        first_message: str,
        all_messages_text: str | None = None,
        guard: PathGuard | None = None,
        agent: str = "pi",
        resume: str | None = None,
        parent_id: str | None = None,
        parent_kind: str | None = None,
        dialect: str | None = None,
    ) -> None:
        self._guard = guard
        # For pi's family: whose words the file uses, which is the agent whose directory
        # holds it unless the file says otherwise ("xcsh", "pi", "omp"; `format.dialects`).
        self.dialect = dialect
        # Which agent wrote the file (pi's family, or a transcript `core.sources` reads) and,
        # for those, the command that resumes it and the parent session it names.
        self.agent = agent
        self.resume = resume
        self.parent_id = parent_id
        self.parent_kind = parent_kind
        self.path = path
        self.id = id
        self.cwd = cwd
        self.title = title
        self.parent_session_path = parent_session_path
        self.created = created
        self.modified = modified
        self.message_count = message_count
        self.first_message = first_message
        self._all_text = all_messages_text

    @property
    def all_messages_text(self) -> str:
        if self._all_text is None and self.agent != "pi":
            self._all_text = self.first_message
        if self._all_text is None:
            summary = summarize_file(self.path, with_text=True, guard=self._guard)
            self._all_text = summary.all_text if summary is not None and summary.all_text is not None else ""
        return self._all_text

    @property
    def display_name(self) -> str:
        """The name the session is shown under (`display_name`)."""
        return display_name(self.title, self.first_message, self.path, self.id)

    def to_dict(self) -> dict[str, Any]:
        """The wire shape (camelCase, ISO timestamps)."""
        out: dict[str, Any] = {"path": self.path, "id": self.id, "cwd": self.cwd}
        if self.title is not None:
            out["title"] = self.title
        out["firstMessage"] = self.first_message
        out["displayName"] = self.display_name
        out["messageCount"] = self.message_count
        out["created"] = _iso(self.created) if self.created else None
        out["modified"] = _iso(self.modified)
        if self.parent_session_path is not None:
            out["parentSession"] = self.parent_session_path
        if self.dialect:
            out["dialect"] = self.dialect
        if self.agent != "pi":
            out["agent"] = self.agent
            if self.resume is not None:
                out["resumeCommand"] = self.resume
            if self.parent_id is not None:
                out["parentId"] = self.parent_id
                out["parentKind"] = self.parent_kind
        return out

    def __repr__(self) -> str:
        return f"SessionInfo(path={self.path!r}, id={self.id!r}, title={self.title!r}, messages={self.message_count})"


def _iso(dt: datetime) -> str:
    dt = dt.astimezone(UTC)
    return f"{dt:%Y-%m-%dT%H:%M:%S}.{dt.microsecond // 1000:03d}Z"
