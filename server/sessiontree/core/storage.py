"""Storage backends for session files: the real file system and an in-memory one.

Both implement :class:`SessionStorage` and pass the same contract test suite
(``tests/core/test_storage_contract.py``). The file implementation is careful about
crashes and other writers:

* ``write_atomic`` writes ``.<basename>.<snowflake>.tmp`` in the same directory, fsyncs it,
  renames it over the target and then fsyncs the directory (DIVERGENCES 6); on any error
  the temp file is removed and the error re-raised, so the target is never half-written.
* ``append`` and writers add whole lines with ``O_APPEND`` writes (looping on short writes);
  when the file's last byte is not a newline (another writer's torn line) the new data
  starts on a new line instead of being glued onto it (DIVERGENCES 2), once it is certain
  that the line is torn and not another writer's line still in flight
  (:func:`settled_tail`). When the torn
  fragment could be read as the start of a longer value, a ``#`` breaker line goes first,
  because the reference parser would otherwise read on and lose the appended line.
* ``lock`` takes an advisory ``flock`` on a lock file in sessiontree's own cache directory
  (:func:`lock_file_path`), keyed by the session file's canonical path: nothing is left
  in the agent's directories.
* with a :class:`~sessiontree.core.guard.PathGuard` (``FileSessionStorage(guard=...)``,
  what the daemon uses) every read and write is checked at the moment it happens: files
  are opened through the guard (no link followed out of the allowed roots, a regular
  file with one name), and temp files, renames, deletions and new directories work on
  directory descriptors the guard checked.

:class:`FaultInjectingStorage` wraps any storage and makes chosen operations fail, so
that error handling (the manager's latched persist error) can be tested on real files.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import os
import shutil
import stat as stat_module
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from .errors import LockTimeoutError
from .guard import PathGuard
from .ids import IdSource

__all__ = [
    "TORN_LINE_BREAKER",
    "Fault",
    "FaultInjectingStorage",
    "FileSessionStorage",
    "FileStat",
    "MemorySessionStorage",
    "SessionStorage",
    "SessionStorageWriter",
    "lock_dir",
    "lock_file_path",
    "separator_after",
    "settled_tail",
]

_DEFAULT_LOCK_TIMEOUT = 10.0


@dataclass(frozen=True, slots=True)
class FileStat:
    """What :meth:`SessionStorage.stat` reports: size in bytes, mtime, the kind, and the
    identity of the file (``inode``/``dev``; an atomic rewrite gives a new inode)."""

    size: int
    mtime: float
    mtime_ns: int
    is_file: bool
    is_dir: bool
    inode: int = 0
    dev: int = 0


@runtime_checkable
class SessionStorageWriter(Protocol):
    """A long-lived append writer on one file.

    The first error is latched: :meth:`get_error` returns it and later writes raise it
    again. :meth:`close` never raises the latched error.
    """

    path: str

    def write_line(self, data: bytes) -> None:
        """Append one line (a trailing newline is added when ``data`` has none)."""
        ...

    def flush(self) -> None:
        """Push buffered data to the OS (writes are unbuffered; this re-raises a latched error)."""
        ...

    def fsync(self) -> None:
        """Make the written data durable."""
        ...

    def close(self) -> None:
        """Release the file; further writes raise ``ValueError``."""
        ...

    def get_error(self) -> BaseException | None:
        """The first error this writer met, or ``None``."""
        ...


@runtime_checkable
class SessionStorage(Protocol):
    """The file operations the session store needs (paths are plain strings)."""

    #: True when paths are real file system paths (so they may be resolved and shown).
    is_real_fs: bool

    def ensure_dir(self, path: str) -> None:
        """Create ``path`` and its parents if missing (``mkdir -p``)."""
        ...

    def exists(self, path: str) -> bool:
        """True when a file or directory exists at ``path``."""
        ...

    def stat(self, path: str) -> FileStat:
        """Size and mtime of ``path``; raises ``FileNotFoundError`` when missing."""
        ...

    def read_bytes(self, path: str) -> bytes:
        """The whole file; raises ``FileNotFoundError`` when missing."""
        ...

    def read_range(self, path: str, offset: int, length: int) -> bytes:
        """Up to ``length`` bytes at ``offset`` (shorter at the end of the file)."""
        ...

    def read_prefix(self, path: str, n: int) -> bytes:
        """The first ``n`` bytes (or the whole file if shorter)."""
        ...

    def list_files(self, directory: str, recursive: bool = False) -> list[str]:
        """Sorted paths of the regular files in ``directory`` (``[]`` when it is missing)."""
        ...

    def write_atomic(self, path: str, data: bytes) -> None:
        """Replace the file's content with ``data`` atomically (all or nothing); missing
        parent directories are created."""
        ...

    def append(self, path: str, data: bytes) -> None:
        """Append whole lines, creating the file (and its parent dirs) if needed; never glues
        onto a torn line."""
        ...

    def open_writer(self, path: str) -> SessionStorageWriter:
        """A long-lived append writer (the file is created on the first write)."""
        ...

    def rename(self, src: str, dst: str) -> None:
        """Rename a file or directory (replacing a file at ``dst``)."""
        ...

    def unlink(self, path: str, missing_ok: bool = False) -> None:
        """Delete a file."""
        ...

    def remove_tree(self, path: str) -> None:
        """Delete a directory and everything in it; a missing path is fine."""
        ...

    def lock(
        self, path: str, timeout: float = _DEFAULT_LOCK_TIMEOUT, shared: bool = False
    ) -> AbstractContextManager[None]:
        """An advisory lock for ``path`` (context manager); raises ``LockTimeoutError``."""
        ...


def _whole_lines(data: bytes) -> bytes:
    data = bytes(data)
    if data and not data.endswith(b"\n"):
        data += b"\n"
    return data


def lock_dir() -> str:
    """Where lock files live: ``$SESSIONTREE_LOCK_DIR``, else ``$XDG_CACHE_HOME/sessiontree/locks``,
    else ``~/.cache/sessiontree/locks``: sessiontree's own directory, never the agent's
    (DIVERGENCES 11: a lock file beside a session would stay in the agent's folder)."""
    env = os.environ.get("SESSIONTREE_LOCK_DIR")
    if env:
        return os.path.abspath(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = xdg if xdg and os.path.isabs(xdg) else os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "sessiontree", "locks")


def lock_file_path(path: str) -> str:
    """The lock file of ``path``: ``<lock dir>/<sha256 of its canonical path>.lock``.

    The key is the real path of the file's directory plus its name, so two names of the
    same directory (a symlinked project) share one lock, and a rename over the file (an
    atomic rewrite) keeps it.
    """
    directory, base = os.path.split(os.path.abspath(path))
    try:
        directory = os.path.realpath(directory)
    except (OSError, ValueError):
        pass
    key = os.path.join(directory, base).encode("utf-8", "surrogateescape")
    return os.path.join(lock_dir(), hashlib.sha256(key).hexdigest()[:40] + ".lock")


def _open_lock_file(path: str) -> int:
    lock_path = lock_file_path(path)
    flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK
    try:
        fd = os.open(lock_path, flags, 0o600)
    except FileNotFoundError:
        os.makedirs(os.path.dirname(lock_path), mode=0o700, exist_ok=True)
        fd = os.open(lock_path, flags, 0o600)
    # A planted FIFO or device at the lock's name must not hang or feed the writer.
    if not stat_module.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, "lock file is not a regular file", lock_path)
    return fd


