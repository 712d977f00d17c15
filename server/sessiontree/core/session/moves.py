"""Moves: a session goes to another file (`Moves`, a part of `SessionManager`).

`fork` copies the session into a new file (same entries, new id); `create_branched_session`
starts a new session holding one path of the tree (labels re-created; DIVERGENCE 7: written
through the normal persistence path); `new_session` starts an empty one; `move_to` moves the
file and its artifacts directory to another cwd's sessions directory.
"""

from __future__ import annotations

import copy
import os
from typing import Any

import orjson

from .. import paths
from ..errors import EntryNotFoundError
from ..format.dialects import Dialect
from ..format.migrations import CURRENT_SESSION_VERSION
from ..format.title_slot import TitleSlot
from ..ids import session_file_name
from .loading import Loading
from .records import LoadReport

__all__ = ["Moves", "deep_copy"]


def _rechained(idx: Any, path_ids: list[str]) -> list[dict[str, Any]]:
    """pi's path for a branched session: label entries left out and every kept entry's
    parent the kept entry before it (an entry whose parent was a label is no orphan), a
    compaction's ``firstKeptEntryId`` naming a left-out label moved to the entry after it."""
    out: list[dict[str, Any]] = []
    replaced: dict[str, str] = {}
    pending: list[str] = []
    parent: str | None = None
    for i in path_ids:
        entry = idx.get(i)
        if entry is None:
            continue
        if entry.get("type") == "label":
            pending.append(i)
            continue
        for label_id in pending:
            replaced[label_id] = i
        pending.clear()
        copy_ = {**entry, "parentId": parent}
        if entry.get("type") == "compaction":
            first = entry.get("firstKeptEntryId")
            if first != entry.get("id"):
                copy_["firstKeptEntryId"] = replaced.get(first, first) if isinstance(first, str) else first
        out.append(copy_)
        parent = i
    return out


def _label_times(idx: Any) -> dict[str, Any]:
    """When each label in effect was set (pi keeps that time on a re-created label)."""
    times: dict[str, Any] = {}
    for sk in idx.skeletons():
        if sk.type != "label" or not isinstance(sk.target_id, str):
            continue
        if sk.label:
            entry = idx.entry_of(sk)
            times[sk.target_id] = entry.get("timestamp")
        else:
            times.pop(sk.target_id, None)
    return times


def deep_copy(entry: dict[str, Any]) -> dict[str, Any]:
    """A copy sharing nothing with `entry` (through JSON when it is JSON, as it should be)."""
    try:
        return orjson.loads(orjson.dumps(entry))  # type: ignore[no-any-return]
    except TypeError:
        return copy.deepcopy(entry)


