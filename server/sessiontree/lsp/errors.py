"""JSON-RPC errors of the daemon and the mapping from core exceptions (docs/protocol.md "Errors")."""

from __future__ import annotations

from typing import Any

import sessiontree_protocol.methods as m
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams

from sessiontree.core import errors as core_errors
from sessiontree.core.export.redact import ExportBudgetExceeded as ExportBudgetError
from sessiontree.core.tree.navigation import SummaryUnavailableError

__all__ = [
    "AccessDenied",
    "Conflict",
    "EntryNotFound",
    "ExportBudgetExceeded",
    "InternalError",
    "InvalidParams",
    "InvalidSessionFile",
    "PersistenceFailed",
    "ReadOnlySession",
    "SummaryUnavailable",
    "UnknownSession",
    "from_core",
]


class _AppError(JsonRpcException):
    CODE = -32000

    def __init__(self, message: str, data: Any | None = None) -> None:
        super().__init__(code=self.CODE, message=message, data=data)


class InvalidParams(JsonRpcInvalidParams):
    """-32602: params do not fit the method's schema; `data` names the field."""

    def __init__(self, message: str, data: Any | None = None) -> None:
        super().__init__(code=m.INVALID_PARAMS, message=message, data=data)


class UnknownSession(_AppError):
    """-32001: no open session has this handle."""

    CODE = m.UNKNOWN_SESSION


class EntryNotFound(_AppError):
    """-32002: the entry id does not exist in the session."""

    CODE = m.ENTRY_NOT_FOUND


class PersistenceFailed(_AppError):
    """-32003: writing failed (the latched error); `data.path` is the file."""

    CODE = m.PERSISTENCE_FAILED


class Conflict(_AppError):
    """-32004: expectedLeafId mismatch, or the file changed in a way that forbids the write."""

    CODE = m.CONFLICT


class AccessDenied(_AppError):
    """-32005: path outside allowedRoots, not a regular file, or a symlink escape."""

    CODE = m.ACCESS_DENIED


class SummaryUnavailable(_AppError):
    """-32006: a summary was requested but none was given and no summarizer is configured."""

    CODE = m.SUMMARY_UNAVAILABLE


class InvalidSessionFile(_AppError):
    """-32007: the file has no readable session header (nothing is written)."""

    CODE = m.INVALID_SESSION_FILE


class ReadOnlySession(_AppError):
    """-32008: a writing method on another agent's session (Claude Code, Codex), which is read-only."""

    CODE = m.READ_ONLY_SESSION


class ExportBudgetExceeded(_AppError):
    """-32009: an export took longer than its budget; nothing was exported."""

    CODE = m.EXPORT_BUDGET_EXCEEDED


class InternalError(_AppError):
    """-32603: a handler failed unexpectedly; the daemon keeps running."""

    CODE = -32603


def from_core(exc: BaseException) -> JsonRpcException | None:
    """The JSON-RPC error for a core exception, or None when it is not a known one."""
    if isinstance(exc, ExportBudgetError):
        return ExportBudgetExceeded(str(exc), {"budget": exc.budget})
    if isinstance(exc, core_errors.ReadOnlySessionError):
        return ReadOnlySession(str(exc), {"path": exc.path, "agent": exc.agent})
    if isinstance(exc, core_errors.EntryNotFoundError):
        return EntryNotFound(str(exc), {"entryId": exc.entry_id})
    if isinstance(exc, core_errors.InvalidSessionFileError):
        return InvalidSessionFile(str(exc), {"path": exc.path, "reason": exc.reason})
    if isinstance(exc, core_errors.PersistError):
        return PersistenceFailed(str(exc), {"path": exc.path})
    if isinstance(exc, core_errors.AccessDeniedError):
        data = {"path": exc.path}
        if exc.reason:
            data["reason"] = exc.reason
        return AccessDenied(str(exc), data)
    if isinstance(exc, core_errors.ConflictError):
        return Conflict(str(exc), {"path": exc.path})
    if isinstance(exc, SummaryUnavailableError):
        return SummaryUnavailable(str(exc) or "summary unavailable")
    if isinstance(exc, ValueError):
        # core refusals of a bad argument (e.g. "Invalid entry ID for branching")
        return InvalidParams(str(exc), {"reason": str(exc)})
    if isinstance(exc, core_errors.BlobError):
        return InternalError(str(exc), {"path": exc.path, "blob": exc.blob_hash})
    return None
