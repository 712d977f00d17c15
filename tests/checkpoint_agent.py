"""Session files whose tool calls change a real working tree, for the checkpoint tests.

`Agent` plays a pi agent: each call is carried out on the disk as pi's tools do (its write,
its edit through the same rules, a real shell for bash) and written to the session file as pi
writes it (the assistant message with the call, then the tool result), so the tests compare
what the replay says against what really happened to the files.
"""

from __future__ import annotations

import itertools
import os
import subprocess
from typing import Any

import orjson
from sessiontree.core.checkpoints.textedit import EditFailed, apply_pi_edits

_USAGE = {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2, "cost": {"total": 0}}


def git_repo(path: str) -> str:
    """A real git working tree at ``path`` with one commit."""
    os.makedirs(path, exist_ok=True)
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }
    subprocess.run(["git", "init", "-q", path], check=True, env=env)
    with open(os.path.join(path, "README.md"), "w") as f:
        f.write("repo\n")
    subprocess.run(["git", "-C", path, "add", "-A"], check=True, env=env)
    subprocess.run(["git", "-C", path, "commit", "-qm", "init"], check=True, env=env)
    return path


def git_status(path: str) -> str:
    """``git status --porcelain`` of the tree."""
    return subprocess.run(
        ["git", "-C", path, "status", "--porcelain"], check=True, capture_output=True, text=True
    ).stdout


class Agent:
    """A pi agent working in ``cwd`` and writing ``session``."""

    def __init__(self, session: str, cwd: str) -> None:
        self.session = session
        self.cwd = cwd
        self.leaf: str | None = None
        self._n = itertools.count(1)
        header = {
            "type": "session",
            "version": 3,
            "id": "s1",
            "timestamp": "2026-01-01T00:00:00.000Z",
            "cwd": cwd,
        }
        with open(self.session, "wb") as f:
            f.write(orjson.dumps(header) + b"\n")

    def _id(self) -> str:
        return f"e{next(self._n):04d}"

    def _ts(self) -> str:
        return "2026-01-01T00:00:00.000Z"

    def _entry(self, message: dict[str, Any]) -> str:
        eid = self._id()
        line = {
            "type": "message",
            "id": eid,
            "parentId": self.leaf,
            "timestamp": self._ts(),
            "message": message,
        }
        with open(self.session, "ab") as f:  # appended line by line, as pi does
            f.write(orjson.dumps(line) + b"\n")
        self.leaf = eid
        return eid

    def at(self, entry_id: str | None) -> Agent:
        """Go on from ``entry_id`` (a branch)."""
        self.leaf = entry_id
        return self

    def user(self, text: str) -> str:
        """A user message."""
        return self._entry({"role": "user", "content": text, "timestamp": 1})

    def _call(self, name: str, args: dict[str, Any], run: Any) -> str:
        cid = f"call-{next(self._n)}"
        self._entry(
            {
                "role": "assistant",
                "content": [{"type": "toolCall", "id": cid, "name": name, "arguments": args}],
                "api": "x",
                "provider": "x",
                "model": "x",
                "usage": _USAGE,
                "stopReason": "toolUse",
                "timestamp": 1,
            }
        )
        try:
            text, details = run()
            error = False
        except (OSError, EditFailed, RuntimeError) as exc:
            text, details, error = str(exc), None, True
        msg: dict[str, Any] = {
            "role": "toolResult",
            "toolCallId": cid,
            "toolName": name,
            "content": [{"type": "text", "text": text}],
            "isError": error,
            "timestamp": 1,
        }
        if details is not None:
            msg["details"] = details
        return self._entry(msg)

    def _abs(self, path: str) -> str:
        return path if os.path.isabs(path) else os.path.join(self.cwd, path)

    def write(self, path: str, content: str) -> str:
        """pi's write: the file becomes ``content`` (directories made)."""

        def run() -> tuple[str, None]:
            p = self._abs(path)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "w", encoding="utf-8", newline="") as f:
                f.write(content)
            return f"Successfully wrote to {path}", None

        return self._call("write", {"path": path, "content": content}, run)

    def edit(self, path: str, *pairs: tuple[str, str]) -> str:
        """pi's edit with ``edits: [{oldText, newText}]``."""

        def run() -> tuple[str, dict[str, Any]]:
            p = self._abs(path)
            with open(p, encoding="utf-8", newline="") as f:
                old = f.read()
            new = apply_pi_edits(old, list(pairs))
            with open(p, "w", encoding="utf-8", newline="") as f:
                f.write(new)
            return f"Successfully replaced {len(pairs)} block(s) in {path}.", {"diff": "…"}

        return self._call(
            "edit", {"path": path, "edits": [{"oldText": o, "newText": n} for o, n in pairs]}, run
        )

    def bash(self, command: str) -> str:
        """pi's bash, run for real in ``cwd``."""

        def run() -> tuple[str, None]:
            out = subprocess.run(command, shell=True, cwd=self.cwd, capture_output=True, text=True)
            if out.returncode:
                raise RuntimeError(out.stdout + out.stderr)
            return out.stdout, None

        return self._call("bash", {"command": command}, run)

    def read(self, path: str) -> str:
        """pi's read of a whole file."""

        def run() -> tuple[str, None]:
            with open(self._abs(path), encoding="utf-8", newline="") as f:
                return f.read(), None

        return self._call("read", {"path": path}, run)
