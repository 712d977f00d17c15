"""session/search (addition): every session's text through the full-text index (docs/search.md).

The index (`sessiontree.core.fts`, in sessiontree's cache dir) is brought up to date at the
first search, with work-done progress while it is built; from then on a keeper thread
keeps it current: the files the watcher saw change are indexed at once (inotify), and every
`RESCAN_SECONDS` (`RESCAN_SECONDS_INOTIFY` while inotify works) the sessions root is
compared with the index (what polling alone would miss). Searches are read-only queries on their own connection, in the pool.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import uuid
import weakref
from collections.abc import Callable
from typing import Any

from lsprotocol import types as lsp
from sessiontree_protocol import methods as m
from sessiontree_protocol import types as t

from sessiontree.core.fts import IndexBusy, SearchIndex, SearchPage, SearchQuery, fts5_available, parse_time
from sessiontree.core.fts.sources import foreign_roots
from sessiontree.core.store.guard import PathGuard
from sessiontree.lsp import errors, mapping
from sessiontree.lsp.handlers import register
from sessiontree.lsp.server import SessionTreeServer

log = logging.getLogger(__name__)

RESCAN_SECONDS = 5.0
#: With inotify telling every change, the rescan is only a safety net.
RESCAN_SECONDS_INOTIFY = 30.0
RESCAN_ENV = "SESSIONTREE_SEARCH_RESCAN_SECONDS"
MAX_LIMIT = 200
ROLES = ("user", "assistant", "tool", "other")


class SearchService:
    """One client's search index over its sessions root, and the thread keeping it current."""

    def __init__(self, roots: list[str], guard: PathGuard | None = None) -> None:
        # the guard of every read (allowedRoots): indexing and answers alike
        self.index = SearchIndex(roots, guard=guard)
        self.rescan_env: float | None
        try:
            value = os.environ.get(RESCAN_ENV, "")
            self.rescan_env = max(0.05, float(value)) if value else None
        except ValueError:
            self.rescan_env = None
        self._watcher: Any = None
        self.build_lock = threading.Lock()
        self._dirty: set[str] = set()
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stopped = False
        self._thread: threading.Thread | None = None
        self._unlisten: Callable[[], None] | None = None
        self._owner: weakref.ref[SessionTreeServer] | None = None
        self.busy = False
        """The last update found the index locked by another process (it is not rebuilt)."""
        self.building: asyncio.Future[None] | None = None
        """The first build while it runs: every search that comes meanwhile waits for this
        one build (in the event loop), instead of a worker each blocked on `build_lock`."""

    def build(self, progress: Callable[[int, int], None] | None = None) -> None:
        """Bring the index up to date (the first time: the whole build); `IndexBusy` when
        another process kept it locked beyond the busy bound."""
        with self.build_lock:
            try:
                self.index.update(progress=progress)
            except IndexBusy:
                self.busy = True
                raise
            self.busy = False

    def keep_current(self, ls: SessionTreeServer) -> None:
        """Start following changes (once), through the live watcher when there is one."""
        if self._thread is not None:
            return
        self._owner = weakref.ref(ls)
        follower = ls.live_follower
        if follower is not None:
            self._unlisten = follower.watcher.add_change_listener(self._changed)
            self._watcher = follower.watcher
        self._thread = threading.Thread(target=self._run, name="sessiontree-search-index", daemon=True)
        self._thread.start()

    def rescan_interval(self) -> float:
        """Seconds between rescans: the environment's, else 30 while inotify reports every
        change (a safety net), else 5 (the watcher polls, or there is none)."""
        if self.rescan_env is not None:
            return self.rescan_env
        watcher = self._watcher
        return RESCAN_SECONDS_INOTIFY if watcher is not None and watcher.mode == "inotify" else RESCAN_SECONDS

    def _changed(self, files: list[str]) -> None:
        with self._lock:
            self._dirty.update(files)
        self._wake.set()

    def _run(self) -> None:
        while not self._stopped:
            woke = self._wake.wait(self.rescan_interval())
            self._wake.clear()
            owner = self._owner() if self._owner is not None else None
            if owner is None or (owner.live_follower is None and self._unlisten is not None):
                # the client is gone or shut down: nothing to keep current for
                self.stop_soon()
                return
            del owner
            if self._stopped:
                return
            files: set[str] = set()
            try:
                if woke:
                    with self._lock:
                        files, self._dirty = self._dirty, set()
                    with self.build_lock:
                        self.index.update_files(sorted(files))
                        self.busy = False
                else:
                    self.build()
            except IndexBusy:
                # another process holds the index: try again at the next round
                self.busy = True
                with self._lock:
                    self._dirty |= files
                log.info("the search index is busy (another process is writing it); trying again later")
            except Exception:
                log.exception("keeping the search index current failed")

    def stop_soon(self) -> None:
        """Stop from the keeper thread itself."""
        self._stopped = True
        if self._unlisten is not None:
            self._unlisten()
            self._unlisten = None
        self.index.close()

    def stop(self) -> None:
        self._stopped = True
        self._wake.set()
        if self._unlisten is not None:
            self._unlisten()
        if self._thread is not None:
            self._thread.join(2)
        self.index.close()


