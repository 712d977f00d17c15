"""The session files of a directory, opened for reading through the guard (never written)."""

from __future__ import annotations

import os
import stat

from ..errors import AccessDeniedError
from ..store.guard import PathGuard

__all__ = ["list_jsonl", "open_listed", "read_fd"]


def list_jsonl(
    directory: str, recursive: bool = False, guard: PathGuard | None = None
) -> list[tuple[str, os.stat_result]]:
    out: list[tuple[str, os.stat_result]] = []
    if guard is not None and not guard.accept(directory):
        return out
    if recursive:
        for root, _dirs, files in os.walk(directory):
            for name in files:
                if name.endswith(".jsonl"):
                    p = os.path.join(root, name)
                    try:
                        st = os.stat(p)
                    except OSError:
                        continue
                    out.append((p, st))
        return out
    try:
        it = os.scandir(directory)
    except OSError:
        return out
    with it:
        for de in it:
            if de.name.endswith(".jsonl"):
                try:
                    if not de.is_file():
                        continue
                    out.append((de.path, de.stat()))
                except OSError:
                    continue
    return out


def open_listed(path: str, guard: PathGuard | None) -> tuple[int, os.stat_result] | None:
    """A descriptor of a listed file and its ``fstat`` (None: gone, refused or not a file).

    O_NONBLOCK: a FIFO named ``*.jsonl`` must not block the open forever.
    """
    try:
        if guard is not None:
            fd = guard.open(path, os.O_RDONLY | os.O_NONBLOCK)
        else:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except (OSError, AccessDeniedError):
        return None
    try:
        st = os.fstat(fd)
    except OSError:
        os.close(fd)
        return None
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        return None
    return fd, st


def read_fd(fd: int, limit: int | None = None) -> bytes:
    with os.fdopen(fd, "rb") as f:
        return f.read() if limit is None else f.read(limit)
