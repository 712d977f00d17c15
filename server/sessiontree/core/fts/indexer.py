"""Keeping the index current: a new file is indexed, a grown one only from where it was
indexed to, a rewritten, replaced or shrunk one again from the start, a gone one removed.

A file is unchanged when device, inode, size and mtime match; it only grew when its header
line and the line that ended the indexed part are still the same bytes at the same place.
Files are indexed oldest first, so that the newest entries have the highest rowids (the
query ranks among the newest matches first, `query.py`).
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ..discovery.names import display_name
from ..format.content import content_text
from ..format.dialects import Dialect, Evidence, home_dialect
from ..format.jscompat import date_ms
from ..format.jsonl import scrub_text
from ..store.guard import PathGuard
from ..view.display import home_dir
from .schema import IndexBusy, connect, is_busy
from .sources import (
    NeedsWholeFile,
    ReadResult,
    SessionFile,
    enumerate_sessions,
    head_of,
    read_entries,
)
from .tags import file_tags, role_tag
from .text import entry_calls, entry_role, entry_text

__all__ = ["Indexer", "UpdateReport"]

_BATCH = 20000
_FILE_ROW = "SELECT id, path, device, inode, size, mtime_ns, head_hash, end_offset, last_len, last_hash, whole_only FROM files"


@dataclass
class UpdateReport:
    """What one update did: files seen, indexed from the start, read on from where they
    were, removed; entries added; seconds it took."""

    files: int = 0
    full: int = 0
    appended: int = 0
    removed: int = 0
    entries: int = 0
    seconds: float = 0.0
    errors: list[str] = field(default_factory=list)


def _first_user_line(entries: list[dict[str, Any]]) -> str | None:
    for e in entries:
        if e.get("type") == "message":
            msg = e.get("message")
            if isinstance(msg, dict) and msg.get("role") == "user":
                text = content_text(msg.get("content"), " ").strip()
                if text:
                    return text
    return None


class Indexer:
    """Writes the index at ``path`` (one writer at a time per process; SQLite serializes
    writers across processes). With ``guard`` (the daemon's allowed roots) only what the
    guard lets a listing read is indexed; a file it refuses is taken out of the index."""

    def __init__(self, path: str, home: str | None = None, guard: PathGuard | None = None) -> None:
        self.path = path
        self.guard = guard
        self.home = home if home is not None else home_dir()
        self._lock = threading.Lock()
        self._con: sqlite3.Connection | None = None
        self._ino: tuple[int, int] | None = None

    def connection(self) -> sqlite3.Connection:
        ino = _inode(self.path)
        if self._con is not None and (ino is None or ino != self._ino):
            # deleted or replaced under this connection: use the file that is there now
            self.reset()
        if self._con is None:
            self._con = connect(self.path)
            self._ino = _inode(self.path)
        return self._con

    def reset(self) -> None:
        """Forget the connection (the index file was deleted or is unusable: reopen it)."""
        if self._con is not None:
            try:
                self._con.close()
            except sqlite3.Error:
                pass
        self._con = None

    def close(self) -> None:
        self.reset()

    # -- updates ------------------------------------------------------------------------

    def update(
        self,
        roots: Iterable[str],
        extra: Iterable[SessionFile] = (),
        progress: Callable[[int, int], None] | None = None,
        cancelled: Callable[[], bool] | None = None,
    ) -> UpdateReport:
        """Bring the index in line with every session under ``roots`` (and ``extra``)."""
        roots = [os.path.abspath(r) for r in roots]
        # the guard is asked once per file, below (`_update`), for these and named files alike
        files = enumerate_sessions(roots) + list(extra)
        with self._lock:
            if not os.path.exists(self.path):
                self.reset()
            return self._update(files, roots, progress, cancelled)

    def update_files(self, files: Iterable[SessionFile]) -> UpdateReport:
        """Index just these files (the watcher saw them change); a gone one is removed."""
        with self._lock:
            if not os.path.exists(self.path):
                self.reset()
            return self._update(list(files), None, None, None)

    def _update(
        self,
        files: list[SessionFile],
        roots: list[str] | None,
        progress: Callable[[int, int], None] | None,
        cancelled: Callable[[], bool] | None,
    ) -> UpdateReport:
        start = time.perf_counter()
        report = UpdateReport(files=len(files))
        try:
            con = self.connection()
            known = {row[1]: row for row in con.execute(_FILE_ROW)}
        except sqlite3.DatabaseError as exc:
            if is_busy(exc):
                raise IndexBusy(f"the search index {self.path} is locked by another process") from exc
            self.reset()
            con = self.connection()
            known = {}
        stats: list[tuple[SessionFile, os.stat_result | None]] = []
        guard = self.guard
        for f in files:
            if guard is not None and not guard.accept(f.path):
                # refused now (a link out of the roots, another hard link): as if gone
                stats.append((f, None))
                continue
            try:
                stats.append((f, os.stat(f.path)))
            except OSError:
                stats.append((f, None))
        # oldest first: the newest entries get the highest rowids
        stats.sort(key=lambda fs: fs[1].st_mtime_ns if fs[1] is not None else 0)
        seen = {f.path for f, _ in stats}
        # gone: under a root and not found, or named and missing
        gone = [row for p, row in known.items() if roots is not None and _under(p, roots) and p not in seen]
        gone += [known[f.path] for f, st in stats if st is None and f.path in known]
        work = [(f, st) for f, st in stats if st is not None]
        total = sum(st.st_size for _, st in work)
        done = 0
        pending = 0
        _begin_write(con, self.path)
        try:
            for row in gone:
                self._delete_file(con, row[0])
                report.removed += 1
            for f, st in work:
                if cancelled is not None and cancelled():
                    break
                row = known.get(f.path)
                if row is None or (row[2], row[3], row[4], row[5]) != (
                    st.st_dev,
                    st.st_ino,
                    st.st_size,
                    st.st_mtime_ns,
                ):
                    # Changed since the snapshot, or new: what the index holds now (another
                    # process may have indexed it meanwhile; SQLite serializes the writers).
                    row = con.execute(_FILE_ROW + " WHERE path = ?", (f.path,)).fetchone()
                n = self._index_file(con, f, st, row, report)
                pending += n
                done += st.st_size
                if pending >= _BATCH:
                    con.execute("COMMIT")
                    _begin_write(con, self.path)
                    pending = 0
                if progress is not None:
                    progress(done, total)
            con.execute("COMMIT")
        except BaseException:
            if con.in_transaction:
                con.execute("ROLLBACK")
            raise
        report.seconds = time.perf_counter() - start
        if report.entries >= _BATCH:
            self.checkpoint()
        return report

    def checkpoint(self) -> None:
        """Fold the write-ahead log into the index file (after a big build: its size is the
        index's, and readers do not walk a long log)."""
        try:
            self.connection().execute("PRAGMA wal_checkpoint(TRUNCATE)")
        except sqlite3.Error:
            pass

    def _delete_file(self, con: sqlite3.Connection, file_id: int) -> None:
        con.execute(
            "DELETE FROM fts WHERE rowid IN (SELECT rowid FROM entries WHERE file_id = ?)", (file_id,)
        )
        con.execute("DELETE FROM entries WHERE file_id = ?", (file_id,))
        con.execute("DELETE FROM calls WHERE file_id = ?", (file_id,))
        con.execute("DELETE FROM labels WHERE file_id = ?", (file_id,))
        con.execute("DELETE FROM files WHERE id = ?", (file_id,))

    def _index_file(
        self, con: sqlite3.Connection, f: SessionFile, st: os.stat_result, row: Any, report: UpdateReport
    ) -> int:
        if row is not None:
            same = (row[2], row[3], row[4], row[5]) == (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
            if same:
                return 0
            file_id, end, last_len, last_hash, whole_only = row[0], row[7], row[8], row[9], row[10]
            grown = (
                not whole_only
                and row[2] == st.st_dev
                and row[3] == st.st_ino
                and st.st_size >= end
                and end > 0
                and head_of(f.path, self.guard) == row[6]
            )
            if grown:
                res = read_entries(f, end, (last_len, last_hash), guard=self.guard)
                if res is not None:
                    added = self._insert_batches(con, file_id, res)
                    con.execute(
                        "UPDATE files SET device=?, inode=?, size=?, mtime_ns=?, end_offset=?,"
                        " last_len=CASE WHEN ? > 0 THEN ? ELSE last_len END,"
                        " last_hash=CASE WHEN ? > 0 THEN ? ELSE last_hash END, entries=entries+? WHERE id=?",
                        (
                            st.st_dev,
                            st.st_ino,
                            st.st_size,
                            st.st_mtime_ns,
                            res.end,
                            res.last_len,
                            res.last_len,
                            res.last_len,
                            res.last_line_hash,
                            added,
                            file_id,
                        ),
                    )
                    report.appended += 1
                    report.entries += added
                    return added
            self._delete_file(con, file_id)
        con.execute("SAVEPOINT one_file")
        try:
            n = self._index_new(con, f, st, report, whole=False)
        except NeedsWholeFile:
            # entries without ids: their ids come from their place in the whole file
            con.execute("ROLLBACK TO one_file")
            n = self._index_new(con, f, st, report, whole=True)
        con.execute("RELEASE one_file")
        return n

    def _index_new(
        self, con: sqlite3.Connection, f: SessionFile, st: os.stat_result, report: UpdateReport, whole: bool
    ) -> int:
        res = read_entries(f, 0, None, whole, self.guard)
        if res is None:
            # Not a session (yet): remembered without entries, so that an unchanged file
            # is not read again at every update, and a change reads it whole.
            con.execute(
                "INSERT INTO files(path, root, agent, device, inode, size, mtime_ns, head_hash, end_offset,"
                " last_len, last_hash, whole_only, entries) VALUES (?,?,?,?,?,?,?,'',0,0,'',1,0)",
                (f.path, f.root, f.agent, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns),
            )
            return 0
        header = res.header or {}
        title = header.get("title")
        cwd = header.get("cwd")
        sid = header.get("id")
        cur = con.execute(
            "INSERT INTO files(path, root, agent, session_id, cwd, name, device, inode, size, mtime_ns, head_hash,"
            " end_offset, last_len, last_hash, whole_only, entries) VALUES (?,?,?,?,?,?,?,?,?,?,?,0,0,'',0,0)",
            (
                f.path,
                f.root,
                f.agent,
                _text(sid) if isinstance(sid, str) else None,
                _text(cwd) if isinstance(cwd, str) else None,
                None,
                st.st_dev,
                st.st_ino,
                st.st_size,
                st.st_mtime_ns,
                res.head_hash,
            ),
        )
        file_id = cur.lastrowid
        assert file_id is not None
        first_user: list[str | None] = [None]
        evidence = Evidence(res.has_slot, header)
        added = self._insert_batches(con, file_id, res, first_user, evidence)
        if f.agent == "pi" and evidence.dialect(home_dialect(f.path)) is Dialect.PI:
            title = evidence.info_name  # pi names a session by its latest session_info
        name = display_name(
            title if isinstance(title, str) else None,
            first_user[0],
            f.path,
            sid if isinstance(sid, str) else None,
        )
        con.execute(
            "UPDATE files SET name=?, end_offset=?, last_len=?, last_hash=?, whole_only=?, entries=? WHERE id=?",
            (
                _text(name),
                res.end,
                res.last_len,
                res.last_line_hash,
                1 if res.whole_file_only else 0,
                added,
                file_id,
            ),
        )
        report.full += 1
        report.entries += added
        return added

    def _insert_batches(
        self,
        con: sqlite3.Connection,
        file_id: int,
        res: ReadResult,
        first_user: list[str | None] | None = None,
        evidence: Evidence | None = None,
    ) -> int:
        added = 0
        calls: dict[str, str] = {}
        (cwd,) = con.execute("SELECT cwd FROM files WHERE id = ?", (file_id,)).fetchone()
        tags = file_tags(cwd)
        for batch in res.batches:
            if first_user is not None and first_user[0] is None:
                first_user[0] = _first_user_line(batch)
            if evidence is not None:
                for e in batch:
                    evidence.see(e)
            added += self._insert(con, file_id, batch, calls, tags)
        return added

    def _insert(
        self,
        con: sqlite3.Connection,
        file_id: int,
        entries: list[dict[str, Any]],
        calls: dict[str, str],
        tags: str,
    ) -> int:
        if not entries:
            return 0
        base = con.execute("SELECT coalesce(max(rowid), 0) FROM entries").fetchone()[0]
        new_calls: list[tuple[int, str, str]] = []
        label_rows: list[tuple[int, str, str | None]] = []
        meta: list[tuple[Any, ...]] = []
        texts: list[tuple[Any, ...]] = []
        home = self.home
        for i, e in enumerate(entries, 1):
            etype = e.get("type")
            role = entry_role(e)
            shown: str | None = None
            if etype == "message":
                msg = e.get("message")
                if isinstance(msg, dict):
                    if msg.get("role") == "assistant":
                        for cid, disp in entry_calls(e, home).items():
                            cid, disp = _text(cid), _text(disp)
                            calls[cid] = disp
                            new_calls.append((file_id, cid, disp))
                    elif msg.get("role") == "toolResult":
                        call_id = msg.get("toolCallId")
                        if isinstance(call_id, str):
                            call_id = _text(call_id)
                            shown = calls.get(call_id)
                            if shown is None:
                                r = con.execute(
                                    "SELECT shown FROM calls WHERE file_id = ? AND call_id = ?",
                                    (file_id, call_id),
                                ).fetchone()
                                shown = r[0] if r else None
            elif etype == "label":
                target = e.get("targetId")
                if isinstance(target, str):
                    label = e.get("label")
                    label_rows.append(
                        (file_id, _text(target), _text(label.strip()) if isinstance(label, str) else None)
                    )
            ts_raw = e.get("timestamp")
            ms = date_ms(ts_raw)
            parent = e.get("parentId")
            rowid = base + i
            meta.append(
                (
                    rowid,
                    file_id,
                    _text(e["id"]),
                    _text(parent) if isinstance(parent, str) else None,
                    _text(etype) if isinstance(etype, str) else None,
                    _text(ts_raw) if isinstance(ts_raw, str) else None,
                )
            )
            ts = int(ms) if ms is not None and ms == ms and abs(ms) < 1e16 else None
            texts.append((rowid, file_id, role, ts, _text(entry_text(e, shown)), f"{tags} {role_tag(role)}"))
        con.executemany("INSERT INTO entries VALUES (?,?,?,?,?,?)", meta)
        con.executemany("INSERT INTO fts(rowid, file_id, role, ts, text, tags) VALUES (?,?,?,?,?,?)", texts)
        if new_calls:
            con.executemany("INSERT OR REPLACE INTO calls VALUES (?,?,?)", new_calls)
        for fid, target, label in label_rows:
            if label:
                con.execute("INSERT OR REPLACE INTO labels VALUES (?,?,?)", (fid, target, label))
            else:
                con.execute("DELETE FROM labels WHERE file_id = ? AND entry_id = ?", (fid, target))
        return len(meta)


def _text(s: str) -> str:
    """A string as the index stores it: a lone surrogate (a JavaScript writer cut a string
    inside an emoji) as U+FFFD, the rule of every output (`format.jsonl.scrub_text`); SQLite
    takes no string that has no UTF-8 form, and one such line failed every search."""
    return scrub_text(s)


def _begin_write(con: sqlite3.Connection, path: str) -> None:
    """Take the index's write lock, waiting at most the busy bound for another process."""
    try:
        con.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as exc:
        if is_busy(exc):
            raise IndexBusy(f"the search index {path} is locked by another process") from exc
        raise


def _under(path: str, roots: list[str]) -> bool:
    return any(path == r or path.startswith(r.rstrip(os.sep) + os.sep) for r in roots)


def _inode(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino
