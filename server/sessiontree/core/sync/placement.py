"""Where a shared session's local copy goes: the one place a store row becomes a local path.

Everything a row of ``sessions`` says is written by whoever pushed it, and a teammate can
write it by hand: ``file_name`` may be ``../../../../outside/x.sh`` or an absolute path, the
``cwd`` anything. Before `Syncer.fetch` creates a file, the row goes through here:

* the file name must be a plain name: no separator, no ``..``, not hidden, no NUL or other
  control character, at most 255 bytes, ending in ``.jsonl`` (`copy_name`);
* the sessions directory comes from the row's cwd only when that is an absolute path free
  of control characters (else from the current directory), and its real path must lie in
  the agent's sessions directory (`copy_path`);
* the file is created through the sync's access guard (`core/store/guard.py`): the
  directories from the sessions root down are opened without following a link, and the new
  file appears only where nothing was (`create_copy`: a temporary file linked to its name,
  which fails on any existing name, a symlink included).
"""

from __future__ import annotations

import os
import re
import secrets

from ..errors import AccessDeniedError
from ..paths import get_default_session_dir
from ..store.guard import RootsGuard

__all__ = ["RefusedRow", "copy_dir", "copy_name", "copy_path", "create_copy"]

#: C0 controls, DEL and C1 controls: never part of a name or a cwd used here.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")

#: NAME_MAX of the usual file systems, in bytes.
_NAME_MAX = 255


class RefusedRow(ValueError):
    """A store row this machine will not turn into a local file (the reason says why)."""


def copy_name(file_name: str | None, session_id: str) -> str:
    """The local file name of a shared session: the row's ``file_name`` (else
    ``<session id>.jsonl``) when it is a plain ``*.jsonl`` name; `RefusedRow` otherwise."""
    name = file_name if file_name else f"{session_id}.jsonl"
    shown = repr(name)
    if _CONTROL.search(name):
        raise RefusedRow(f"the store's file name {shown} holds a control character")
    if "/" in name or "\\" in name:
        raise RefusedRow(f"the store's file name {shown} is not a plain name (it holds a path separator)")
    if ".." in name or name.startswith("."):
        raise RefusedRow(f"the store's file name {shown} is not a plain name (a dot name or '..')")
    if not name.endswith(".jsonl") or name == ".jsonl":
        raise RefusedRow(f"the store's file name {shown} is no session file name (*.jsonl)")
    if len(name.encode("utf-8", "surrogateescape")) > _NAME_MAX:
        raise RefusedRow(f"the store's file name is longer than {_NAME_MAX} bytes")
    return name


def copy_dir(cwd: str | None, agent_dir: str | None, fallback_cwd: str) -> str:
    """The sessions directory a copy goes to: that of the row's ``cwd`` (an absolute path
    without control characters), else that of ``fallback_cwd``."""
    usable = isinstance(cwd, str) and cwd.startswith("/") and not _CONTROL.search(cwd)
    return get_default_session_dir(cwd if usable and cwd else fallback_cwd, agent_dir)


def copy_path(file_name: str | None, session_id: str, sessions_root: str, sessions_dir: str) -> str:
    """The path of the local copy: ``sessions_dir`` / `copy_name`, refused (`RefusedRow`) when
    the directory's real path is not inside ``sessions_root``'s or the name is a link."""
    name = copy_name(file_name, session_id)
    root = os.path.realpath(sessions_root)
    directory = os.path.abspath(sessions_dir)
    real_dir = os.path.realpath(directory)
    if real_dir != root and not real_dir.startswith(root.rstrip("/") + "/"):
        raise RefusedRow(f"{directory} is not inside the agent's sessions directory {root}")
    path = os.path.join(directory, name)
    if os.path.lexists(path) and os.path.realpath(path) != os.path.join(real_dir, name):
        raise RefusedRow(f"{path} is a link")
    return path


def create_copy(guard: RootsGuard, path: str, data: bytes) -> None:
    """Create ``path`` holding ``data`` (fsynced), through ``guard``: its directories are made
    and opened without following links, and the file appears only where no name was
    (``FileExistsError`` otherwise, whatever that name is)."""
    directory, name = os.path.split(path)
    try:
        dfd = guard.open_dir(directory, create=True)
    except AccessDeniedError as exc:
        raise RefusedRow(str(exc)) from exc
    try:
        tmp = f".{name}.{os.getpid()}-{secrets.token_hex(4)}.tmp"
        fd = os.open(
            tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | os.O_NOFOLLOW, 0o666, dir_fd=dfd
        )
        try:
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                os.fsync(fd)
            finally:
                os.close(fd)
            # A hard link never replaces a name: the copy appears only where none was.
            os.link(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd, follow_symlinks=False)
        finally:
            try:
                os.unlink(tmp, dir_fd=dfd)
            except FileNotFoundError:
                pass
        try:
            os.fsync(dfd)
        except OSError:
            pass
    finally:
        os.close(dfd)
