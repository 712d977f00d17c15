"""Open sessions by opaque handle, one lock per session, and the daemon's event hook.

- `Registry.open_path` gives the same handle for the same resolved path (concurrent opens
  of one path share one load); `close` frees the handle.
- `OpenSession.call(fn, *args)` runs a blocking core call in the daemon's worker pool
  under the session's lock, so the event loop stays free (a small request is answered
  while a 100 MB open is in progress) and calls on one session never interleave.
- Events: `Registry.subscribe(listener)`; listeners get `RegistryEvent`s
  ("opened", "closed", "changed", "navigated", "labelled") after local changes. The
  notification helpers of `sessiontree.lsp.notify` are driven from here; a file watcher
  (features/watch.py) subscribes to "opened"/"closed" to start and stop following files.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import attrs

from sessiontree.lsp.errors import UnknownSession

log = logging.getLogger(__name__)
T = TypeVar("T")


@attrs.define(eq=False)
class OpenSession:
    """One open session: its handle, the core manager, its resolved path and its lock."""

    handle: str
    manager: Any
    path: str | None
    lock: threading.RLock = attrs.field(factory=threading.RLock)
    closed: bool = False
    extra: dict[str, Any] = attrs.field(factory=dict)
    """Per-session state other features may keep (e.g. a watcher)."""


@attrs.frozen
class RegistryEvent:
    """Something happened to an open session (`kind`: opened, closed, changed, navigated, labelled)."""

    kind: str
    session: OpenSession
    data: dict[str, Any] = attrs.field(factory=dict)


Listener = Callable[[RegistryEvent], None]


class Registry:
    """All open sessions of the daemon."""

    def __init__(self, max_workers: int = 8) -> None:
        self._by_handle: dict[str, OpenSession] = {}
        self._by_path: dict[str, OpenSession] = {}
        self._pending: dict[str, asyncio.Future[OpenSession]] = {}
        self._counter = itertools.count(1)
        self._listeners: list[Listener] = []
        self.pool = ThreadPoolExecutor(max_workers=max(2, max_workers), thread_name_prefix="sessiontree-core")

    # -- events ------------------------------------------------------------------------
    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call `listener` for every event; returns an unsubscribe function."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def emit(self, kind: str, session: OpenSession, **data: Any) -> None:
        """Deliver an event to every listener (a failing listener is logged, not raised)."""
        ev = RegistryEvent(kind, session, data)
        for listener in list(self._listeners):
            try:
                listener(ev)
            except Exception:
                log.exception("registry listener failed on %s", kind)

    # -- lookup ------------------------------------------------------------------------
    def get(self, handle: str) -> OpenSession:
        """The open session of a handle, or -32001."""
        s = self._by_handle.get(handle)
        if s is None or s.closed:
            raise UnknownSession(f"Unknown session handle {handle!r}", {"session": handle})
        return s

    def by_path(self, path: str) -> OpenSession | None:
        """The open session of a resolved path, if any."""
        return self._by_path.get(path)

    def sessions(self) -> list[OpenSession]:
        """Every open session."""
        return list(self._by_handle.values())

    def _new_handle(self) -> str:
        return f"s{next(self._counter)}"

    # -- running core calls --------------------------------------------------------------
    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """Run a blocking call in the worker pool (no session lock)."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.pool, lambda: fn(*args))

    async def call(self, session: OpenSession, fn: Callable[..., T], *args: Any) -> T:
        """Run a blocking core call on `session` in the pool, under the session's lock."""

        def locked() -> T:
            with session.lock:
                if session.closed:
                    raise UnknownSession(f"Session {session.handle} was closed", {"session": session.handle})
                return fn(*args)

        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.pool, locked)

    # -- opening and closing -------------------------------------------------------------
    async def open_path(self, path: str, load: Callable[[], Awaitable[Any]]) -> tuple[OpenSession, bool]:
        """The session of resolved `path`, loading it with `load()` unless it is open or loading.

        Returns (session, newly_opened).
        """
        existing = self._by_path.get(path)
        if existing is not None and not existing.closed:
            return existing, False
        pending = self._pending.get(path)
        if pending is not None:
            return await asyncio.shield(pending), False
        fut: asyncio.Future[OpenSession] = asyncio.get_running_loop().create_future()
        self._pending[path] = fut
        try:
            manager = await load()
        except BaseException as exc:
            self._pending.pop(path, None)
            if not fut.done():
                fut.set_exception(exc if isinstance(exc, Exception) else RuntimeError("open cancelled"))
                fut.exception()  # mark retrieved
            raise
        self._pending.pop(path, None)
        session = self.add(manager, path)
        fut.set_result(session)
        return session, True

    def add(self, manager: Any, path: str | None) -> OpenSession:
        """Register an already opened manager under a new handle."""
        session = OpenSession(self._new_handle(), manager, path)
        self._by_handle[session.handle] = session
        if path is not None:
            self._by_path[path] = session
        self.emit("opened", session)
        return session

    def rekey(self, session: OpenSession, new_path: str | None) -> None:
        """The session's file changed (fork, moveTo): index it under its new path."""
        if session.path is not None and self._by_path.get(session.path) is session:
            del self._by_path[session.path]
        session.path = new_path
        if new_path is not None:
            self._by_path[new_path] = session

    def remove(self, session: OpenSession) -> None:
        """Forget a session (the caller closes the manager)."""
        session.closed = True
        self._by_handle.pop(session.handle, None)
        if session.path is not None and self._by_path.get(session.path) is session:
            del self._by_path[session.path]
        self.emit("closed", session)

    def shutdown(self) -> None:
        """Stop the worker pool (pending calls finish)."""
        self.pool.shutdown(wait=False, cancel_futures=True)
