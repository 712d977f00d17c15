"""Access control: which paths the daemon may read and write (allowedRoots).

Every path a client gives (`session/open`, `forkFrom.sourcePath`, `sessionDir`, `cwd` of a
create) is resolved with symlinks followed and must land inside one of the allowed roots
(themselves resolved). An existing session path must be a regular file with a single
name (no other hard link, which could lie outside the roots). A symlink that points
outside every root is refused even when the link itself lies inside one.

These checks answer a request; the reads and writes that follow are checked again at each
use by the policy's :attr:`AccessPolicy.guard` (a `core.guard.RootsGuard` over the same
roots), which the daemon's file storage, live following and listings go through, so a path
swapped for a link after the check is refused too (docs/reliability.md, "Access at the
point of use").
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path

from sessiontree.core.store.guard import RootsGuard
from sessiontree.lsp.errors import AccessDenied


def _resolve(path: str | os.PathLike[str]) -> Path:
    return Path(os.path.realpath(os.path.expanduser(os.fspath(path))))


class AccessPolicy:
    """The allowed roots and the checks made against them."""

    def __init__(self, roots: Iterable[str | os.PathLike[str]]) -> None:
        self.guard = RootsGuard(os.path.expanduser(os.fspath(r)) for r in roots if r)
        """The same roots checked at every read and write (`core.guard.PathGuard`)."""
        self.roots: list[Path] = [Path(r) for r in self.guard.roots]

    def _inside(self, p: Path) -> bool:
        return self.guard.inside(str(p))

    def _deny(self, path: str | os.PathLike[str], why: str) -> AccessDenied:
        return AccessDenied(
            f"Access denied: {os.fspath(path)} {why}", {"path": os.fspath(path), "reason": why}
        )

    def _raw(self, path: str | os.PathLike[str]) -> str:
        raw = os.path.expanduser(os.fspath(path))
        if "\x00" in raw:
            # the kernel cannot take such a name (Python raises ValueError), so it names nothing
            raise self._deny(path, "contains a NUL byte")
        return raw

    def check_file(self, path: str | os.PathLike[str]) -> Path:
        """An existing regular file inside a root (symlinks resolved); returns the resolved path."""
        raw = self._raw(path)
        if not os.path.isabs(raw):
            raise self._deny(path, "is not an absolute path")
        resolved = _resolve(raw)
        if not self._inside(resolved):
            via = " (through a symlink)" if resolved != Path(os.path.abspath(raw)) else ""
            raise self._deny(path, f"is outside the allowed roots{via}")
        try:
            st = os.stat(resolved)
        except FileNotFoundError:
            return resolved  # the open itself reports the missing file
        except OSError as exc:
            raise self._deny(path, f"cannot be inspected ({exc.strerror})") from None
        if not stat.S_ISREG(st.st_mode):
            kind = "a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file"
            raise self._deny(path, f"is {kind}")
        if st.st_nlink > 1:
            # Another name of the same file may lie outside every root (a hard link needs no
            # access to the target's directory), and appends would write through it.
            raise self._deny(path, f"has {st.st_nlink} hard links; only files with a single name are opened")
        return resolved

    def check_dir(self, path: str | os.PathLike[str]) -> Path:
        """A directory (existing or to be created) inside a root; returns the resolved path."""
        raw = self._raw(path)
        if not os.path.isabs(raw):
            raise self._deny(path, "is not an absolute path")
        resolved = _resolve(raw)
        if not self._inside(resolved):
            raise self._deny(path, "is outside the allowed roots")
        if resolved.exists() and not resolved.is_dir():
            raise self._deny(path, "is not a directory")
        return resolved
