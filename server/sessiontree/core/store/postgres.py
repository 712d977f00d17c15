"""`PostgresSessionStorage`: session files kept in a shared PostgreSQL store (psycopg 3).

A file is a row of ``sessions`` (keyed by its path; a session file also by the session id
of its header, with the machine, user, cwd and file name it came from) and its content is
the ordered lines of ``entries``: one row per line in arrival order (``seq``), the line's
byte offset (``off``) and, for a line that is an entry, its id, unique in the session. So
the store answers both questions: "the bytes of this file" (`read_bytes`, `read_range`, as
every backend) and "the entries of this session by id" (the sync, ``core/sync``).

The rules of every backend hold: appends are whole lines that never glue onto a torn last
line (`separator_after`), ``write_atomic`` is one transaction, concurrent appends are
serialized by the session row's lock (which also makes ``seq`` order commit order, what
the sync's high-water marks rely on), and ``lock`` is a PostgreSQL advisory lock held on a
connection of its own, so it excludes other machines too. A lost connection is an
``OSError`` (`StoreUnreachable`), as a failing disk is for the file backend.
"""

from __future__ import annotations

import errno
import getpass
import hashlib
import os
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ..errors import LockTimeoutError
from ..format.jsonl import is_session_header, loads_line
from .pg_schema import SCHEMA
from .protocol import DEFAULT_LOCK_TIMEOUT, AppendingWriter, FileStat, SessionStorageWriter, whole_lines
from .torn import separator_after

__all__ = [
    "PgBlobPut",
    "PgBlobs",
    "PgPool",
    "PostgresSessionStorage",
    "PostgresSessionWriter",
    "PushResult",
    "SessionMeta",
    "SharedSession",
    "StoreUnreachable",
    "default_machine",
    "entry_hash",
    "split_lines",
    "store_path",
]

S = SCHEMA


class StoreUnreachable(ConnectionError):
    """The store could not be reached or the connection was lost (an ``OSError``)."""


def default_machine() -> str:
    """This machine's name in the store: ``$SESSIONTREE_MACHINE``, else the host name."""
    return os.environ.get("SESSIONTREE_MACHINE") or socket.gethostname()


def default_user() -> str:
    try:
        return getpass.getuser()
    except Exception:
        return str(os.getuid())


def entry_hash(line: bytes) -> bytes:
    """The content of an entry line as compared across machines: SHA-256 of its bytes
    without the line ending (copies made by the sync are byte-identical)."""
    return hashlib.sha256(line.rstrip(b"\r\n")).digest()


def split_lines(data: bytes) -> list[bytes]:
    """``data`` cut after each newline (the last piece may lack one)."""
    out: list[bytes] = []
    pos = 0
    n = len(data)
    while pos < n:
        nl = data.find(b"\n", pos)
        end = n if nl < 0 else nl + 1
        out.append(data[pos:end])
        pos = end
    return out


def line_entry_id(line: bytes) -> tuple[str | None, bool]:
    """``(id, is_header)`` of one complete line; ``(None, False)`` when it is no entry."""
    if not line.endswith(b"\n"):
        return None, False
    try:
        value = loads_line(line)
    except ValueError:
        return None, False
    if is_session_header(value):
        return None, True
    if isinstance(value, dict):
        ident = value.get("id")
        if isinstance(ident, str) and ident:
            return ident, False
    return None, False


def _enoent(path: str) -> FileNotFoundError:
    return FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), path)


def _parent(path: str) -> str:
    return os.path.dirname(path)


def _ancestors(path: str) -> list[str]:
    out = []
    current = path
    while True:
        out.append(current)
        parent = os.path.dirname(current)
        if parent == current or not parent:
            break
        current = parent
    return out


