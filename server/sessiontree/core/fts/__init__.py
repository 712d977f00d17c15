"""Search across every session: an embedded SQLite FTS5 index in sessiontree's cache dir.

`SearchIndex` is the face: `update()` brings the index in line with the sessions under the
roots (incrementally, `indexer.py`), `search()` runs a `SearchQuery` (`query.py`). The
sessions come from one seam, `sources.py`. docs/search.md.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable, Iterable

from ..store.guard import PathGuard
from .indexer import Indexer, UpdateReport
from .paths import default_index_path
from .query import PathFinder, SearchHit, SearchPage, SearchQuery, match_expression, parse_time, run_query
from .schema import IndexBusy, connect, fts5_available, is_busy
from .sources import READERS, SessionFile, enumerate_sessions, identity_of, read_entries

__all__ = [
    "READERS",
    "IndexBusy",
    "SearchHit",
    "SearchIndex",
    "SearchPage",
    "SearchQuery",
    "SessionFile",
    "UpdateReport",
    "default_index_path",
    "enumerate_sessions",
    "fts5_available",
    "match_expression",
    "parse_time",
    "read_entries",
]


class SearchIndex:
    """The search index at ``path`` (default `default_index_path()`) over sessions roots.

    One index file serves every agent dir and every process (the CLI, daemons); what it
    holds is not trusted to be this reader's: a query answers only files under this
    index's roots (compared exactly) that ``guard`` (the daemon's allowed roots, as every
    read; None: the library's behaviour) lets a listing read now and that are still the
    file that was indexed (device and inode).
    """

    def __init__(
        self,
        roots: Iterable[str],
        path: str | None = None,
        home: str | None = None,
        guard: PathGuard | None = None,
    ) -> None:
        # canonical, so that the CLI and the daemon (whose watcher reports real paths) name
        # a file alike in the one index
        self.roots = [os.path.realpath(r) for r in roots]
        self.path = path or default_index_path()
        self.guard = guard
        self.indexer = Indexer(self.path, home, guard)
        self.paths = PathFinder()
        self._local = threading.local()
        self.built = False

    def update(
        self,
        progress: Callable[[int, int], None] | None = None,
        cancelled: Callable[[], bool] | None = None,
    ) -> UpdateReport:
        """Index what changed under the roots since the last update (`IndexBusy` when
        another process kept the index locked for longer than the busy bound: what it
        holds can still be searched)."""
        report = self.indexer.update(self.roots, progress=progress, cancelled=cancelled)
        self.built = True
        return report

    def update_files(self, paths: Iterable[str]) -> UpdateReport:
        """Index these changed files (those under the roots); all of them when the index
        file is gone (deleted: it is built again)."""
        if not os.path.exists(self.path):
            return self.update()
        files = []
        for p in paths:
            p = os.path.abspath(p)
            for r in self.roots:
                if p.startswith(r.rstrip(os.sep) + os.sep):
                    files.append(SessionFile(p, "pi", r))
                    break
        return self.indexer.update_files(files)

    def _reader(self) -> sqlite3.Connection:
        con: sqlite3.Connection | None = getattr(self._local, "con", None)
        ino = _inode(self.path)
        # deleted or replaced since this connection opened it: open the file there now
        if con is None or ino is None or ino != getattr(self._local, "ino", None):
            if con is not None:
                con.close()
            con = connect(self.path)
            self._local.con = con
            self._local.ino = _inode(self.path)
        return con

    def search(self, query: SearchQuery) -> SearchPage:
        """Run ``query`` over the files under the roots (the index as it is now)."""
        if query.roots is None:
            query.roots = self.roots
        try:
            return run_query(self._reader(), query, self.paths, self.admit)
        except sqlite3.DatabaseError as exc:
            if is_busy(exc):
                # another process locked readers out too (not only writers): busy, not bad
                raise IndexBusy(f"the search index {self.path} is locked by another process") from exc
            # The file went bad under us: start again from an empty index on the next update.
            self._local.con = None
            self.indexer.reset()
            raise

    def admit(self, path: str, device: int | None, inode: int | None) -> bool:
        """Whether a hit in the file at ``path`` may be answered now: the guard lets it be
        opened (as `session/list` opens what it lists) and it is the file that was indexed
        (not replaced since, by a link or anything else)."""
        return identity_of(path, self.guard) == (device, inode)

    def file_count(self) -> int:
        """Session files in the index."""
        try:
            return int(self._reader().execute("SELECT count(*) FROM files WHERE entries > 0").fetchone()[0])
        except Exception:
            return 0

    def size_bytes(self) -> int:
        """The index's size on disk (its file and write-ahead log)."""
        total = 0
        for suffix in ("", "-wal"):
            try:
                total += os.path.getsize(self.path + suffix)
            except OSError:
                pass
        return total

    def close(self) -> None:
        self.indexer.close()
        con = getattr(self._local, "con", None)
        if con is not None:
            con.close()
            self._local.con = None


def _inode(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino
