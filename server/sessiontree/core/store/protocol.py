"""The storage a session store needs (`SessionStorage`), the place a new backend plugs in.

A backend implements `SessionStorage` (and its `SessionStorageWriter`) and passes the
contract suite ``tests/core/test_storage_contract.py``, as `file.FileSessionStorage` (the
real file system) and `memory.MemorySessionStorage` do. Paths are plain strings; a backend
that is no file system says so with ``is_real_fs = False`` (its paths are then never shown
or resolved).
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

__all__ = [
    "DEFAULT_LOCK_TIMEOUT",
    "AppendingWriter",
    "FileStat",
    "SessionStorage",
    "SessionStorageWriter",
    "whole_lines",
]

#: How long `SessionStorage.lock` waits by default (seconds).
DEFAULT_LOCK_TIMEOUT = 10.0


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
        self, path: str, timeout: float = DEFAULT_LOCK_TIMEOUT, shared: bool = False
    ) -> AbstractContextManager[None]:
        """An advisory lock for ``path`` (context manager); raises ``LockTimeoutError``."""
        ...


def whole_lines(data: bytes) -> bytes:
    """``data`` ending in a newline (one is added when missing), as appends write it."""
    data = bytes(data)
    if data and not data.endswith(b"\n"):
        data += b"\n"
    return data


class AppendingWriter:
    """A :class:`SessionStorageWriter` for a backend whose ``append(path, data)`` is already
    durable when it returns (memory, a database): each line is one append, the first failure
    is kept and raised again by every later call, flush and fsync have nothing left to do.
    A backend that writes otherwise overrides `_append` (and `fsync`, `close`)."""

    def __init__(self, storage: Any, path: str) -> None:
        self.path = path
        self._storage = storage
        self._error: BaseException | None = None
        self._closed = False

    def _append(self, data: bytes) -> None:
        self._storage.append(self.path, data)

    def _latch(self, exc: BaseException) -> None:
        if self._error is None:
            self._error = exc

    def write_line(self, data: bytes) -> None:
        if self._error is not None:
            raise self._error
        if self._closed:
            raise ValueError(f"writer for {self.path} is closed")
        try:
            self._append(whole_lines(data))
        except Exception as exc:
            self._latch(exc)
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
