"""A small Python client of the sessiontree daemon (JSON-RPC with LSP framing over stdio or TCP).

Used by tests, benchmarks and scripts::

    from sessiontree.client import Client

    with Client.spawn(init_options={"allowedRoots": ["/tmp"]}) as c:
        opened = c.request("session/open", {"path": "/tmp/s.jsonl"})
        page = c.request("session/view", {"session": opened["session"], "limit": 200})
        note = c.wait_for_notification("session/didChange", timeout=5)

To a daemon started with `sessiontree serve --tcp HOST:PORT`, connect with the token it
printed the location of (`token=`, `token_file=`, else `$SESSIONTREE_TOKEN`)::

    with Client.connect_tcp("127.0.0.1", port, token_file=path, init_options={...}) as c:
        ...

Requests block until the answer comes (or use `request_future` for several in flight,
or `await client.arequest(...)` from asyncio code);
errors raise `RpcError` with `code`, `message` and `data`. Server notifications are
collected in `notifications` and can be awaited with `wait_for_notification`. Requests
the server sends (`window/workDoneProgress/create`) are answered with `null`.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import IO, Any

import orjson

from sessiontree.fdio import write_all

__all__ = ["Client", "RpcError", "decode_body"]

_DEEP_LOCK = threading.Lock()
_STACK_PER_LEVEL = 2048  # bytes of C stack per nesting level, generous for the stdlib decoder


def decode_body(body: bytes) -> Any:
    """Decode one message body.

    orjson refuses JSON nested deeper than 1024 levels (a `session/tree` result of a long
    linear session is that deep: two levels per entry) and a few escapes JSON allows (lone
    surrogates). Those bodies go to the stdlib decoder, run in a helper thread whose stack
    and recursion limit are sized from the body's bracket count, so any depth the daemon
    can send decodes (memory permitting) instead of ending the connection.
    """
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        pass
    levels = body.count(b"[") + body.count(b"{") + 100
    if levels < 900:
        return json.loads(body)
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            try:
                box["value"] = json.loads(body)
            except RecursionError:
                # Python 3.12+ caps the C decoder's recursion whatever the limits say.
                box["value"] = _py_loads(body)
        except BaseException as exc:  # handed to the reading thread
            box["error"] = exc

    with _DEEP_LOCK:  # the stack size is process-wide and read when a thread starts
        old_limit = sys.getrecursionlimit()
        old_stack = threading.stack_size()
        stack = max(old_stack, 32 << 20, (levels * _STACK_PER_LEVEL + (1 << 20)) & ~0xFFF)
        helper = threading.Thread(target=run, name="sessiontree-client-deep-json", daemon=True)
        sys.setrecursionlimit(max(old_limit, 3 * levels + 1000))
        try:
            threading.stack_size(stack)
            try:
                helper.start()
            finally:
                threading.stack_size(old_stack)
            helper.join()
        finally:
            sys.setrecursionlimit(old_limit)
    if "error" in box:
        raise box["error"]
    return box["value"]


def _fd_of(stream: IO[bytes]) -> int | None:
    """The descriptor under `stream` (flushed), or None for a stream without one."""
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):
        return None
    stream.flush()
    return fd


def _py_loads(body: bytes) -> Any:
    """The stdlib decoder with its pure-Python scanner: Python frames, no C recursion."""
    import json.scanner

    decoder = json.JSONDecoder()
    decoder.scan_once = json.scanner.py_make_scanner(decoder)  # type: ignore[attr-defined]
    return decoder.decode(body.decode("utf-8"))


class RpcError(Exception):
    """An error response: `code`, `message`, `data`."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.data = data


