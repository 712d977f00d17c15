"""Following the files of open sessions: `LiveFollower`, the registry's sessions tied to the watcher.

- a session opened with a file is followed; closing it stops that;
- when its file changes, the manager folds the change in under the session's lock
  (`SessionManager.sync_with_file()`) and the results go to `announce` on the event loop
  (features/watch.py sends them as notifications);
- the ids another process appended go to `on_appended` first (the checkpoint snapshots of
  the files the agent's calls changed, docs/checkpoints.md);
- `*.jsonl` files appearing or vanishing in the sessions root (recursively) or in the
  directory of an open session go to `announce_list` with the project they belong to; so
  do files under the sessions roots that are written (an agent appending to a session the
  client only lists: its count and place in a listing change), at most once a
  `WRITTEN_INTERVAL` per directory (seen through inotify; the polling fallback sees only
  files appearing or vanishing).

Reads of a followed file go through the access policy's guard like every other read
(`core.guard`): when the path (or a parent directory) now names something outside the
allowed roots, the session is detached (reason "access denied"), nothing of that file is
read, and writes are refused until the path names a file inside again.
`SESSIONTREE_WATCH_POLLING=1` forces the stat-polling fallback (what runs when inotify is
unavailable). See docs/live-sessions.md.
"""

from __future__ import annotations

import logging
import os
import stat
import threading
import time
from collections.abc import Callable
from typing import Any

import orjson

from sessiontree.core.errors import AccessDeniedError
from sessiontree.core.format.title_slot import split_slot
from sessiontree.core.live import ChangeKind, SyncResult
from sessiontree.core.store.guard import PathGuard, open_checked
from sessiontree.lsp.registry import OpenSession, Registry, RegistryEvent
from sessiontree.lsp.watcher import ListChanges, SessionWatcher

log = logging.getLogger(__name__)

POLLING_ENV = "SESSIONTREE_WATCH_POLLING"

#: Seconds between two announcements of a session directory whose files are being written
#: (`session/didChangeList`: their counts and order in a listing changed). A listing reads a
#: changed file again, so an agent appending all the time costs a client a list a second.
WRITTEN_INTERVAL = 1.0
#: Files whose project is remembered (`_cwd_of`); past it the memory starts over.
_KNOWN_CWDS_MAX = 10_000
#: The `session/didReload` reason of a session detached because its path now leads
#: outside the allowed roots.
ACCESS_DENIED = "access denied"


def _env_polling() -> bool:
    return os.environ.get(POLLING_ENV, "").strip().lower() in ("1", "true", "yes", "on")


