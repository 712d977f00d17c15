"""Live sessions: follow files other processes write, announce what they did.

`LiveFollower` ties the watching machinery (`sessiontree.lsp.watcher`) to the open
sessions of the registry:

- a session opened with a file is followed; closing it stops that;
- when its file changes, the manager folds the change in under the session's lock
  (`SessionManager.sync_with_file()`), and the result is announced: appended entries as
  `session/didChange` (`source: "external"`), labels among them as
  `session/didChangeLabel`, a replaced / truncated / rewritten / deleted file as
  `session/didReload`;
- `*.jsonl` files appearing or vanishing in the sessions root (recursively) or in the
  directory of an open session are announced as `session/didChangeList`.

Initialization option `watch: false` turns all of it off. `SESSIONTREE_WATCH_POLLING=1`
forces the stat-polling fallback (what runs when inotify is unavailable).
See docs/live-sessions.md.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections.abc import Callable
from typing import Any

import orjson
from sessiontree_protocol import methods as m

from sessiontree.core.live import ChangeKind, SyncResult
from sessiontree.lsp.watcher import ListChanges, SessionWatcher

log = logging.getLogger(__name__)

POLLING_ENV = "SESSIONTREE_WATCH_POLLING"


def _env_polling() -> bool:
    return os.environ.get(POLLING_ENV, "").strip().lower() in ("1", "true", "yes", "on")


class LiveFollower:
    """Follows the files of open sessions and the session directories of one daemon."""

    def __init__(
        self,
        registry: Any,
        send: Callable[[str, dict[str, Any]], None],
        summarize: Callable[[Any, str], dict[str, Any]],
        roots: list[str],
        *,
        force_polling: bool = False,
    ) -> None:
        self.registry = registry
        self._send = send
        self._summarize = summarize
        self._roots = roots
        self._lock = threading.Lock()
        self._followed: dict[str, Any] = {}  # canonical path -> OpenSession
        self._unsubscribe: Callable[[], None] | None = None
        self.watcher = SessionWatcher(
            self._on_file, self._on_list, force_polling=force_polling or _env_polling()
        )

    def start(self) -> None:
        """Start watching the roots and every session already open."""
        self.watcher.set_roots(self._roots)
        self._unsubscribe = self.registry.subscribe(self._on_event)
        for s in self.registry.sessions():
            self._follow(s)
        self.watcher.start()
        log.info("following sessions (%s)", self.watcher.mode)

    def stop(self) -> None:
        """Stop watching."""
        if self._unsubscribe is not None:
            self._unsubscribe()
        self.watcher.stop()

    # -- registry events -----------------------------------------------------------------

    def _on_event(self, ev: Any) -> None:
        if ev.kind == "opened":
            self._follow(ev.session)
        elif ev.kind == "closed":
            self._unfollow(ev.session)
        elif ev.kind in ("changed", "navigated", "labelled", "moved", "forked", "rekeyed"):
            # The file may have moved (fork, moveTo): follow the session's current path.
            self._follow(ev.session)

    def _follow(self, session: Any) -> None:
        path = session.path
        current = session.extra.get("live.path")
        if path == current:
            return
        if current is not None:
            self._forget(current, session)
        if path is None or getattr(session, "closed", False):
            return
        canon = self.watcher.track_file(path)
        session.extra["live.path"] = path
        session.extra["live.canonical"] = canon
        with self._lock:
            self._followed[canon] = session

    def _unfollow(self, session: Any) -> None:
        current = session.extra.pop("live.path", None)
        if current is not None:
            self._forget(current, session)

    def _forget(self, path: str, session: Any) -> None:
        canon = session.extra.pop("live.canonical", None) or path
        with self._lock:
            if self._followed.get(canon) is session:
                del self._followed[canon]
                self.watcher.untrack_file(canon)

    # -- file changes (watcher thread) -----------------------------------------------------

    def _on_file(self, canon: str) -> None:
        with self._lock:
            session = self._followed.get(canon)
        if session is None or session.closed:
            return
        self.sync_session(session)

    def sync_session(self, session: Any) -> SyncResult | None:
        """Fold the file's changes into `session` and announce them (any thread)."""
        with session.lock:
            if session.closed:
                return None
            manager = session.manager
            sync = getattr(manager, "sync_with_file", None)
            if sync is None:
                return None
            result: SyncResult = sync()
            if result.kind is ChangeKind.UNCHANGED and not result.appended:
                return result
            summaries = []
            for eid in result.appended:
                try:
                    summaries.append(self._summarize(session, eid))
                except Exception:
                    log.exception("summary of %s failed", eid)
        self._announce(session, result, summaries)
        return result

    def _announce(self, session: Any, result: SyncResult, summaries: list[dict[str, Any]]) -> None:
        handle = session.handle
        if result.appended:
            self._send(
                m.SESSION_DID_CHANGE,
                {
                    "session": handle,
                    "appended": summaries,
                    "leafId": result.leaf_id,
                    "oldLeafId": result.old_leaf_id,
                    "source": "external",
                },
            )
            for target, label in result.labels:
                params: dict[str, Any] = {"session": handle, "targetId": target}
                if label:
                    params["label"] = label
                self._send(m.SESSION_DID_CHANGE_LABEL, params)
        if result.kind is ChangeKind.DELETED or result.kind.needs_reload:
            self._send(m.SESSION_DID_RELOAD, {"session": handle, "reason": result.reason or str(result.kind)})

    # -- directory listings (watcher thread) -----------------------------------------------

    def _on_list(self, changes: ListChanges) -> None:
        cwds: set[str | None] = set()
        for d, (added, removed) in changes.items():
            cwds.add(_cwd_of_dir(d, sorted(added) + sorted(removed)))
        if None in cwds or len(cwds) > 4:
            self._send(m.SESSION_DID_CHANGE_LIST, {})
            return
        for cwd in sorted(c for c in cwds if c is not None):
            self._send(m.SESSION_DID_CHANGE_LIST, {"cwd": cwd})


