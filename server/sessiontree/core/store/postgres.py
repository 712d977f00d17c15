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
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ..errors import LockTimeoutError
from ..format.jsonl import is_session_header, loads_line
from .pg_schema import SCHEMA
from .pg_timeouts import GRACE, Deadlines, connect_params, default_timeout
from .protocol import DEFAULT_LOCK_TIMEOUT, AppendingWriter, FileStat, SessionStorageWriter, whole_lines
from .rows import entry_hash, refused_row
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

    Every use is bounded (`pg_timeouts`): ``connect_timeout`` for a new connection,
    ``timeout`` for a statement, a transaction or a lock wait, on the server and by the
    client's own deadline. A connection that failed is dropped; any
    ``psycopg.OperationalError`` (a deadline that fired included) becomes
    :class:`StoreUnreachable`."""

    def __init__(
        self, url: str, *, max_idle: int = 8, connect_timeout: float = 10.0, timeout: float | None = None
    ) -> None:
        self.url = url
        self._idle: list[Any] = []
        self._lock = threading.Lock()
        self._max_idle = max_idle
        #: Seconds to wait for a connection (libpq's connect_timeout, at least 1).
        self.connect_timeout = connect_timeout
        #: Seconds one use may take (statement_timeout, lock_timeout, the client's deadline).
        self.timeout = timeout if timeout is not None else default_timeout()
        self._deadlines = Deadlines.shared()

    def connect(self) -> Any:
        import psycopg

        params = connect_params(self.url, connect_timeout=self.connect_timeout, timeout=self.timeout)
        try:
            return psycopg.connect(autocommit=True, **params)
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
    def bounded(self, conn: Any, timeout: float | None = None) -> Iterator[None]:
        """The block's use of ``conn`` may take ``timeout`` (the pool's by default): past
        it and the grace, the client shuts the connection and the block fails with
        :class:`StoreUnreachable` ("did not answer within N s")."""
        import psycopg

        seconds = self.timeout if timeout is None else timeout
        token = self._deadlines.arm(conn, seconds + GRACE)
        fired = False
        try:
            yield
        except psycopg.OperationalError as exc:
            fired = self._deadlines.disarm(token)
            if fired:
                raise StoreUnreachable(
                    errno.ETIMEDOUT, f"the session store did not answer within {seconds:g} s"
                ) from exc
            raise
        finally:
            if not fired:
                fired = self._deadlines.disarm(token)
                if fired:
                    # Shut after the block's last call returned: the connection is unusable.
                    conn.close()

    @contextmanager
    def connection(self, timeout: float | None = None) -> Iterator[Any]:
        """A connection for the block, back to the pool afterwards; the block may take
        ``timeout`` seconds (the pool's by default)."""
        import psycopg

        conn = self.take()
        try:
            with self.bounded(conn, timeout):
                yield conn
        except psycopg.OperationalError as exc:
            conn.close()
            if isinstance(exc, (psycopg.errors.QueryCanceled, psycopg.errors.LockNotAvailable)):
                raise StoreUnreachable(
                    errno.ETIMEDOUT,
                    f"the session store did not finish within {self.timeout:g} s: {str(exc).strip()}",
                ) from exc
            # One lost connection (a restarted server) means the idle ones are gone too:
            # the next use connects afresh instead of failing on each of them in turn.
            self.close()
            raise StoreUnreachable(errno.EIO, f"the session store connection was lost: {exc}") from exc
        except StoreUnreachable:
            conn.close()
            self.close()
            raise
        except BaseException:
            if conn.info.transaction_status != 0:
                conn.close()
            raise
        else:
            self.give(conn)

    @contextmanager
    def transaction(self, timeout: float | None = None) -> Iterator[Any]:
        """A connection inside one transaction for the block."""
        with self.connection(timeout) as conn, conn.transaction():
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

    def __init__(
        self,
        url: str,
        *,
        machine: str | None = None,
        user: str | None = None,
        timeout: float | None = None,
        mirror: bool = False,
    ) -> None:
        self.url = url
        #: ``timeout``: seconds one use of the store may take (`pg_timeouts`).
        self.pool = PgPool(url, timeout=timeout)
        self.machine = machine or default_machine()
        self.user = user or default_user()
        self._last_ns = 0
        self._ns_lock = threading.Lock()
        # With ``mirror`` (the daemon), the bytes of each shared session read are kept here:
        # its stat and reads answer from them without waiting on the store, and `refresh`
        # is what asks the store for more (docs/shared-store.md, "Live in the daemon").
        self._mirrors: dict[str, _Mirror] | None = {} if mirror else None
        self._mirror_lock = threading.Lock()
        self._refresh_lock = threading.Lock()
        #: Where refused rows and rows changed under a reader are reported (a line of text).
        self.report: Callable[[str], None] | None = None
        self._reported: set[tuple[str, int]] = set()

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

    @staticmethod
    def _end_of(conn: Any, pk: int) -> tuple[int, int, bytes]:
        """``(last seq, size, last line)`` of file ``pk`` as its rows say (its row locked):
        where the next row goes, even when the session row's counters were changed by hand."""
        row = conn.execute(
            f"SELECT seq, off, line FROM {S}.entries WHERE session_pk = %s ORDER BY seq DESC LIMIT 1", (pk,)
        ).fetchone()
        if row is None:
            return 0, 0, b""
        line = bytes(row[2])
        return int(row[0]), int(row[1]) + len(line), line

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
        mirrored = self._mirror_of(path)
        if mirrored is not None:
            return mirrored.stat()
        with self.pool.connection() as conn:
            row = self._file_row(conn, path)
            if row is not None:
                _pk, size, _seq, generation, mtime_ns = row
                return FileStat(int(size), mtime_ns / 1e9, int(mtime_ns), True, False, int(generation), 0)
            if self._is_dir(conn, path):
                return FileStat(0, 0.0, 0, False, True)
        raise _enoent(path)

    def _pk(self, conn: Any, path: str) -> int:
        return self._file_of(conn, path)[0]

    def _file_of(self, conn: Any, path: str) -> tuple[int, bool, int, int]:
        """``(pk, shared, generation, mtime_ns)`` of the file at ``path``."""
        row = conn.execute(
            f"SELECT pk, shared, generation, mtime_ns FROM {S}.sessions WHERE path = %s", (path,)
        ).fetchone()
        if row is None:
            if self._is_dir(conn, path):
                raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
            raise _enoent(path)
        return int(row[0]), bool(row[1]), int(row[2]), int(row[3])

    def read_bytes(self, path: str) -> bytes:
        path = os.path.normpath(path)
        if self._mirror_of(path) is not None:
            # Kept already (a sniff of the first bytes read it all): what was added since,
            # and the whole again only if the rows changed under it.
            self.refresh(path)
            mirrored = self._mirror_of(path)
            if mirrored is not None:
                with self._mirror_lock:
                    return bytes(mirrored.data)
        with self.pool.connection() as conn:
            pk, shared, generation, mtime_ns = self._file_of(conn, path)
            if not shared:
                row = conn.execute(
                    f"SELECT string_agg(line, ''::bytea ORDER BY seq) FROM {S}.entries WHERE session_pk = %s",
                    (pk,),
                ).fetchone()
                return bytes(row[0]) if row and row[0] is not None else b""
            mirror = self._read_shared(conn, path, pk, generation, mtime_ns)
        if self._mirrors is not None:
            with self._mirror_lock:
                old = self._mirrors.get(path)
                if old is not None:
                    mirror.epoch = old.epoch
                self._mirrors[path] = mirror
        return bytes(mirror.data)

    def _read_shared(self, conn: Any, path: str, pk: int, generation: int, mtime_ns: int) -> _Mirror:
        """Every row of shared session ``pk``, each checked (`rows.refused_row`): a row the
        database did not vouch for and that is not what its columns say reads as a line of
        ``!`` of its length (offsets stay right; the loader drops it and says so)."""
        row = conn.execute(
            f"SELECT string_agg(line, ''::bytea ORDER BY seq), max(seq) FROM {S}.entries WHERE session_pk = %s",
            (pk,),
        ).fetchone()
        data = bytearray(row[0]) if row and row[0] is not None else bytearray()
        last_seq = int(row[1]) if row and row[1] is not None else 0
        unchecked = conn.execute(
            f"SELECT seq, off, entry_id, line, hash FROM {S}.entries"
            " WHERE session_pk = %s AND checked IS NOT TRUE AND seq <= %s ORDER BY seq",
            (pk, last_seq),
        ).fetchall()
        refused = [r for r in unchecked if self._refusal(path, r[0], r[2], bytes(r[3]), r[4]) is not None]
        if refused:
            # Where each refused row sits: the lengths of the rows before it (its ``off`` is
            # a column like the others).
            lengths = conn.execute(
                f"SELECT seq, octet_length(line) FROM {S}.entries WHERE session_pk = %s AND seq <= %s ORDER BY seq",
                (pk, last_seq),
            ).fetchall()
            starts: dict[int, int] = {}
            pos = 0
            for seq, n in lengths:
                starts[int(seq)] = pos
                pos += int(n)
            for seq, _off, _ident, line, _digest in refused:
                at = starts[int(seq)]
                data[at : at + len(line)] = _blank(bytes(line))
        last_line, last_end = b"", 0
        if last_seq:
            got = conn.execute(
                f"SELECT line, off FROM {S}.entries WHERE session_pk = %s AND seq = %s", (pk, last_seq)
            ).fetchone()
            if got:
                last_line = bytes(got[0])
                last_end = int(got[1]) + len(last_line)
        return _Mirror(pk, generation, data, last_seq, last_line, last_end, mtime_ns, refused=len(refused))

    def _mirror_of(self, path: str) -> _Mirror | None:
        if self._mirrors is None:
            return None
        with self._mirror_lock:
            return self._mirrors.get(path)

    def refresh(self, path: str) -> bool:
        """Bring the kept bytes of shared session ``path`` up to the store's (a store call,
        bounded by the pool's timeout); True when they changed. Rows that changed under
        them (the last row held is gone or different, a row that does not follow the bytes
        held) make them read again whole under a new identity, so a follower reloads the
        session. Without kept bytes, nothing is done."""
        path = os.path.normpath(path)
        with self._refresh_lock:
            mirror = self._mirror_of(path)
            if mirror is None:
                return False
            with self.pool.connection() as conn:
                rows = conn.execute(
                    f"SELECT seq, off, entry_id, line, hash, checked FROM {S}.entries"
                    " WHERE session_pk = %s AND seq >= %s ORDER BY seq",
                    (mirror.pk, mirror.last_seq),
                ).fetchall()
                changed_under = False
                if mirror.last_seq:
                    first = rows[0] if rows else None
                    changed_under = (
                        first is None
                        or int(first[0]) != mirror.last_seq
                        or bytes(first[3]) != mirror.last_line
                    )
                    rows = rows[1:]
                added = bytearray()
                last_seq, last_line, last_end = mirror.last_seq, mirror.last_line, mirror.last_end
                for seq, off, ident, line, digest, checked in rows:
                    line = bytes(line)
                    # Each row follows the one before it, as the rows held were stored.
                    if int(seq) != last_seq + 1 or int(off) != last_end:
                        changed_under = True
                        break
                    added += (
                        line
                        if checked or self._refusal(path, seq, ident, line, digest) is None
                        else _blank(line)
                    )
                    last_seq, last_line, last_end = int(seq), line, int(off) + len(line)
                if changed_under:
                    self._say(
                        f"the rows of shared session {path} changed under this reader: read again whole"
                    )
                    _pk, _shared, generation, mtime_ns = self._file_of(conn, path)
                    fresh = self._read_shared(conn, path, mirror.pk, generation, mtime_ns)
                    fresh.epoch = mirror.epoch + 1
                    with self._mirror_lock:
                        if self._mirrors is not None and path in self._mirrors:
                            self._mirrors[path] = fresh
                    return True
                if not added:
                    return False
                got = conn.execute(
                    f"SELECT mtime_ns FROM {S}.sessions WHERE pk = %s", (mirror.pk,)
                ).fetchone()
            with self._mirror_lock:
                mirror.data += added
                mirror.last_seq, mirror.last_line, mirror.last_end = last_seq, last_line, last_end
                if got is not None:
                    mirror.mtime_ns = int(got[0])
            return True

    def _say(self, text: str) -> None:
        if self.report is not None:
            self.report(text)

    def _refusal(self, path: str, seq: int, ident: str | None, line: bytes, digest: Any) -> str | None:
        """`rows.refused_row` of one row of shared session ``path``, reported when refused."""
        why = refused_row(ident, line, bytes(digest) if digest is not None else None, first=int(seq) == 1)
        if why is not None and (path, int(seq)) not in self._reported:
            self._reported.add((path, int(seq)))
            self._say(f"row {seq} of shared session {path} refused: {why}")
        return why

    def _drop_mirrors(self, *paths: str) -> None:
        if self._mirrors is not None:
            with self._mirror_lock:
                for p in paths:
                    self._mirrors.pop(p, None)

    def forget(self, keep: set[str] | None = None) -> None:
        """Let the kept bytes go: of every session but those in ``keep`` (normalized paths)."""
        if self._mirrors is None:
            return
        with self._mirror_lock:
            for path in list(self._mirrors):
                if keep is None or path not in keep:
                    del self._mirrors[path]

    def read_range(self, path: str, offset: int, length: int) -> bytes:
        if offset < 0 or length < 0:
            raise ValueError("offset and length must not be negative")
        path = os.path.normpath(path)
        if self._mirrors is not None:
            mirror = self._mirror_of(path)
            if mirror is None or offset + length > len(mirror.data):
                if mirror is None:
                    self.read_bytes(path)
                else:
                    self.refresh(path)
                mirror = self._mirror_of(path)
            if mirror is not None:
                with self._mirror_lock:
                    return bytes(mirror.data[offset : offset + length])
        with self.pool.connection() as conn:
            pk, shared, _generation, _mtime = self._file_of(conn, path)
            if length == 0:
                return b""
            end = offset + length
            rows = conn.execute(
                f"SELECT off, line, seq, entry_id, hash, checked FROM {S}.entries WHERE session_pk = %s"
                f" AND off < %s AND off >= (SELECT coalesce(max(off), 0) FROM {S}.entries"
                " WHERE session_pk = %s AND off <= %s) ORDER BY off",
                (pk, end, pk, offset),
            ).fetchall()
        if not rows:
            return b""
        start = int(rows[0][0])
        parts = []
        for _off, line, seq, ident, digest, checked in rows:
            line = bytes(line)
            if shared and not checked and self._refusal(path, seq, ident, line, digest) is not None:
                line = _blank(line)
            parts.append(line)
        buf = b"".join(parts)
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
            pk = int(row[0])
            last_seq, size, tail = self._end_of(conn, pk)
            if tail and not tail.endswith(b"\n"):
                payload = separator_after(tail) + payload
            self._insert_lines(conn, pk, size, last_seq, payload)
        # The kept bytes take the line (and whatever other machines added before it).
        self.refresh(path)

    def open_writer(self, path: str) -> SessionStorageWriter:
        return PostgresSessionWriter(self, os.path.normpath(path))

    def rename(self, src: str, dst: str) -> None:
        src, dst = os.path.normpath(src), os.path.normpath(dst)
        self._drop_mirrors(src, dst)
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
        self._drop_mirrors(path)
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
        if self._mirrors is not None:
            with self._mirror_lock:
                for p in [p for p in self._mirrors if p == path or p.startswith(prefix)]:
                    del self._mirrors[p]
        with self.pool.transaction() as conn:
            conn.execute(f"DELETE FROM {S}.sessions WHERE path = %s OR starts_with(path, %s)", (path, prefix))
            conn.execute(f"DELETE FROM {S}.dirs WHERE path = %s OR starts_with(path, %s)", (path, prefix))

    @contextmanager
    def lock(self, path: str, timeout: float = DEFAULT_LOCK_TIMEOUT, shared: bool = False) -> Iterator[None]:
        import psycopg

        path = os.path.normpath(path)
        key = (f"sessiontree:{path}",)
        # Advisory locks belong to a connection: each holder has its own, so a lock taken
        # here excludes other threads, processes and machines alike.
        conn = self.pool.take()
        fn = "pg_advisory_lock_shared" if shared else "pg_advisory_lock"
        ms = max(1, int(timeout * 1000))
        try:
            # The wait is the lock's timeout (the statement's may be shorter); both go back
            # to the connection's defaults afterwards, since it returns to the pool.
            with self.pool.bounded(conn, timeout + 1.0):
                conn.execute(f"SET lock_timeout = {ms}")
                conn.execute(f"SET statement_timeout = {ms + 1000}")
                conn.execute(f"SELECT {fn}(hashtextextended(%s, 0))", key)
        except psycopg.errors.LockNotAvailable:
            try:
                with self.pool.bounded(conn):
                    conn.execute("RESET lock_timeout; RESET statement_timeout")
                self.pool.give(conn)
            except (psycopg.Error, StoreUnreachable):
                conn.close()
            raise LockTimeoutError(path, timeout) from None
        except psycopg.OperationalError as exc:
            conn.close()
            raise StoreUnreachable(errno.EIO, f"the session store connection was lost: {exc}") from exc
        except StoreUnreachable:
            conn.close()
            raise
        try:
            yield
        finally:
            try:
                with self.pool.bounded(conn):
                    conn.execute(f"SELECT {fn.replace('lock', 'unlock')}(hashtextextended(%s, 0))", key)
                    conn.execute("RESET lock_timeout; RESET statement_timeout")
                self.pool.give(conn)
            except (psycopg.Error, StoreUnreachable):
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
            last_seq, size, tail = self._end_of(conn, pk)
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
        self, pk: int, after_seq: int, limit: int = 5000, *, inclusive: bool = False
    ) -> list[tuple[int, str, bytes, bytes | None]]:
        """The session's entries that arrived after ``after_seq``: ``(seq, id, line, hash)``,
        as the store holds them (`rows.refused_row` tells whether to believe one). With
        ``inclusive``, the entry at ``after_seq`` too (first, when there is one)."""
        with self.pool.connection() as conn:
            rows = conn.execute(
                f"SELECT seq, entry_id, line, hash FROM {S}.entries WHERE session_pk = %s AND seq >= %s"
                " AND entry_id IS NOT NULL ORDER BY seq LIMIT %s",
                (pk, after_seq if inclusive else after_seq + 1, limit + (1 if inclusive else 0)),
            ).fetchall()
        return [(int(r[0]), r[1], bytes(r[2]), bytes(r[3]) if r[3] is not None else None) for r in rows]

    def header_of(self, pk: int) -> tuple[str | None, bytes] | None:
        """``(entry_id, line)`` of the session's first row (its header), as stored."""
        with self.pool.connection() as conn:
            row = conn.execute(
                f"SELECT entry_id, line FROM {S}.entries WHERE session_pk = %s AND seq = 1", (pk,)
            ).fetchone()
        return (row[0], bytes(row[1])) if row is not None else None

    def last_seq(self, pk: int) -> int:
        """The session's arrival high-water mark."""
        with self.pool.connection() as conn:
            row = conn.execute(f"SELECT last_seq FROM {S}.sessions WHERE pk = %s", (pk,)).fetchone()
        if row is None:
            raise _enoent(f"session {pk}")
        return int(row[0])


@dataclass(slots=True)
class _Mirror:
    """The bytes of one shared session as this reader holds them (rows ``1..last_seq``)."""

    pk: int
    generation: int
    data: bytearray
    last_seq: int
    #: The last row's bytes as stored: a different one means the rows changed under us.
    last_line: bytes
    #: Its ``off`` plus its length: where the next row must start.
    last_end: int
    mtime_ns: int
    #: Bumped when the rows changed under the bytes held: the identity `stat` reports.
    epoch: int = 0
    refused: int = 0

    def stat(self) -> FileStat:
        inode = self.generation + (self.epoch << 40)
        return FileStat(len(self.data), self.mtime_ns / 1e9, self.mtime_ns, True, False, inode, 0)


def _blank(line: bytes) -> bytes:
    """A refused row as it reads: ``!`` of its length, one line (not JSON: the loader drops
    it and counts it), so every later offset stays right."""
    if line.endswith(b"\n"):
        return b"!" * (len(line) - 1) + b"\n"
    return b"!" * len(line)


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