# --------------------------------------------------------------------------- files


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        if written <= 0:
            raise OSError(errno.EIO, "write returned 0 bytes")
        view = view[written:]


#: Written on its own line after a torn last line whose fragment could still be read as
#: the start of a longer value. The reference parser would otherwise read on into the next
#: line and lose it; a line starting with "#" is a syntax error in every JSON context, so
#: the parser drops the torn line and this one and resumes at the appended data.
TORN_LINE_BREAKER = b"# sessiontree: the line above was torn; this line keeps it from swallowing the next"
_TAIL_SCAN_LIMIT = 1 << 20


def separator_after(last_line: bytes | None) -> bytes:
    """What to write before new lines, given the file's unterminated last line.

    ``None`` or ``b""`` (empty file, or it ends with a newline): nothing. A fragment that
    parses as complete values: a newline. Anything else (an incomplete value, garbage, or a
    line too long to check): a newline and :data:`TORN_LINE_BREAKER`.
    """
    if not last_line:
        return b""
    from .format.jsonl import parse_jsonl_lenient

    report = parse_jsonl_lenient(last_line)
    if report.values and not report.dropped:
        return b"\n"
    return b"\n" + TORN_LINE_BREAKER + b"\n"


def _unterminated_tail(fd: int) -> bytes | None:
    """The bytes after the file's last newline (``None`` when it ends with one or is empty).

    A fragment longer than the scan limit is returned as a single byte of garbage, which
    makes :func:`separator_after` choose the breaker.
    """
    size = os.fstat(fd).st_size
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return None
    chunks: list[bytes] = []
    end = size
    while end > 0 and size - end < _TAIL_SCAN_LIMIT:
        start = max(0, end - 65536)
        chunk = os.pread(fd, end - start, start)
        nl = chunk.rfind(b"\n")
        if nl >= 0:
            chunks.append(chunk[nl + 1 :])
            return b"".join(reversed(chunks))
        chunks.append(chunk)
        end = start
    if end == 0:
        return b"".join(reversed(chunks))
    return b"#"


