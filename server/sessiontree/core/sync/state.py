"""Where the sync keeps its place: one JSON file per (store, machine) in sessiontree's own
state directory (never in an agent's directory), rewritten atomically after every step.

Per local file: the identity it was read with (inode), ``offset`` (the bytes confirmed: each
line before it is in the store, and everything the store held up to ``pulled_seq`` is in the
file), ``pushed_to`` (how far the current round's push got, so a crash resumes there) and
the store's key of the session.
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


def default_state_path(url: str, machine: str) -> str:
    """``$XDG_STATE_HOME/sessiontree/sync/<digest of store and machine>.json``."""
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    digest = hashlib.sha256(f"{url}\0{machine}".encode()).hexdigest()[:16]
    return os.path.join(base, "sessiontree", "sync", f"{digest}.json")


class SyncState:
    """The marks of every file this machine syncs with one store."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.files: dict[str, FileMark] = {}
        try:
            with open(path, encoding="utf-8") as f:
                raw = json.load(f)
            for name, mark in raw.get("files", {}).items():
                self.files[name] = FileMark(**mark)
        except FileNotFoundError:
            pass
        except (ValueError, TypeError):
            # A damaged state file costs a full rescan, never a lost or doubled entry.
            self.files = {}

    def get(self, path: str) -> FileMark | None:
        return self.files.get(path)

    def set(self, path: str, mark: FileMark) -> None:
        self.files[path] = mark
        self.save()

    def drop(self, path: str) -> None:
        if self.files.pop(path, None) is not None:
            self.save()

    def save(self) -> None:
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        tmp = f"{self.path}.{os.getpid()}.tmp"
        data = json.dumps({"files": {k: asdict(v) for k, v in self.files.items()}}, indent=0)
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
