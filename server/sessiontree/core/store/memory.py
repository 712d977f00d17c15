"""`MemorySessionStorage`: session files held in memory (for `SessionManager.in_memory` and tests).

It passes the same contract suite as the file system's backend, down to torn lines and
locks (`_RWLock` behaves like ``flock`` on separate descriptors).
"""

from __future__ import annotations

import errno
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from ..errors import LockTimeoutError
from .protocol import DEFAULT_LOCK_TIMEOUT, AppendingWriter, FileStat, SessionStorageWriter, whole_lines
from .torn import separator_after

__all__ = ["MemorySessionStorage", "MemorySessionWriter"]


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


class MemorySessionWriter(AppendingWriter):
    """:class:`SessionStorageWriter` on a :class:`MemorySessionStorage` file."""


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
        payload = whole_lines(data)
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
    def lock(self, path: str, timeout: float = DEFAULT_LOCK_TIMEOUT, shared: bool = False) -> Iterator[None]:
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
