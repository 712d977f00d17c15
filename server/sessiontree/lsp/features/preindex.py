"""Big sessions indexed before they are clicked: in idle time, by a forked copy of the daemon.

A click on a big session without an index cache waits for its scan (100,000 entries: about
0.65 s; a million: about 7.5 s, docs/benchmarks.md); with the cache and the kept first pages
it is 46 ms and 145 ms. After answering `session/list` or `session/recent`, the daemon looks
at the first `preindex` (an initialization option, default 3; 0: never) sessions of its
answer (newest first) that hold at least `preindex_min_bytes()`, and queues those not open
here without an index cache written since the file last changed. Once no request has
run for `QUIET` seconds, a forked copy of the daemon opens each in turn as a click would
(the leaf the daemon would restore; one core, at a lower priority) and keeps what the next
open reads: the index cache, the last entry's context and the first pages of the view. Then
the copy ends: the daemon holds nothing of the session.

The copy reads through the daemon's access guard and writes only to sessiontree's cache
directory, never to the agent's (docs/divergences.md 11). A request that opens a session
stops a copy at work, so that the open has both cores; that copy's session is taken again
at the next quiet moment, unless it is the one being opened (its open keeps the same).
"""

from __future__ import annotations

import asyncio
import atexit
import functools
import glob
import os
import signal
import time
import weakref
from collections.abc import Iterable
from typing import Any, Final

from sessiontree.core.index.cache import IndexCache
from sessiontree.core.session import SessionManager
from sessiontree.core.session.sidecar import caches_on
from sessiontree.core.session.split_scan import FORK_AVAILABLE, fork_child
from sessiontree.core.tuning import bound
from sessiontree.lsp.features._common import log, manager_kwargs
from sessiontree.lsp.features.warm import detach_copy, keep_for_next_open
from sessiontree.lsp.server import SessionTreeServer

__all__ = ["PREINDEX_MIN_BYTES", "Preindexer", "clean_after", "preindex_min_bytes", "setup"]

#: Sessions smaller than this open quickly anyway (32 MB: about 30,000 entries, 0.2 s).
PREINDEX_MIN_BYTES: Final = 32 << 20
QUIET: Final = 1.0  # seconds without a request before a copy starts
POLL: Final = 0.05  # seconds between looks at a copy at work
TIMEOUT: Final = 600  # seconds a copy may take (SIGALRM's default ends it)


def preindex_min_bytes() -> int:
    """The size from which a listed session is indexed ahead (``SESSIONTREE_PREINDEX_MIN_BYTES``
    sets another, for tests)."""
    return bound("SESSIONTREE_PREINDEX_MIN_BYTES", PREINDEX_MIN_BYTES)


def _stat(path: str) -> os.stat_result | None:
    try:
        return os.stat(path)
    except OSError:
        return None


def _identity(st: os.stat_result) -> tuple[int, int, int, int]:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


