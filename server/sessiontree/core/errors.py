"""Exceptions raised by the session store.

Every error of the core derives from :class:`SessionTreeError`, so callers (the daemon, the
CLI, scripts) can catch one class and still tell the cases apart by type and attributes.
"""

from __future__ import annotations

__all__ = [
    "AccessDeniedError",
    "BlobError",
    "ConflictError",
    "EntryNotFoundError",
    "InvalidSessionFileError",
    "LockTimeoutError",
    "PersistError",
    "ReadOnlySessionError",
    "SessionTreeError",
]


class SessionTreeError(Exception):
    """Base class of every error raised by ``sessiontree.core``."""


class InvalidSessionFileError(SessionTreeError):
    """A file exists and has content but holds no valid session header.

    sessiontree refuses to open (and never overwrites) such a file (DIVERGENCES 1).
    ``path`` is the file, ``reason`` a short human explanation.
    """

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"Invalid session file {path}: {reason}")


class EntryNotFoundError(SessionTreeError, KeyError):
    """An entry id does not exist in the session (message ``Entry <id> not found``)."""

    def __init__(self, entry_id: object) -> None:
        self.entry_id = entry_id
        self.message = f"Entry {entry_id} not found"
        super().__init__(self.message)

    def __str__(self) -> str:
        # KeyError.__str__ would quote the message; keep the reference's exact text.
        return self.message


class PersistError(SessionTreeError):
    """Writing a session failed; the manager latches it and re-raises it on later writes.

    ``path`` is the file that was being written and ``cause`` the underlying exception.
    """

    def __init__(self, path: str | None, cause: BaseException) -> None:
        self.path = path
        self.cause = cause
        super().__init__(f"Failed to persist session {path}: {cause}")
        self.__cause__ = cause


class ConflictError(SessionTreeError):
    """The operation conflicts with the state on disk or with another writer."""

    def __init__(self, message: str, path: str | None = None) -> None:
        self.path = path
        super().__init__(message)


class LockTimeoutError(ConflictError, TimeoutError):
    """An advisory lock could not be taken within the timeout."""

    def __init__(self, path: str, timeout: float) -> None:
        self.timeout = timeout
        super().__init__(f"Timed out after {timeout:g}s waiting for the lock on {path}", path)


class AccessDeniedError(SessionTreeError):
    """A path lies outside what the caller may touch (for example outside the sessions root).

    ``reason`` is a short explanation ("is outside the allowed roots", ...) when known.
    """

    def __init__(self, message: str, path: str | None = None, reason: str | None = None) -> None:
        self.path = path
        self.reason = reason
        super().__init__(message)


class BlobError(SessionTreeError):
    """A blob is invalid: a bad reference, or content that does not match its hash."""

    def __init__(self, message: str, blob_hash: str | None = None, path: str | None = None) -> None:
        self.blob_hash = blob_hash
        self.path = path
        super().__init__(message)


class ReadOnlySessionError(SessionTreeError):
    """A change was asked of another agent's transcript, which sessiontree only reads
    (message ``read-only: <agent> session``; docs/other-agents.md)."""

    def __init__(self, path: str | None, agent: str) -> None:
        self.path = path
        self.agent = agent
        super().__init__(f"read-only: {agent} session")
