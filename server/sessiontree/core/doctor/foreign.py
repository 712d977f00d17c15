"""`doctor` on another agent's transcript: checks only (such a file is never repaired).

The transcript is read by its reader (`core.sources`) and the findings are those of the
pi entries it maps to: lines that are no JSON (dropped), a torn last line, entries whose
parent is not in the file (an excerpt, or lines lost), and one note naming the agent.
"""

from __future__ import annotations

from ..sources import foreign
from .report import DoctorReport, Problem

__all__ = ["check_foreign"]

_NAMES = {"claude": "Claude Code", "codex": "Codex"}


def check_foreign(report: DoctorReport, data: bytes, agent: str) -> DoctorReport:
    """Fill ``report`` with the findings of a transcript written by ``agent``."""
    t = foreign.read(agent, data)
    report.agent = agent
    report.entry_count = len(t.entries)
    report.skipped_lines = len(t.damage)
    report.torn_tail = t.torn_tail
    problems = report.problems
    problems.append(
        Problem(
            "foreign-transcript",
            f"a {_NAMES.get(agent, agent)} transcript: read-only (shown as a tree, never written or repaired)",
        )
    )
    for d in t.damage:
        problems.append(
            Problem("dropped-line", f"line {d.line} is skipped: {d.reason}", d.line, offset=d.offset)
        )
    if t.torn_tail:
        problems.append(
            Problem("torn-tail", "the last line is incomplete (the agent may still be writing it)")
        )
    ids = {e["id"] for e in t.entries}
    for e in t.entries:
        pid = e.get("parentId")
        if pid is not None and pid not in ids:
            problems.append(
                Problem("orphan", f"the parent {pid} is not in the file: shown as a root", entry_id=e["id"])
            )
    return report
