"""Where the sync keeps its place: one small JSON file per local session file, in a
directory per (store, machine) under sessiontree's own state directory (never in an agent's
directory), each rewritten atomically after every step.

Per local file: the identity it was read with (inode), ``offset`` (the bytes confirmed: each
line before it is in the store, and everything the store held up to ``pulled_seq`` is in the
file), ``pushed_to`` (how far the current round's push got, so a crash resumes there) and
the store's key of the session. One file per session keeps a save cheap however many
sessions a machine has, and lets two sync processes on one machine (a `sync --watch` and a
`sync` by hand) never overwrite each other's marks; the round itself is serialized per file
by the engine's lock.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass

__all__ = ["FileMark", "SyncState", "default_state_path"]


@dataclass
class FileMark:
    """The high-water marks of one local file."""

    session_id: str
    pk: int
    inode: int
    offset: int = 0
    pushed_to: int = 0
    pulled_seq: int = 0
    #: The hash (hex) of the row at ``pulled_seq`` as pulled: a next round that finds it
    #: gone or different knows the store's rows changed under this machine.
    pulled_hash: str = ""


def default_state_path(url: str, machine: str) -> str:
    """``$XDG_STATE_HOME/sessiontree/sync/<digest of store and machine>/``."""
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    digest = hashlib.sha256(f"{url}\0{machine}".encode()).hexdigest()[:16]
    return os.path.join(base, "sessiontree", "sync", digest)


def _name(path: str) -> str:
    return hashlib.sha256(path.encode("utf-8", "surrogateescape")).hexdigest()[:32] + ".json"


class SyncState:
    """The marks of every file this machine syncs with one store (a directory of them)."""

    def __init__(self, directory: str) -> None:
        self.dir = directory
        self.files: dict[str, FileMark] = {}
        try:
            names = os.listdir(directory)
        except (FileNotFoundError, NotADirectoryError):
            names = []
        for name in names:
            if not name.endswith(".json"):
                continue
            loaded = self._read(os.path.join(directory, name))
            if loaded is not None:
                self.files[loaded[0]] = loaded[1]

    @staticmethod
    def _read(file: str) -> tuple[str, FileMark] | None:
        try:
            with open(file, encoding="utf-8") as f:
                raw = json.load(f)
            return str(raw["path"]), FileMark(**raw["mark"])
        except (OSError, ValueError, TypeError, KeyError):
            # A damaged mark costs a full read of its file, never a lost or doubled entry.
            return None

    def get(self, path: str) -> FileMark | None:
        """The mark of ``path`` as saved (read again: another process may have moved it)."""
        loaded = self._read(os.path.join(self.dir, _name(path)))
        if loaded is None or loaded[0] != path:
            self.files.pop(path, None)
            return None
        self.files[path] = loaded[1]
        return loaded[1]

    def set(self, path: str, mark: FileMark) -> None:
        self.files[path] = mark
        os.makedirs(self.dir, exist_ok=True)
        target = os.path.join(self.dir, _name(path))
        tmp = f"{target}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump({"path": path, "mark": asdict(mark)}, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)

    def drop(self, path: str) -> None:
        self.files.pop(path, None)
        try:
            os.unlink(os.path.join(self.dir, _name(path)))
        except FileNotFoundError:
            pass