def _header_cwd(path: str) -> str | None:
    try:
        with open(path, "rb") as f:
            first = f.readline(1 << 20)
    except OSError:
        return None
    try:
        header = orjson.loads(first.lstrip(b"\xef\xbb\xbf"))
    except orjson.JSONDecodeError:
        return None
    if isinstance(header, dict) and header.get("type") == "session" and isinstance(header.get("cwd"), str):
        return str(header["cwd"])
    return None


def _cwd_of_dir(directory: str, changed: list[str]) -> str | None:
    """The project of a session directory: the cwd in a header of one of its sessions."""
    candidates = [p for p in changed if os.path.exists(p)]
    try:
        with os.scandir(directory) as it:
            candidates += sorted(
                e.path for e in it if e.name.endswith(".jsonl") and not e.name.startswith(".")
            )[:5]
    except OSError:
        pass
    for p in candidates:
        cwd = _header_cwd(p)
        if cwd is not None:
            return cwd
    return None


def setup(server: Any) -> None:
    """Register live following on the daemon (started once the client is initialized)."""
    state: dict[str, LiveFollower] = {}

    def send(method: str, params: dict[str, Any]) -> None:
        loop = getattr(server, "loop", None) or getattr(server.protocol, "_loop", None)
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if loop is not None and running is not loop:
            loop.call_soon_threadsafe(server.notify, method, params)
        else:
            server.notify(method, params)

    def summarize(session: Any, entry_id: str) -> dict[str, Any]:
        from sessiontree.core.view import entry_summary

        s = entry_summary(session.manager, entry_id)
        out: dict[str, Any] = {
            "id": s.id,
            "parentId": s.parent_id,
            "type": s.type,
            "timestamp": s.timestamp,
            "text": s.text,
        }
        if s.role is not None:
            out["role"] = s.role
        if s.custom_type is not None:
            out["customType"] = s.custom_type
        if s.label:
            out["label"] = s.label
        return out

    def start() -> None:
        if state or not server.config.watch:
            return
        roots = _sessions_roots(server)
        follower = LiveFollower(server.registry, send, summarize, roots)
        state["follower"] = follower
        follower.start()

    def stop() -> None:
        follower = state.pop("follower", None)
        if follower is not None:
            follower.stop()

    server.live_start = start
    server.live_stop = stop
    server.live_state = state


def _sessions_roots(server: Any) -> list[str]:
    from sessiontree.core import paths

    agent = server.config.agent_dir or paths.get_agent_dir()
    try:
        return [str(paths.sessions_root(agent))]
    except TypeError:
        return [str(paths.sessions_root())]
