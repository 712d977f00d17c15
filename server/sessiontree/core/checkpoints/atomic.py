"""Writing a file so that a crash leaves the old one or the new one, never a part."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

__all__ = ["NEW_FILE_MODE", "fsync_dir", "fsync_dirs", "prepare_many", "tmp_prefix", "write_atomic"]


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


#: The mode of a file a restore creates: 0666 less the umask (read once, at import, before
#: any thread could race another umask call).
NEW_FILE_MODE = 0o666 & ~_umask()


def fsync_dir(path: str) -> None:
    """Make a rename or unlink in ``path`` durable."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def tmp_prefix(path: str) -> str:
    """The name a temporary file for ``path`` starts with (a crash may leave one)."""
    return f".{os.path.basename(path)}.sessiontree-"


def write_atomic(path: str, data: bytes, mode: int = 0o600) -> None:
    """``data`` as ``path`` with ``mode``: a temporary file beside it, fsynced, renamed over
    it, the directory fsynced; a reader sees the old file or the new one, never a part."""
    tmp = _write_temp(path, data, mode)
    try:
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
    fsync_dir(os.path.dirname(path) or ".")


#: fsync calls made at once: the file system commits them together, so many files cost
#: about as much as a few (the GIL is released while a thread waits in fsync).
_FSYNC_THREADS = 8


def _write_temp(path: str, data: bytes, mode: int) -> str:
    d = os.path.dirname(path) or "."
    tmp = os.path.join(d, f"{tmp_prefix(path)}{os.getpid()}-{os.urandom(4).hex()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    try:
        os.fchmod(fd, mode)
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        os.unlink(tmp)
        raise
    os.close(fd)
    return tmp


def prepare_many(items: list[tuple[str, bytes, int]]) -> list[str]:
    """Each ``(path, data, mode)`` written to a durable temporary file beside ``path`` (in
    parallel); the temporary names, in order. `os.replace` each over its path, then
    `fsync_dirs`, to finish; a crash before leaves the paths as they were."""
    if not items:
        return []
    with ThreadPoolExecutor(min(_FSYNC_THREADS, len(items))) as pool:
        futures = [pool.submit(_write_temp, p, d, m) for p, d, m in items]
        done: list[str] = []
        error: BaseException | None = None
        for f in futures:
            try:
                done.append(f.result())
            except BaseException as exc:
                error = error or exc
    if error is not None:
        for tmp in done:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        raise error
    return done


def fsync_dirs(dirs: list[str]) -> None:
    """`fsync_dir` of each directory (in parallel)."""
    unique = sorted(set(dirs))
    if len(unique) <= 1:
        for d in unique:
            fsync_dir(d)
        return
    with ThreadPoolExecutor(min(_FSYNC_THREADS, len(unique))) as pool:
        list(pool.map(fsync_dir, unique))
