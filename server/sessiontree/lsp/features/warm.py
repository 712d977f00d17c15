"""Idle-time work on open sessions: the searchable text built ahead of a first search, what
the rows near the view's head and leaf show, the rows each filter mode hides ahead of a first
filter change, and the index cache.

An open answers before the skeletons are encoded into the index cache (for a million
entries that is about a second); the cache is written here, through the session's queue,
once no client has called on the session for `CACHE_QUIET` (after the search warm-up).

A first search of a large session needs the searchable text of every entry (about a second
and a half for 100,000 entries). A session opened (or reloaded) in the daemon gets it built
in slices of a thousand entries through the session's own queue, so a request or a live
change that arrives meanwhile waits for one slice (about 15 ms) at most, and the first
query finds the texts ready.
Sessions above `core.view.search.keep_texts_max()` entries are left to their first search,
which reads their texts in steps and lets them go (the texts of a million entries would hold
several hundred megabytes), and so are small ones (a first search of a few
thousand entries is quick). The texts are read past the session's entry cache.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import signal
import time
from collections.abc import Callable
from typing import Any, Final

from sessiontree.core import checkpoints as core_checkpoints
from sessiontree.core import view as core_view
from sessiontree.core.session.split_scan import in_forked_child
from sessiontree.core.tuning import bound
from sessiontree.core.view.search import keep_texts_max
from sessiontree.lsp.features import checkpoints
from sessiontree.lsp.registry import OpenSession, Registry, RegistryEvent
from sessiontree.lsp.server import SessionTreeServer

log = logging.getLogger(__name__)

WARM_MIN_ENTRIES: Final = 5_000  # below this a first search is quick anyway
WARM_SLICE: Final = 1024  # entries per slice: about 15 ms of work
WARM_ROWS_SLICE: Final = 500  # rows a slice of `warm_rows` reads: about 10 ms
WARM_PAUSE: Final = 0.005  # between slices, so a live change or a request takes the lock first
CACHE_QUIET: Final = 1.0  # seconds without a client's call before the filter sets and the cache
KEEP_TIMEOUT: Final = 60  # seconds a forked copy keeping a closed session's first pages may take
#: Entries from which the index cache is encoded and written by a forked copy. Below, it is
#: written here in idle time (about 35 ms for 100,000 entries, and as much for the last
#: entry's context): a fork costs more. It stops the daemon for 10-20 ms, and every later
#: request pays a page fault for each page it is first to write after it (a first search
#: at 100,000 entries: 25 -> 31 ms). ``SESSIONTREE_FORK_CACHE_MIN`` sets another bound.
FORK_CACHE_MIN: Final = 250_000


# Tasks are held here (the loop keeps only weak references to them); each refers to its
# session by handle only, so a session closed meanwhile is freed at once.
_TASKS: set[asyncio.Task[None]] = set()


async def _warm(ls: SessionTreeServer, handle: str, search: bool) -> None:
    await asyncio.sleep(0.2)  # the open's first pages go first
    registry = ls.registry
    try:
        if search:
            await _in_slices(registry, handle, core_view.warm_search, WARM_SLICE)
            # What the rows near the view's head and its leaf show: a first search's or
            # filter change's first pages are mostly those entries. Only where the texts are
            # built (the view is then walked whole already: a lazily walked view of a million
            # rows is not walked to its end for this).
            await _in_slices(registry, handle, core_view.warm_rows, WARM_ROWS_SLICE)
            await _young_collection(registry, handle)
        # The hidden sets of the other filter modes (one mode per slice: for a million
        # entries each is a few hundred ms) and, when their texts are kept, their rows for the
        # current leaf; then the index cache: only while nobody calls on the session.
        for mode in core_view.WARM_FILTER_MODES:
            session = await _quiet(registry, handle)
            await registry.call_in_idle_time(session, core_view.warm_filters, session.manager, mode, search)
            del session
        session = await _quiet(registry, handle)
        save = getattr(session.manager, "save_index_cache", None)  # other agents': none
        if save is not None:
            forked = len(session.manager.index) >= bound("SESSIONTREE_FORK_CACHE_MIN", FORK_CACHE_MIN)
            # encoded and written by a forked copy (with the last entry's context): the
            # session is held for the fork only; else here
            saved = await registry.call_in_idle_time(session, save, forked)
            del session
            # and the first pages of its view, for the next open of the file unchanged
            session = await _quiet(registry, handle)
            await registry.call_in_idle_time(session, core_view.save_opening_view, session.manager)
            del session
            if saved and not forked:
                # and the last entry's context, in a slice of its own
                session = await _quiet(registry, handle)
                await registry.call_in_idle_time(session, session.manager.keep_last_context)
                del session
        # The calls a first restore preview reads (docs/checkpoints.md), for a session of
        # this workspace not too big to keep them
        session = registry.get(handle)
        if checkpoints.worth_warming(ls, session.manager):
            del session
            await _in_slices(registry, handle, core_checkpoints.warm_events, WARM_SLICE)
        else:
            del session
        await _young_collection(registry, handle)
    except Exception as exc:  # a closed session or a changed file: the first search does it
        log.debug("warm-up of %s stopped: %s", handle, exc)


async def _in_slices(registry: Registry, handle: str, step: Callable[[Any, int], bool], size: int) -> None:
    """Call ``step(manager, size)`` through the session's queue until it says it is done,
    pausing between calls so a live change or a request takes the lock first (-32001 once
    the session is closed)."""
    while True:
        session = registry.get(handle)
        done = await registry.call_in_idle_time(session, step, session.manager, size)
        del session
        if done:
            return
        await asyncio.sleep(WARM_PAUSE)


async def _young_collection(registry: Registry, handle: str) -> None:
    """Collect the young generation in idle time. The warm-up made a hundred thousand row
    tuples and more with the collector paused (`core.index.gc_paused`); the first collection
    that meets them untracks them, about 13 ms for 100,000 entries, which a client's next
    request (a first search) would wait for."""
    session = registry.get(handle)
    await registry.call_in_idle_time(session, gc.collect, 0)


async def _quiet(registry: Registry, handle: str) -> OpenSession:
    """The session once no client's call on it has run for `CACHE_QUIET` (-32001 once
    closed). A call that runs long (a million entries' first view) is not quiet: work
    queued meanwhile would make the click's next requests wait for it."""
    while True:
        session = registry.get(handle)
        quiet = time.monotonic() - session.last_call
        if quiet >= CACHE_QUIET and not session.calls_in_flight:
            return session
        del session
        await asyncio.sleep(max(CACHE_QUIET - quiet, 0.0) + 0.01)


def _keep_at_close(manager: Any) -> None:
    """What a session being closed leaves for its next open, when due: its first pages and
    its last entry's context as they are now (and a deferred index cache), written by a
    forked copy of the process so that neither the close nor the daemon's exit waits."""
    try:
        due = core_view.opening_view_due(manager)
    except Exception:
        return
    if not due:
        return

    def keep() -> None:
        detach_copy(KEEP_TIMEOUT)
        keep_for_next_open(manager)

    in_forked_child(keep)


def detach_copy(timeout: int) -> None:
    """In a forked copy of the daemon: an alarm that ends it after `timeout` seconds (SIGALRM's
    default), and its standard input and output on /dev/null (the client's pipes are the
    daemon's alone)."""
    signal.alarm(timeout)
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1):
        os.dup2(devnull, fd)


