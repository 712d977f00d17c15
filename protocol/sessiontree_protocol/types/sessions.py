"""Params and results of the session-level methods (list, open, create, fork, name)."""

from __future__ import annotations

import attrs

from sessiontree_protocol.types.base import NameSource, _list, _opt, _req
from sessiontree_protocol.types.shared import RecentSession, SessionInfo
from sessiontree_protocol.types.store import StoreStatus

# ---------------------------------------------------------------------------------------
# Sessions


@attrs.define(kw_only=True)
class ListParams:
    """Params of `session/list`."""

    cwd: str | None = _opt("Project directory (default: the daemon's working directory).")
    all: bool = _opt("List every project's sessions.", False)
    limit: int | None = _opt("At most this many sessions.")
    query: str | None = _opt(
        "Full-text filter: every whitespace-separated token must occur (case-insensitive)."
    )
    agent: str | None = _opt(
        'Addition: whose sessions: "pi", "claude", "codex" or "all" (default: all that exist). Claude Code '
        "transcripts come from $CLAUDE_CONFIG_DIR/projects (else ~/.claude/projects), Codex rollouts from "
        "$CODEX_HOME/sessions (else ~/.codex/sessions), each only inside the allowed roots.",
        addition=True,
    )


@attrs.define(kw_only=True)
class ListResult:
    """Result of `session/list`, newest first."""

    sessions: list[SessionInfo] = _list("The sessions, newest first.")
    store: StoreStatus | None = _opt(
        "Addition: the shared store's state when the daemon has one (its sessions follow the local ones).",
        addition=True,
    )
    agent_dirs: list[str] = _list(
        "Addition: the agent directories of pi's family whose sessions were looked for (one when an agent "
        "dir is set, else every one that exists: storage-format.md).",
        addition=True,
    )
    hint: str | None = _opt(
        "Addition: why no session of pi's family can be listed, when that is so: no agent directory exists "
        "(it names the one looked for and what chose it). A client shows it beside the list.",
        addition=True,
    )


@attrs.define(kw_only=True)
class RecentParams:
    """Params of `session/recent`."""

    cwd: str | None = _opt("Project directory (default: the daemon's working directory).")
    session_dir: str | None = _opt("Session directory to look in instead of the project's default.")
    limit: int = _opt("At most this many sessions.", 3)


@attrs.define(kw_only=True)
class RecentResult:
    """Result of `session/recent`."""

    sessions: list[RecentSession] = _list("The sessions, newest first.")


@attrs.define(kw_only=True)
class OpenParams:
    """Params of `session/open`."""

    path: str = _req("Path of the session file.")
    work_done_token: int | str | None = _opt("LSP work-done progress token for a long open.")


@attrs.define(kw_only=True)
class CreateParams:
    """Params of `session/create`."""

    cwd: str = _req("Working directory of the new session.")
    session_dir: str | None = _opt("Directory for the file (default: the project's session directory).")
    parent_session: str | None = _opt("parentSession of the new header.")


@attrs.define(kw_only=True)
class ContinueRecentParams:
    """Params of `session/continueRecent`."""

    cwd: str = _req("Working directory.")
    session_dir: str | None = _opt("Session directory (default: the project's).")
    terminal_id: str | None = _opt("Terminal id whose breadcrumb is preferred.")


@attrs.define(kw_only=True)
class OpenInMemoryParams:
    """Params of `session/openInMemory`."""

    cwd: str | None = _opt("Working directory recorded in the header.")


@attrs.define(kw_only=True)
class ForkFromParams:
    """Params of `session/forkFrom`."""

    source_path: str = _req("The session file to copy.")
    cwd: str = _req("Working directory of the new session.")
    session_dir: str | None = _opt("Directory for the new file.")


@attrs.define(kw_only=True)
class ForkResult:
    """Result of `session/fork`."""

    old_path: str = _req("The original file.")
    new_path: str = _req("The new file (the handle now addresses it).")


@attrs.define(kw_only=True)
class SetNameParams:
    """Params of `session/setName`."""

    session: str = _req("The session handle.")
    name: str = _req("The new title.")
    source: NameSource = _opt('"user" (default) or "auto" (does not override a user title).', "user")


@attrs.define(kw_only=True)
class SetNameResult:
    """Result of `session/setName`."""

    changed: bool = _req("False when the name was refused (empty, or auto over a user title).")