class LiveFollower:
    """Follows the files of open sessions and the session directories of one daemon.

    `post(fn, *args)` runs `fn` on the daemon's event loop (notifications are only ever
    written from there); `announce` sends the notifications of one session's changes.
    """

    def __init__(
        self,
        registry: Registry,
        post: Callable[..., None],
        announce: Callable[[Any, list[SyncResult], list[list[Any]]], None],
        announce_list: Callable[[str | None], None],
        summarize: Callable[[Any, str], Any],
        roots: list[str],
        *,
        force_polling: bool = False,
        guard: PathGuard | None = None,
        on_appended: Callable[[Any, list[str]], None] | None = None,
    ) -> None:
        self.registry = registry
        # Called under the session's lock with the ids another process appended: the
        # checkpoint snapshots of the files the agent's calls just changed
        # (features/checkpoints.capture).
        self._on_appended = on_appended
        self._guard = guard
        self._post = post
        self._announce = announce
        self._announce_list = announce_list
        self._summarize = summarize
        self._roots = roots
        self._lock = threading.RLock()
        self._followed: dict[str, OpenSession] = {}  # canonical path -> session
        # Session directories under the roots whose files were written since the last
        # announcement: when the first of those writes was heard, and the files (`_on_written`).
        self._written: dict[str, tuple[float, set[str]]] = {}
        # The project (header cwd) of each session file announced so far, for when it vanishes.
        self._cwds: dict[str, str] = {}
        self._cwds_lock = threading.Lock()
        self._unlisten: Callable[[], None] | None = None
        self._unsubscribe: Callable[[], None] | None = None
        self.watcher = SessionWatcher(
            self._on_file, self._on_list, force_polling=force_polling or _env_polling(), on_tick=self._on_tick
        )

    def start(self) -> None:
        """Start watching the roots and every session already open."""
        self.watcher.set_roots(self._roots)
        self._unsubscribe = self.registry.subscribe(self._on_event)
        self._unlisten = self.watcher.add_change_listener(self._on_written)
        for s in self.registry.sessions():
            self._follow(s)
        self.watcher.start()
        log.info("following session files (%s); roots: %s", self.watcher.mode, ", ".join(self._roots))

    def stop(self) -> None:
        """Stop watching."""
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        if self._unlisten is not None:
            self._unlisten()
            self._unlisten = None
        self.watcher.stop()

    # -- registry events (event loop thread) -------------------------------------------

    def _on_event(self, ev: RegistryEvent) -> None:
        session = ev.session
        if ev.kind == "closing":
            return  # "closed" follows
        if ev.kind == "closed":
            self._unfollow(session)
            return
        # The file may have moved (fork, moveTo): follow the session's current path.
        self._follow(session)
        # A local write may have folded in external changes first (queued on the
        # manager): have them announced.
        local = ev.kind in ("changed", "labelled", "navigated") and ev.data.get("source") != "external"
        if local and session.path is not None:
            self.watcher.poke(session.path)

    def _follow(self, session: OpenSession) -> None:
        with self._lock:
            self._follow_locked(session)

    def _follow_locked(self, session: OpenSession) -> None:
        path = session.path
        current = session.extra.get("live.path")
        if path == current or session.closed:
            return
        if current is not None:
            self._unfollow(session)
        if path is None:
            return
        canon = self.watcher.track_file(path)
        session.extra["live.path"] = path
        session.extra["live.canonical"] = canon
        self._followed[canon] = session
        # A first look at once: takes the file's fingerprints close to the load.
        self.watcher.poke(canon)

    def _unfollow(self, session: OpenSession) -> None:
        session.extra.pop("live.path", None)
        canon = session.extra.pop("live.canonical", None)
        if canon is None:
            return
        with self._lock:
            if self._followed.get(canon) is session:
                del self._followed[canon]
                self.watcher.untrack_file(canon)

    def _on_tick(self) -> None:
        # Handlers that switch a session to another file (fork, branch to a new session)
        # rekey it without an event: pick up new paths at every poll tick.
        for session in self.registry.sessions():
            if session.path != session.extra.get("live.path"):
                self._follow(session)
        self._announce_written()

    # -- written files (watcher thread) ----------------------------------------------------

    def _on_written(self, paths: list[str]) -> None:
        """Session files under the roots were written (inotify). What a listing shows of a
        file changes with every append (its message count, its place among the newest), so
        its project's list is announced too: `_announce_written`, at most once a
        `WRITTEN_INTERVAL` per directory however fast an agent appends."""
        now = time.monotonic()
        with self._lock:
            for p in paths:
                self._written.setdefault(os.path.dirname(p), (now, set()))[1].add(p)

    def _announce_written(self) -> None:
        now = time.monotonic()
        with self._lock:
            due = [
                (d, files) for d, (first, files) in self._written.items() if now - first >= WRITTEN_INTERVAL
            ]
            for d, _files in due:
                del self._written[d]
        # the project of the files written (a directory may hold several projects' files)
        with self._cwds_lock:
            cwds = {_cwd_of(sorted(files), self._cwds, self._guard) for _d, files in due}
        if None in cwds or len(cwds) > 4:
            self._post(self._announce_list, None)
            return
        for cwd in sorted(c for c in cwds if c is not None):
            self._post(self._announce_list, cwd)

    # -- file changes (watcher thread) -----------------------------------------------------

    def _on_file(self, canon: str) -> None:
        with self._lock:
            session = self._followed.get(canon)
        if session is None or session.closed:
            return
        self.sync_session(session)

    def sync_session(self, session: OpenSession) -> list[SyncResult]:
        """Fold the file's changes into `session` and announce them (any thread but the loop's)."""
        results, summaries = self.collect(session)
        if results:
            self._post(self._announce, session, results, summaries)
        return results

    def collect(self, session: OpenSession) -> tuple[list[SyncResult], list[list[Any]]]:
        """Changes queued by writes plus a fresh look at the file, with entry summaries."""
        with session.lock:
            if session.closed:
                return [], []
            manager = session.manager
            events = manager.live_events
            try:
                fresh = manager.sync_with_file()
            except AccessDeniedError as exc:
                # The path now names a file outside the roots (a swapped link, a hard link
                # renamed over it): nothing of it was read; detach until it is back.
                log.warning("following %s refused: %s", session.path, exc)
                fresh = manager.detach_from_file(ACCESS_DENIED)
            except Exception:
                log.exception("following %s failed", session.path)
                fresh = None
            results = list(events)
            events.clear()
            if fresh is not None and (fresh.appended or fresh.kind is not ChangeKind.UNCHANGED):
                results.append(fresh)
            appended = [eid for res in results for eid in res.appended]
            if appended and self._on_appended is not None:
                try:
                    self._on_appended(manager, appended)
                except Exception:
                    log.exception("checkpoint snapshots of %s failed", session.path)
            summaries: list[list[Any]] = []
            for res in results:
                row = []
                for eid in res.appended:
                    try:
                        row.append(self._summarize(manager, eid))
                    except Exception:
                        log.exception("summary of %s failed", eid)
                summaries.append(row)
        return results, summaries

    # -- directory listings (watcher thread) -----------------------------------------------

    def _on_list(self, changes: ListChanges) -> None:
        cwds: set[str | None] = set()
        for added, removed in changes.values():
            with self._cwds_lock:
                cwds.add(_cwd_of(sorted(added) + sorted(removed), self._cwds, self._guard))
        if None in cwds or len(cwds) > 4:
            self._post(self._announce_list, None)
            return
        for cwd in sorted(c for c in cwds if c is not None):
            self._post(self._announce_list, cwd)


