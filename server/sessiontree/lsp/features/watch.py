"""Live sessions: start following files at `initialized`, announce what other processes did.

`LiveFollower` (`sessiontree.lsp.follower`) folds the changes of followed files into
their sessions; this module sends them: appended entries as `session/didChange`
(`source: "external"`), labels among them as `session/didChangeLabel`, a replaced /
truncated / rewritten / deleted file (or one now outside the allowed roots) as
`session/didReload`, and session files appearing or vanishing as `session/didChangeList`.
Initialization option `watch: false` turns all of it off. See docs/live-sessions.md.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from lsprotocol import types as lsp

from sessiontree.core.live import ChangeKind, SyncResult
from sessiontree.lsp import mapping, notify
from sessiontree.lsp.features import checkpoints
from sessiontree.lsp.follower import LiveFollower
from sessiontree.lsp.registry import OpenSession

if TYPE_CHECKING:
    from sessiontree.lsp.server import SessionTreeServer

log = logging.getLogger(__name__)


def announce(
    ls: SessionTreeServer, session: OpenSession, results: list[SyncResult], summaries: list[list[Any]]
) -> None:
    """Send the notifications of folded-in changes (on the event loop)."""
    if session.closed:
        return
    for res, rows in zip(results, summaries, strict=True):
        if res.kind is ChangeKind.DELETED or res.kind.needs_reload:
            notify.did_reload(ls, session, res.reason or str(res.kind))
            continue
        if rows:
            notify.did_change(ls, session, rows, res.leaf_id, res.old_leaf_id, source="external")
            for target, label in res.labels:
                notify.did_change_label(ls, session, target, label)


def announce_pending(ls: SessionTreeServer, session: OpenSession) -> None:
    """Announce changes that a write folded in (call before announcing the write itself)."""
    follower = ls.live_follower
    if follower is None:
        return
    results, summaries = follower.collect(session)
    if results:
        announce(ls, session, results, summaries)


def on_initialized(ls: SessionTreeServer, params: lsp.InitializedParams) -> None:
    """Start following files (unless `watch: false`); notifications go out from the loop."""
    if ls.live_follower is not None or not ls.config.watch:
        return
    loop = asyncio.get_running_loop()

    def post(fn: Callable[..., None], *args: Any) -> None:
        def run() -> None:
            try:
                fn(*args)
            except Exception:
                log.exception("announcing a live change failed")

        loop.call_soon_threadsafe(run)

    follower = LiveFollower(
        ls.registry,
        post,
        lambda session, results, summaries: announce(ls, session, results, summaries),
        lambda cwd: notify.did_change_list(ls, cwd),
        mapping.summary,
        _sessions_roots(ls),
        guard=ls.access.guard,
        on_appended=lambda manager, ids: checkpoints.capture(ls, manager, ids),
    )
    ls.live_follower = follower
    follower.start()


def on_shutdown(ls: SessionTreeServer, params: None) -> None:
    """Stop following files."""
    follower, ls.live_follower = ls.live_follower, None
    if follower is not None:
        follower.stop()


def _sessions_roots(server: SessionTreeServer) -> list[str]:
    try:
        # Every agent dir listed (`agent_homes`). A sessions root outside the allowed roots
        # is not watched: its listings are not the client's to see.
        roots = [h.sessions_root for h in server.agent_homes() if server.access.guard.accept(h.sessions_root)]
        # Claude Code's and Codex's transcript roots too (new transcripts: didChangeList).
        from sessiontree.core.sources.foreign import claude_root, codex_root

        for other in (claude_root(), codex_root()):
            if os.path.isdir(other) and server.access.guard.accept(other):
                roots.append(other)
        return roots
    except Exception:
        log.exception("no sessions root to watch")
        return []


def setup(server: SessionTreeServer) -> None:
    """Start live following once the client is initialized, stop it at shutdown."""
    server.feature(lsp.INITIALIZED)(on_initialized)
    server.feature(lsp.SHUTDOWN)(on_shutdown)
