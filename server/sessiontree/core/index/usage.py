"""Usage totals of a session: one sum, whichever way the entries arrive.

Every assistant message's ``usage``, every ``task`` tool result's ``details.usage`` and
the ``usage`` of pi's usage entries, compactions and branch summaries and of oh-my-pi's
model_usage entries add to the totals: when a file is scanned (`scan.scan_clean` sums
the decoded lines), when an entry is held in memory (`UsageTotals.add_entry`), and when
scans of chunks or appended lines are joined (`UsageTotals.add_totals`).
"""

from __future__ import annotations

from typing import Any

import msgspec

__all__ = ["USAGE_ENTRY_TYPES", "UsageTotals"]

#: Entry types whose own ``usage`` counts: pi's ``usage`` entries and the usage of making a
#: compaction's or a branch summary's text, oh-my-pi's ``model_usage`` entries.
USAGE_ENTRY_TYPES = frozenset({"usage", "model_usage", "compaction", "branch_summary"})


class UsageTotals(msgspec.Struct):
    """Usage statistics summed over every assistant message and task tool result."""

    input: float = 0
    output: float = 0
    cacheRead: float = 0
    cacheWrite: float = 0
    premiumRequests: float = 0
    cost: float = 0

    def as_dict(self) -> dict[str, float]:
        return {
            "input": self.input,
            "output": self.output,
            "cacheRead": self.cacheRead,
            "cacheWrite": self.cacheWrite,
            "premiumRequests": self.premiumRequests,
            "cost": self.cost,
        }

    def add_totals(self, other: UsageTotals) -> None:
        """Add another set of totals (a scan of appended lines, a chunk of a file)."""
        self.input += other.input
        self.output += other.output
        self.cacheRead += other.cacheRead
        self.cacheWrite += other.cacheWrite
        self.premiumRequests += other.premiumRequests
        self.cost += other.cost

    def add_usage(self, usage: Any) -> None:
        """Add one `usage` object (a dict, or a decoded `_JUsage`)."""
        if usage is None:
            return
        if isinstance(usage, dict):
            get = usage.get
            cost = get("cost")
            self.input += _num(get("input"))
            self.output += _num(get("output"))
            self.cacheRead += _num(get("cacheRead"))
            self.cacheWrite += _num(get("cacheWrite"))
            self.premiumRequests += _num(get("premiumRequests"))
            self.cost += _num(cost.get("total")) if isinstance(cost, dict) else 0
        else:
            self.input += _num(usage.input)
            self.output += _num(usage.output)
            self.cacheRead += _num(usage.cacheRead)
            self.cacheWrite += _num(usage.cacheWrite)
            self.premiumRequests += _num(usage.premiumRequests)
            cost = usage.cost
            self.cost += _num(cost.total) if cost is not None else 0

    def add_entry(self, entry: Any) -> None:
        """Fold one entry dict into the totals (assistant usage, task tool-result usage,
        the usage of `USAGE_ENTRY_TYPES` entries)."""
        if not isinstance(entry, dict):
            return
        if entry.get("type") in USAGE_ENTRY_TYPES:
            usage = entry.get("usage")
            if isinstance(usage, dict):
                self.add_usage(usage)
            return
        if entry.get("type") != "message":
            return
        msg = entry.get("message")
        if not isinstance(msg, dict):
            return
        role = msg.get("role")
        if role == "assistant":
            usage = msg.get("usage")
            if isinstance(usage, dict):
                self.add_usage(usage)
        elif role == "toolResult" and msg.get("toolName") == "task":
            details = msg.get("details")
            if isinstance(details, dict) and isinstance(details.get("usage"), dict):
                self.add_usage(details["usage"])


def _num(v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float):
        return 0
    return v