class Preindexer:
    """The daemon's queue of listed sessions to index ahead, and the copy at work."""

    def __init__(self, ls: SessionTreeServer) -> None:
        self.ls = ls
        self.queue: list[str] = []
        # the file as it was when its copy ended (indexed, or found not to need it)
        self.done: dict[str, tuple[int, int, int, int]] = {}
        self.child: tuple[int, str] | None = None
        self.task: asyncio.Task[None] | None = None
        self.finished = 0  # copies that ran to their end (tests and logs)

    # -- what a listing offers ---------------------------------------------------------------
    def offer(self, paths: Iterable[str]) -> None:
        """Queue those of the first `preindex` big sessions of `paths` (the listing's order)
        that are worth it now."""
        limit = self.ls.config.preindex
        if limit <= 0 or not FORK_AVAILABLE or not caches_on():
            return  # (without index caches there is nothing to keep for the click)
        big = 0
        for path in paths:
            if big >= limit:
                break
            st = _stat(path)
            if st is None or st.st_size < preindex_min_bytes():
                continue
            big += 1
            if (
                self._worth(path, st)
                and path not in self.queue
                and (self.child is None or self.child[1] != path)
            ):
                self.queue.append(path)
        if self.queue and self.task is None:
            self.task = asyncio.get_running_loop().create_task(self._run())

    def _worth(self, path: str, st: os.stat_result | None = None) -> bool:
        """A big file, not open here, without an index cache written since it last changed."""
        st = st or _stat(path)
        if st is None or st.st_size < preindex_min_bytes() or self.done.get(path) == _identity(st):
            return False
        if self.ls.registry.by_path(path) is not None:
            return False
        return not IndexCache().written_since_change(path, st)

    # -- an open wants the cores ---------------------------------------------------------------
    def stop_for_open(self, path: str | None) -> None:
        """A session is being opened: stop the copy at work (taken again later unless it is
        `path`'s), and leave `path` out of the queue."""
        if path is not None and path in self.queue:
            self.queue.remove(path)
        working_on = self._kill_child()
        if working_on is not None and working_on != path and working_on not in self.queue:
            self.queue.insert(0, working_on)

    def stop(self) -> None:
        """The daemon ends: no copy outlives it."""
        self.queue.clear()
        self._kill_child()

    def _kill_child(self) -> str | None:
        """Kill the copy at work (`_run` reaps it); the session it worked on, if any."""
        if self.child is None:
            return None
        pid, working_on = self.child
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
        return working_on

    # -- the copies ------------------------------------------------------------------------------
    async def _run(self) -> None:
        try:
            while self.queue:
                await self._quiet()
                if not self.queue:
                    break
                path = self.queue.pop(0)
                if not self._worth(path):
                    continue
                try:
                    path = str(self.ls.access.check_file(path))  # the roots as they are now
                except Exception:
                    continue
                before = _stat(path)
                if before is None:
                    continue
                pid = fork_child(functools.partial(_index_in_copy, self.ls, path))
                if pid is None:
                    return
                self.child = (pid, path)
                status = await _wait(pid)
                self.child = None
                clean_after(pid)
                if status is not None and status >= 0:  # ended by itself (killed: negative)
                    self.finished += 1
                    self.done[path] = _identity(before)
                    log.debug("indexed ahead: %s (exit %s)", path, status)
        except Exception:
            log.exception("indexing listed sessions ahead stopped")
        finally:
            self.task = None

    async def _quiet(self) -> None:
        ls = self.ls
        while True:
            idle = time.monotonic() - ls.last_request
            if not ls.requests_in_flight and idle >= QUIET:
                return
            await asyncio.sleep(max(QUIET - idle, 0.0) + 0.01)


async def _wait(pid: int) -> int | None:
    """The copy's exit code (negative: the signal that ended it), None when it was not ours."""
    while True:
        try:
            got, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return None
        if got:
            return os.waitstatus_to_exitcode(status)
        await asyncio.sleep(POLL)


def clean_after(pid: int) -> None:
    """Remove what a copy that was stopped (or failed) left half written: the cache files
    are written to `<name>.<pid>.tmp` and renamed into place."""
    for tmp in glob.glob(os.path.join(glob.escape(IndexCache().dir), f"*.{pid}.tmp")):
        try:
            os.unlink(tmp)
        except OSError:
            pass


def _index_in_copy(ls: SessionTreeServer, path: str) -> bool:
    """In the forked copy: open `path` as a click would and keep what the next open reads."""
    detach_copy(TIMEOUT)
    os.nice(10)  # the daemon's own work comes first
    kw = manager_kwargs(ls)
    kw["parallel_scan"] = False  # one core: the other is the daemon's
    manager = SessionManager.open(path, **kw)
    from sessiontree.lsp.features.sessions import restore_leaf_of

    restore_leaf_of(ls, path, manager)
    keep_for_next_open(manager)
    return True


def preindexer(ls: SessionTreeServer) -> Preindexer | None:
    got = ls.preindex
    return got if isinstance(got, Preindexer) else None


def offer(ls: SessionTreeServer, infos: Iterable[Any]) -> None:
    """After a listing: its sessions of this machine's pi family, in its order."""
    p = preindexer(ls)
    if p is not None:
        p.offer(
            info.path
            for info in infos
            if isinstance(getattr(info, "path", None), str) and getattr(info, "agent", "pi") == "pi"
        )


def stop_for_open(ls: SessionTreeServer, path: str | None) -> None:
    p = preindexer(ls)
    if p is not None:
        p.stop_for_open(path)


def _stop_at_exit(ref: weakref.ref[Preindexer]) -> None:
    p = ref()
    if p is not None:
        p.stop()


def setup(server: SessionTreeServer) -> None:
    """Index the newest big listed sessions ahead of a click, in idle time."""
    p = Preindexer(server)
    server.preindex = p
    atexit.register(_stop_at_exit, weakref.ref(p))