class Client:
    """A connection to a daemon process (spawned with `spawn`, or any pair of streams)."""

    def __init__(
        self, reader: IO[bytes], writer: IO[bytes], process: subprocess.Popen[bytes] | None = None
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._writer_fd = _fd_of(writer)
        self.process = process
        self._ids = itertools.count(1)
        self._pending: dict[Any, Future[Any]] = {}
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._cond = threading.Condition()
        self.notifications: list[tuple[str, Any]] = []
        """Every notification received, in order: (method, params)."""
        self.initialize_result: Any = None
        self._closed = False
        self._socket: Any = None
        self._thread = threading.Thread(target=self._read_loop, name="sessiontree-client", daemon=True)
        self._thread.start()

    # -- construction ------------------------------------------------------------------
    @classmethod
    def spawn(
        cls,
        command: Sequence[str] | None = None,
        *,
        init_options: dict[str, Any] | None = None,
        root: str | None = None,
        env: dict[str, str] | None = None,
        capabilities: dict[str, Any] | None = None,
        stderr: Any = None,
        initialize: bool = True,
    ) -> Client:
        """Start `sessiontree serve` (or `command`) and run the initialize handshake."""
        cmd = list(command) if command else [sys.executable, "-m", "sessiontree", "serve"]
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr if stderr is not None else subprocess.DEVNULL,
            env={**os.environ, **(env or {})},
        )
        assert proc.stdout is not None and proc.stdin is not None
        client = cls(proc.stdout, proc.stdin, proc)
        if initialize:
            client.initialize(init_options, root=root, capabilities=capabilities)
        return client

    @classmethod
    def connect_tcp(
        cls,
        host: str,
        port: int,
        *,
        token: str | None = None,
        token_file: str | os.PathLike[str] | None = None,
        init_options: dict[str, Any] | None = None,
        root: str | None = None,
        capabilities: dict[str, Any] | None = None,
        initialize: bool = True,
        timeout: float = 30,
    ) -> Client:
        """Connect to `sessiontree serve --tcp` and run the initialize handshake with the
        daemon's token: `token`, else the contents of `token_file`, else `$SESSIONTREE_TOKEN`."""
        import socket

        if token is None and token_file is not None:
            with open(token_file, encoding="utf-8") as f:
                token = f.read().strip()
        if token is None:
            token = os.environ.get("SESSIONTREE_TOKEN") or None
        sock = socket.create_connection((host, port), timeout=timeout)
        sock.settimeout(None)
        client = cls(sock.makefile("rb"), sock.makefile("wb"))
        client._socket = sock
        if initialize:
            options = dict(init_options or {})
            if token is not None:
                options["token"] = token
            try:
                client.initialize(options or None, root=root, capabilities=capabilities)
            except BaseException:
                client._close_socket()
                raise
        return client

    def _close_socket(self) -> None:
        import socket

        sock, self._socket = self._socket, None
        if sock is None:
            return
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        for stream in (self._writer, self._reader):
            try:
                stream.close()
            except OSError:
                pass
        sock.close()
        self._thread.join(5)

    def initialize(
        self,
        init_options: dict[str, Any] | None = None,
        *,
        root: str | None = None,
        capabilities: dict[str, Any] | None = None,
    ) -> Any:
        """`initialize` + `initialized`; returns the initialize result."""
        params: dict[str, Any] = {
            "processId": os.getpid(),
            "capabilities": capabilities or {"window": {"workDoneProgress": True}},
            "clientInfo": {"name": "sessiontree.client"},
        }
        if root:
            params["rootUri"] = "file://" + os.path.abspath(root)
            params["workspaceFolders"] = [{"uri": params["rootUri"], "name": os.path.basename(root) or root}]
        if init_options is not None:
            params["initializationOptions"] = init_options
        self.initialize_result = self.request("initialize", params)
        self.notify("initialized", {})
        return self.initialize_result

    # -- messaging ---------------------------------------------------------------------
    def _send(self, message: dict[str, Any]) -> None:
        body = orjson.dumps(message)
        data = b"Content-Length: %d\r\n\r\n" % len(body) + body
        with self._write_lock:
            if self._writer_fd is None:
                self._writer.write(data)
                self._writer.flush()
            else:  # whole, even when this process is stopped and continued (see fdio)
                write_all(self._writer_fd, data)

    def request_future(self, method: str, params: Any = None, *, msg_id: Any = None) -> Future[Any]:
        """Send a request; the future resolves to the result or raises `RpcError`."""
        fut: Future[Any] = Future()
        mid = next(self._ids) if msg_id is None else msg_id
        fut.msg_id = mid  # type: ignore[attr-defined]
        with self._lock:
            if self._closed:
                raise ConnectionError("the daemon connection is closed")
            self._pending[mid] = fut
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": mid, "method": method}
        if params is not None:
            msg["params"] = params
        self._send(msg)
        return fut

    def request(self, method: str, params: Any = None, *, timeout: float | None = 60) -> Any:
        """Send a request and wait for its result."""
        return self.request_future(method, params).result(timeout)

    async def arequest(self, method: str, params: Any = None) -> Any:
        """Send a request from asyncio code and await its result."""
        import asyncio

        return await asyncio.wrap_future(self.request_future(method, params))

    def cancel(self, fut: Future[Any]) -> None:
        """Send `$/cancelRequest` for a request sent with `request_future`."""
        self.notify("$/cancelRequest", {"id": fut.msg_id})  # type: ignore[attr-defined]

    def notify(self, method: str, params: Any = None) -> None:
        """Send a notification."""
        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        self._send(msg)

    def wait_for_notification(
        self,
        method: str,
        predicate: Callable[[Any], bool] | None = None,
        *,
        timeout: float = 10,
        start: int = 0,
    ) -> Any:
        """The params of the first notification `method` (from index `start`) matching `predicate`."""
        import time

        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for name, params in self.notifications[start:]:
                    if name == method and (predicate is None or predicate(params)):
                        return params
                left = deadline - time.monotonic()
                if left <= 0 or self._closed:
                    raise TimeoutError(f"no {method} notification within {timeout}s")
                self._cond.wait(left)

    def notifications_of(self, method: str) -> list[Any]:
        """Params of every `method` notification received so far."""
        with self._cond:
            return [p for n, p in self.notifications if n == method]

    # -- reading -----------------------------------------------------------------------
    def _read_message(self) -> Any:
        length = None
        while True:
            line = self._reader.readline()
            if not line:
                return None
            line = line.strip()
            if not line:
                if length is not None:
                    break
                continue
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value.strip())
        body = b""
        while len(body) < length:
            chunk = self._reader.read(length - len(body))
            if not chunk:
                return None
            body += chunk
        return decode_body(body)

    def _read_loop(self) -> None:
        try:
            while True:
                msg = self._read_message()
                if msg is None:
                    break
                if "method" in msg and "id" in msg:
                    self._send({"jsonrpc": "2.0", "id": msg["id"], "result": None})
                elif "method" in msg:
                    with self._cond:
                        self.notifications.append((msg["method"], msg.get("params")))
                        self._cond.notify_all()
                else:
                    with self._lock:
                        fut = self._pending.pop(msg.get("id"), None)
                    if fut is None:
                        continue
                    if "error" in msg:
                        err = msg["error"] or {}
                        fut.set_exception(
                            RpcError(err.get("code", 0), err.get("message", ""), err.get("data"))
                        )
                    else:
                        fut.set_result(msg.get("result"))
        except (OSError, ValueError):
            pass
        finally:
            with self._lock:
                self._closed = True
                pending = list(self._pending.values())
                self._pending.clear()
            for fut in pending:
                if not fut.done():
                    fut.set_exception(ConnectionError("the daemon closed the connection"))
            with self._cond:
                self._cond.notify_all()

    # -- shutdown ----------------------------------------------------------------------
    def close(self, timeout: float = 10) -> int | None:
        """`shutdown` + `exit`, then wait for the process (returns its exit code) or close
        the TCP connection (returns None)."""
        try:
            if not self._closed:
                self.request("shutdown", None, timeout=timeout)
                self.notify("exit")
        except (RpcError, ConnectionError, OSError, TimeoutError):
            pass
        self._close_socket()
        if self.process is None:
            return None
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