class Moves(Loading):
    """Fork, branch into a new session, start a new one, move to another cwd."""

    def create_branched_session(self, leaf_id: str) -> str | None:
        """A new session holding the path to `leaf_id` (labels re-created); returns its path."""
        path_ids = self._index.path_to_root(leaf_id)
        if not path_ids:
            raise EntryNotFoundError(leaf_id)
        idx = self._index
        dialect = self.dialect
        path_entries: list[dict[str, Any]] = []
        for i in path_ids:
            pe = idx.get(i)
            if pe is not None and pe.get("type") != "label":
                path_entries.append(pe)
        if dialect is Dialect.PI:
            path_entries = _rechained(idx, path_ids)
        on_path = {e.get("id") for e in path_entries}
        now = self._clock.now_iso()
        label_times = _label_times(idx) if dialect is Dialect.PI else {}
        taken: set[str] = {i for i in on_path if isinstance(i, str)}
        labels: list[dict[str, Any]] = []
        parent = path_entries[-1].get("id") if path_entries else None
        for target, label in idx.labels.items():
            if target not in on_path:
                continue
            lid = self._ids.new_entry_id(taken)
            taken.add(lid)
            labels.append(
                {
                    "type": "label",
                    "id": lid,
                    "parentId": parent,
                    "timestamp": label_times.get(target, now),
                    "targetId": target,
                    "label": label,
                }
            )
            parent = lid
        previous_file = self._session_file if self._persist else None
        entries = [deep_copy(e) for e in path_entries] + labels
        title, title_source = self.get_session_name(), self.get_title_source()
        self._close_writer()
        self._new_session_state(previous_file, dialect)
        self._header.pop("parentSession", None) if previous_file is None else None
        if dialect is Dialect.OMP and title:
            # oh-my-pi carries the title over (header and slot); xcsh and pi do not
            self._header = {**self._header, "title": title, "titleSource": title_source}
            self._title_slot = TitleSlot(title, title_source, self._header["timestamp"])
        for e in entries:
            self._index.add_held(e)
        last = self._index.last()
        self._leaf_id = last.id if last else None
        if self._persist and self._session_file:
            self._rewrite_file_guarded()  # DIVERGENCE 7: through the persistence path
            self._ensured_on_disk = False
            return self._session_file
        return None

    def fork(self) -> tuple[str, str] | None:
        """Copy this session into a new file (same entries, new id); returns (old, new)."""
        if not self._persist or not self._session_file:
            return None
        old_file = self._session_file
        old_id = self._header.get("id")
        dialect = self.dialect
        logical = self.get_header() or {}
        self._close_writer()
        self._persist_error = None
        sid = self._ids.uuid7() if dialect in (Dialect.PI, Dialect.OMP) else self._ids.new_session_id()
        ts = self._clock.now_iso()
        header: dict[str, Any] = {"type": "session", "version": CURRENT_SESSION_VERSION, "id": sid}
        if dialect is not Dialect.PI:  # (pi names sessions by entries, which are copied)
            if "title" in logical:
                header["title"] = logical.get("title")
            if "titleSource" in logical:
                header["titleSource"] = logical.get("titleSource")
        header["timestamp"] = ts
        header["cwd"] = self._cwd
        # pi's fork names its parent by the file, xcsh's and oh-my-pi's by the session id
        header["parentSession"] = old_file if dialect is Dialect.PI else old_id
        if self._title_slot is not None:
            slot = self._title_slot
            self._title_slot = TitleSlot(slot.title, slot.source, slot.updated_at)
        # file-backed entries must be read from the old file before switching paths
        self._hold_all_entries()
        self._header = header
        self._session_file = os.path.join(self._session_dir, session_file_name(ts, sid))
        self.load_report = LoadReport()
        self._forget_file_state()
        self._flushed = False
        self._rewrite_file_guarded()
        return old_file, self._session_file

    def _hold_all_entries(self) -> None:
        """Turn every file-backed entry into a held one (before the file path changes)."""
        idx = self._index
        if not idx.is_file_backed():
            return
        new = self._make_index()
        for entry in idx.iter_entries():
            new.add_held(entry)
        self._index = new

    def new_session(self, parent_session: str | None = None) -> str | None:
        """Start an empty session (new id; a new file path that is written lazily)."""
        self._close_writer()
        self._new_session_state(parent_session)
        return self._session_file

    def move_to(self, new_cwd: str) -> None:
        """Move the session to another cwd's directory (file and artifacts dir renamed)."""
        new_cwd = os.path.abspath(new_cwd)
        if new_cwd == self._cwd:
            return
        new_dir = self._session_dir_for(new_cwd)
        if self._persist and self._session_file:
            self._close_writer()
            self._persist_error = None
            storage = self._storage
            old_file = self._session_file
            existed = storage.exists(old_file)
            new_file = os.path.join(new_dir, os.path.basename(old_file))
            old_art = old_file[:-6] if old_file.endswith(".jsonl") else None
            new_art = new_file[:-6] if new_file.endswith(".jsonl") else None
            storage.ensure_dir(new_dir)
            moved_file = moved_art = False
            try:
                if existed:
                    storage.rename(old_file, new_file)
                    moved_file = True
                if old_art and new_art and os.path.isdir(old_art):
                    os.rename(old_art, new_art)
                    moved_art = True
            except Exception:
                if moved_art and old_art and new_art:
                    try:
                        os.rename(new_art, old_art)
                    except OSError:
                        pass
                if moved_file:
                    try:
                        storage.rename(new_file, old_file)
                    except Exception:
                        pass
                raise
            self._session_file = new_file
            self._forget_file_state()
            self._cwd = new_cwd
            self._session_dir = new_dir
            self._header["cwd"] = new_cwd
            if existed or self._index.has_assistant:
                self._rewrite_file_guarded()
            self._write_breadcrumb()
        else:
            self._cwd = new_cwd
            self._session_dir = new_dir if self._session_dir else ""
            self._header["cwd"] = new_cwd

    def _session_dir_for(self, new_cwd: str) -> str:
        """Beside the current directory when that one is named after the cwd, else the default."""
        try:
            cur = os.path.abspath(self._session_dir) if self._session_dir else ""
            names = {paths.encode_cwd(self._cwd), paths.encode_cwd_legacy(self._cwd)}
            if cur and os.path.basename(cur) in names:
                return os.path.join(os.path.dirname(cur), paths.encode_cwd(new_cwd))
        except Exception:
            pass
        return str(paths.get_default_session_dir(new_cwd, self._agent_dir, self._penv))
