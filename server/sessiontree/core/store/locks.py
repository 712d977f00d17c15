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
    xdg = os.environ.get("XDG_CACHE_HOME")
    if env and not os.path.isabs(env):
        return os.path.abspath(env)  # (relative to the working directory as it is now)
    home = os.environ.get("HOME")
    key = (env, xdg, home)
    got = _LOCK_DIRS.get(key)
    if got is None:
        got = _lock_dir(env, xdg)
        if len(_LOCK_DIRS) >= _MEMO_MAX:
            _LOCK_DIRS.clear()
        _LOCK_DIRS[key] = got
    return got


def _lock_dir(env: str | None, xdg: str | None) -> str:
    if env:
        return os.path.abspath(env)
    base = xdg if xdg and os.path.isabs(xdg) else os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "sessiontree", "locks")


# Every append takes the session's lock, so the lock's name is kept between appends: the
# lock directory by the environment it comes from (`lock_dir`; a relative
# `$SESSIONTREE_LOCK_DIR` is resolved every time), and a directory's real
# path by its device and inode now (a directory that is another one now, a symlink pointed
# elsewhere, is resolved again; about 2 us instead of 25 for the whole name).
_MEMO_MAX = 1024
_LOCK_DIRS: dict[tuple[str | None, str | None, str | None], str] = {}
_REAL_DIRS: dict[str, tuple[int, int, str]] = {}
_NAMES: dict[tuple[str, str, str], str] = {}


def _real_dir(directory: str) -> str:
    try:
        st = os.stat(directory)
    except (OSError, ValueError):
        st = None
    if st is not None:
        got = _REAL_DIRS.get(directory)
        if got is not None and got[0] == st.st_dev and got[1] == st.st_ino:
            return got[2]
    try:
        real = os.path.realpath(directory)
    except (OSError, ValueError):
        return directory
    if st is not None:
        if len(_REAL_DIRS) >= _MEMO_MAX:
            _REAL_DIRS.clear()
        _REAL_DIRS[directory] = (st.st_dev, st.st_ino, real)
    return real


def lock_file_path(path: str) -> str:
    """The lock file of ``path``: ``<lock dir>/<sha256 of its canonical path>.lock``.

    The key is the real path of the file's directory plus its name, so two names of the
    same directory (a symlinked project) share one lock, and a rename over the file (an
    atomic rewrite) keeps it.
    """
    directory, base = os.path.split(os.path.abspath(path))
    directory = _real_dir(directory)
    where = lock_dir()
    key = (where, directory, base)
    name = _NAMES.get(key)
    if name is None:
        digest = hashlib.sha256(os.path.join(directory, base).encode("utf-8", "surrogateescape")).hexdigest()
        name = os.path.join(where, digest[:40] + ".lock")
        if len(_NAMES) >= _MEMO_MAX:
            _NAMES.clear()
        _NAMES[key] = name
    return name


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
