"""Navigation that lasts: the leaf chosen through the daemon and the history of jumps.

Kept in one JSON file OUTSIDE the session directories (`<stateDir>/state.json`, default
`$XDG_STATE_HOME/sessiontree/`), keyed by the session file's resolved path. Session files
are never written for this. A remembered leaf is restored on open only when the file's
last entry is still the one it was when the leaf was saved (so that a session the agent
continued meanwhile opens on its new last entry, like the agent does).

Several daemons (one per editor) may share the file: every change re-reads it under an
advisory lock (`state.lock`) and writes it back atomically, so they never lose each
other's records, and reads pick up another daemon's changes.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

MAX_HISTORY = 200
MAX_SESSIONS = 500


def _now_iso() -> str:
    t = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t * 1000) % 1000:03d}Z"


class NavigationState:
    """The sidecar state file; every method is thread-safe and writes atomically."""

    def __init__(self, directory: Path | None) -> None:
        """`directory` None: keep the state in memory only (in-memory sessions, no state dir)."""
        self.directory = directory
        self.path = directory / "state.json" if directory is not None else None
        self._lock = threading.Lock()
        self._data: dict[str, Any] = {"version": 1, "sessions": {}}
        self._mtime: int | None = None
        self._load()

    def _load(self) -> None:
        if self.path is None:
            return
        try:
            self._mtime = self.path.stat().st_mtime_ns
            raw = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            self._mtime = None
            return
        except (OSError, ValueError):
            # A damaged state file only costs remembered leaves; keep it aside, start afresh.
            try:
                os.replace(self.path, self.path.with_suffix(f".broken-{int(time.time())}"))
            except OSError:
                pass
            return
        if isinstance(raw, dict) and isinstance(raw.get("sessions"), dict):
            self._data = raw

    def _refresh(self) -> None:
        """Reload when another process changed the file."""
        if self.path is None:
            return
        try:
            mtime: int | None = self.path.stat().st_mtime_ns
        except OSError:
            mtime = None
        if mtime != self._mtime:
            self._data = {"version": 1, "sessions": {}}
            self._load()

    @contextlib.contextmanager
    def _changing(self) -> Iterator[None]:
        """Thread lock + cross-process file lock; reload before, save after."""
        with self._lock:
            if self.directory is None:
                yield
                return
            self.directory.mkdir(parents=True, exist_ok=True)
            with open(self.directory / "state.lock", "a+b") as lock:
                fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
                try:
                    self._refresh()
                    yield
                    self._save()
                finally:
                    fcntl.flock(lock.fileno(), fcntl.LOCK_UN)

    def _save(self) -> None:
        sessions = self._data["sessions"]
        if len(sessions) > MAX_SESSIONS:
            keep = sorted(sessions.items(), key=lambda kv: kv[1].get("updated", ""), reverse=True)
            self._data["sessions"] = dict(keep[:MAX_SESSIONS])
        if self.directory is None or self.path is None:
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".state.{os.getpid()}.{threading.get_ident()}.tmp")
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(self._data, fh, ensure_ascii=False)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self.path)
        self._mtime = self.path.stat().st_mtime_ns

    def get(self, session_path: str) -> dict[str, Any] | None:
        """The record of a session file: leafId, lastEntryId, history, index."""
        with self._lock:
            self._refresh()
            rec = self._data["sessions"].get(session_path)
            return json.loads(json.dumps(rec)) if isinstance(rec, dict) else None

    def remember_leaf(self, session_path: str, leaf_id: str | None, last_entry_id: str | None) -> None:
        """Record where the leaf is (after any leaf move or append)."""
        with self._changing():
            rec = self._data["sessions"].setdefault(session_path, {"history": [], "index": 0})
            rec["leafId"] = leaf_id
            rec["lastEntryId"] = last_entry_id
            rec["updated"] = _now_iso()

    def record_jump(
        self,
        session_path: str,
        *,
        leaf_id: str | None,
        previous_leaf_id: str | None,
        last_entry_id: str | None,
        summary_entry_id: str | None = None,
    ) -> None:
        """Add a jump to the history (dropping any undone jumps after the current index)."""
        with self._changing():
            rec = self._data["sessions"].setdefault(session_path, {"history": [], "index": 0})
            hist: list[dict[str, Any]] = rec.get("history") or []
            index = int(rec.get("index", len(hist)))
            hist = hist[:index]
            item: dict[str, Any] = {"leafId": leaf_id, "previousLeafId": previous_leaf_id, "at": _now_iso()}
            if summary_entry_id:
                item["summaryEntryId"] = summary_entry_id
            hist.append(item)
            hist = hist[-MAX_HISTORY:]
            rec["history"] = hist
            rec["index"] = len(hist)
            rec["leafId"] = leaf_id
            rec["lastEntryId"] = last_entry_id
            rec["updated"] = _now_iso()

    def history(self, session_path: str) -> tuple[list[dict[str, Any]], int]:
        """(jumps oldest first, index)."""
        rec = self.get(session_path) or {}
        hist = rec.get("history") or []
        return hist, int(rec.get("index", len(hist)))

    def step_back(self, session_path: str, leaf_id: str | None, last_entry_id: str | None) -> None:
        """Mark the latest jump in effect as undone and remember the new leaf."""
        with self._changing():
            rec = self._data["sessions"].setdefault(session_path, {"history": [], "index": 0})
            rec["index"] = max(0, int(rec.get("index", 0)) - 1)
            rec["leafId"] = leaf_id
            rec["lastEntryId"] = last_entry_id
            rec["updated"] = _now_iso()

    def forget(self, session_path: str) -> None:
        """Drop a session's record."""
        with self._changing():
            self._data["sessions"].pop(session_path, None)