#: A file that ends inside a line is only taken for torn (another writer crashed) once
#: nobody has written to it for this long; before that the line may still be in flight
#: (another writer's `write` in pieces), and a separator would split it.
TORN_QUIET_SECONDS = 1.0
#: The longest an append waits for another writer's unfinished line.
TORN_WAIT_MAX_SECONDS = 10.0


def settled_tail(fd: int, quiet: float | None = None, limit: float | None = None) -> bytes | None:
    """:func:`_unterminated_tail`, decided only from what is certain.

    A file that ends with a newline gives ``None`` at once. A file that ends inside a line
    is watched until that line is finished (``None``) or the file has not changed for
    ``quiet`` seconds (judged by its mtime, so a fragment left long ago costs no wait),
    and at most ``limit`` seconds in all; then the fragment is returned.
    """
    quiet = TORN_QUIET_SECONDS if quiet is None else quiet
    limit = TORN_WAIT_MAX_SECONDS if limit is None else limit
    tail = _unterminated_tail(fd)
    deadline = time.monotonic() + limit
    while tail is not None:
        st = os.fstat(fd)
        if time.time() - st.st_mtime_ns / 1e9 >= quiet or time.monotonic() >= deadline:
            return tail
        time.sleep(0.01)
        tail = _unterminated_tail(fd)
    return None


#: O_RDWR (not O_WRONLY) so the last byte can be checked with pread.
_APPEND_FLAGS = os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC


def _open_append(path: str, guard: PathGuard | None = None) -> int:
    if guard is not None:
        return guard.open(path, _APPEND_FLAGS, 0o666, make_dirs=True)
    directory = os.path.dirname(path)
    if directory:
        os.makedirs(directory, exist_ok=True)
    return os.open(path, _APPEND_FLAGS, 0o666)


def _open_read(path: str, guard: PathGuard | None) -> int:
    if guard is None:
        return os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    # O_NONBLOCK: a FIFO swapped in must not hang the reader before the guard refuses it.
    return guard.open(path, os.O_RDONLY | os.O_NONBLOCK)


def _still_named(guard: PathGuard, path: str, fd: int) -> None:
    """Raise unless ``path`` still names (through the guard) the file ``fd`` writes to.

    A kept-open descriptor follows its file wherever it is moved; this keeps appends from
    going to a file that was moved out of the roots while a link took its place.
    """
    check = guard.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        same = os.path.samestat(os.fstat(check), os.fstat(fd))
    finally:
        os.close(check)
    if not same:
        raise OSError(errno.ESTALE, "another file now sits at the path", path)


def _read_fd(fd: int) -> bytes:
    with os.fdopen(fd, "rb") as f:
        return f.read()