def _header_cwd(path: str, guard: PathGuard | None = None) -> str | None:
    try:
        # O_NONBLOCK: a FIFO named *.jsonl must not hang the watcher.
        fd = open_checked(guard, path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    except (OSError, AccessDeniedError):
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        with os.fdopen(os.dup(fd), "rb") as f:
            first = f.readline(1 << 20)
            if split_slot(first)[0] is not None:
                first = f.readline(1 << 20)  # oh-my-pi's title slot: the header is the next line
    except OSError:
        return None
    finally:
        os.close(fd)
    try:
        header = orjson.loads(first.lstrip(b"\xef\xbb\xbf"))
    except orjson.JSONDecodeError:
        return None
    if isinstance(header, dict) and header.get("type") == "session" and isinstance(header.get("cwd"), str):
        return str(header["cwd"])
    return None


def _cwd_of(changed: list[str], known: dict[str, str], guard: PathGuard | None = None) -> str | None:
    """The one project the changed session files belong to: the cwd in each one's header, or,
    for a file that vanished, the cwd it had when it was last read (``known``, kept up to date
    here). None, the whole list, when that is not one project or a file tells none (its
    header unreadable or not yet written, a vanished file never read): its neighbours may be
    another project's sessions, so they are not asked."""
    cwds: set[str] = set()
    for p in changed:
        if os.path.exists(p):
            cwd = _header_cwd(p, guard)
            if cwd is not None:
                if len(known) >= _KNOWN_CWDS_MAX and p not in known:
                    known.clear()
                known[p] = cwd
        else:
            cwd = known.pop(p, None)
        if cwd is None:
            return None
        cwds.add(cwd)
    return cwds.pop() if len(cwds) == 1 else None
