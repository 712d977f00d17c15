"""A raw LSP client over a subprocess's stdin/stdout that can send any bytes.

Used to send malformed framing and bodies that a real client library would refuse to
produce. A reader thread parses the server's framed output into a queue.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import subprocess
import sys
import threading
import time
from typing import Any


class RawLsp:
    """The real daemon (`python -m sessiontree serve`) driven over raw bytes."""

    def __init__(self, env: dict[str, str] | None = None, args: list[str] | None = None) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "sessiontree", "serve", *(args or [])],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, **(env or {})},
        )
        self.messages: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.stderr_chunks: list[bytes] = []
        self._next_id = 1_000_000
        self.notifications: list[dict[str, Any]] = []
        self.backlog: list[dict[str, Any]] = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._drain_stderr, daemon=True).start()

    # ------------------------------------------------------------------ io
    def _drain_stderr(self) -> None:
        assert self.proc.stderr is not None
        for chunk in iter(lambda: self.proc.stderr.read1(65536), b""):  # type: ignore[union-attr]
            self.stderr_chunks.append(chunk)

    def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        try:
            while True:
                length = None
                while True:
                    header = out.readline()
                    if not header:
                        return
                    if header in (b"\r\n", b"\n"):
                        break
                    name, _, value = header.decode("ascii").partition(":")
                    if name.strip().lower() == "content-length":
                        length = int(value.strip())
                assert length is not None, "server sent a message without Content-Length"
                body = out.read(length)
                self.messages.put(json.loads(body))
        finally:
            self.messages.put(None)

    def stderr(self) -> str:
        return b"".join(self.stderr_chunks).decode(errors="replace")

    def write(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    @staticmethod
    def frame(body: bytes) -> bytes:
        return b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body

    def send(self, obj: Any) -> None:
        self.write(self.frame(json.dumps(obj).encode()))

    def next_id(self) -> int:
        self._next_id += 1
        return self._next_id

    # ------------------------------------------------------------------ requests
    def wait_for(self, pred: Any, timeout: float = 10.0) -> dict[str, Any]:
        """The next message matching `pred`; others are kept for later calls."""
        for i, kept in enumerate(self.backlog):
            if pred(kept):
                return self.backlog.pop(i)
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no matching message within {timeout}s; stderr:\n{self.stderr()[-3000:]}")
            try:
                msg = self.messages.get(timeout=left)
            except queue.Empty:
                continue
            if msg is None:
                raise EOFError(f"the server closed its output; stderr:\n{self.stderr()[-3000:]}")
            if "method" in msg and "id" not in msg:
                self.notifications.append(msg)
            elif "method" in msg and "id" in msg:
                # a server->client request: answer with null so the server is not left waiting
                self.send({"jsonrpc": "2.0", "id": msg["id"], "result": None})
            if pred(msg):
                return msg
            if "id" in msg and "method" not in msg:
                self.backlog.append(msg)

    def response(self, rid: Any, timeout: float = 10.0) -> dict[str, Any]:
        return self.wait_for(lambda m: "method" not in m and m.get("id") == rid, timeout)

    def request(self, method: str, params: Any = None, timeout: float = 10.0) -> dict[str, Any]:
        rid = self.next_id()
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        return self.response(rid, timeout)

    def initialize(self, options: dict[str, Any] | None = None, root: str | None = None) -> dict[str, Any]:
        params: dict[str, Any] = {"processId": os.getpid(), "capabilities": {}, "rootUri": None}
        if root:
            params["workspaceFolders"] = [{"uri": "file://" + root, "name": "root"}]
        if options is not None:
            params["initializationOptions"] = options
        res = self.request("initialize", params)
        self.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        return res

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(Exception):
                rid = self.next_id()
                self.send({"jsonrpc": "2.0", "id": rid, "method": "shutdown"})
                self.response(rid, timeout=5)
                self.send({"jsonrpc": "2.0", "method": "exit"})
                self.proc.wait(timeout=5)
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=5)
        for s in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            with contextlib.suppress(Exception):
                s.close()  # type: ignore[union-attr]