class PgPool:
    """A few autocommit connections to one store, shared by threads (one per use).

    A connection that failed is dropped; any ``psycopg.OperationalError`` becomes
    :class:`StoreUnreachable`."""

    def __init__(self, url: str, *, max_idle: int = 8, connect_timeout: float = 10.0) -> None:
        self.url = url
        self._idle: list[Any] = []
        self._lock = threading.Lock()
        self._max_idle = max_idle
        #: Seconds to wait for a connection (libpq's connect_timeout, at least 1).
        self.connect_timeout = connect_timeout

    def connect(self) -> Any:
        import psycopg

        try:
            return psycopg.connect(
                self.url, autocommit=True, connect_timeout=max(1, int(self.connect_timeout))
            )
        except psycopg.OperationalError as exc:
            raise StoreUnreachable(errno.ECONNREFUSED, f"the session store is unreachable: {exc}") from exc

    def take(self) -> Any:
        with self._lock:
            while self._idle:
                conn = self._idle.pop()
                if not conn.closed and not conn.broken:
                    return conn
        return self.connect()

    def give(self, conn: Any) -> None:
        from psycopg import pq

        if conn.closed or conn.broken or conn.info.transaction_status != pq.TransactionStatus.IDLE:
            conn.close()
            return
        with self._lock:
            if len(self._idle) < self._max_idle:
                self._idle.append(conn)
                return
        conn.close()

    @contextmanager
    def connection(self) -> Iterator[Any]:
        """A connection for the block, back to the pool afterwards."""
        import psycopg

        conn = self.take()
        try:
            yield conn
        except psycopg.OperationalError as exc:
            conn.close()
            # One lost connection (a restarted server) means the idle ones are gone too:
            # the next use connects afresh instead of failing on each of them in turn.
            self.close()
            raise StoreUnreachable(errno.EIO, f"the session store connection was lost: {exc}") from exc
        except BaseException:
            if conn.info.transaction_status != 0:
                conn.close()
            raise
        else:
            self.give(conn)

    @contextmanager
    def transaction(self) -> Iterator[Any]:
        """A connection inside one transaction for the block."""
        with self.connection() as conn, conn.transaction():
            yield conn

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()


class PostgresSessionWriter(AppendingWriter):
    """:class:`SessionStorageWriter` on a :class:`PostgresSessionStorage` file. Every append is a committed
    transaction: durable once it returns."""


