"""The index's tables, opened (and rebuilt when unreadable) in one place.

An index another process is writing is busy, not unusable: SQLite's busy or locked answer
(`SQLITE_BUSY`, `SQLITE_LOCKED`: a CLI search beside the daemon, a person's `sqlite3` shell
holding a transaction) is waited on for at most `busy_ms()` and then raised as `IndexBusy`;
nothing is removed. Only an index that is not a readable index of this schema (`SQLITE_CORRUPT`,
`SQLITE_NOTADB`, another schema version, missing tables) is removed and made again. The
schema is checked in a read transaction (WAL: a reader never waits for a writer), and the
write lock is taken only to create the tables of a new index.

``files``: one row per indexed session file, with what tells a grown file from a rewritten
one (device, inode, size, mtime, the hash of the header line, the offset and hash of the
last indexed line). ``entries``: one row per entry, its metadata; ``fts``: its text (an
FTS5 table whose rowid is the entry's; the text is stored once, there). ``calls``: the
display of each tool call, for the results indexed after it. ``labels``: the current label
of each labelled entry.

The filter columns (file, role, time) are UNINDEXED columns of ``fts`` itself, before the
text: a filtered query stays one scan of the FTS table in rowid order, which stops after the
newest matches (a join would make SQLite collect and sort every match of a common word).
``tags`` holds made-up words (`tags.py`: the entry's role, its session's project
directory), so that those filters are doclist intersections inside FTS5 rather than a
check of every matching row.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from typing import Any

from ..tuning import bound

__all__ = [
    "SCHEMA_VERSION",
    "IndexBusy",
    "IndexUnusable",
    "busy_ms",
    "connect",
    "fts5_available",
    "is_busy",
    "is_corrupt",
]

SCHEMA_VERSION = "5"

_DDL = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS files(
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,
    root TEXT NOT NULL,
    agent TEXT NOT NULL,
    session_id TEXT,
    cwd TEXT,
    name TEXT,
    device INTEGER, inode INTEGER, size INTEGER, mtime_ns INTEGER,
    head_hash TEXT,
    end_offset INTEGER,
    last_len INTEGER,
    last_hash TEXT,
    whole_only INTEGER NOT NULL DEFAULT 0,
    entries INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS entries(
    rowid INTEGER PRIMARY KEY,
    file_id INTEGER NOT NULL,
    entry_id TEXT NOT NULL,
    parent_id TEXT,
    type TEXT,
    timestamp TEXT
);
CREATE INDEX IF NOT EXISTS entries_file ON entries(file_id, entry_id);
CREATE TABLE IF NOT EXISTS calls(file_id INTEGER, call_id TEXT, shown TEXT, PRIMARY KEY(file_id, call_id))
    WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS labels(file_id INTEGER, entry_id TEXT, label TEXT, PRIMARY KEY(file_id, entry_id))
    WITHOUT ROWID;
CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5(
    file_id UNINDEXED, role UNINDEXED, ts UNINDEXED, text, tags,
    tokenize = 'unicode61 remove_diacritics 2', prefix = '2 3'
);
"""


class IndexUnusable(Exception):
    """The index file cannot be used (corrupt, another schema): it is rebuilt."""


class IndexBusy(Exception):
    """Another process held the index's lock longer than `busy_ms()` (SQLite busy or
    locked). The index is as it was: nothing is removed or rebuilt; what it holds can still
    be read (WAL) unless the other process locked readers out too."""


#: SQLite's primary result codes that say "someone else has it now" and "this is no index".
_BUSY_CODES = frozenset({5, 6})  # SQLITE_BUSY, SQLITE_LOCKED
_CORRUPT_CODES = frozenset({11, 26})  # SQLITE_CORRUPT, SQLITE_NOTADB
#: How long a writer (or a reader locked out) waits for another process's lock, in ms.
BUSY_MS = 5000


def busy_ms() -> int:
    """``$SESSIONTREE_SEARCH_BUSY_MS``, else `BUSY_MS`: the bound on waiting for another
    process's lock on the index before answering from what it holds."""
    return bound("SESSIONTREE_SEARCH_BUSY_MS", BUSY_MS)


def _code(exc: BaseException) -> int | None:
    code = getattr(exc, "sqlite_errorcode", None)
    return code & 0xFF if isinstance(code, int) else None


