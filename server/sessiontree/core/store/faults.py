"""`FaultInjectingStorage`: any storage, with chosen operations made to fail (for tests).

Error handling (the manager's latched persistence error, the daemon's answers) is tested
on real files this way, without mocks.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass

from .protocol import DEFAULT_LOCK_TIMEOUT, FileStat, SessionStorage, SessionStorageWriter

__all__ = ["Fault", "FaultInjectingStorage"]


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
        self, path: str, timeout: float = DEFAULT_LOCK_TIMEOUT, shared: bool = False
    ) -> AbstractContextManager[None]:
        self.check("lock", path)
        return self.inner.lock(path, timeout, shared)
