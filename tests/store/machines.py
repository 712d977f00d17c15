"""Two "machines" for the sync tests: each an agent directory and a sync state of its own,
both talking to one store; plain file writers stand in for the agent."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from sessiontree.core.session import SessionManager
from sessiontree.core.store.postgres import PostgresSessionStorage
from sessiontree.core.sync import Syncer, SyncOptions

CWD = "/work/project"
SESSION_ID = "0193c0de-0000-7000-8000-000000000001"


def header(session_id: str = SESSION_ID, cwd: str = CWD) -> dict[str, Any]:
    return {
        "type": "session",
        "version": 3,
        "id": session_id,
        "timestamp": "2026-01-01T00:00:00.000Z",
        "cwd": cwd,
    }


def message(ident: str, parent: str | None, text: str, role: str = "user") -> dict[str, Any]:
    return {
        "type": "message",
        "id": ident,
        "parentId": parent,
        "timestamp": "2026-01-01T00:00:01.000Z",
        "message": {"role": role, "content": [{"type": "text", "text": text}], "timestamp": 1767225601000},
    }


class Machine:
    """One machine: ``agent_dir``, its sessions dir for ``CWD``, its sync state."""

    def __init__(self, base: Path, name: str, url: str) -> None:
        self.name = name
        self.url = url
        self.agent_dir = base / name / "agent"
        self.sessions = self.agent_dir / "sessions" / "--work-project--"
        self.sessions.mkdir(parents=True)
        self.state = str(base / name / "sync-state")

    def syncer(self, options: SyncOptions | None = None) -> Syncer:
        storage = PostgresSessionStorage(self.url, machine=self.name)
        return Syncer(storage, agent_dir=str(self.agent_dir), options=options, state_path=self.state)

    def sync(self, options: SyncOptions | None = None) -> list[Any]:
        s = self.syncer(options)
        try:
            return s.sync_files(s.sessions_of([str(self.agent_dir / "sessions")]))
        finally:
            s.store.close()

    def write(self, path: Path, *values: dict[str, Any]) -> None:
        """A plain writer, as the agent appends: whole lines, O_APPEND."""
        with open(path, "ab") as f:
            f.write(b"".join(json.dumps(v).encode() + b"\n" for v in values))

    def cli(self, *args: str, env: dict[str, str] | None = None, **kw: Any) -> subprocess.Popen[str]:
        full = dict(os.environ)
        full.update({"PI_CODING_AGENT_DIR": str(self.agent_dir), "SESSIONTREE_STORE": self.url})
        full.update(env or {})
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "sessiontree",
                "sync",
                "--all",
                "--machine",
                self.name,
                "--state",
                self.state,
                *args,
            ],
            env=full,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            **kw,
        )

    def run_cli(self, *args: str, timeout: float = 120, env: dict[str, str] | None = None) -> tuple[int, str]:
        p = self.cli(*args, env=env)
        out, err = p.communicate(timeout=timeout)
        return p.returncode, out + err


def ids_in(path: Path) -> list[str]:
    """The entry ids of a file in file order (the header left out)."""
    out = []
    for line in path.read_bytes().splitlines():
        try:
            v = json.loads(line)
        except ValueError:
            continue
        if isinstance(v, dict) and v.get("type") != "session" and isinstance(v.get("id"), str):
            out.append(v["id"])
    return out


def loads_cleanly(path: Path) -> SessionManager:
    """The file opened read-only; asserts the loader dropped nothing."""
    sm = SessionManager.open(str(path), read_only=True)
    assert not sm.load_report.recovered, f"{path}: the loader dropped lines: {sm.load_report.dropped}"
    return sm
