"""What a reader of another agent's transcript gives: pi-shaped entries, read-only.

A reader maps each line of a foreign file to zero or more entries of pi's format (message
entries with user / assistant / toolResult roles and toolCall blocks, compactions, custom
entries for the lines that are no conversation), in file order, plus the header facts and
the leaf the agent would resume. The session, view, context and search code then work on
them unchanged; nothing is ever written back (docs/other-agents.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["AGENTS", "FOREIGN_AGENTS", "Damage", "Translation", "pi_tool", "resume_command"]

#: Every agent sessiontree lists, pi's family first.
AGENTS = ("pi", "claude", "codex")
#: The agents whose transcripts are read through `core.sources` (read-only).
FOREIGN_AGENTS = ("claude", "codex")

#: Other agents' tool names that mean one of pi's tools, so the view's tool-call rules
#: (`[bash: ...]`, `[read: ...]`) apply to them as they do to pi's.
_PI_TOOLS = {
    "Bash": "bash",
    "Read": "read",
    "Write": "write",
    "Edit": "edit",
    "MultiEdit": "edit",
    "NotebookEdit": "edit",
    "Grep": "grep",
    "Glob": "find",
    "LS": "ls",
    "exec_command": "bash",
    "shell": "bash",
    "local_shell": "bash",
    "shell_command": "bash",
}


def pi_tool(name: Any, args: Any) -> tuple[str, Any]:
    """The pi tool name and arguments a foreign tool call is shown as (unknown ones kept)."""
    if not isinstance(name, str):
        return str(name), args
    mapped = _PI_TOOLS.get(name)
    if mapped is None:
        return name, args
    if mapped == "bash" and isinstance(args, dict) and "command" not in args:
        cmd = args.get("cmd")
        args = {**args, "command": cmd}
    elif mapped == "bash" and isinstance(args, dict) and isinstance(args.get("command"), list):
        args = {**args, "command": " ".join(str(x) for x in args["command"])}
    return mapped, args


def resume_command(agent: str, session_id: str) -> str | None:
    """The shell command that resumes a foreign session in its own agent."""
    if not session_id:
        return None
    if agent == "claude":
        return f"claude --resume {session_id}"
    if agent == "codex":
        return f"codex resume {session_id}"
    return None


@dataclass
class Damage:
    """A line a reader could not use: its number (1-based), byte offset and why."""

    line: int
    offset: int
    reason: str


@dataclass
class Translation:
    """A foreign file as pi entries (`entries` in file order) and what its header says."""

    agent: str
    session_id: str = ""
    cwd: str = ""
    created: str | None = None
    title: str | None = None
    first_user_text: str | None = None
    parent_id: str | None = None
    #: Why `parent_id` names another session: "fork" or "subagent".
    parent_kind: str | None = None
    #: The parent session's file, when it was found (the header's `parentSession`).
    parent_path: str | None = None
    entries: list[dict[str, Any]] = field(default_factory=list)
    leaf_id: str | None = None
    damage: list[Damage] = field(default_factory=list)
    #: Lines read (complete ones), and how many of them became no entry at all.
    lines: int = 0
    end: int = 0
    #: Lines seen so far (blank ones too): the next line's number is ``lineno + 1``.
    lineno: int = 0
    message_count: int = 0
    torn_tail: bool = False

    def header(self) -> dict[str, Any]:
        """A pi session header for the entries (version 3; the agent named)."""
        h: dict[str, Any] = {
            "type": "session",
            "version": 3,
            "id": self.session_id,
            "timestamp": self.created or "",
            "cwd": self.cwd,
        }
        if self.title:
            h["title"] = self.title
            h["titleSource"] = "auto"
        if self.parent_path:
            h["parentSession"] = self.parent_path
        h["agent"] = self.agent
        return h

    @property
    def resume(self) -> str | None:
        return resume_command(self.agent, self.session_id)