class PostgresSessionStorage:
    """:class:`~sessiontree.core.store.protocol.SessionStorage` in a PostgreSQL store.

    ``url`` is a ``postgresql://`` URL or a libpq conninfo string (TLS settings such as
    ``sslmode`` and ``sslrootcert`` are libpq's and honoured as given). The schema must be
    current (``sessiontree store init URL``)."""

    is_real_fs = False
    #: Open sessions follow other writers through `stat` and `read_range` (core/live).
    followable = True

    def __init__(self, url: str, *, machine: str | None = None, user: str | None = None) -> None:
        self.url = url
        self.pool = PgPool(url)
        self.machine = machine or default_machine()
        self.user = user or default_user()
        self._last_ns = 0
        self._ns_lock = threading.Lock()

    def close(self) -> None:
        """Close the idle connections."""
        self.pool.close()

    def check(self) -> None:
        """Connect once and check the schema: `StoreUnreachable`, or ``ValueError`` saying
        which command sets the store up."""
        from .pg_schema import CURRENT_SCHEMA_VERSION, schema_version

        with self.pool.connection() as conn:
            version = schema_version(conn)
        if version == 0:
            raise ValueError("the store has no sessiontree schema: run `sessiontree store init URL`")
        if version < CURRENT_SCHEMA_VERSION:
            raise ValueError(
                f"the store's schema is version {version}, this sessiontree needs "
                f"{CURRENT_SCHEMA_VERSION}: run `sessiontree store migrate URL`"
            )
        if version > CURRENT_SCHEMA_VERSION:
            raise ValueError(
                f"the store's schema (version {version}) is newer than this sessiontree: upgrade it"
            )

    def _now_ns(self) -> int:
        with self._ns_lock:
            self._last_ns = max(time.time_ns(), self._last_ns + 1)
            return self._last_ns

    # ------------------------------------------------------------------ lookups

    @staticmethod
    def _file_row(conn: Any, path: str, lock: bool = False) -> Any:
        sql = f"SELECT pk, size, last_seq, generation, mtime_ns FROM {S}.sessions WHERE path = %s"
        return conn.execute(sql + (" FOR UPDATE" if lock else ""), (path,)).fetchone()

    @staticmethod
    def _is_dir(conn: Any, path: str) -> bool:
        return conn.execute(f"SELECT 1 FROM {S}.dirs WHERE path = %s", (path,)).fetchone() is not None

    def _make_parents(self, conn: Any, path: str) -> None:
        parent = _parent(path)
        if not parent:
            return
        chain = _ancestors(parent)
        files = conn.execute(f"SELECT path FROM {S}.sessions WHERE path = ANY(%s)", (chain,)).fetchall()
        if files:
            raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), files[0][0])
        conn.execute(
            f"INSERT INTO {S}.dirs (path) SELECT unnest(%s::text[]) ON CONFLICT DO NOTHING", (chain,)
        )

    def _create_file(self, conn: Any, path: str) -> Any:
        if self._is_dir(conn, path):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
        self._make_parents(conn, path)
        conn.execute(
            f"INSERT INTO {S}.sessions (path, dir, machine, os_user, file_name, mtime_ns)"
            " VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (path) DO NOTHING",
            (path, _parent(path), self.machine, self.user, os.path.basename(path), self._now_ns()),
        )
        return self._file_row(conn, path, lock=True)

    def _insert_lines(
        self,
        conn: Any,
        pk: int,
        size: int,
        last_seq: int,
        data: bytes,
        known_ids: list[str | None] | None = None,
    ) -> tuple[int, int]:
        """Add ``data``'s lines at the end of file ``pk`` (its row locked); new size and seq.

        ``known_ids`` gives the entry id of each line when the caller parsed them already."""
        lines = split_lines(data)
        if not lines:
            return size, last_seq
        ids: list[str | None] = []
        header_id: str | None = None
        if known_ids is not None:
            ids = list(known_ids)
        else:
            for line in lines:
                ident, is_header = line_entry_id(line)
                ids.append(ident)
                if is_header and last_seq == 0 and header_id is None and len(ids) == 1:
                    header_id = _header_id(line)
        wanted = [i for i in ids if i is not None]
        taken: set[str] = set()
        if wanted:
            rows = conn.execute(
                f"SELECT entry_id FROM {S}.entries WHERE session_pk = %s AND entry_id = ANY(%s)", (pk, wanted)
            ).fetchall()
            taken = {r[0] for r in rows}
        seqs, offs, hashes = [], [], []
        seq, off = last_seq, size
        for i, line in enumerate(lines):
            ident = ids[i]
            # A repeated id stays in the file (byte for byte) but is not the entry's key.
            if ident is not None and ident in taken:
                ids[i] = ident = None
            if ident is not None:
                taken.add(ident)
            seq += 1
            seqs.append(seq)
            offs.append(off)
            hashes.append(entry_hash(line) if ident is not None else None)
            off += len(line)
        conn.execute(
            f"INSERT INTO {S}.entries (session_pk, seq, off, entry_id, line, hash, machine)"
            " SELECT %s, s, o, i, l, h, %s FROM unnest(%s::bigint[], %s::bigint[], %s::text[],"
            " %s::bytea[], %s::bytea[]) AS u(s, o, i, l, h)",
            (pk, self.machine, seqs, offs, ids, lines, hashes),
        )
        conn.execute(
            f"UPDATE {S}.sessions SET size = %s, last_seq = %s, mtime_ns = %s, updated_at = now(),"
            " entry_count = entry_count + %s WHERE pk = %s",
            (off, seq, self._now_ns(), sum(1 for i in ids if i is not None), pk),
        )
        if header_id is not None:
            self._claim_session_id(conn, pk, header_id, lines[0])
        return off, seq

    def _claim_session_id(self, conn: Any, pk: int, session_id: str, header: bytes) -> None:
        cwd = None
        try:
            value = loads_line(header)
            if isinstance(value, dict) and isinstance(value.get("cwd"), str):
                cwd = value["cwd"]
        except ValueError:
            pass
        # Another file already holding this session (a copy) keeps the key.
        conn.execute(
            f"UPDATE {S}.sessions SET session_id = %s, cwd = coalesce(cwd, %s) WHERE pk = %s"
            f" AND NOT EXISTS (SELECT 1 FROM {S}.sessions WHERE session_id = %s)",
            (session_id, cwd, pk, session_id),
        )

    # ------------------------------------------------------------------ SessionStorage

    def ensure_dir(self, path: str) -> None:
        path = os.path.normpath(path)
        with self.pool.transaction() as conn:
            chain = _ancestors(path)
            files = conn.execute(f"SELECT path FROM {S}.sessions WHERE path = ANY(%s)", (chain,)).fetchall()
            if files:
                raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), files[0][0])
            conn.execute(
                f"INSERT INTO {S}.dirs (path) SELECT unnest(%s::text[]) ON CONFLICT DO NOTHING", (chain,)
            )

    def exists(self, path: str) -> bool:
        path = os.path.normpath(path)
        with self.pool.connection() as conn:
            row = conn.execute(
                f"SELECT EXISTS (SELECT 1 FROM {S}.sessions WHERE path = %s)"
                f" OR EXISTS (SELECT 1 FROM {S}.dirs WHERE path = %s)",
                (path, path),
            ).fetchone()
            return bool(row and row[0])

    def stat(self, path: str) -> FileStat:
        path = os.path.normpath(path)
        with self.pool.connection() as conn:
            row = self._file_row(conn, path)
            if row is not None:
                _pk, size, _seq, generation, mtime_ns = row
                return FileStat(int(size), mtime_ns / 1e9, int(mtime_ns), True, False, int(generation), 0)
            if self._is_dir(conn, path):
                return FileStat(0, 0.0, 0, False, True)
        raise _enoent(path)

    def _pk(self, conn: Any, path: str) -> int:
        row = conn.execute(f"SELECT pk FROM {S}.sessions WHERE path = %s", (path,)).fetchone()
        if row is None:
            if self._is_dir(conn, path):
                raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
            raise _enoent(path)
        return int(row[0])

    def read_bytes(self, path: str) -> bytes:
        path = os.path.normpath(path)
        with self.pool.connection() as conn:
            pk = self._pk(conn, path)
            row = conn.execute(
                f"SELECT string_agg(line, ''::bytea ORDER BY seq) FROM {S}.entries WHERE session_pk = %s",
                (pk,),
            ).fetchone()
            return bytes(row[0]) if row and row[0] is not None else b""

    def read_range(self, path: str, offset: int, length: int) -> bytes:
        if offset < 0 or length < 0:
            raise ValueError("offset and length must not be negative")
        path = os.path.normpath(path)
        with self.pool.connection() as conn:
            pk = self._pk(conn, path)
            if length == 0:
                return b""
            end = offset + length
            rows = conn.execute(
                f"SELECT off, line FROM {S}.entries WHERE session_pk = %s AND off < %s AND off >= "
                f"(SELECT coalesce(max(off), 0) FROM {S}.entries WHERE session_pk = %s AND off <= %s)"
                " ORDER BY off",
                (pk, end, pk, offset),
            ).fetchall()
        if not rows:
            return b""
        start = int(rows[0][0])
        buf = b"".join(bytes(r[1]) for r in rows)
        return buf[offset - start : end - start]

    def read_prefix(self, path: str, n: int) -> bytes:
        return self.read_range(path, 0, n)

    def list_files(self, directory: str, recursive: bool = False) -> list[str]:
        directory = os.path.normpath(directory)
        with self.pool.connection() as conn:
            if not self._is_dir(conn, directory):
                return []
            if recursive:
                prefix = directory.rstrip("/") + "/"
                rows = conn.execute(
                    f"SELECT path FROM {S}.sessions WHERE starts_with(path, %s)", (prefix,)
                ).fetchall()
            else:
                rows = conn.execute(f"SELECT path FROM {S}.sessions WHERE dir = %s", (directory,)).fetchall()
        return sorted(r[0] for r in rows)

    def write_atomic(self, path: str, data: bytes) -> None:
        path = os.path.normpath(path)
        with self.pool.transaction() as conn:
            if self._is_dir(conn, path):
                raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
            shared = conn.execute(f"SELECT shared FROM {S}.sessions WHERE path = %s", (path,)).fetchone()
            if shared is not None and shared[0]:
                raise PermissionError(
                    errno.EPERM,
                    "a shared session is append-only in the store; rewrites (a migration, a new name) "
                    "are made on the machine that owns it",
                    path,
                )
            conn.execute(f"DELETE FROM {S}.sessions WHERE path = %s", (path,))
            row = self._create_file(conn, path)
            self._insert_lines(conn, int(row[0]), 0, 0, bytes(data))

    def append(self, path: str, data: bytes) -> None:
        payload = whole_lines(data)
        if not payload:
            return
        path = os.path.normpath(path)
        with self.pool.transaction() as conn:
            row = self._file_row(conn, path, lock=True)
            if row is None:
                row = self._create_file(conn, path)
            pk, size, last_seq = int(row[0]), int(row[1]), int(row[2])
            if size and last_seq:
                last = conn.execute(
                    f"SELECT line FROM {S}.entries WHERE session_pk = %s AND seq = %s", (pk, last_seq)
                ).fetchone()
                tail = bytes(last[0]) if last else b""
                if tail and not tail.endswith(b"\n"):
                    payload = separator_after(tail) + payload
            self._insert_lines(conn, pk, size, last_seq, payload)

    def open_writer(self, path: str) -> SessionStorageWriter:
        return PostgresSessionWriter(self, os.path.normpath(path))

    def rename(self, src: str, dst: str) -> None:
        src, dst = os.path.normpath(src), os.path.normpath(dst)
        with self.pool.transaction() as conn:
            parent = _parent(dst)
            if parent and not self._is_dir(conn, parent):
                if self._file_row(conn, parent) is not None:
                    raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), parent)
                raise _enoent(dst)
            if self._file_row(conn, src) is not None:
                if self._is_dir(conn, dst):
                    raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), dst)
                conn.execute(f"DELETE FROM {S}.sessions WHERE path = %s", (dst,))
                conn.execute(
                    f"UPDATE {S}.sessions SET path = %s, dir = %s, file_name = %s WHERE path = %s",
                    (dst, parent, os.path.basename(dst), src),
                )
                return
            if not self._is_dir(conn, src):
                raise _enoent(src)
            if self._file_row(conn, dst) is not None:
                raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), dst)
            dst_prefix = dst.rstrip("/") + "/"
            busy = conn.execute(
                f"SELECT 1 FROM {S}.sessions WHERE starts_with(path, %s)"
                f" UNION ALL SELECT 1 FROM {S}.dirs WHERE starts_with(path, %s) LIMIT 1",
                (dst_prefix, dst_prefix),
            ).fetchone()
            if busy:
                raise OSError(errno.ENOTEMPTY, os.strerror(errno.ENOTEMPTY), dst)
            src_prefix = src.rstrip("/") + "/"
            n = len(src)
            conn.execute(
                f"UPDATE {S}.sessions SET path = %s || substr(path, %s),"
                " dir = %s || substr(dir, %s) WHERE starts_with(path, %s)",
                (dst, n + 1, dst, n + 1, src_prefix),
            )
            conn.execute(f"DELETE FROM {S}.dirs WHERE path = %s", (dst,))
            conn.execute(
                f"UPDATE {S}.dirs SET path = %s || substr(path, %s) WHERE path = %s OR starts_with(path, %s)",
                (dst, n + 1, src, src_prefix),
            )

    def unlink(self, path: str, missing_ok: bool = False) -> None:
        path = os.path.normpath(path)
        with self.pool.transaction() as conn:
            gone = conn.execute(f"DELETE FROM {S}.sessions WHERE path = %s RETURNING pk", (path,)).fetchone()
            if gone is not None:
                return
            if self._is_dir(conn, path):
                raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
            if not missing_ok:
                raise _enoent(path)

    def remove_tree(self, path: str) -> None:
        path = os.path.normpath(path)
        prefix = path.rstrip("/") + "/"
        with self.pool.transaction() as conn:
            conn.execute(f"DELETE FROM {S}.sessions WHERE path = %s OR starts_with(path, %s)", (path, prefix))
            conn.execute(f"DELETE FROM {S}.dirs WHERE path = %s OR starts_with(path, %s)", (path, prefix))

    @contextmanager
    def lock(self, path: str, timeout: float = DEFAULT_LOCK_TIMEOUT, shared: bool = False) -> Iterator[None]:
        import psycopg

        path = os.path.normpath(path)
        # Advisory locks belong to a connection: each holder has its own, so a lock taken
        # here excludes other threads, processes and machines alike.
        conn = self.pool.take()
        fn = "pg_advisory_lock_shared" if shared else "pg_advisory_lock"
        try:
            conn.execute(f"SET lock_timeout = {max(1, int(timeout * 1000))}")
            conn.execute(f"SELECT {fn}(hashtextextended(%s, 0))", (f"sessiontree:{path}",))
        except psycopg.errors.LockNotAvailable:
            # The timeout must not stay on a pooled connection (row locks would time out).
            try:
                conn.execute("RESET lock_timeout")
                self.pool.give(conn)
            except psycopg.Error:
                conn.close()
            raise LockTimeoutError(path, timeout) from None
        except psycopg.OperationalError as exc:
            conn.close()
            raise StoreUnreachable(errno.EIO, f"the session store connection was lost: {exc}") from exc
        try:
            yield
        finally:
            try:
                conn.execute(
                    f"SELECT {fn.replace('lock', 'unlock')}(hashtextextended(%s, 0))",
                    (f"sessiontree:{path}",),
                )
                conn.execute("RESET lock_timeout")
                self.pool.give(conn)
            except psycopg.Error:
                # The server ends the lock with the connection.
                conn.close()

    # ------------------------------------------------------------------ sessions by id (the sync)

    _SESSION_COLS = (
        "pk, session_id, path, machine, os_user, agent_dir, cwd, file_name, team, size, last_seq,"
        " entry_count,"
        " damaged_lines, mtime_ns"
    ).replace("{S}", S)

    def find_session(self, session_id: str) -> SharedSession | None:
        """The shared session with this id (``None`` when the store has none, or this role
        may not see it)."""
        with self.pool.connection() as conn:
            row = conn.execute(
                f"SELECT {self._SESSION_COLS} FROM {S}.sessions s WHERE session_id = %s", (session_id,)
            ).fetchone()
        return SharedSession(*row) if row else None

    def list_sessions(self, machine: str | None = None) -> list[SharedSession]:
        """The shared sessions this role may see, newest first (of one machine when given)."""
        sql = f"SELECT {self._SESSION_COLS} FROM {S}.sessions s WHERE session_id IS NOT NULL"
        params: tuple[Any, ...] = ()
        if machine is not None:
            sql += " AND machine = %s"
            params = (machine,)
        with self.pool.connection() as conn:
            rows = conn.execute(sql + " ORDER BY mtime_ns DESC", params).fetchall()
        return [SharedSession(*r) for r in rows]

    def ensure_session(self, meta: SessionMeta, header: bytes) -> int:
        """The key of the shared session ``meta.session_id``, created with ``header`` as its
        first line when the store has none. Raises ``PermissionError`` when the store holds
        it but row-level security hides it from this role, or the role may not use the team."""
        import psycopg

        try:
            return self._ensure_session(meta, header)
        except psycopg.errors.UniqueViolation as exc:
            raise PermissionError(
                errno.EACCES, f"session {meta.session_id} is in the store but not visible to this role"
            ) from exc
        except psycopg.errors.InsufficientPrivilege as exc:
            raise PermissionError(
                errno.EACCES, f"the store refused session {meta.session_id}: {exc}"
            ) from exc

    def _ensure_session(self, meta: SessionMeta, header: bytes) -> int:
        with self.pool.transaction() as conn:
            row = conn.execute(
                f"SELECT pk FROM {S}.sessions WHERE session_id = %s", (meta.session_id,)
            ).fetchone()
            if row is not None:
                return int(row[0])
            path = store_path(meta.machine, meta.local_path)
            self._make_parents(conn, path)
            # A file the storage seam left at this path (a rewrite) gives way to the session.
            conn.execute(f"DELETE FROM {S}.sessions WHERE path = %s", (path,))
            row = conn.execute(
                f"INSERT INTO {S}.sessions (path, dir, session_id, machine, os_user, agent_dir, cwd,"
                " file_name, team, mtime_ns, shared) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, true)"
                " RETURNING pk",
                (
                    path,
                    _parent(path),
                    meta.session_id,
                    meta.machine,
                    meta.os_user,
                    meta.agent_dir,
                    meta.cwd,
                    meta.file_name,
                    meta.team,
                    self._now_ns(),
                ),
            ).fetchone()
            pk = int(row[0])
            self._insert_lines(conn, pk, 0, 0, whole_lines(header), [None])
            return pk

    def push_entries(self, pk: int, entries: list[tuple[str, bytes, bytes]], damaged: int = 0) -> PushResult:
        """Add the entries ``(id, line, hash)`` the session does not hold yet, in order; an id
        it holds with other content is recorded in ``conflicts`` and not added. One
        transaction: all of them or none."""
        with self.pool.transaction() as conn:
            row = conn.execute(
                f"SELECT pk, size, last_seq FROM {S}.sessions WHERE pk = %s FOR UPDATE", (pk,)
            ).fetchone()
            if row is None:
                raise _enoent(f"session {pk}")
            size, last_seq = int(row[1]), int(row[2])
            ids = [e[0] for e in entries]
            have = dict(
                conn.execute(
                    f"SELECT entry_id, hash FROM {S}.entries WHERE session_pk = %s AND entry_id = ANY(%s)",
                    (pk, ids),
                ).fetchall()
            )
            new_ids: list[str | None] = []
            new_lines: list[bytes] = []
            conflicts: list[str] = []
            already = 0
            for ident, line, digest in entries:
                if ident in have:
                    if bytes(have[ident]) == digest:
                        already += 1
                    else:
                        conflicts.append(ident)
                        conn.execute(
                            f"INSERT INTO {S}.conflicts (session_pk, entry_id, machine, hash, line)"
                            " VALUES (%s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                            (pk, ident, self.machine, digest, line),
                        )
                    continue
                have[ident] = digest
                new_ids.append(ident)
                new_lines.append(whole_lines(line))
            if new_lines:
                if size and last_seq:
                    last = conn.execute(
                        f"SELECT line FROM {S}.entries WHERE session_pk = %s AND seq = %s", (pk, last_seq)
                    ).fetchone()
                    tail = bytes(last[0]) if last else b""
                    if tail and not tail.endswith(b"\n"):
                        sep = separator_after(tail)
                        size, last_seq = self._insert_lines(
                            conn, pk, size, last_seq, sep, [None] * len(split_lines(sep))
                        )
                size, last_seq = self._insert_lines(conn, pk, size, last_seq, b"".join(new_lines), new_ids)
            if damaged:
                conn.execute(
                    f"UPDATE {S}.sessions SET damaged_lines = greatest(damaged_lines, %s) WHERE pk = %s",
                    (damaged, pk),
                )
            return PushResult(len(new_lines), already, conflicts, last_seq)

    def entries_after(
        self, pk: int, after_seq: int, limit: int = 5000
    ) -> list[tuple[int, str, bytes, bytes]]:
        """The session's entries that arrived after ``after_seq``: ``(seq, id, line, hash)``."""
        with self.pool.connection() as conn:
            rows = conn.execute(
                f"SELECT seq, entry_id, line, hash FROM {S}.entries WHERE session_pk = %s AND seq > %s"
                " AND entry_id IS NOT NULL ORDER BY seq LIMIT %s",
                (pk, after_seq, limit),
            ).fetchall()
        return [(int(r[0]), r[1], bytes(r[2]), bytes(r[3])) for r in rows]

    def last_seq(self, pk: int) -> int:
        """The session's arrival high-water mark."""
        with self.pool.connection() as conn:
            row = conn.execute(f"SELECT last_seq FROM {S}.sessions WHERE pk = %s", (pk,)).fetchone()
        if row is None:
            raise _enoent(f"session {pk}")
        return int(row[0])