class FileSessionWriter:
    """:class:`SessionStorageWriter` on a real file (``O_APPEND``, unbuffered)."""

    def __init__(self, path: str, guard: PathGuard | None = None) -> None:
        self.path = path
        self._guard = guard
        self._fd: int | None = None
        self._error: BaseException | None = None
        self._closed = False

    def _latch(self, exc: BaseException) -> None:
        if self._error is None:
            self._error = exc

    def write_line(self, data: bytes) -> None:
        if self._error is not None:
            raise self._error
        if self._closed:
            raise ValueError(f"writer for {self.path} is closed")
        try:
            if self._fd is None:
                self._fd = _open_append(self.path, self._guard)
            elif self._guard is not None:
                _still_named(self._guard, self.path, self._fd)
            payload = separator_after(settled_tail(self._fd)) + _whole_lines(data)
            _write_all(self._fd, payload)
        except Exception as exc:
            self._latch(exc)
            raise

    def flush(self) -> None:
        if self._error is not None:
            raise self._error

    def fsync(self) -> None:
        if self._error is not None:
            raise self._error
        if self._fd is None:
            return
        try:
            os.fsync(self._fd)
        except Exception as exc:
            self._latch(exc)
            raise

    def close(self) -> None:
        self._closed = True
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    def get_error(self) -> BaseException | None:
        return self._error


