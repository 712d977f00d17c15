"""The Claude Code and Codex sessions `sessiontree ls --agent` lists beside pi's."""

from __future__ import annotations

from typing import Any


def other_agents_sessions(agent: str, cwd: str | None) -> list[Any]:
    """The transcripts of ``agent`` ("claude", "codex" or "all" for both), of ``cwd``'s
    project when given; nothing is created or written to look."""
    from sessiontree.core.session.foreign import list_foreign_sessions
    from sessiontree.core.sources.model import FOREIGN_AGENTS

    agents = FOREIGN_AGENTS if agent == "all" else (agent,)
    out: list[Any] = []
    for a in agents:
        out.extend(list_foreign_sessions(a, cwd))
    return out


def other_agents_exist() -> bool:
    """Whether Claude Code's or Codex's transcript directory exists (nothing is created)."""
    import os

    from sessiontree.core.sources.foreign import claude_root, codex_root

    return os.path.isdir(claude_root()) or os.path.isdir(codex_root())
