"""Open sessions by opaque handle, one lock per session, and the daemon's event hook.

- `Registry.open_path` gives the same handle for the same resolved path (concurrent opens
  of one path share one load); `remove` frees the handle.
- `Registry.call(session, fn, *args)` runs a blocking core call in a worker thread under
  the session's lock, so the event loop stays free (a small request is answered while a
  100 MB open is in progress) and calls on one session never interleave.
- Scheduling is per session: each session has its own FIFO of pending calls and at most
  one worker at a time (its lock would serialize more anyway), and after each call its
  next one goes to the back of the shared queue, so sessions take turns. A backlog of
  slow calls on one session therefore occupies one worker, not all of them, and a cheap
  call on another session waits for at most the calls already running. Session calls
  have their own workers (`session_pool`); session-less work (`run`: loading a file,
  listing, doctor) uses `pool`, so many big opens cannot starve open sessions either.
- Events: `Registry.subscribe(listener)`; listeners get `RegistryEvent`s ("opened",
  "closing" (from the thread that holds the session's lock, before its manager is
  closed), "closed", and after each notification of `sessiontree.lsp.notify`: "changed",
  "navigated", "labelled", "reloaded"). The live follower (`sessiontree.lsp.follower`)
  subscribes to start and stop following files and to look at a file after a local write.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import attrs

from sessiontree.lsp.errors import UnknownSession

log = logging.getLogger(__name__)
T = TypeVar("T")


@attrs.define(eq=False, slots=True)
class _Job:
    """One call waiting for its session's turn."""

    fn: Callable[..., Any]
    args: tuple[Any, ...]
    future: asyncio.Future[Any]


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
    pending: deque[_Job] = attrs.field(factory=deque, repr=False)
    """Calls waiting for this session's turn (only touched on the event loop)."""
    scheduled: bool = False
    """A call of this session is in the worker pool (running or queued there)."""
    last_call: float = attrs.field(factory=time.monotonic)
    """When a client's call on this session last came or ended (`Registry.call`; idle-time
    work does not count, features/warm.py waits for a quiet moment)."""
    calls_in_flight: int = 0
    """Clients' calls on this session not answered yet (a long one is not a quiet moment)."""


@attrs.frozen
class RegistryEvent:
    """Something happened to an open session (`kind`: opened, closing, closed, changed,
    navigated, labelled, reloaded)."""

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
        self.loop: asyncio.AbstractEventLoop | None = None
        workers = max(2, max_workers)
        self.pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="sessiontree-core")
        """Workers for session-less work (`run`, loads)."""
        self.session_pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="sessiontree-session")
        """Workers for calls on open sessions (`call`), one session per worker at a time."""

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
        """Run a blocking core call on `session` in a worker, under the session's lock, when
        it is the session's turn (calls on one session run one at a time, in order)."""
        session.last_call = time.monotonic()
        session.calls_in_flight += 1
        try:
            return await self.call_in_idle_time(session, fn, *args)
        finally:
            session.calls_in_flight -= 1
            session.last_call = time.monotonic()

    async def call_in_idle_time(self, session: OpenSession, fn: Callable[..., T], *args: Any) -> T:
        """`call` for work nobody waits for: it does not count as the session's activity."""
        loop = asyncio.get_running_loop()
        self.loop = loop  # where events raised in workers hand work back (features/warm.py)
        fut: asyncio.Future[T] = loop.create_future()
        session.pending.append(_Job(fn, args, fut))
        self._schedule(session, loop)
        return await fut

    def _schedule(self, session: OpenSession, loop: asyncio.AbstractEventLoop) -> None:
        """Hand the session's next pending call to the pool unless one is there already."""
        if session.scheduled:
            return
        pending = session.pending
        while pending:
            job = pending.popleft()
            if job.future.done():  # cancelled while it waited: it never runs
                continue
            session.scheduled = True
            try:
                self.session_pool.submit(self._work, session, job, loop)
            except RuntimeError:  # the pool is shut down
                session.scheduled = False
                job.future.cancel()
                continue
            return

    def _work(self, session: OpenSession, job: _Job, loop: asyncio.AbstractEventLoop) -> None:
        """In a worker: run one call under the session's lock, then report to the loop."""
        result: Any = None
        error: BaseException | None = None
        try:
            with session.lock:
                if session.closed:
                    raise UnknownSession(f"Session {session.handle} was closed", {"session": session.handle})
                result = job.fn(*job.args)
        except Exception as exc:
            error = exc
        except BaseException as exc:  # asyncio futures take no SystemExit and the like
            error = RuntimeError(f"{type(exc).__name__} in a session call")
        try:
            loop.call_soon_threadsafe(self._done, session, job, result, error)
        except RuntimeError:  # the loop is gone (daemon exit): nobody waits for the answer
            pass

    def _done(self, session: OpenSession, job: _Job, result: Any, error: BaseException | None) -> None:
        """On the loop: deliver a call's outcome and give the session its next turn."""
        session.scheduled = False
        fut = job.future
        if not fut.done():
            if error is not None:
                fut.set_exception(error)
            else:
                fut.set_result(result)
        self._schedule(session, fut.get_loop())

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

    def release_path(self, session: OpenSession) -> None:
        """The session is closing: an open of its file from now on loads it afresh (instead of
        being handed this session, which its close, queued behind its running calls, ends)."""
        if session.path is not None and self._by_path.get(session.path) is session:
            del self._by_path[session.path]

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
        """Stop the worker pools (running calls finish; waiting ones are cancelled)."""
        self.pool.shutdown(wait=False, cancel_futures=True)
        self.session_pool.shutdown(wait=False, cancel_futures=True)
        for session in list(self._by_handle.values()):
            while session.pending:
                session.pending.popleft().future.cancel()
