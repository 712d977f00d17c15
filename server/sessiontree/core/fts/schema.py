"""The index's tables, opened (and rebuilt when unreadable) in one place.

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

__all__ = ["SCHEMA_VERSION", "IndexUnusable", "connect", "fts5_available"]

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
    con = sqlite3.connect(path, timeout=30, isolation_level=None, check_same_thread=False)
    con.execute("PRAGMA busy_timeout = 30000")
    con.execute("PRAGMA journal_mode = WAL")
    con.execute("PRAGMA synchronous = NORMAL")
    return con


def _create(con: sqlite3.Connection) -> None:
    """The tables, statement by statement (inside the caller's transaction, which
    `executescript` would commit)."""
    for statement in _DDL.split(";\n"):
        if statement.strip():
            con.execute(statement)
    con.execute("INSERT OR REPLACE INTO meta VALUES ('schema', ?)", (SCHEMA_VERSION,))


def _check(con: sqlite3.Connection) -> None:
    row = con.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
    if row is None:
        _create(con)
        return
    if row[0] != SCHEMA_VERSION:
        raise IndexUnusable(f"schema {row[0]}")
    con.execute("SELECT count(*) FROM files").fetchone()
    con.execute("SELECT rowid FROM fts WHERE fts MATCH 'x' LIMIT 1").fetchall()


def _remove(path: str) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path + suffix)


def connect(path: str) -> sqlite3.Connection:
    """The index at ``path``, created when missing and rebuilt (emptied, to be filled
    again) when it is not a readable index of this schema."""
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    for attempt in (0, 1):
        con: sqlite3.Connection | None = None
        try:
            con = _open(path)
            # One process creates or checks at a time, in one transaction: another one
            # (a CLI search beside the daemon) sees no schema or the whole of it, never a
            # half-made index it would take for a corrupt one and remove.
            con.execute("BEGIN IMMEDIATE")
            try:
                if con.execute("SELECT count(*) FROM sqlite_master WHERE name = 'meta'").fetchone()[0] == 0:
                    _create(con)
                else:
                    _check(con)
                con.execute("COMMIT")
            except BaseException:
                with contextlib.suppress(sqlite3.Error):
                    con.execute("ROLLBACK")
                raise
            return con
        except (sqlite3.DatabaseError, IndexUnusable):
            if con is not None:
                con.close()
            if attempt:
                raise
            _remove(path)
    raise AssertionError("unreachable")