_SERVICES: weakref.WeakKeyDictionary[SessionTreeServer, SearchService] = weakref.WeakKeyDictionary()


def _roots(ls: SessionTreeServer) -> list[str]:
    # the sessions roots of the agent dirs listed, then the other agents' transcript roots
    # (read-only), each only when the daemon may read it; canonical, as the watcher reports paths
    candidates = [*(h.sessions_root for h in ls.agent_homes()), *foreign_roots()]
    return [os.path.realpath(r) for r in candidates if ls.access.guard.accept(r)]


def service(ls: SessionTreeServer) -> SearchService:
    svc = _SERVICES.get(ls)
    if svc is None:
        svc = _SERVICES[ls] = SearchService(_roots(ls), ls.access.guard)
    return svc


def _time(field: str, value: str | None) -> int | None:
    if value is None:
        return None
    try:
        return parse_time(value)
    except ValueError as exc:
        raise errors.InvalidParams(
            f"session/search: {field} is not a time: {value!r}", {"field": field, "reason": str(exc)}
        ) from exc


async def _build_with_progress(ls: SessionTreeServer, svc: SearchService, token: int | str | None) -> None:
    loop = asyncio.get_running_loop()
    caps = ls.client_capabilities
    window = caps.window if caps is not None else None
    if token is None and window is not None and window.work_done_progress:
        token = f"sessiontree-search-{uuid.uuid4().hex[:12]}"
        try:
            await asyncio.wait_for(ls.work_done_progress.create_async(token), 5)
        except Exception as exc:
            log.debug("progress create refused: %s", exc)
            token = None
    if token is not None:
        try:
            ls.work_done_progress.begin(
                token, lsp.WorkDoneProgressBegin(title="Indexing sessions for search", percentage=0)
            )
        except Exception:
            token = None
    last = [-1]

    def report(done: int, total: int) -> None:
        pct = int(done * 100 / total) if total else 100
        if token is None or pct == last[0]:
            return
        last[0] = pct

        def send() -> None:
            try:
                ls.work_done_progress.report(
                    token,
                    lsp.WorkDoneProgressReport(
                        message=f"{done / 1e6:.0f} of {total / 1e6:.0f} MB", percentage=pct
                    ),
                )
            except Exception:
                pass

        loop.call_soon_threadsafe(send)

    # Shielded: a cancelled first search leaves the build running for the next one.
    fut = loop.run_in_executor(ls.registry.pool, lambda: svc.build(report))
    try:
        await asyncio.shield(fut)
    finally:
        if token is not None:
            try:
                ls.work_done_progress.end(token, lsp.WorkDoneProgressEnd(message="indexed"))
            except Exception:
                pass


async def _first_build(ls: SessionTreeServer, svc: SearchService, token: int | str | None) -> None:
    """The build of the index, once however many searches ask for it while it runs (each
    used to take a worker of the session-less pool to wait on the build's lock: eight
    searches typed during a first build left none for opening or listing sessions)."""
    task = svc.building
    if task is None or task.done():
        task = svc.building = asyncio.ensure_future(_build_with_progress(ls, svc, token))
    # shielded: a cancelled search leaves the build running for the others and the next one
    await asyncio.shield(task)


async def search(ls: SessionTreeServer, p: t.SearchParams) -> t.SearchResult:
    if not fts5_available():
        raise errors.InvalidParams("session/search: this Python's SQLite has no FTS5", {"field": "query"})
    if p.role is not None and p.role not in ROLES:
        raise errors.InvalidParams(
            f"session/search: role must be one of {', '.join(ROLES)}",
            {"field": "role", "reason": "unknown role"},
        )
    since, until = _time("since", p.since), _time("until", p.until)
    svc = service(ls)
    if not svc.index.built or not os.path.exists(svc.index.path):
        try:
            await _first_build(ls, svc, p.work_done_token)
        except IndexBusy:
            # answered from what the index holds; the next search tries the build again
            log.info("the search index is busy (another process is writing it)")
        svc.keep_current(ls)
    query = SearchQuery(
        p.query,
        cwd=p.cwd,
        agent=p.agent,
        role=p.role,
        since=since,
        until=until,
        label=p.label,
        offset=max(0, p.offset),
        limit=max(1, min(MAX_LIMIT, p.limit)),
        prefix=p.prefix,
        with_paths=p.paths,
    )

    def work() -> t.SearchResult:
        try:
            page = svc.index.search(query)
        except IndexBusy:
            # locked even for readers: a clear "busy" answer, nothing removed or rebuilt
            empty = SearchPage([], 0, query.offset, None, False)
            return mapping.search_result(empty, 0, svc.index.size_bytes(), busy=True)
        return mapping.search_result(page, svc.index.file_count(), svc.index.size_bytes(), svc.busy)

    return await ls.registry.run(work)


def setup(server: SessionTreeServer) -> None:
    """Register session/search."""
    register(server, m.SESSION_SEARCH, search)
