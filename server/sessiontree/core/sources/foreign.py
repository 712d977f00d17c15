"""Other agents' transcripts behind one seam: which agent wrote a file, its reader, where
each agent keeps its transcripts.

`agent_of(head)` names the agent of a file from its first bytes (None: pi's format or no
session); `read(agent, data)` maps a whole file to a `Translation`; `new_reader(agent)`
gives a reader that takes lines one at a time (for appends); `to_pi_jsonl` writes a
translation as the pi JSONL the session store indexes (in memory only, never to disk).
`claude_root()` / `codex_root()` and `transcripts(agent)` find the files, through the
same environment variables the agents read (`CLAUDE_CONFIG_DIR`, `CODEX_HOME`).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from typing import Any

from ..format import jsonl
from .claude import ClaudeReader, feed_lines
from .codex import CodexReader
from .model import FOREIGN_AGENTS, Translation

__all__ = [
    "FOREIGN_AGENTS",
    "agent_of",
    "agent_root_containing",
    "claude_root",
    "codex_root",
    "codex_thread_names",
    "new_reader",
    "read",
    "root_of",
    "summarize",
    "to_pi_jsonl",
    "transcripts",
]

#: How much of a file `agent_of` looks at.
SNIFF_BYTES = 64 * 1024


def agent_of(head: bytes) -> str | None:
    """ "claude" or "codex" when ``head`` (a file's first bytes) is such a transcript."""
    from .sniff import foreign_format_of

    return foreign_format_of(head)


def new_reader(agent: str, sink: Any = None) -> Any:
    """A reader of ``agent``'s lines; ``sink(entry)`` gets each entry (default: the
    translation's `entries`)."""
    if agent == "claude":
        return ClaudeReader(sink)
    if agent == "codex":
        return CodexReader(sink)
    raise ValueError(f"no reader for {agent!r}")


def read(agent: str, data: bytes) -> Translation:
    """The pi entries of a whole transcript (damaged lines reported in `damage`)."""
    reader = new_reader(agent)
    feed_lines(reader, data)
    return reader.result()  # type: ignore[no-any-return]


def summarize(agent: str, data: bytes) -> Translation:
    """What a listing shows of a transcript (no entries built for Claude Code's)."""
    if agent == "claude":
        from .claude import summarize_claude

        return summarize_claude(data)
    return read(agent, data)


def to_pi_jsonl(t: Translation, lines: list[bytes] | None = None) -> bytes:
    """The translation as a current-version pi session file (header first); ``lines``:
    its entries already written as lines (else `t.entries`)."""
    dumps = jsonl.dumps_line
    parts = [dumps(t.header())]
    parts.extend(lines if lines is not None else (dumps(e) for e in t.entries))
    parts.append(b"")
    return b"\n".join(parts)


def _env(env: Mapping[str, str] | None) -> Mapping[str, str]:
    return os.environ if env is None else env


def _home(env: Mapping[str, str]) -> str:
    return env.get("HOME") or os.path.expanduser("~")


def claude_root(env: Mapping[str, str] | None = None) -> str:
    """Where Claude Code keeps transcripts: ``$CLAUDE_CONFIG_DIR/projects``, else ``~/.claude/projects``."""
    e = _env(env)
    base = e.get("CLAUDE_CONFIG_DIR") or os.path.join(_home(e), ".claude")
    return os.path.join(os.path.abspath(os.path.expanduser(base)), "projects")


def codex_root(env: Mapping[str, str] | None = None) -> str:
    """Where Codex keeps rollouts: ``$CODEX_HOME/sessions``, else ``~/.codex/sessions``."""
    e = _env(env)
    base = e.get("CODEX_HOME") or os.path.join(_home(e), ".codex")
    return os.path.join(os.path.abspath(os.path.expanduser(base)), "sessions")


def codex_thread_names(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """Codex's thread names: ``$CODEX_HOME/session_index.jsonl`` (``{id, thread_name,
    updated_at}`` lines, appended; the last one of an id wins). Empty when it is missing."""
    path = os.path.join(os.path.dirname(codex_root(env)), "session_index.jsonl")
    names: dict[str, str] = {}
    data = _read_regular(path, 16 << 20)
    if data is None:
        return names
    for line in data.splitlines():
        try:
            v = jsonl.loads_line(line)
        except ValueError:
            continue
        name = v.get("thread_name") if isinstance(v, dict) else None
        if isinstance(name, str) and name.strip() and isinstance(v.get("id"), str):
            names[v["id"]] = name.strip()
    return names


def _read_regular(path: str, limit: int) -> bytes | None:
    """At most ``limit`` bytes of the regular file at ``path`` (None: missing, a link, not a
    regular file). Opened without blocking and checked on the descriptor: a FIFO put there
    hung every listing of Codex sessions, and the opens of them, for ever."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None
            return f.read(limit)
        except OSError:
            return None


def root_of(agent: str, env: Mapping[str, str] | None = None) -> str:
    return claude_root(env) if agent == "claude" else codex_root(env)


def agent_root_containing(path: str, env: Mapping[str, str] | None = None) -> str | None:
    """The agent ("claude", "codex") whose transcript root holds ``path``, or None.

    Nothing but that agent's own transcripts is opened there, and only read: no pi session
    is ever created or written under another agent's directory.
    """
    real = os.path.realpath(os.path.abspath(path))
    for agent in FOREIGN_AGENTS:
        root = os.path.realpath(root_of(agent, env))
        if real == root or real.startswith(root + os.sep):
            return agent
    return None


def claude_project_dir(cwd: str, env: Mapping[str, str] | None = None) -> str:
    """The directory of one cwd's transcripts: every character but letters, digits and
    ``-`` becomes ``-`` (``/home/me/src.x`` is ``-home-me-src-x``)."""
    name = "".join(c if c.isalnum() or c == "-" else "-" for c in os.path.abspath(cwd))
    return os.path.join(claude_root(env), name)


def transcripts(agent: str, env: Mapping[str, str] | None = None, cwd: str | None = None) -> list[str]:
    """The transcript files of an agent (of one cwd's project for Claude Code when ``cwd``
    is given; Codex rollouts are filtered by cwd by the caller, from their headers).

    Only looks: lists directories, never creates one. Claude Code's subagent files
    (``<session>/subagents/*.jsonl``) are not sessions of their own and are left out.
    """
    root = root_of(agent, env)
    out: list[str] = []
    if agent == "claude":
        dirs = [claude_project_dir(cwd, env)] if cwd is not None else _subdirs(root)
        for d in dirs:
            try:
                names = os.listdir(d)
            except OSError:
                continue
            out.extend(os.path.join(d, n) for n in names if n.endswith(".jsonl"))
    else:
        for dirpath, _dirs, names in os.walk(root):
            out.extend(os.path.join(dirpath, n) for n in names if n.endswith(".jsonl"))
    return sorted(p for p in out if os.path.isfile(p))


def _subdirs(root: str) -> list[str]:
    try:
        return [
            os.path.join(root, n) for n in sorted(os.listdir(root)) if os.path.isdir(os.path.join(root, n))
        ]
    except OSError:
        return []
