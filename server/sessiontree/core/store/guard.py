"""Checked access to paths at the moment they are used: the allowed roots of a daemon.

A check made when a session is opened says nothing about later reads and writes: a path
(or one of its parent directories) can be swapped for a symlink to a file elsewhere, or a
hard link of another file can be renamed over it, while the session stays open. A
:class:`PathGuard` is asked at every use instead. It resolves what the path names *now*
and hands out a descriptor of that very file, so there is no gap between the check and the
open for another process to slip a link into:

* the directories from the allowed root down to the file are opened one by one with
  ``O_NOFOLLOW`` (``openat``), so no link is followed below the root; when a component is
  a link (a legitimate symlink inside the roots, or a swap), the path is resolved
  (``realpath``) and the walk starts again from the resolved path, which must lie inside
  a root;
* the file itself is opened relative to its directory with ``O_NOFOLLOW``, and the opened
  descriptor must be a regular file with a single name (``fstat``: ``S_ISREG``,
  ``st_nlink == 1``; another name could lie outside every root);
* writes that create, rename or delete (a temp file renamed over the target, a new session
  directory) work on directory descriptors from the same walk, so they land in the
  directory that was checked.

The core never decides who may read what: :class:`FileSessionStorage` and the readers of
``live``, ``discovery`` and the daemon take an optional guard (``None``: no checks, the
library's behaviour). :class:`RootsGuard` is the guard of a set of allowed roots; the
daemon's access policy (``sessiontree.lsp.access``) builds one.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterable
from typing import Protocol, runtime_checkable

from ..errors import AccessDeniedError

__all__ = ["PathGuard", "RootsGuard", "open_checked"]

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _CLOEXEC | _NOFOLLOW
#: How often a path that keeps changing under the walk is resolved again before the
#: access is refused (each round follows one more legitimate link or loses one race).
_ATTEMPTS = 6


@runtime_checkable
class PathGuard(Protocol):
    """Decides, at each use, whether a path may be read or written, and opens it.

    Every method raises :class:`AccessDeniedError` for a path that names something outside
    what the guard allows (through a symlink or a hard link included); ``OSError`` keeps its
    usual meaning (``FileNotFoundError`` for a missing file, ...).
    """

    def check(self, path: str) -> str:
        """The resolved path (symlinks followed) if it may be used; an existing file must be
        a regular file with one name."""
        ...

    def accept(self, path: str) -> bool:
        """True when :meth:`check` would pass (for filtering listings)."""
        ...

    def open(self, path: str, flags: int, mode: int = 0o666, *, make_dirs: bool = False) -> int:
        """A descriptor of the regular file ``path`` names now (``os.open`` flags; with
        ``make_dirs`` missing parent directories are created inside the roots)."""
        ...

    def open_dir(self, path: str, *, create: bool = False) -> int:
        """A descriptor of the directory ``path`` names now (``mkdir -p`` with ``create``)."""
        ...


def open_checked(guard: PathGuard | None, path: str, flags: int, mode: int = 0o666) -> int:
    """``guard.open`` with a guard, else a plain ``os.open`` (the library's behaviour)."""
    if guard is None:
        return os.open(path, flags | _CLOEXEC, mode)
    return guard.open(path, flags, mode)


class _Relink(Exception):
    """A component of the walk is a link (or was swapped meanwhile): resolve and retry."""

    def __init__(self, error: OSError) -> None:
        super().__init__(str(error))
        self.error = error


class RootsGuard:
    """A :class:`PathGuard` that allows what lies inside a set of directories.

    The roots are resolved once (``realpath``); a path is inside when its resolved form is
    a root or below one.
    """

    def __init__(self, roots: Iterable[str | os.PathLike[str]]) -> None:
        seen: dict[str, None] = {}
        for r in roots:
            if not r:
                continue
            seen.setdefault(os.path.realpath(os.path.expanduser(os.fspath(r))), None)
        self.roots: list[str] = list(seen)
        # The deepest root first: the walk below it is the shortest.
        self._by_depth = sorted(self.roots, key=len, reverse=True)

    # -- the rule ------------------------------------------------------------------------
    def inside(self, path: str) -> bool:
        """True when the (already resolved, absolute) ``path`` is a root or below one."""
        return self._root_of(path) is not None

    def _root_of(self, path: str) -> str | None:
        for r in self._by_depth:
            if path == r or path.startswith(r if r.endswith(os.sep) else r + os.sep):
                return r
        return None

    @staticmethod
    def deny(path: str, reason: str) -> AccessDeniedError:
        """The error of a refused path (``reason`` completes "Access denied: <path> ...")."""
        return AccessDeniedError(f"Access denied: {path} {reason}", path, reason)

    # -- checks without opening -------------------------------------------------------------
    def check(self, path: str) -> str:
        raw = os.fspath(path)
        if not os.path.isabs(raw):
            raise self.deny(raw, "is not an absolute path")
        absolute = os.path.abspath(raw)
        real = os.path.realpath(absolute)
        if not self.inside(real):
            via = " (through a symlink)" if real != absolute else ""
            raise self.deny(raw, f"is outside the allowed roots{via}")
        try:
            st = os.stat(real)
        except FileNotFoundError:
            return real
        except OSError as exc:
            raise self.deny(raw, f"cannot be inspected ({exc.strerror})") from None
        if stat.S_ISDIR(st.st_mode):
            return real
        self._check_identity(raw, st)
        return real

    def accept(self, path: str) -> bool:
        try:
            self.check(path)
        except (AccessDeniedError, OSError, ValueError):
            return False
        return True

    def _check_identity(self, path: str, st: os.stat_result) -> None:
        if not stat.S_ISREG(st.st_mode):
            raise self.deny(path, "is not a regular file")
        if st.st_nlink > 1:
            # Another name of the same file may lie outside every root (a hard link needs no
            # access to the target's directory), and writes would go through it.
            raise self.deny(path, f"has {st.st_nlink} hard links; only files with a single name are used")

    # -- opening -------------------------------------------------------------------------
    def open(self, path: str, flags: int, mode: int = 0o666, *, make_dirs: bool = False) -> int:
        raw = os.fspath(path)
        if not os.path.isabs(raw):
            raise self.deny(raw, "is not an absolute path")
        target = os.path.abspath(raw)
        flags |= _CLOEXEC | _NOFOLLOW
        last: OSError | None = None
        for _ in range(_ATTEMPTS):
            root = self._root_of(target)
            if root is None or target == root:
                target = self._resolved_inside(raw, target)
                root = self._root_of(target)
                if root is None or target == root:
                    raise self.deny(raw, "is a directory")
            directory, name = os.path.split(target)
            try:
                dfd = self._walk(root, directory, make_dirs)
            except _Relink as exc:
                last = exc.error
                target = self._resolved_inside(raw, target)
                continue
            try:
                fd = os.open(name, flags, mode, dir_fd=dfd)
            except OSError as exc:
                if exc.errno != errno.ELOOP:
                    raise
                last = exc
                target = self._resolved_inside(raw, target)
                continue
            finally:
                os.close(dfd)
            try:
                self._check_identity(raw, os.fstat(fd))
            except BaseException:
                os.close(fd)
                raise
            return fd
        raise self._gave_up(raw, last)

    def open_dir(self, path: str, *, create: bool = False) -> int:
        raw = os.fspath(path)
        if not os.path.isabs(raw):
            raise self.deny(raw, "is not an absolute path")
        target = os.path.abspath(raw)
        last: OSError | None = None
        for _ in range(_ATTEMPTS):
            root = self._root_of(target)
            if root is None:
                target = self._resolved_inside(raw, target)
                root = self._root_of(target)
                assert root is not None
            try:
                return self._walk(root, target, create)
            except _Relink as exc:
                last = exc.error
                target = self._resolved_inside(raw, target)
        raise self._gave_up(raw, last)

    def _resolved_inside(self, raw: str, target: str) -> str:
        """``target`` resolved now; it must lie inside a root."""
        real = os.path.realpath(target)
        if not self.inside(real):
            via = " (through a symlink)" if real != target else ""
            raise self.deny(raw, f"is outside the allowed roots{via}")
        return real

    def _gave_up(self, raw: str, last: OSError | None) -> BaseException:
        if last is not None and last.errno == errno.ENOTDIR:
            # The resolved path still has a component that is no directory: it names
            # nothing that can be opened (the error a plain open gives).
            return last
        return self.deny(raw, "kept changing while it was opened")

    def _walk(self, root: str, directory: str, create: bool) -> int:
        """A descriptor of ``directory`` (at or below ``root``), reached without links."""
        try:
            fd = os.open(root, _DIR_FLAGS)
        except FileNotFoundError:
            if not create:
                raise
            # An allowed root that does not exist yet (a fresh agent dir): make it.
            os.makedirs(root, exist_ok=True)
            fd = os.open(root, _DIR_FLAGS)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                raise _Relink(exc) from None
            raise
        rest = directory[len(root) :].strip(os.sep)
        try:
            for name in rest.split(os.sep) if rest else ():
                try:
                    nfd = os.open(name, _DIR_FLAGS, dir_fd=fd)
                except FileNotFoundError:
                    if not create:
                        raise
                    try:
                        os.mkdir(name, 0o777, dir_fd=fd)
                    except FileExistsError:
                        pass
                    try:
                        nfd = os.open(name, _DIR_FLAGS, dir_fd=fd)
                    except OSError as exc:
                        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                            raise _Relink(exc) from None
                        raise
                except OSError as exc:
                    # O_DIRECTORY | O_NOFOLLOW on a symlink fails with ENOTDIR (or ELOOP).
                    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                        raise _Relink(exc) from None
                    raise
                os.close(fd)
                fd = nfd
        except BaseException:
            os.close(fd)
            raise
        return fd