@dataclass(frozen=True, slots=True)
class SessionMeta:
    """Where a shared session lives: what `sessiontree sync` records with it."""

    session_id: str
    machine: str
    os_user: str
    agent_dir: str | None
    cwd: str | None
    file_name: str
    local_path: str
    team: str | None = None


@dataclass(frozen=True, slots=True)
class SharedSession:
    """A session as the store lists it."""

    pk: int
    session_id: str
    path: str
    machine: str | None
    os_user: str | None
    agent_dir: str | None
    cwd: str | None
    file_name: str | None
    team: str | None
    size: int
    last_seq: int
    entries: int
    damaged_lines: int
    mtime_ns: int


@dataclass(frozen=True, slots=True)
class PushResult:
    """What one `push_entries` call did."""

    inserted: int
    already: int
    conflicts: list[str]
    last_seq: int


def store_path(machine: str, local_path: str) -> str:
    """The path a synced session has in the store: its machine, then its local path."""
    return "/" + machine + os.path.abspath(local_path)


def _header_id(line: bytes) -> str | None:
    try:
        value = loads_line(line)
    except ValueError:
        return None
    return value["id"] if is_session_header(value) else None


@dataclass(frozen=True, slots=True)
class PgBlobPut:
    """What :meth:`PgBlobs.put` gives back."""

    hash: str
    ref: str