def is_busy(exc: BaseException) -> bool:
    """Whether ``exc`` is SQLite's "another connection holds the lock" (busy, locked)."""
    if not isinstance(exc, sqlite3.Error):
        return False
    code = _code(exc)
    if code is not None:
        return code in _BUSY_CODES
    text = str(exc).lower()
    return "database is locked" in text or "database table is locked" in text or "busy" in text


def is_corrupt(exc: BaseException) -> bool:
    """Whether ``exc`` says the file is no readable SQLite database (corrupt, not one)."""
    if isinstance(exc, IndexUnusable):
        return True
    if not isinstance(exc, sqlite3.DatabaseError) or is_busy(exc):
        return False
    code = _code(exc)
    if code is not None:
        return code in _CORRUPT_CODES
    text = str(exc).lower()
    return "malformed" in text or "not a database" in text


def fts5_available() -> bool:
    """Whether this Python's SQLite has FTS5 compiled in."""
    try:
        con = sqlite3.connect(":memory:")
        try:
            con.execute("CREATE VIRTUAL TABLE t USING fts5(a)")
        finally:
            con.close()
    except sqlite3.Error:
        return False
    return True


def _open(path: str) -> sqlite3.Connection:
    ms = busy_ms()
    con = sqlite3.connect(path, timeout=ms / 1000, isolation_level=None, check_same_thread=False)
    try:
        con.execute(f"PRAGMA busy_timeout = {int(ms)}")
        if con.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
            con.execute("PRAGMA journal_mode = WAL")
        con.execute("PRAGMA synchronous = NORMAL")
    except BaseException:
        con.close()
        raise
    return con


def _create(con: sqlite3.Connection) -> None:
    """The tables, statement by statement (inside the caller's transaction, which
    `executescript` would commit)."""
    for statement in _DDL.split(";\n"):
        if statement.strip():
            con.execute(statement)
    con.execute("INSERT OR REPLACE INTO meta VALUES ('schema', ?)", (SCHEMA_VERSION,))


def _has_schema(con: sqlite3.Connection) -> bool:
    """Whether the index holds this schema (False: a new, empty file); raises
    `IndexUnusable` for another schema or a table missing or unreadable."""
    if con.execute("SELECT count(*) FROM sqlite_master WHERE name = 'meta'").fetchone()[0] == 0:
        return False
    try:
        row = con.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
        if row is None:
            return False
        if row[0] != SCHEMA_VERSION:
            raise IndexUnusable(f"schema {row[0]}")
        con.execute("SELECT count(*) FROM files").fetchone()
        con.execute("SELECT rowid FROM fts WHERE fts MATCH 'x' LIMIT 1").fetchall()
    except sqlite3.DatabaseError as exc:
        if is_busy(exc) or is_corrupt(exc):
            raise
        # "no such table", "no such column": not this schema
        raise IndexUnusable(str(exc)) from exc
    return True


def _remove(path: str) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path + suffix)


def connect(path: str) -> sqlite3.Connection:
    """The index at ``path``, created when missing and rebuilt (emptied, to be filled
    again) when it is not a readable index of this schema. Raises `IndexBusy` when another
    process held its lock for longer than `busy_ms()`: a busy index is never removed."""
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    for attempt in (0, 1):
        con: sqlite3.Connection | None = None
        try:
            con = _open(path)
            # The check reads (a read transaction: it never waits for another process's
            # write); only a new file takes the write lock, and checks again under it, so
            # that another process (a CLI search beside the daemon) sees no schema or the
            # whole of it, never a half-made index it would take for a corrupt one.
            with _transaction(con, "BEGIN"):
                ready = _has_schema(con)
            if not ready:
                with _transaction(con, "BEGIN IMMEDIATE"):
                    if not _has_schema(con):
                        _create(con)
            return con
        except (sqlite3.DatabaseError, IndexUnusable) as exc:
            if con is not None:
                con.close()
            if is_busy(exc):
                raise IndexBusy(f"the search index {path} is locked by another process") from exc
            if attempt or not is_corrupt(exc):
                raise
            _remove(path)
    raise AssertionError("unreachable")


@contextlib.contextmanager
def _transaction(con: sqlite3.Connection, begin: str) -> Any:
    con.execute(begin)
    try:
        yield
        con.execute("COMMIT")
    except BaseException:
        with contextlib.suppress(sqlite3.Error):
            con.execute("ROLLBACK")
        raise
