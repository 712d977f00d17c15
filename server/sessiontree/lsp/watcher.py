"""File and directory watching for live sessions.

`SessionWatcher` tells its owner two things, always from its own worker thread and one
call at a time:

- `on_file(path)`: a followed session file may have changed (appended, replaced,
  truncated, deleted...). The owner looks at the file (`core.live.read_appended`) and
  decides; a spurious call costs one `open` + `fstat` + two small reads.
- `on_list(changes)`: `*.jsonl` files appeared in or vanished from a watched directory
  (`{directory: (added paths, removed paths)}`), debounced, with spurious events
  filtered out by comparing directory listings.

How it notices: inotify through `watchfiles` (one recursive watch over the sessions
roots, one non-recursive watch over the directories of followed files that lie outside
the roots), plus a stat poll of every followed file and every known directory as a
safety net (every `safety_interval`, 1 s). When inotify is unavailable (watch limit
reached, unsupported file system, or `force_polling`), the same stat poll runs every
`poll_interval` (100 ms) instead, so changes are still seen within about 0.1 s.
"""

from __future__ import annotations

import logging
import os
import stat
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

log = logging.getLogger(__name__)

#: `{directory: (added file paths, removed file paths)}`
ListChanges = dict[str, tuple[set[str], set[str]]]

SESSION_SUFFIX = ".jsonl"


def is_session_file_name(name: str) -> bool:
    """True for names that list as sessions (`*.jsonl`, not hidden: temp files start with a dot)."""
    return name.endswith(SESSION_SUFFIX) and not name.startswith(".")


@dataclass(slots=True)
class _DirState:
    recursive: bool
    mtime_ns: int
    files: set[str] = field(default_factory=set)
    subdirs: set[str] = field(default_factory=set)


class _NotifyThread:
    """One `watchfiles` watch over a set of paths, restarted when the set changes."""

    def __init__(
        self,
        name: str,
        recursive: bool,
        on_changes: Callable[[list[tuple[int, str]]], None],
        on_failure: Callable[[BaseException], None],
        step_ms: int,
    ) -> None:
        self._recursive = recursive
        self._on_changes = on_changes
        self._on_failure = on_failure
        self._step_ms = step_ms
        self._paths: frozenset[str] = frozenset()
        self._lock = threading.Lock()
        self._changed = threading.Event()
        self._stop_watch = threading.Event()
        self._closed = False
        self.running_paths: frozenset[str] = frozenset()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def set_paths(self, paths: frozenset[str]) -> None:
        with self._lock:
            if paths == self._paths:
                return
            self._paths = paths
        self._stop_watch.set()
        self._changed.set()

    def close(self) -> None:
        self._closed = True
        self._stop_watch.set()
        self._changed.set()

    def join(self, timeout: float) -> None:
        self._thread.join(timeout)

    def _run(self) -> None:
        import watchfiles

        while not self._closed:
            self._changed.wait()
            if self._closed:
                return
            with self._lock:
                self._changed.clear()
                self._stop_watch = threading.Event()
                paths = self._paths
                stop_watch = self._stop_watch
            if not paths:
                self.running_paths = frozenset()
                continue
            try:
                self.running_paths = paths
                for changes in watchfiles.watch(
                    *sorted(paths),
                    watch_filter=None,
                    debounce=200,
                    step=self._step_ms,
                    stop_event=stop_watch,
                    rust_timeout=1000,
                    yield_on_timeout=True,
                    raise_interrupt=False,
                    recursive=self._recursive,
                    force_polling=False,
                ):
                    if changes:
                        self._on_changes([(int(c), p) for c, p in changes])
                    if stop_watch.is_set():
                        break
            except FileNotFoundError:
                # A directory vanished between the check and the watch; the owner's next
                # tick recomputes the set.
                self.running_paths = frozenset()
                time.sleep(0.05)
                self._changed.set()
            except Exception as exc:
                self.running_paths = frozenset()
                self._on_failure(exc)
                return