class FileSessionStorage:
    """:class:`SessionStorage` on the real file system.

    ``guard`` (optional): every read and write goes through it (see the module docstring);
    without one, paths are used as given.
    """

    is_real_fs = True

    def __init__(self, ids: IdSource | None = None, guard: PathGuard | None = None) -> None:
        self.ids = ids if ids is not None else IdSource()
        self.guard = guard

    def _dir_fd(self, directory: str, create: bool) -> int:
        if self.guard is not None:
            return self.guard.open_dir(os.path.abspath(directory or "."), create=create)
        if directory and create:
            os.makedirs(directory, exist_ok=True)
        return os.open(directory or ".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)

    def ensure_dir(self, path: str) -> None:
        if self.guard is not None:
            os.close(self.guard.open_dir(os.path.abspath(path), create=True))
            return
        os.makedirs(path, exist_ok=True)

    def exists(self, path: str) -> bool:
        return os.path.exists(path)

    def stat(self, path: str) -> FileStat:
        st = os.stat(path)
        return FileStat(
            size=st.st_size,
            mtime=st.st_mtime,
            mtime_ns=st.st_mtime_ns,
            is_file=stat_module.S_ISREG(st.st_mode),
            is_dir=stat_module.S_ISDIR(st.st_mode),
            inode=st.st_ino,
            dev=st.st_dev,
        )

    def read_bytes(self, path: str) -> bytes:
        return _read_fd(_open_read(path, self.guard))

    def read_range(self, path: str, offset: int, length: int) -> bytes:
        if offset < 0 or length < 0:
            raise ValueError("offset and length must not be negative")
        fd = _open_read(path, self.guard)
        try:
            chunks: list[bytes] = []
            remaining = length
            pos = offset
            while remaining > 0:
                chunk = os.pread(fd, remaining, pos)
                if not chunk:
                    break
                chunks.append(chunk)
                remaining -= len(chunk)
                pos += len(chunk)
            return b"".join(chunks)
        finally:
            os.close(fd)

    def read_prefix(self, path: str, n: int) -> bytes:
        return self.read_range(path, 0, n)

    def list_files(self, directory: str, recursive: bool = False) -> list[str]:
        found = self._list_files(directory, recursive)
        guard = self.guard
        return found if guard is None else [p for p in found if guard.accept(p)]

    def _list_files(self, directory: str, recursive: bool) -> list[str]:
        found: list[str] = []
        if recursive:
            for root, _dirs, files in os.walk(directory):
                found.extend(os.path.join(root, name) for name in files)
            return sorted(p for p in found if os.path.isfile(p))
        try:
            with os.scandir(directory) as it:
                for item in it:
                    try:
                        if item.is_file():
                            found.append(item.path)
                    except OSError:
                        continue
        except (FileNotFoundError, NotADirectoryError):
            return []
        return sorted(found)

    def write_atomic(self, path: str, data: bytes) -> None:
        directory, base = os.path.split(path)
        # The temp file and the rename work in one directory descriptor: the file lands in
        # the directory that was opened (and, with a guard, checked), even if the path is
        # swapped meanwhile.
        dfd = self._dir_fd(directory, create=True)
        try:
            tmp = f".{base}.{self.ids.snowflake()}.tmp"
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | os.O_NOFOLLOW
            fd = os.open(tmp, flags, 0o666, dir_fd=dfd)
            try:
                try:
                    _write_all(fd, bytes(data))
                    os.fsync(fd)
                finally:
                    os.close(fd)
                os.replace(tmp, base, src_dir_fd=dfd, dst_dir_fd=dfd)
            except BaseException:
                try:
                    os.unlink(tmp, dir_fd=dfd)
                except OSError:
                    pass
                raise
            try:
                os.fsync(dfd)
            except OSError:
                # Some file systems cannot fsync a directory; the rename itself has happened.
                pass
        finally:
            os.close(dfd)

    def append(self, path: str, data: bytes) -> None:
        payload = _whole_lines(data)
        if not payload:
            return
        fd = _open_append(path, self.guard)
        try:
            _write_all(fd, separator_after(settled_tail(fd)) + payload)
        finally:
            os.close(fd)

    def open_writer(self, path: str) -> SessionStorageWriter:
        return FileSessionWriter(path, self.guard)

    def rename(self, src: str, dst: str) -> None:
        if self.guard is None:
            os.rename(src, dst)
            return
        sdir, sname = os.path.split(os.path.abspath(src))
        ddir, dname = os.path.split(os.path.abspath(dst))
        sfd = self.guard.open_dir(sdir)
        try:
            dfd = self.guard.open_dir(ddir)
            try:
                os.rename(sname, dname, src_dir_fd=sfd, dst_dir_fd=dfd)
            finally:
                os.close(dfd)
        finally:
            os.close(sfd)

    def unlink(self, path: str, missing_ok: bool = False) -> None:
        try:
            if self.guard is None:
                os.unlink(path)
                return
            directory, name = os.path.split(os.path.abspath(path))
            dfd = self.guard.open_dir(directory)
            try:
                os.unlink(name, dir_fd=dfd)
            finally:
                os.close(dfd)
        except FileNotFoundError:
            if not missing_ok:
                raise

    def remove_tree(self, path: str) -> None:
        if self.guard is not None:
            # Its directory must lie inside the roots (rmtree itself never follows links).
            self.guard.check(os.path.dirname(os.path.abspath(path)))
        if os.path.islink(path) or os.path.isfile(path):
            os.unlink(path)
            return
        if os.path.isdir(path):
            shutil.rmtree(path)

    @contextmanager
    def lock(self, path: str, timeout: float = _DEFAULT_LOCK_TIMEOUT, shared: bool = False) -> Iterator[None]:
        fd = _open_lock_file(path)
        try:
            operation = fcntl.LOCK_SH if shared else fcntl.LOCK_EX
            deadline = time.monotonic() + timeout
            while True:
                try:
                    fcntl.flock(fd, operation | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise LockTimeoutError(path, timeout) from None
                    time.sleep(0.005)
            try:
                yield
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)


# --------------------------------------------------------------------------- memory


def _enoent(path: str) -> FileNotFoundError:
    return FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), path)


class _MemoryFile:
    __slots__ = ("data", "inode", "mtime_ns")
    _next_inode = 1

    def __init__(self, data: bytearray, mtime_ns: int) -> None:
        self.data = data
        self.mtime_ns = mtime_ns
        self.inode = _MemoryFile._next_inode
        _MemoryFile._next_inode += 1


