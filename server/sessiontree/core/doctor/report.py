"""What `sessiontree doctor` finds and does: problem kinds, the report, the repair's result."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import InvalidSessionFileError

__all__ = ["KINDS", "UNUSABLE_KINDS", "DoctorError", "DoctorReport", "Problem", "RepairResult"]

# Problem kinds, in the order the checks run. `severity` is "error" for damage (something
# is lost or unreachable), "warning" for things that load but look wrong, "note" for
# facts that need no action (the file is fine as it is).
KINDS: dict[str, str] = {
    "not-regular-file": "error",
    "empty": "warning",
    "not-a-session": "error",
    "dropped-line": "error",
    "torn-tail": "error",
    "missing-header": "error",
    "invalid-header": "error",
    "extra-header": "warning",
    "invalid-entry": "error",
    "missing-id": "error",
    "duplicate-id": "error",
    "orphan": "warning",
    "cycle": "error",
    "dangling-label": "warning",
    "dangling-compaction-anchor": "warning",
    "invalid-blob-ref": "error",
    "missing-blob": "error",
    "corrupt-blob": "error",
    "needs-migration": "note",
    "newer-version": "warning",
    "foreign-transcript": "note",
}


# Kinds that mean the file holds no session at all (nothing in it can be checked, shown or
# repaired): the command line treats them as unusable input, not as damage.
UNUSABLE_KINDS = frozenset({"empty", "not-a-session"})


@dataclass(frozen=True)
class Problem:
    """One finding of `check_file`: a kind from `KINDS`, a readable message, and where
    (`line`, 1-based; `offset` and `length`, the byte range of a dropped region)."""

    kind: str
    message: str
    line: int | None = None
    entry_id: str | None = None
    offset: int | None = None
    length: int | None = None

    @property
    def severity(self) -> str:
        return KINDS.get(self.kind, "error")

    @property
    def is_note(self) -> bool:
        """A finding that needs no action (it does not make the file unhealthy)."""
        return self.severity == "note"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "severity": self.severity, "message": self.message}
        if self.line is not None:
            out["line"] = self.line
        if self.entry_id is not None:
            out["entryId"] = self.entry_id
        if self.offset is not None:
            out["offset"] = self.offset
        if self.length is not None:
            out["length"] = self.length
        return out


@dataclass
class DoctorReport:
    """The result of `check_file`: the problems found plus a few facts about the file."""

    path: str
    problems: list[Problem] = field(default_factory=list)
    entry_count: int = 0
    version: int | None = None
    size: int = 0
    skipped_lines: int = 0
    torn_tail: bool = False
    #: The agent of another agent's transcript ("claude", "codex"); None for pi's format.
    agent: str | None = None

    @property
    def ok(self) -> bool:
        """No finding other than notes."""
        return all(p.is_note for p in self.problems)

    @property
    def unusable(self) -> Problem | None:
        """The finding that makes the file no session at all (empty, not a pi session), if any."""
        return next((p for p in self.problems if p.kind in UNUSABLE_KINDS), None)

    def kinds(self) -> list[str]:
        return [p.kind for p in self.problems]

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "ok": self.ok,
            "entryCount": self.entry_count,
            "version": self.version,
            "size": self.size,
            "skippedLines": self.skipped_lines,
            "tornTail": self.torn_tail,
            "problems": [p.to_dict() for p in self.problems],
            **({"agent": self.agent} if self.agent is not None else {}),
        }


@dataclass
class RepairResult:
    """The result of `repair_file`: what changed (one sentence each), the quarantine copy
    of the original bytes (None when nothing was written), and the report after repair."""

    path: str
    changes: list[str] = field(default_factory=list)
    quarantined_copy: str | None = None
    remaining: list[Problem] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.changes)

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "changes": list(self.changes),
            "quarantinedCopy": self.quarantined_copy,
            "remaining": [p.to_dict() for p in self.remaining],
        }


class DoctorError(InvalidSessionFileError):
    """The file could not be checked or repaired at all (missing, not a regular file, I/O,
    or a repair that would have to invent data). A subclass of `InvalidSessionFileError`
    so that callers handling the core's errors (the daemon: -32007) handle it too."""

    def __init__(self, path: str, reason: str) -> None:
        Exception.__init__(self, f"{path}: {reason}")
        self.path = path
        self.reason = reason
