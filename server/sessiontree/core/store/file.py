"""`FileSessionStorage`: session files on the real file system.

It passes the contract suite of every backend (``tests/core/test_storage_contract.py``) and
is careful about crashes and other writers:

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
import os
import shutil
import stat as stat_module
import time
from collections.abc import Iterator
from contextlib import contextmanager

from ...fdio import write_all
from ..errors import LockTimeoutError
from ..ids import IdSource
from .guard import PathGuard
from .locks import open_lock_file
from .protocol import DEFAULT_LOCK_TIMEOUT, AppendingWriter, FileStat, SessionStorageWriter, whole_lines
from .torn import TORN_LINE_BREAKER, separator_after, settled_tail

__all__ = ["FileSessionStorage", "FileSessionWriter"]


def _append_checked(fd: int, lines: bytes) -> None:
    """Append whole ``lines`` to the ``O_APPEND`` descriptor ``fd``, never losing them.

    The file's end is looked at first (`settled_tail`: another writer's line still in flight
    is waited for). Another writer that writes its lines in pieces can still begin one in
    the moment between that look and the write; then the first line written here is glued
    onto its fragment. That is seen afterwards (the byte before this write is not a newline)
    and the lines are written once more behind a breaker line, so nothing acknowledged is
    lost: the glued line is garbage to every reader, the copy is whole.
    """
    tail = settled_tail(fd)
    # Nothing between the look and the write but the write itself when the file ends
    # with a newline (the common case): the moment another writer could slip into is a
    # system call long.
    payload = lines if tail is None else separator_after(tail) + lines
    write_all(fd, payload)
    start = os.lseek(fd, 0, os.SEEK_CUR) - len(payload)
    if start > 0 and payload[:1] != b"\n" and os.pread(fd, 1, start - 1) != b"\n":
        write_all(fd, TORN_LINE_BREAKER + b"\n" + lines)


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


class FileSessionWriter(AppendingWriter):
    """:class:`SessionStorageWriter` on a real file (``O_APPEND``, unbuffered)."""

    def __init__(self, path: str, guard: PathGuard | None = None) -> None:
        super().__init__(None, path)
        self._guard = guard
        self._fd: int | None = None

    def _append(self, data: bytes) -> None:
        if self._fd is None:
            self._fd = _open_append(self.path, self._guard)
        elif self._guard is not None:
            _still_named(self._guard, self.path, self._fd)
        _append_checked(self._fd, data)

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
                    write_all(fd, bytes(data))
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

    def overwrite_head(self, path: str, old: bytes, new: bytes) -> bool:
        """Write ``new`` over the file's first bytes, in place, when they are ``old`` (of the
        same length); False, writing nothing, when they are not. oh-my-pi's title slot is
        rewritten so, as omp does: the rest of the file does not move, so an agent appending
        to it meanwhile loses nothing."""
        if len(old) != len(new):
            raise ValueError("overwrite_head: the new bytes must be as long as the old")
        flags = os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW
        fd = self.guard.open(path, flags) if self.guard is not None else os.open(path, flags)
        try:
            if not stat_module.S_ISREG(os.fstat(fd).st_mode):
                return False
            if os.pread(fd, len(old), 0) != old:
                return False
            view = memoryview(new)
            done = 0
            while done < len(view):
                done += os.pwrite(fd, view[done:], done)
            os.fsync(fd)
            return True
        finally:
            os.close(fd)

    def append(self, path: str, data: bytes) -> None:
        payload = whole_lines(data)
        if not payload:
            return
        fd = _open_append(path, self.guard)
        try:
            _append_checked(fd, payload)
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
    def lock(self, path: str, timeout: float = DEFAULT_LOCK_TIMEOUT, shared: bool = False) -> Iterator[None]:
        fd = open_lock_file(path)
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
