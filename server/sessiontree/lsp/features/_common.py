"""Helpers shared by the feature modules."""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import uuid
from collections.abc import Callable
from typing import Any

from lsprotocol import types as lsp

from sessiontree.core.store import FileSessionStorage
from sessiontree.lsp import mapping
from sessiontree.lsp.registry import OpenSession
from sessiontree.lsp.server import SessionTreeServer
from sessiontree.lsp.state import NavigationState

log = logging.getLogger("sessiontree.lsp")

PROGRESS_MIN_BYTES = 4 * 1024 * 1024
"""Opens of files at least this large report work-done progress even without a client token."""


def manager_kwargs(ls: SessionTreeServer) -> dict[str, Any]:
    """Keyword arguments every SessionManager constructor gets.

    Files are opened for viewing (docs/divergences.md 11): an open writes nothing (no migration
    rewrite); the first change a client asks for writes the migration after a backup copy.
    The daemon has no terminal of its own, so it never writes the agent's breadcrumbs.
    Every read and write of the files goes through the access policy's guard, checked at
    the moment it happens (docs/reliability.md, "Access at the point of use"); in-memory
    sessions keep their memory storage.
    """
    kw: dict[str, Any] = {
        "viewing": True,
        "breadcrumbs": False,
        "storage": FileSessionStorage(guard=ls.access.guard),
        # the open answers before the index cache is written (lsp/features/warm.py writes it)
        "defer_index_cache": True,
        # a big file's scan on two cores (core/session/split_scan.py)
        "parallel_scan": True,
    }
    if ls.config.agent_dir:
        kw["agent_dir"] = ls.config.agent_dir
    return kw


def state_for(ls: SessionTreeServer, session: OpenSession) -> tuple[NavigationState, str]:
    """The navigation store and key of a session (in-memory sessions: not persisted)."""
    if session.path is None:
        store = session.extra.get("nav")
        if store is None:
            store = session.extra["nav"] = NavigationState(None)
        return store, session.handle
    return files_state(ls), session.path


def files_state(ls: SessionTreeServer) -> NavigationState:
    """The navigation store of sessions with a file (made on first use)."""
    if ls.state is None:
        ls.state = NavigationState(ls.config.resolved_state_dir())
    return ls.state


def remember_leaf(ls: SessionTreeServer, session: OpenSession) -> None:
    """Save the session's leaf (called in the worker, under the session lock)."""
    store, key = state_for(ls, session)
    try:
        store.remember_leaf(key, session.manager.get_leaf_id(), mapping.last_entry_id(session.manager))
    except OSError as exc:
        log.warning("could not save navigation state: %s", exc)


def record_jump(
    ls: SessionTreeServer,
    session: OpenSession,
    previous: str | None,
    summary_entry_id: str | None = None,
) -> None:
    """Add a jump to the session's history (called under the session lock)."""
    store, key = state_for(ls, session)
    try:
        store.record_jump(
            key,
            leaf_id=session.manager.get_leaf_id(),
            previous_leaf_id=previous,
            last_entry_id=mapping.last_entry_id(session.manager),
            summary_entry_id=summary_entry_id,
        )
    except OSError as exc:
        log.warning("could not save navigation state: %s", exc)


class Progress:
    """Work-done progress for a long call: the client's token, or one we create."""

    def __init__(self, ls: SessionTreeServer, token: int | str | None) -> None:
        self.ls = ls
        self.token = token
        self.active = False

    def _client_supports(self) -> bool:
        caps: lsp.ClientCapabilities | None = self.ls.client_capabilities  # None before initialize
        window = caps.window if caps is not None else None
        return bool(window is not None and window.work_done_progress)

    async def begin(self, title: str, size: int) -> None:
        """Start reporting (no-op for small jobs without a client token)."""
        if self.token is None:
            if size < PROGRESS_MIN_BYTES or not self._client_supports():
                return
            self.token = f"sessiontree-{uuid.uuid4().hex[:12]}"
            try:
                await asyncio.wait_for(self.ls.work_done_progress.create_async(self.token), 5)
            except Exception as exc:
                log.debug("progress create refused: %s", exc)
                self.token = None
                return
        try:
            self.ls.work_done_progress.begin(
                self.token,
                lsp.WorkDoneProgressBegin(title=title, cancellable=False, message=f"{size / 1e6:.1f} MB"),
            )
            self.active = True
        except Exception as exc:
            log.debug("progress begin failed: %s", exc)

    async def tick(self, interval: float = 0.5) -> None:
        """Report the elapsed time every `interval` seconds until cancelled."""
        start = asyncio.get_running_loop().time()
        while self.active and self.token is not None:
            await asyncio.sleep(interval)
            if not self.active:
                return
            elapsed = asyncio.get_running_loop().time() - start
            try:
                self.ls.work_done_progress.report(
                    self.token, lsp.WorkDoneProgressReport(message=f"loading… {elapsed:.1f} s")
                )
            except Exception as exc:
                log.debug("progress report failed: %s", exc)
                return

    def end(self, message: str) -> None:
        """Finish reporting."""
        if self.active and self.token is not None:
            self.active = False
            try:
                self.ls.work_done_progress.end(self.token, lsp.WorkDoneProgressEnd(message=message))
            except Exception as exc:
                log.debug("progress end failed: %s", exc)


async def run_cancel_safe(
    ls: SessionTreeServer, fn: Callable[[], Any], on_orphan: Callable[[Any], None]
) -> Any:
    """Run `fn` in the pool; if the request is cancelled meanwhile, hand the late result to
    `on_orphan` (e.g. close a manager nobody will use)."""
    loop = asyncio.get_running_loop()
    fut = loop.run_in_executor(ls.registry.pool, fn)
    try:
        return await asyncio.shield(fut)
    except asyncio.CancelledError:

        def cleanup(f: asyncio.Future[Any]) -> None:
            if not f.cancelled() and f.exception() is None:
                try:
                    on_orphan(f.result())
                except Exception:
                    log.exception("cleanup after a cancelled request failed")

        fut.add_done_callback(cleanup)
        raise


class _SkippedWrite(Exception):
    """A write whose request was cancelled before it started: nothing was done."""


async def call_write(ls: SessionTreeServer, session: OpenSession, fn: Callable[[], Any]) -> Any:
    """Run a write on `session` so that a cancellation never hides a write that happened.

    Cancelled before the write started: it is skipped and the client gets -32800
    (RequestCancelled) with nothing written. Cancelled once it started: the write finishes
    and the client gets its normal result (JSON-RPC lets a server answer a cancelled
    request), so a client that retries on -32800 never writes twice.
    """
    gate = threading.Lock()
    state = {"cancelled": False, "started": False}

    def guarded() -> Any:
        with gate:
            if state["cancelled"]:
                raise _SkippedWrite
            state["started"] = True
        return fn()

    task = asyncio.ensure_future(ls.registry.call(session, guarded))
    task.add_done_callback(lambda f: f.cancelled() or f.exception())  # retrieved either way
    while True:
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            if task.done() and not task.cancelled():
                return task.result()  # finished as the cancel arrived: report it
            with gate:
                state["cancelled"] = True
                started = state["started"]
            if not started:
                raise
            # Started: wait for it and answer what was done (another cancel loops here).
            current = asyncio.current_task()
            if current is not None:
                current.uncancel()


def file_size(path: str) -> int:
    """Size of a file, 0 when it cannot be read."""
    try:
        return os.stat(path).st_size
    except OSError:
        return 0
