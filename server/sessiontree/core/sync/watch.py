"""`watch`: keep syncing until stopped, woken by local file changes and the store's
LISTEN/NOTIFY (no polling as the main path).

Two threads feed one queue: one follows the sessions directories with watchfiles (inotify;
its own stat-poll fallback where inotify is missing), one holds a connection that LISTENs
on the store's channel. A notification names a session and its new high-water mark; the
files holding that session get a round. After a lost store connection the listener
reconnects with backoff and every file gets a round, since notifications sent meanwhile are
gone; a slow safety round every ``rescan`` seconds catches anything else missed.
"""

from __future__ import annotations

import os
import queue
import threading
import time
from collections.abc import Callable, Iterable

from ..store.pg_schema import NOTIFY_CHANNEL
from ..store.postgres import StoreUnreachable
from .engine import FileResult, Syncer

__all__ = ["watch"]

_ALL = "*"


def _listen(syncer: Syncer, out: queue.Queue[str], stop: threading.Event, say: Callable[[str], None]) -> None:
    delay = 0.5
    while not stop.is_set():
        conn = None
        try:
            conn = syncer.store.pool.connect()
            with syncer.store.pool.bounded(conn):
                conn.execute(f"LISTEN {NOTIFY_CHANNEL}")
            if delay > 0.5:
                say("store reachable again")
            delay = 0.5
            out.put(_ALL)
            while not stop.is_set():
                for n in conn.notifies(timeout=0.5):
                    out.put("pk:" + n.payload.split(" ", 1)[0])
        except Exception as exc:
            if stop.is_set():
                break
            say(f"store unreachable ({type(exc).__name__}); retrying in {delay:.1f}s")
            stop.wait(delay)
            delay = min(delay * 2, 30.0)
        finally:
            if conn is not None:
                try:
                    conn.close()
                except Exception:
                    pass


def _watch_files(roots: list[str], out: queue.Queue[str], stop: threading.Event) -> None:
    from watchfiles import watch as fs_watch

    existing = [r for r in roots if os.path.isdir(r)]
    if not existing:
        return
    polling = os.environ.get("SESSIONTREE_WATCH_POLLING") == "1"
    for changes in fs_watch(
        *existing, stop_event=stop, debounce=50, step=20, rust_timeout=500, force_polling=polling or None
    ):
        for _change, path in changes:
            if path.endswith(".jsonl"):
                out.put("file:" + path)


def watch(
    syncer: Syncer,
    roots: Iterable[str],
    *,
    stop: threading.Event | None = None,
    on_round: Callable[[list[FileResult]], None] | None = None,
    say: Callable[[str], None] = lambda _s: None,
    rescan: float = 60.0,
) -> None:
    """Sync the session files under ``roots`` until ``stop`` is set."""
    stop = stop or threading.Event()
    roots = [os.path.abspath(r) for r in roots]
    events: queue.Queue[str] = queue.Queue()
    threads = [
        threading.Thread(target=_listen, args=(syncer, events, stop, say), daemon=True, name="sync-listen"),
        threading.Thread(target=_watch_files, args=(roots, events, stop), daemon=True, name="sync-files"),
    ]
    for t in threads:
        t.start()
    next_rescan = time.monotonic() + rescan
    pending_all = True
    while not stop.is_set():
        wanted: set[str] = set()
        try:
            item = events.get(timeout=0.5)
            batch = [item]
            # Let a burst of changes settle into one round.
            deadline = time.monotonic() + 0.05
            while time.monotonic() < deadline:
                try:
                    batch.append(events.get(timeout=max(0.0, deadline - time.monotonic())))
                except queue.Empty:
                    break
            for it in batch:
                if it == _ALL:
                    pending_all = True
                elif it.startswith("file:"):
                    wanted.add(os.path.abspath(it[5:]))
                elif it.startswith("pk:"):
                    try:
                        wanted.update(syncer.path_of_pk(int(it[3:])))
                    except ValueError:
                        pass
        except queue.Empty:
            pass
        if time.monotonic() >= next_rescan:
            pending_all = True
            next_rescan = time.monotonic() + rescan
        if pending_all:
            wanted.update(syncer.sessions_of(roots))
        if not wanted:
            continue
        try:
            results = syncer.sync_files(sorted(wanted))
            pending_all = False
        except (StoreUnreachable, OSError) as exc:
            say(f"sync round failed: {exc}; will retry")
            pending_all = True
            stop.wait(1.0)
            continue
        if on_round is not None:
            on_round(results)
    for t in threads:
        t.join(timeout=2)
