"""Content-addressed copies of files, in sessiontree's data directory.

Two uses, one store: the daemon's snapshots of the files the agent touches while it follows
a live session (each call's result seen appended: the file as the call left it, so a later
restore is exact even after commands), and the backups a restore keeps of every file it
changes (`apply.py`). The store lives in ``$SESSIONTREE_DATA_DIR``, else
``$XDG_DATA_HOME/sessiontree``, else ``~/.local/share/sessiontree`` (``checkpoints/``): never
in the user's repository or the agent's directories. Blobs are named by their SHA-256 and
checked when read; the per-session index is a JSONL file appended line by line (a torn last
line is skipped). Files are 0600, directories 0700: they hold the user's code.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterable, Mapping
from typing import Any

import orjson

from .atomic import fsync_dirs, prepare_many, write_atomic

__all__ = ["DATA_DIR_ENV", "SNAPSHOT_MAX_BYTES", "SnapshotStore", "data_dir", "sha256"]

DATA_DIR_ENV = "SESSIONTREE_DATA_DIR"
#: Files larger than this are not snapshotted (a restore of them stays as the replay knows).
SNAPSHOT_MAX_BYTES = 8 * 1024 * 1024


def data_dir() -> str:
    """sessiontree's data directory (not the agents')."""
    env = os.environ.get(DATA_DIR_ENV)
    if env:
        return os.path.abspath(os.path.expanduser(env))
    xdg = os.environ.get("XDG_DATA_HOME")
    base = xdg if xdg and os.path.isabs(xdg) else os.path.join(os.path.expanduser("~"), ".local", "share")
    return os.path.join(base, "sessiontree")


def sha256(data: bytes) -> str:
    """The hex SHA-256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


class SnapshotStore:
    """Blobs by hash and, per session file, which entry saw which file in which state."""

    def __init__(self, root: str | None = None) -> None:
        self.root = root or os.path.join(data_dir(), "checkpoints")
        """The store's directory."""

    # -- blobs -----------------------------------------------------------------------------
    def _blob_path(self, digest: str) -> str:
        return os.path.join(self.root, "blobs", digest[:2], digest)

    def put(self, data: bytes) -> str:
        """Keep ``data``; its hash."""
        digest = sha256(data)
        path = self._blob_path(digest)
        if not os.path.exists(path):
            os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
            write_atomic(path, data)
        return digest

    def put_many(self, datas: list[bytes]) -> list[str]:
        """Keep each of ``datas`` (durably, before returning); their hashes."""
        digests = [sha256(d) for d in datas]
        todo: dict[str, bytes] = {}
        for digest, data in zip(digests, datas, strict=True):
            path = self._blob_path(digest)
            if digest not in todo and not os.path.exists(path):
                os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
                todo[digest] = data
        paths = [self._blob_path(d) for d in todo]
        temps = prepare_many([(p, data, 0o600) for p, data in zip(paths, todo.values(), strict=True)])
        for tmp, path in zip(temps, paths, strict=True):
            os.replace(tmp, path)
        fsync_dirs([os.path.dirname(p) for p in paths])
        return digests

    def get(self, digest: str) -> bytes | None:
        """The blob, or None when missing or damaged (its hash is checked)."""
        if len(digest) != 64 or not all(c in "0123456789abcdef" for c in digest):
            return None
        try:
            with open(self._blob_path(digest), "rb") as f:
                data = f.read()
        except OSError:
            return None
        return data if sha256(data) == digest else None

    # -- per-session index -----------------------------------------------------------------
    def _index_path(self, session_file: str) -> str:
        key = sha256(os.path.realpath(session_file).encode("utf-8", "surrogateescape"))[:32]
        return os.path.join(self.root, "sessions", key + ".jsonl")

    def record(self, session_file: str, rows: Iterable[Mapping[str, Any]]) -> None:
        """Append index rows ``{entry, path, sha}`` (``sha`` None: the file was absent)."""
        data = b"".join(orjson.dumps(dict(r)) + b"\n" for r in rows)
        if not data:
            return
        path = self._index_path(session_file)
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)

    def index(self, session_file: str) -> dict[tuple[str, str], str | None]:
        """``(entry_id, path) -> sha`` (None: absent) for a session file."""
        out: dict[tuple[str, str], str | None] = {}
        try:
            with open(self._index_path(session_file), "rb") as f:
                lines = f.read().splitlines()
        except OSError:
            return out
        for line in lines:
            try:
                row = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            if (
                isinstance(row, dict)
                and isinstance(row.get("entry"), str)
                and isinstance(row.get("path"), str)
            ):
                sha = row.get("sha")
                out[(row["entry"], row["path"])] = sha if isinstance(sha, str) else None
        return out

    def contents(self, session_file: str) -> dict[tuple[str, str], str | None]:
        """The snapshots of a session as ``(entry_id, path) -> text`` (None: absent); blobs
        missing, damaged or not UTF-8 are left out."""
        out: dict[tuple[str, str], str | None] = {}
        for key, digest in self.index(session_file).items():
            if digest is None:
                out[key] = None
                continue
            data = self.get(digest)
            if data is None:
                continue
            try:
                out[key] = data.decode("utf-8")
            except UnicodeDecodeError:
                continue
        return out

    def capture(self, session_file: str, entry_id: str, paths: Iterable[str]) -> int:
        """Snapshot ``paths`` as they are now, for ``entry_id``; how many were taken.
        A file that cannot be read as a regular file of at most SNAPSHOT_MAX_BYTES is skipped."""
        rows = []
        for path in paths:
            try:
                fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOFOLLOW)
            except FileNotFoundError:
                rows.append({"entry": entry_id, "path": path, "sha": None})
                continue
            except OSError:
                continue
            try:
                st = os.fstat(fd)
                if not stat.S_ISREG(st.st_mode) or st.st_size > SNAPSHOT_MAX_BYTES:
                    continue
                with os.fdopen(os.dup(fd), "rb") as f:
                    data = f.read(SNAPSHOT_MAX_BYTES + 1)
            except OSError:
                continue
            finally:
                os.close(fd)
            if len(data) > SNAPSHOT_MAX_BYTES:
                continue
            rows.append({"entry": entry_id, "path": path, "sha": self.put(data)})
        self.record(session_file, rows)
        return len(rows)