class MemorySessionWriter:
    """:class:`SessionStorageWriter` on a :class:`MemorySessionStorage` file."""

    def __init__(self, storage: MemorySessionStorage, path: str) -> None:
        self.path = path
        self._storage = storage
        self._error: BaseException | None = None
        self._closed = False

    def write_line(self, data: bytes) -> None:
        if self._error is not None:
            raise self._error
        if self._closed:
            raise ValueError(f"writer for {self.path} is closed")
        try:
            self._storage.append(self.path, _whole_lines(data))
        except Exception as exc:
            if self._error is None:
                self._error = exc
            raise

    def flush(self) -> None:
        if self._error is not None:
            raise self._error

    def fsync(self) -> None:
        if self._error is not None:
            raise self._error

    def close(self) -> None:
        self._closed = True

    def get_error(self) -> BaseException | None:
        return self._error


class MemorySessionStorage:
    """:class:`SessionStorage` held in dictionaries (for in-memory sessions and tests).

    It mirrors the file semantics: parents must exist, missing files raise
    ``FileNotFoundError``, appends never glue onto a torn last line, locks time out.
    """

    is_real_fs = False

    def __init__(self) -> None:
        self._files: dict[str, _MemoryFile] = {}
        self._dirs: set[str] = {"/", "", "."}
        self._locks: dict[str, _RWLock] = {}
        self._guard = threading.RLock()
        self._last_ns = 0

    @staticmethod
    def _norm(path: str) -> str:
        return os.path.normpath(path) if path else path

    def _now_ns(self) -> int:
        self._last_ns = max(time.time_ns(), self._last_ns + 1)
        return self._last_ns

    def _check_parent(self, path: str) -> None:
        parent = os.path.dirname(path)
        if parent not in self._dirs:
            if parent in self._files:
                raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), parent)
            raise _enoent(path)

    def _make_parent(self, path: str) -> None:
        # Writes create missing parent directories, as the file storage does.
        self.ensure_dir(os.path.dirname(path))

    def _get(self, path: str) -> _MemoryFile:
        path = self._norm(path)
        f = self._files.get(path)
        if f is None:
            if path in self._dirs:
                raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
            raise _enoent(path)
        return f

    def ensure_dir(self, path: str) -> None:
        with self._guard:
            path = self._norm(path)
            parts: list[str] = []
            current = path
            while current not in self._dirs:
                if current in self._files:
                    raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), current)
                parts.append(current)
                parent = os.path.dirname(current)
                if parent == current:
                    break
                current = parent
            self._dirs.update(parts)

    def exists(self, path: str) -> bool:
        path = self._norm(path)
        return path in self._files or path in self._dirs

    def stat(self, path: str) -> FileStat:
        with self._guard:
            path = self._norm(path)
            f = self._files.get(path)
            if f is not None:
                return FileStat(len(f.data), f.mtime_ns / 1e9, f.mtime_ns, True, False, f.inode, 0)
            if path in self._dirs:
                return FileStat(0, 0.0, 0, False, True)
            raise _enoent(path)

    def read_bytes(self, path: str) -> bytes:
        with self._guard:
            return bytes(self._get(path).data)

    def read_range(self, path: str, offset: int, length: int) -> bytes:
        if offset < 0 or length < 0:
            raise ValueError("offset and length must not be negative")
        with self._guard:
            return bytes(self._get(path).data[offset : offset + length])

    def read_prefix(self, path: str, n: int) -> bytes:
        return self.read_range(path, 0, n)

    def list_files(self, directory: str, recursive: bool = False) -> list[str]:
        with self._guard:
            directory = self._norm(directory)
            if directory not in self._dirs:
                return []
            prefix = directory.rstrip("/") + "/"
            if recursive:
                return sorted(p for p in self._files if p.startswith(prefix))
            return sorted(p for p in self._files if os.path.dirname(p) == directory)

    def write_atomic(self, path: str, data: bytes) -> None:
        with self._guard:
            path = self._norm(path)
            self._make_parent(path)
            if path in self._dirs:
                raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
            self._files[path] = _MemoryFile(bytearray(data), self._now_ns())

    def append(self, path: str, data: bytes) -> None:
        payload = _whole_lines(data)
        if not payload:
            return
        with self._guard:
            path = self._norm(path)
            f = self._files.get(path)
            if f is None:
                self._make_parent(path)
                if path in self._dirs:
                    raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
                f = self._files[path] = _MemoryFile(bytearray(), self._now_ns())
            if f.data and f.data[-1:] != b"\n":
                nl = f.data.rfind(b"\n")
                f.data += separator_after(bytes(f.data[nl + 1 :]))
            f.data += payload
            f.mtime_ns = self._now_ns()

    def open_writer(self, path: str) -> SessionStorageWriter:
        return MemorySessionWriter(self, self._norm(path))

    def rename(self, src: str, dst: str) -> None:
        with self._guard:
            src, dst = self._norm(src), self._norm(dst)
            self._check_parent(dst)
            if src in self._files:
                if dst in self._dirs:
                    raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), dst)
                self._files[dst] = self._files.pop(src)
                return
            if src not in self._dirs:
                raise _enoent(src)
            if dst in self._files:
                raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), dst)
            src_prefix = src.rstrip("/") + "/"
            if dst in self._dirs:
                dst_prefix = dst.rstrip("/") + "/"
                if any(p.startswith(dst_prefix) for p in [*self._files, *self._dirs]):
                    raise OSError(errno.ENOTEMPTY, os.strerror(errno.ENOTEMPTY), dst)
            for p in [p for p in self._files if p.startswith(src_prefix)]:
                self._files[dst + "/" + p[len(src_prefix) :]] = self._files.pop(p)
            for d in [d for d in self._dirs if d == src or d.startswith(src_prefix)]:
                self._dirs.discard(d)
                self._dirs.add(dst + d[len(src) :])

    def unlink(self, path: str, missing_ok: bool = False) -> None:
        with self._guard:
            path = self._norm(path)
            if path in self._files:
                del self._files[path]
            elif path in self._dirs:
                raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
            elif not missing_ok:
                raise _enoent(path)

    def remove_tree(self, path: str) -> None:
        with self._guard:
            path = self._norm(path)
            if path in self._files:
                del self._files[path]
                return
            prefix = path.rstrip("/") + "/"
            for p in [p for p in self._files if p.startswith(prefix)]:
                del self._files[p]
            self._dirs.difference_update([d for d in self._dirs if d == path or d.startswith(prefix)])

    @contextmanager
    def lock(self, path: str, timeout: float = _DEFAULT_LOCK_TIMEOUT, shared: bool = False) -> Iterator[None]:
        with self._guard:
            state = self._locks.setdefault(self._norm(path), _RWLock())
        state.acquire(shared, path, timeout)
        try:
            yield
        finally:
            state.release(shared)


