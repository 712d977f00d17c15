"""The shared session store in the daemon (docs/shared-store.md): shared sessions beside the
local ones in `session/list`, `session/openShared`, and other machines' changes announced
live through PostgreSQL LISTEN/NOTIFY.

A shared session is a `SessionManager` over `PostgresSessionStorage`: reads, writes and
their guards are the manager's, as for a file; the store's backend is followable, so the
live follower folds other machines' lines in the way it folds another process's appends to
a file. What wakes it is the store's notification (one per statement that added entries,
naming the session), received on a connection of its own in a thread; after a lost
connection it reconnects with backoff and looks at every shared session once, since
notifications sent meanwhile are gone.

The daemon never waits on the store inside a request that only looks (docs/reliability.md,
"The shared store"): the storage keeps the bytes of each shared session it read (``mirror``),
so a view, its entries and the follower's look answer from them, and only `refresh`, run
before the follower's look and outside the session's lock, asks the store for more. A list
waits for the store at most `LIST_WAIT` seconds, then answers with the local sessions, the
shared ones as last listed and ``store.reachable: false``; the listing goes on in the link's
own threads and a `session/didChangeList` follows when it completes. Every store call is
bounded (`core/store/pg_timeouts.py`), and runs in the link's threads, never the daemon's
workers, so a hung store holds nothing local.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
import queue
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

from sessiontree_protocol import methods as m
from sessiontree_protocol import types as t

from sessiontree.core.discovery.names import display_name
from sessiontree.core.session import SessionManager
from sessiontree.lsp import errors, mapping
from sessiontree.lsp.handlers import register
from sessiontree.lsp.registry import OpenSession
from sessiontree.lsp.server import SessionTreeServer

log = logging.getLogger(__name__)

_PK = "store.pk"

T = TypeVar("T")

#: Seconds `session/list` waits for the store before it answers with what it has.
LIST_WAIT = 3.0
#: Seconds a connection to the store may take to set up (a list never waits longer anyway).
CONNECT_TIMEOUT = 3.0
#: Seconds the store is left alone after it failed or did not answer (the listener goes on
#: retrying meanwhile and notices it coming back).
RETRY_AFTER = 10.0


class _StoreThreads:
    """A few daemon threads that run the calls to the store: a call the store holds until
    its timeout holds one of them, never one of the daemon's workers, and never the
    daemon's exit (unlike an executor's threads, which the interpreter waits for)."""

    def __init__(self, count: int) -> None:
        self._queue: queue.SimpleQueue[tuple[concurrent.futures.Future[Any], Callable[[], Any]] | None] = (
            queue.SimpleQueue()
        )
        self._count = count
        self._started = False
        self._lock = threading.Lock()

    def submit(self, fn: Callable[..., T], *args: Any) -> concurrent.futures.Future[T]:
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        with self._lock:
            if not self._started:
                self._started = True
                for i in range(self._count):
                    threading.Thread(target=self._work, name=f"store-{i}", daemon=True).start()
        self._queue.put((future, lambda: fn(*args)))
        return future

    def stop(self) -> None:
        for _ in range(self._count):
            self._queue.put(None)

    def _work(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            future, call = item
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(call())
            except BaseException as exc:
                future.set_exception(exc)


class StoreLink:
    """One daemon's link to its store: the storage, the last known state, the listener."""

    def __init__(self, ls: SessionTreeServer, url: str) -> None:
        from sessiontree.core.store.postgres import PostgresSessionStorage

        self.ls = ls
        # The bytes of each shared session read are kept (mirror): looking never waits on
        # the store.
        self.storage = PostgresSessionStorage(url, mirror=True)
        # A list must not wait long for a store that is down: connect briefly, and after a
        # failure leave the store alone for a while (the listener notices it coming back).
        self.storage.pool.connect_timeout = CONNECT_TIMEOUT
        self.storage.report = lambda text: log.warning("%s", text)
        # The link's own threads: a hung store holds them, never the daemon's workers.
        self._threads = _StoreThreads(2)
        #: The shared sessions as last listed (what a list shows while the store is away).
        self.shared: list[tuple[Any, t.SessionInfo]] = []
        self._listing: concurrent.futures.Future[list[tuple[Any, t.SessionInfo]]] | None = None
        # A list answered without waiting for this listing: tell the clients when it ends.
        self._late = False
        self._schema_ok = False
        #: Shared sessions being opened: their kept bytes stay (not registered yet).
        self.opening: set[str] = set()
        self.reachable = True
        self.error: str | None = None
        self.retry_at = 0.0
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._lock = threading.Lock()
        # Sessions the listener has heard of: a notification naming another one means a
        # session appeared in the store, and the client's lists are told to refresh.
        self._known: set[int] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def status(self) -> t.StoreStatus:
        return t.StoreStatus(reachable=self.reachable, machine=self.storage.machine, error=self.error)

    def failed(self, exc: BaseException) -> None:
        self._schema_ok = False  # the store may come back migrated
        self.retry_at = time.monotonic() + RETRY_AFTER
        self.reachable = False
        self.error = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__

    def ok(self) -> None:
        self.retry_at = 0.0
        self.reachable = True
        self.error = None

    def listen(self) -> None:
        """Start the listener thread (once; called on the event loop)."""
        with self._lock:
            if self._loop is None:
                self._loop = asyncio.get_running_loop()
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="store-listen", daemon=True)
                self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._threads.stop()

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` in the link's threads (each store call in it is bounded)."""
        return await asyncio.wrap_future(self._threads.submit(fn, *args))

    def listing(self) -> concurrent.futures.Future[list[tuple[Any, t.SessionInfo]]]:
        """The store's shared sessions being listed (one listing at a time)."""
        with self._lock:
            if self._listing is None or self._listing.done():
                self._listing = self._threads.submit(self._list_now)
            return self._listing

    def find_checked(self, session_id: str) -> Any:
        """`find_session` in a store whose schema is this version's (`ValueError` else)."""
        self._check_schema()
        return self.storage.find_session(session_id)

    def _check_schema(self) -> None:
        # Once per link while it answers: a store of another schema version is reported
        # (as unreachable, with the command that sets it up) instead of failing a query.
        if not self._schema_ok:
            self.storage.check()
            self._schema_ok = True

    def _list_now(self) -> list[tuple[Any, t.SessionInfo]]:
        try:
            self._check_schema()
            shared = _shared_infos(self)
        except Exception as exc:
            self.failed(exc)
            raise
        self.ok()
        self.shared = shared
        self._keep_mirrors()
        if self._late:
            self._late = False
            loop = self._loop
            if loop is not None:
                from sessiontree.lsp import notify

                loop.call_soon_threadsafe(notify.did_change_list, self.ls, None)
        return shared

    def answered_without(self, seconds: float) -> None:
        """A list went out without the listing (it took longer than ``seconds``)."""
        self._late = True
        self.failed(
            TimeoutError(f"the store did not answer within {seconds:g} s; shared sessions as last listed")
        )

    def _keep_mirrors(self) -> None:
        """Let go of the kept bytes of shared sessions no longer open."""
        keep = {os.path.normpath(p) for s in self._shared_sessions() if (p := s.manager.get_session_file())}
        self.storage.forget(keep | self.opening)

    def _shared_sessions(self, pk: int | None = None) -> list[OpenSession]:
        return [
            s
            for s in self.ls.registry.sessions()
            if not s.closed and _PK in s.extra and (pk is None or s.extra[_PK] == pk)
        ]

    def _wake(self, sessions: list[OpenSession]) -> None:
        follower = self.ls.live_follower
        if follower is None:
            return
        self._keep_mirrors()
        for s in sessions:
            path = s.manager.get_session_file()
            try:
                # The store is asked here, outside the session's lock; the follower's look
                # then reads only the bytes kept, so no request waits on the store.
                if path:
                    self.storage.refresh(path)
            except Exception as exc:
                log.warning("shared session %s: the store did not answer (%s)", s.handle, exc)
                continue
            try:
                follower.sync_session(s)
            except Exception:
                log.exception("following the shared session %s failed", s.handle)

    def _maybe_new(self, pk: int) -> None:
        if self._known is None or pk in self._known:
            return
        self._known.add(pk)
        loop = self._loop
        if loop is not None:
            from sessiontree.lsp import notify

            loop.call_soon_threadsafe(notify.did_change_list, self.ls, None)

    def _run(self) -> None:
        from sessiontree.core.store.pg_schema import NOTIFY_CHANNEL

        delay = 0.5
        while not self._stop.is_set():
            conn = None
            try:
                conn = self.storage.pool.connect()
                with self.storage.pool.bounded(conn):
                    conn.execute(f"LISTEN {NOTIFY_CHANNEL}")
                self._known = {x.pk for x in self.storage.list_sessions()}
                if not self.reachable:
                    log.info("the shared store is reachable again")
                self.ok()
                delay = 0.5
                # Whatever was announced while not listening is looked at now.
                self._wake(self._shared_sessions())
                while not self._stop.is_set():
                    for n in conn.notifies(timeout=1.0):
                        try:
                            pk = int(n.payload.split(" ", 1)[0])
                        except ValueError:
                            continue
                        self._wake(self._shared_sessions(pk))
                        self._maybe_new(pk)
            except Exception as exc:
                if self._stop.is_set():
                    break
                self.failed(exc)
                log.warning("shared store unreachable (%s); retrying in %.1fs", self.error, delay)
                self._stop.wait(delay)
                delay = min(delay * 2, 30.0)
            finally:
                if conn is not None:
                    try:
                        conn.close()
                    except Exception:
                        pass


_links: weakref.WeakKeyDictionary[SessionTreeServer, StoreLink] = weakref.WeakKeyDictionary()


def link_of(ls: SessionTreeServer) -> StoreLink | None:
    """The server's store link, made on first use; None without a store."""
    url = ls.config.resolved_store()
    if not url:
        return None
    link = _links.get(ls)
    if link is None or link.storage.url != url:
        link = _links[ls] = StoreLink(ls, url)
    return link


def _text_of(message: Any) -> str:
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        for part in content:
            if isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str):
                return str(part["text"])
    return ""


def _shared_infos(link: StoreLink) -> list[tuple[Any, t.SessionInfo]]:
    """Every shared session this role may see, as wire infos (blocking: run in the pool)."""
    import orjson

    from sessiontree.core.store.pg_schema import SCHEMA

    sessions = link.storage.list_sessions()
    if not sessions:
        return []
    pks = [s.pk for s in sessions]
    heads: dict[int, Any] = {}
    firsts: dict[int, str] = {}
    with link.storage.pool.connection() as conn:
        for pk, line in conn.execute(
            f"SELECT session_pk, line FROM {SCHEMA}.entries WHERE session_pk = ANY(%s) AND seq = 1", (pks,)
        ).fetchall():
            try:
                heads[pk] = orjson.loads(bytes(line))
            except orjson.JSONDecodeError:
                pass
        # The first user message among each session's first lines (the listing's name).
        for pk, line in conn.execute(
            f"SELECT DISTINCT ON (session_pk) session_pk, line FROM {SCHEMA}.entries"
            " WHERE session_pk = ANY(%s) AND seq <= 64 AND entry_id IS NOT NULL"
            " AND position('\"user\"'::bytea in line) > 0 ORDER BY session_pk, seq",
            (pks,),
        ).fetchall():
            try:
                value = orjson.loads(bytes(line))
            except orjson.JSONDecodeError:
                continue
            msg = value.get("message") if isinstance(value, dict) else None
            if isinstance(msg, dict) and msg.get("role") == "user":
                firsts[pk] = _text_of(msg)
    out = []
    for s in sessions:
        head = heads.get(s.pk) or {}
        first = firsts.get(s.pk) or "(no messages)"
        title = head.get("title") if isinstance(head.get("title"), str) else None
        info = t.SessionInfo(
            path=s.path,
            id=s.session_id,
            cwd=s.cwd or "",
            first_message=first,
            message_count=int(s.entries),
            created=mapping.iso(head.get("timestamp") or s.mtime_ns / 1e9),
            modified=mapping.iso(s.mtime_ns / 1e9),
            title=title,
            display_name=display_name(title, first, s.file_name, s.session_id),
            machine=s.machine,
            user=s.os_user,
            local=False,
        )
        out.append((s, info))
    return out


async def extend_list(ls: SessionTreeServer, p: t.ListParams, result: t.ListResult) -> t.ListResult:
    """`session/list` with a store: who and where for each session, then the shared ones
    (as the store lists them now, or as last listed when it does not answer in `LIST_WAIT`)."""
    link = link_of(ls)
    if link is None:
        return result
    import attrs

    from sessiontree.core.store.postgres import default_user

    me, user = link.storage.machine, default_user()
    local = [attrs.evolve(i, machine=me, user=user, local=True) for i in result.sessions]
    seen = {i.id for i in local}
    link.listen()
    if link.reachable or time.monotonic() >= link.retry_at:
        listing = link.listing()
        try:
            await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(listing)), LIST_WAIT)
        except TimeoutError:
            link.answered_without(LIST_WAIT)
        except Exception:
            pass  # recorded by the link (failed): the answer says the store is unreachable
    cwd = os.path.abspath(p.cwd or ls.cwd)
    extra = []
    for s, info in link.shared:
        if info.id in seen or s.machine == me:
            continue
        # A project's own list shows the shared sessions of the same project (same
        # directory, or a directory of the same name on another machine).
        if not p.all and info.cwd != cwd and os.path.basename(info.cwd.rstrip("/")) != os.path.basename(cwd):
            continue
        if p.query and not all(
            tok in f"{info.first_message} {info.path} {info.id}".lower() for tok in p.query.lower().split()
        ):
            continue
        extra.append(info)
    sessions = local + extra
    if p.limit is not None:
        sessions = sessions[: max(0, p.limit)]
    return t.ListResult(sessions=sessions, store=link.status())


async def open_shared(ls: SessionTreeServer, p: t.OpenSharedParams) -> t.OpenResult:
    link = link_of(ls)
    if link is None:
        raise errors.InvalidParams(
            "no shared store configured (initializationOptions.store or $SESSIONTREE_STORE)",
            {"field": "sessionId", "reason": "no store"},
        )
    existing = next(
        (s for s in ls.registry.sessions() if s.extra.get("store.id") == p.session_id and not s.closed), None
    )
    if existing is not None:
        found = existing
        return await ls.registry.call(found, lambda: mapping.open_result(found.handle, found.manager))
    try:
        info = await link.run(link.find_checked, p.session_id)
        link.ok()
    except (OSError, ValueError) as exc:
        link.failed(exc)
        raise errors.PersistenceFailed(f"the shared store is unreachable: {link.error}") from exc
    if info is None:
        raise errors.InvalidParams(
            f"no shared session {p.session_id} (or this role may not see it)",
            {"field": "sessionId", "reason": "unknown"},
        )
    from sessiontree.core.store.postgres import PgBlobs

    blobs = PgBlobs(link.storage)
    # Its kept bytes stay while it is opened (it is no open shared session yet).
    opening = os.path.normpath(info.path)
    link.opening.add(opening)
    try:
        try:
            manager = await link.run(
                lambda: SessionManager.open(info.path, storage=link.storage, blobs=blobs)
            )
        except OSError as exc:
            link.failed(exc)
            raise errors.PersistenceFailed(f"the shared store is unreachable: {link.error}") from exc
        session = ls.registry.add(manager, None)
        session.extra[_PK] = info.pk
        session.extra["store.id"] = p.session_id
    finally:
        link.opening.discard(opening)
    link.listen()
    return await ls.registry.call(session, lambda: mapping.open_result(session.handle, session.manager))


def setup(server: SessionTreeServer) -> None:
    """Register openShared."""
    register(server, m.SESSION_OPEN_SHARED, open_shared)