class SessionWatcher:
    """Watches followed session files and session directories (see the module docstring)."""

    def __init__(
        self,
        on_file: Callable[[str], None],
        on_list: Callable[[ListChanges], None],
        *,
        force_polling: bool = False,
        poll_interval: float = 0.1,
        safety_interval: float = 1.0,
        list_debounce: float = 0.1,
        step_ms: int = 10,
        on_tick: Callable[[], None] | None = None,
    ) -> None:
        self._on_file = on_file
        self._on_tick = on_tick
        self._on_list = on_list
        self._poll_interval = poll_interval
        self._safety_interval = safety_interval
        self._list_debounce = list_debounce
        self._step_ms = step_ms
        self._polling = force_polling
        self._poll_now = False
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stopped = False
        self._roots: set[str] = set()
        self._files: dict[str, tuple[int, int, int] | None] = {}
        self._file_pokes: set[str] = set()
        self._dirty_dirs: set[str] = set()
        self._dirty_deadline: float | None = None
        self._dirs: dict[str, _DirState] = {}
        self._listed_roots: set[str] = set()
        # Roots that did not exist when first seen: their content counts as new.
        self._absent_roots: set[str] = set()
        self._tree_watch: _NotifyThread | None = None
        self._dir_watch: _NotifyThread | None = None
        self._thread: threading.Thread | None = None
        self.ready = threading.Event()
        # Told of every session file under the roots that inotify saw change (the search
        # index keeps itself current with them; followed files get `on_file` as before).
        self._change_listeners: list[Callable[[list[str]], None]] = []

    # -- public API ----------------------------------------------------------------

    @property
    def mode(self) -> str:
        """ "inotify" or "polling"."""
        return "polling" if self._polling else "inotify"

    def start(self) -> None:
        """Start the worker (and the inotify threads unless polling)."""
        if self._thread is not None:
            return
        if not self._polling:
            self._tree_watch = _NotifyThread(
                "sessiontree-watch-tree", True, self._on_notify, self._on_notify_failure, self._step_ms
            )
            self._dir_watch = _NotifyThread(
                "sessiontree-watch-dirs", False, self._on_notify, self._on_notify_failure, self._step_ms
            )
        self._thread = threading.Thread(target=self._run, name="sessiontree-watcher", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop every thread (returns within about a second)."""
        self._stopped = True
        self._wake.set()
        for t in (self._tree_watch, self._dir_watch):
            if t is not None:
                t.close()
        if self._thread is not None:
            self._thread.join(2)
        for t in (self._tree_watch, self._dir_watch):
            if t is not None:
                t.join(2)

    def set_roots(self, roots: Iterable[str]) -> None:
        """Directories watched recursively for session files appearing or vanishing."""
        with self._lock:
            self._roots = {_canonical(r) for r in roots}
        self._wake.set()

    def track_file(self, path: str) -> str:
        """Follow `path`; returns the canonical path that `on_file` will be called with."""
        p = _canonical(path)
        with self._lock:
            if p not in self._files:
                self._files[p] = _stat_key(p)
        self._wake.set()
        return p

    def untrack_file(self, path: str) -> None:
        """Stop following `path`."""
        with self._lock:
            self._files.pop(_canonical(path), None)
        self._wake.set()

    def add_change_listener(self, fn: Callable[[list[str]], None]) -> Callable[[], None]:
        """Call ``fn(paths)`` (from a watcher thread) with the session files under the roots
        that inotify saw created, modified or deleted; returns the function that removes it.
        Polling sees no files but the followed ones: a listener rescans on its own too."""
        self._change_listeners.append(fn)

        def remove() -> None:
            if fn in self._change_listeners:
                self._change_listeners.remove(fn)

        return remove

    def poke(self, path: str) -> None:
        """Ask for an `on_file` call for `path` soon (from any thread)."""
        with self._lock:
            self._file_pokes.add(_canonical(path))
        self._wake.set()

    # -- notify side -----------------------------------------------------------------

    def _on_notify(self, changes: list[tuple[int, str]]) -> None:
        # watchfiles.Change: 1 added, 2 modified, 3 deleted
        if self._change_listeners:
            files = [p for _kind, p in changes if is_session_file_name(os.path.basename(p))]
            if files:
                for listener in list(self._change_listeners):
                    try:
                        listener(files)
                    except Exception:
                        log.exception("a change listener failed")
        with self._lock:
            for kind, path in changes:
                if path in self._files:
                    self._file_pokes.add(path)
                if kind == 2:
                    # A modified directory may have gained or lost entries; a modified
                    # file has not changed any listing.
                    if path in self._dirs:
                        self._dirty_dirs.add(path)
                    continue
                parent = os.path.dirname(path)
                if (
                    is_session_file_name(os.path.basename(path)) or path in self._dirs or os.path.isdir(path)
                ) and parent in self._dirs:
                    self._dirty_dirs.add(parent)
            if self._dirty_dirs and self._dirty_deadline is None:
                self._dirty_deadline = time.monotonic() + self._list_debounce
        self._wake.set()

    def _on_notify_failure(self, exc: BaseException) -> None:
        if self._stopped:
            return
        log.warning(
            "file watching unavailable (%s); falling back to polling every %.0f ms",
            exc,
            self._poll_interval * 1000,
        )
        self._polling = True
        self._poll_now = True  # the next poll is due now, not at the end of the safety interval
        self._wake.set()

    # -- worker ----------------------------------------------------------------------

    def _run(self) -> None:
        next_poll = next_dir_poll = 0.0
        while not self._stopped:
            now = time.monotonic()
            with self._lock:
                deadline = self._dirty_deadline
            waits = [next_poll - now]
            if deadline is not None:
                waits.append(deadline - now)
            self._wake.wait(max(0.0, min(waits)))
            self._wake.clear()
            if self._stopped:
                return
            try:
                self._sync_watches()
                with self._lock:
                    pokes = self._file_pokes
                    self._file_pokes = set()
                for p in sorted(pokes):
                    self._call_file(p)
                now = time.monotonic()
                if now >= next_poll or self._poll_now:
                    self._poll_now = False
                    if self._on_tick is not None:
                        self._on_tick()
                    # Files every poll interval; directory listings (possibly thousands of
                    # directories) at the safety interval only.
                    dirs_due = now >= next_dir_poll
                    self._poll_once(dirs_due)
                    next_poll = now + (self._poll_interval if self._polling else self._safety_interval)
                    if dirs_due:
                        next_dir_poll = now + self._safety_interval
                self._flush_list_changes()
                self.ready.set()
            except Exception:  # the watcher must outlive any one bad file
                log.exception("watcher tick failed")

    def _call_file(self, path: str) -> None:
        with self._lock:
            if path not in self._files:
                return
            self._files[path] = _stat_key(path)
        try:
            self._on_file(path)
        except Exception:
            log.exception("on_file(%s) failed", path)

    def _poll_once(self, with_dirs: bool = True) -> None:
        with self._lock:
            files = list(self._files.items())
        for path, seen in files:
            key = _stat_key(path)
            if key != seen:
                self._call_file(path)
        if not with_dirs:
            return
        # Directory listings: a directory's mtime changes when entries come or go.
        with self._lock:
            dirs = list(self._dirs.items())
        dirty = [d for d, st in dirs if _dir_mtime(d) != st.mtime_ns]
        if dirty:
            with self._lock:
                self._dirty_dirs.update(dirty)
                if self._dirty_deadline is None:
                    self._dirty_deadline = time.monotonic()

    def _sync_watches(self) -> None:
        """Bring listings and inotify watches in line with the roots and followed files."""
        with self._lock:
            roots = set(self._roots)
            file_dirs = {os.path.dirname(p) for p in self._files}
        changes: ListChanges = {}
        # Roots: list once (a root that appears later counts as new content).
        for root in [r for r in self._listed_roots if r not in self._dirs]:
            # The root itself vanished: list it again (as new content) if it comes back.
            self._listed_roots.discard(root)
            self._absent_roots.add(root)
        for root in roots - self._listed_roots:
            if os.path.isdir(root):
                added = self._list_tree(root, recursive=True)
                self._listed_roots.add(root)
                if added and root in self._absent_roots:
                    changes[root] = (added, set())
            else:
                self._absent_roots.add(root)
        for root in self._listed_roots - roots:
            self._listed_roots.discard(root)
            self._forget_tree(root)
        extra = {d for d in file_dirs if not any(_within(d, r) for r in roots)}
        for d in extra:
            if d not in self._dirs and os.path.isdir(d):
                self._list_tree(d, recursive=False)
        for d in [d for d, st in self._dirs.items() if not st.recursive and d not in extra]:
            self._dirs.pop(d, None)
        if changes:
            self._emit(changes)
        if not self._polling and self._tree_watch is not None and self._dir_watch is not None:
            self._tree_watch.set_paths(frozenset(r for r in roots if os.path.isdir(r)))
            self._dir_watch.set_paths(frozenset(d for d in extra if os.path.isdir(d)))
        elif self._polling:
            for t in (self._tree_watch, self._dir_watch):
                if t is not None:
                    t.set_paths(frozenset())

    def _list_tree(self, top: str, recursive: bool) -> set[str]:
        """List `top` (and below when recursive) into `_dirs`; returns the files found."""
        found: set[str] = set()
        stack = [top]
        while stack:
            d = stack.pop()
            st = self._scan_dir(d, recursive)
            if st is None:
                continue
            self._dirs[d] = st
            found.update(os.path.join(d, n) for n in st.files)
            if recursive:
                stack.extend(os.path.join(d, s) for s in st.subdirs)
        return found

    def _forget_tree(self, top: str) -> set[str]:
        gone: set[str] = set()
        for d in [d for d in self._dirs if _within(d, top)]:
            st = self._dirs.pop(d)
            gone.update(os.path.join(d, n) for n in st.files)
        return gone

    @staticmethod
    def _scan_dir(d: str, recursive: bool) -> _DirState | None:
        try:
            mtime = os.stat(d).st_mtime_ns
            files: set[str] = set()
            subdirs: set[str] = set()
            with os.scandir(d) as it:
                for e in it:
                    try:
                        if e.name.startswith("."):
                            continue
                        if e.is_file(follow_symlinks=False):
                            if is_session_file_name(e.name):
                                files.add(e.name)
                        elif recursive and e.is_dir(follow_symlinks=False):
                            subdirs.add(e.name)
                    except OSError:
                        continue
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            return None
        return _DirState(recursive, mtime, files, subdirs)

    def _flush_list_changes(self) -> None:
        with self._lock:
            if self._dirty_deadline is None or time.monotonic() < self._dirty_deadline:
                return
            dirty = self._dirty_dirs
            self._dirty_dirs = set()
            self._dirty_deadline = None
        changes: ListChanges = {}
        for d in sorted(dirty):
            old = self._dirs.get(d)
            if old is None:
                continue
            new = self._scan_dir(d, old.recursive)
            if new is None:
                gone = self._forget_tree(d)
                if gone:
                    changes[d] = (set(), gone)
                continue
            self._dirs[d] = new
            added = {os.path.join(d, n) for n in new.files - old.files}
            removed = {os.path.join(d, n) for n in old.files - new.files}
            if old.recursive:
                for s in new.subdirs - old.subdirs:
                    added |= self._list_tree(os.path.join(d, s), recursive=True)
                for s in old.subdirs - new.subdirs:
                    removed |= self._forget_tree(os.path.join(d, s))
            if added or removed:
                changes[d] = (added, removed)
        if changes:
            self._emit(changes)

    def _emit(self, changes: ListChanges) -> None:
        try:
            self._on_list(changes)
        except Exception:
            log.exception("on_list failed")


def _canonical(path: str) -> str:
    return os.path.realpath(os.path.abspath(path))


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _stat_key(path: str) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def _dir_mtime(path: str) -> int | None:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return None