class PgBlobs:
    """The store's content-addressed blobs (`format.blobs.Blobs`): the agents' externalized
    images and large outputs, keyed by their SHA-256; reads verify the content."""

    def __init__(self, storage: PostgresSessionStorage) -> None:
        self.storage = storage

    def put(self, data: bytes) -> PgBlobPut:
        from ..format.blobs import make_blob_ref

        digest = hashlib.sha256(data).hexdigest()
        with self.storage.pool.connection() as conn:
            conn.execute(
                f"INSERT INTO {S}.blobs (hash, data) VALUES (%s, %s) ON CONFLICT DO NOTHING",
                (digest, bytes(data)),
            )
        return PgBlobPut(digest, make_blob_ref(digest))

    def has(self, digests: list[str]) -> set[str]:
        """Which of ``digests`` the store holds."""
        if not digests:
            return set()
        with self.storage.pool.connection() as conn:
            rows = conn.execute(f"SELECT hash FROM {S}.blobs WHERE hash = ANY(%s)", (digests,)).fetchall()
        return {r[0] for r in rows}

    def get(self, digest: str) -> bytes | None:
        with self.storage.pool.connection() as conn:
            row = conn.execute(f"SELECT data FROM {S}.blobs WHERE hash = %s", (digest,)).fetchone()
        if row is None:
            return None
        data = bytes(row[0])
        return data if hashlib.sha256(data).hexdigest() == digest else None
