"""Lock files: where they live and how one is opened (sessiontree's own directory, never the agent's)."""

from __future__ import annotations

import errno
import hashlib
import os
import stat as stat_module

__all__ = ["lock_dir", "lock_file_path", "open_lock_file"]


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


def open_lock_file(path: str) -> int:
    """A descriptor of the lock file of ``path`` (created, with its directory, when missing)."""
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