def keep_for_next_open(manager: Any) -> None:
    """What the next open of the session reads, written as it is now (when due): its index
    cache, its last entry's context and the first pages of its view."""
    for step in ("save_index_cache", "keep_last_context"):  # other agents' have neither
        fn = getattr(manager, step, None)
        if fn is not None:
            fn()
    core_view.save_opening_view(manager)


def _on_event(ls: SessionTreeServer, ev: RegistryEvent) -> None:
    session = ev.session
    if ev.kind == "closing" and session.manager is not None:
        _keep_at_close(session.manager)
        return
    if ev.kind not in ("opened", "reloaded") or session.closed:
        return
    manager = session.manager
    if manager is None:
        return
    search = WARM_MIN_ENTRIES <= len(manager.index) <= keep_texts_max()
    handle = session.handle
    try:
        loop = asyncio.get_running_loop()  # an open registers its session on the loop
    except RuntimeError:
        # raised in a worker (a reload): the task is started on the daemon's loop
        found = ls.registry.loop
        if found is None or found.is_closed():
            return
        loop = found

    def start() -> None:
        task = loop.create_task(_warm(ls, handle, search))
        _TASKS.add(task)
        task.add_done_callback(_TASKS.discard)

    loop.call_soon_threadsafe(start)


def setup(server: SessionTreeServer) -> None:
    """Build searchable texts and filter sets of opened sessions, and write their index
    caches, in idle time."""
    server.registry.subscribe(lambda ev: _on_event(server, ev))