class _RWLock:
    """Many shared holders or one exclusive holder, like ``flock`` on separate descriptors."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._readers = 0
        self._writer = False

    def acquire(self, shared: bool, path: str, timeout: float) -> None:
        deadline = time.monotonic() + max(timeout, 0.0)
        with self._cond:
            while self._writer or (not shared and self._readers):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise LockTimeoutError(path, timeout)
                self._cond.wait(remaining)
            if shared:
                self._readers += 1
            else:
                self._writer = True

    def release(self, shared: bool) -> None:
        with self._cond:
            if shared:
                self._readers -= 1
            else:
                self._writer = False
            self._cond.notify_all()


# --------------------------------------------------------------------------- faults


@dataclass
class Fault:
    """One scheduled failure: operation name, optional path filter, error, remaining count.

    ``op`` is a storage method name (``write_atomic``, ``append``, ``rename``, ...) or a
    writer operation (``write_line``, ``fsync``, ``flush``). ``times=None`` fails forever.
    """

    op: str
    path: str | None = None
    error: BaseException | None = None
    times: int | None = 1

    def matches(self, op: str, path: str | None) -> bool:
        return (
            self.op == op
            and (self.path is None or path is None or os.path.normpath(self.path) == os.path.normpath(path))
            and (self.times is None or self.times > 0)
        )


class _FaultyWriter:
    def __init__(self, owner: FaultInjectingStorage, inner: SessionStorageWriter) -> None:
        self._owner = owner
        self._inner = inner
        self.path = inner.path
        self._error: BaseException | None = None

    def _guarded(self, op: str, call: Callable[[], None]) -> None:
        if self._error is not None:
            raise self._error
        try:
            self._owner.check(op, self.path)
            call()
        except Exception as exc:
            if self._error is None:
                self._error = exc
            raise

    def write_line(self, data: bytes) -> None:
        self._guarded("write_line", lambda: self._inner.write_line(data))

    def flush(self) -> None:
        self._guarded("flush", self._inner.flush)

    def fsync(self) -> None:
        self._guarded("fsync", self._inner.fsync)

    def close(self) -> None:
        self._inner.close()

    def get_error(self) -> BaseException | None:
        return self._error or self._inner.get_error()


class FaultInjectingStorage:
    """Wraps a real :class:`SessionStorage` and fails the operations scheduled with :meth:`fail`.

    Used by tests of error handling: ``storage.fail("append", error=OSError(28, "No space"))``
    makes the next append raise that error before anything is written. ``calls`` records
    every operation as ``(op, path)``.
    """

    def __init__(self, inner: SessionStorage) -> None:
        self.inner = inner
        self.is_real_fs = inner.is_real_fs
        self.faults: list[Fault] = []
        self.calls: list[tuple[str, str]] = []

    def fail(
        self, op: str, path: str | None = None, error: BaseException | None = None, times: int | None = 1
    ) -> Fault:
        """Schedule a failure of ``op`` (on ``path`` if given) ``times`` times (None: always)."""
        fault = Fault(op, path, error, times)
        self.faults.append(fault)
        return fault

    def clear(self) -> None:
        """Remove every scheduled failure."""
        self.faults.clear()

    def check(self, op: str, path: str | None) -> None:
        """Raise the scheduled error for ``op`` on ``path``, if any."""
        self.calls.append((op, path or ""))
        for fault in self.faults:
            if fault.matches(op, path):
                if fault.times is not None:
                    fault.times -= 1
                raise (
                    fault.error
                    if fault.error is not None
                    else OSError(errno.EIO, f"injected failure of {op}", path)
                )

    def ensure_dir(self, path: str) -> None:
        self.check("ensure_dir", path)
        self.inner.ensure_dir(path)

    def exists(self, path: str) -> bool:
        self.check("exists", path)
        return self.inner.exists(path)

    def stat(self, path: str) -> FileStat:
        self.check("stat", path)
        return self.inner.stat(path)

    def read_bytes(self, path: str) -> bytes:
        self.check("read_bytes", path)
        return self.inner.read_bytes(path)

    def read_range(self, path: str, offset: int, length: int) -> bytes:
        self.check("read_range", path)
        return self.inner.read_range(path, offset, length)

    def read_prefix(self, path: str, n: int) -> bytes:
        self.check("read_prefix", path)
        return self.inner.read_prefix(path, n)

    def list_files(self, directory: str, recursive: bool = False) -> list[str]:
        self.check("list_files", directory)
        return self.inner.list_files(directory, recursive)

    def write_atomic(self, path: str, data: bytes) -> None:
        self.check("write_atomic", path)
        self.inner.write_atomic(path, data)

    def append(self, path: str, data: bytes) -> None:
        self.check("append", path)
        self.inner.append(path, data)

    def open_writer(self, path: str) -> SessionStorageWriter:
        self.check("open_writer", path)
        return _FaultyWriter(self, self.inner.open_writer(path))

    def rename(self, src: str, dst: str) -> None:
        self.check("rename", src)
        self.inner.rename(src, dst)

    def unlink(self, path: str, missing_ok: bool = False) -> None:
        self.check("unlink", path)
        self.inner.unlink(path, missing_ok)

    def remove_tree(self, path: str) -> None:
        self.check("remove_tree", path)
        self.inner.remove_tree(path)

    def lock(
        self, path: str, timeout: float = _DEFAULT_LOCK_TIMEOUT, shared: bool = False
    ) -> AbstractContextManager[None]:
        self.check("lock", path)
        return self.inner.lock(path, timeout, shared)
