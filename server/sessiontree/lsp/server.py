"""The pygls server of the daemon: framing, typed params, errors, initialize.

- `SessionTreeProtocol` sends with orjson (Content-Length counted in bytes) and adds
  `capabilities.experimental.sessionTree = {protocolVersion: 1}` to `initialize`.
- `make_converter` keeps custom params as plain dicts (pygls would turn them into
  namedtuples); `typed(ParamsCls)` structures them in the handler, so bad params always
  get a -32602 response whose `data` names the field.
- Every handler failure becomes an error response (core errors mapped to PROTOCOL.md's
  codes, anything else -32603 with a readable message); the daemon keeps running.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import os
import re
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from threading import Event
from typing import Any

import attrs
import orjson
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException
from pygls.io_ import StdinAsyncReader, StdoutWriter, run_async
from pygls.lsp.server import LanguageServer
from pygls.protocol import (
    JsonRPCNotification,
    JsonRPCRequestMessage,
    JsonRPCResponseMessage,
    LanguageServerProtocol,
    default_converter,
    lsp_method,
)
from sessiontree_protocol import converters as wire
from sessiontree_protocol import methods as m
from sessiontree_protocol.types import METHOD_TO_TYPES

from sessiontree import __version__
from sessiontree.core.errors import SessionTreeError
from sessiontree.lsp import errors
from sessiontree.lsp.access import AccessPolicy
from sessiontree.lsp.config import ServerConfig
from sessiontree.lsp.registry import Registry

log = logging.getLogger("sessiontree.lsp")

TOO_LARGE_METHOD = "$/sessiontree/requestTooLarge"
INVALID_MESSAGE_METHOD = "$/sessiontree/invalidMessage"


def _invalid_message(msg_id: Any, has_id: bool, code: int, message: str) -> bytes:
    """A notification to ourselves that answers a message pygls cannot handle."""
    params = {"hasId": has_id, "id": msg_id, "code": code, "message": message}
    return orjson.dumps({"jsonrpc": "2.0", "method": INVALID_MESSAGE_METHOD, "params": params})


MAX_NESTING = 900


def _depth_exceeds(obj: Any, limit: int) -> bool:
    stack: list[tuple[Any, int]] = [(obj, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > limit:
            return True
        if isinstance(value, dict):
            stack.extend((v, depth + 1) for v in value.values())
        elif isinstance(value, list):
            stack.extend((v, depth + 1) for v in value)
    return False


def screen_body(body: bytes) -> bytes:
    """Check a message body before pygls sees it.

    pygls drops (with only a log line) bodies that are not JSON, not UTF-8, nested too
    deeply, not an object, or whose envelope does not fit its classes (a request without
    params, an id that is an object, a method that is not a string), so the client would
    wait forever. Such bodies are replaced by an internal notification whose handler
    answers with the JSON-RPC error (-32700 parse error, -32600 invalid request), with the
    request's id when it has a usable one and `null` otherwise.
    """
    try:
        obj = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        try:
            # orjson refuses a few things JSON allows (escaped lone surrogates, which JS
            # clients can send); the stdlib parser, which pygls uses, decides.
            obj = json.loads(body)
        except (ValueError, RecursionError):
            return _invalid_message(None, True, -32700, f"Parse error: {exc}")
    if not isinstance(obj, dict):
        return _invalid_message(None, True, -32600, "Invalid Request: a message must be a JSON object")
    if body.count(b"[") + body.count(b"{") > MAX_NESTING and _depth_exceeds(obj, MAX_NESTING):
        # pygls' json.loads would hit Python's recursion limit and drop the message
        mid = obj.get("id") if isinstance(obj.get("id"), str | int) else None
        return _invalid_message(
            mid, True, -32600, f"Invalid Request: nested deeper than {MAX_NESTING} levels"
        )
    has_id = "id" in obj
    mid = obj.get("id")
    if has_id and not (
        mid is None or isinstance(mid, str) or (isinstance(mid, int) and not isinstance(mid, bool))
    ):
        return _invalid_message(None, True, -32600, "Invalid Request: id must be a string, a number or null")
    if obj.get("jsonrpc") != "2.0":
        return _invalid_message(mid, has_id, -32600, 'Invalid Request: "jsonrpc" must be "2.0"')
    if "method" in obj:
        method = obj["method"]
        if not isinstance(method, str):
            return _invalid_message(mid, has_id, -32600, "Invalid Request: method must be a string")
        if "params" not in obj and method not in lsp.METHOD_TO_TYPES:
            obj["params"] = None  # pygls' generic message classes require the key
            return orjson.dumps(obj)
    elif not has_id or ("result" not in obj and "error" not in obj):
        return _invalid_message(mid, has_id, -32600, "Invalid Request: no method, result or error")
    return body


_PENDING_WRITES: set[Any] = set()


def make_converter() -> Any:
    """pygls' converter, except that custom params and results stay plain dicts."""
    conv = default_converter()
    for cls in (JsonRPCRequestMessage, JsonRPCNotification, JsonRPCResponseMessage):
        conv.register_structure_hook(cls, lambda obj, cls: cls(**obj))
    return conv


def _is_protocol_obj(obj: Any) -> bool:
    return attrs.has(type(obj)) and type(obj).__module__.startswith("sessiontree_protocol")


class SessionTreeProtocol(LanguageServerProtocol):
    """LSP protocol with orjson framing and the sessionTree experimental capability."""

    def _value(self, value: Any) -> Any:
        if value is None or isinstance(value, dict | list | str | int | float | bool):
            return value
        if _is_protocol_obj(value):
            return wire.unstructure(value)
        return self._converter.unstructure(value)

    def _orjson_default(self, obj: Any) -> Any:
        if _is_protocol_obj(obj):
            return wire.unstructure(obj)
        if attrs.has(type(obj)):
            return self._converter.unstructure(obj)
        return self._serialize_message(obj)

    def _envelope(self, data: Any) -> Any:
        if isinstance(data, JsonRPCResponseMessage):
            return {"jsonrpc": data.jsonrpc, "id": data.id, "result": self._value(data.result)}
        if isinstance(data, JsonRPCNotification):
            out: dict[str, Any] = {"jsonrpc": data.jsonrpc, "method": data.method}
            if data.params is not None:
                out["params"] = self._value(data.params)
            return out
        if isinstance(data, JsonRPCRequestMessage):
            req: dict[str, Any] = {"jsonrpc": data.jsonrpc, "id": data.id, "method": data.method}
            if data.params is not None:
                req["params"] = self._value(data.params)
            return req
        if attrs.has(type(data)):
            return self._converter.unstructure(data)
        return data

    def _send_data(self, data: Any) -> None:  # pygls private API (pygls is pinned)
        if not data:
            return
        if self.writer is None:
            log.error("Unable to send data, no available transport")
            return
        try:
            payload = self._envelope(data)
            try:
                body = orjson.dumps(payload, default=self._orjson_default)
            except (orjson.JSONEncodeError, TypeError):
                body = json.dumps(payload, default=self._orjson_default, ensure_ascii=False).encode("utf-8")
            header = (
                f"Content-Length: {len(body)}\r\nContent-Type: {self.CONTENT_TYPE}; charset={self.CHARSET}\r\n\r\n"
            ).encode("ascii")
            res = self.writer.write(header + body)
            if asyncio.iscoroutine(res) or isinstance(res, asyncio.Future):
                task = asyncio.ensure_future(res)
                _PENDING_WRITES.add(task)
                task.add_done_callback(_PENDING_WRITES.discard)
        except BrokenPipeError:
            log.error("Connection to the client is lost")
            raise
        except Exception as error:
            log.exception("Error sending data")
            self._server._report_server_error(error, errors.InternalError)

    @lsp_method(lsp.INITIALIZE)
    def lsp_initialize(self, params: lsp.InitializeParams) -> Any:
        result = yield from super().lsp_initialize(params)
        result.capabilities.experimental = {"sessionTree": {"protocolVersion": m.PROTOCOL_VERSION}}
        return result


_HEADER = re.compile(rb"content-length[ \t]*:[ \t]*(\d+)[ \t]*\r?\n?$", re.IGNORECASE)


def normalize_header_line(line: bytes) -> bytes:
    """pygls only accepts exactly "Content-Length: N\\r\\n". Garbage glued in front of a
    header (a body that was shorter than announced, junk without a newline), a lower-case
    name or a bare \\n would make it skip the header and lose every later message; such
    lines are normalized so the stream resynchronizes."""
    if not line or (line.startswith(b"Content-Length: ") and line.endswith(b"\r\n")):
        return line
    i = line.lower().rfind(b"content-length")
    if i >= 0:
        m = _HEADER.match(line, i)
        if m:
            return b"Content-Length: " + m.group(1) + b"\r\n"
    return line


def too_large_body(n: int, limit: int, head: bytes) -> bytes:
    """The internal request that answers a body over the limit (with the id found in its head)."""
    match = re.search(rb'"id"\s*:\s*("(?:[^"\\]|\\.)*"|-?\d+)', head)
    msg_id = match.group(1).decode() if match else "null"
    return (
        f'{{"jsonrpc":"2.0","id":{msg_id},"method":"{TOO_LARGE_METHOD}",'
        f'"params":{{"size":{n},"limit":{limit}}}}}'
    ).encode()


class _LimitedStreamReader:
    """The TCP counterpart of `_LimitedReader` over an asyncio stream."""

    def __init__(self, reader: asyncio.StreamReader, limit: Callable[[], int]) -> None:
        self._reader = reader
        self._limit = limit

    async def readline(self) -> bytes:
        try:
            line = await self._reader.readuntil(b"\n")
        except asyncio.IncompleteReadError as exc:
            line = exc.partial
        except asyncio.LimitOverrunError as exc:
            line = await self._reader.readexactly(exc.consumed)
        return normalize_header_line(line)

    async def readexactly(self, n: int) -> bytes:
        limit = self._limit()
        try:
            if n <= limit:
                return screen_body(await self._reader.readexactly(n))
            head = await self._reader.readexactly(min(n, 4096))
            left = n - len(head)
            while left > 0:
                chunk = await self._reader.read(min(left, 1 << 20))
                if not chunk:
                    return b""
                left -= len(chunk)
        except asyncio.IncompleteReadError:
            return b""  # the client went away: the read loop stops
        return too_large_body(n, limit, head)


class _LimitedReader(StdinAsyncReader):
    """stdin reader that refuses bodies over `max_bytes` without holding them in memory."""

    def __init__(self, stdin: Any, executor: Any, limit: Callable[[], int]) -> None:
        super().__init__(stdin, executor)
        self._limit = limit

    def _read_header_line(self) -> bytes:
        return normalize_header_line(self.stdin.readline(65536))

    def readline(self) -> Any:
        return self.loop.run_in_executor(self.executor, self._read_header_line)

    def _read_body(self, n: int) -> bytes:
        limit = self._limit()
        if n <= limit:
            data: bytes = self.stdin.read(n)
            if len(data) < n:
                return data  # end of input: the read loop stops
            return screen_body(data)
        head = self.stdin.read(min(n, 4096))
        left = n - len(head)
        while left > 0:
            chunk = self.stdin.read(min(left, 1 << 20))
            if not chunk:
                break
            left -= len(chunk)
        return too_large_body(n, limit, head)

    def readexactly(self, n: int) -> Any:
        return self.loop.run_in_executor(self.executor, self._read_body, n)


class SessionTreeServer(LanguageServer):
    """The daemon: configuration, open sessions, access policy, navigation state."""

    def __init__(self) -> None:
        super().__init__(
            "sessiontree",
            __version__,
            protocol_cls=SessionTreeProtocol,
            converter_factory=make_converter,
            text_document_sync_kind=lsp.TextDocumentSyncKind.None_,
            max_workers=8,
        )
        self.config = ServerConfig()
        self.registry = Registry()
        self.access = AccessPolicy([])
        self.workspace_roots: list[str] = []
        self.state: Any = None  # NavigationState, set at initialize
        self.cwd = os.getcwd()

    # -- transport ---------------------------------------------------------------------
    def start_io(self, stdin: Any = None, stdout: Any = None) -> None:
        """Serve over stdio with the request size limit."""
        self._stop_event = Event()
        reader = _LimitedReader(
            stdin or sys.stdin.buffer, self.thread_pool, lambda: self.config.max_request_bytes
        )
        writer = StdoutWriter(stdout or sys.stdout.buffer)
        self.protocol.set_writer(writer)
        try:
            asyncio.run(
                run_async(
                    stop_event=self._stop_event,
                    reader=reader,
                    protocol=self.protocol,
                    logger=log,
                    error_handler=self.report_server_error,
                )
            )
        except BrokenPipeError:
            log.error("Connection to the client is lost; shutting down")
        except (KeyboardInterrupt, SystemExit):
            pass
        finally:
            self.registry.shutdown()
            self.shutdown()

    def answer_invalid_message(self, params: Any) -> None:
        """Send the error response for a message `screen_body` refused."""
        if not isinstance(params, dict) or not params.get("hasId"):
            log.warning("dropped an invalid notification: %s", params)
            return
        err = {"code": params.get("code"), "message": params.get("message")}
        self.protocol._send_data({"jsonrpc": "2.0", "id": params.get("id"), "error": err})

    def start_tcp(self, host: str, port: int) -> None:
        """Serve over TCP with the same framing checks and request size limit as stdio."""
        self._stop_event = stop_event = Event()

        async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            self.protocol.set_writer(writer)  # type: ignore[arg-type]
            limited = _LimitedStreamReader(reader, lambda: self.config.max_request_bytes)
            await run_async(
                stop_event=stop_event,
                reader=limited,
                protocol=self.protocol,
                logger=log,
                error_handler=self.report_server_error,
            )
            self.shutdown()

        async def serve() -> None:
            self._server = await asyncio.start_server(connection, host, port)
            log.info("serving on %s", ", ".join(str(s.getsockname()) for s in self._server.sockets))
            async with self._server:
                await self._server.serve_forever()

        try:
            asyncio.run(serve())
        except asyncio.CancelledError:
            pass
        finally:
            self.registry.shutdown()

    def report_server_error(self, error: Exception, source: Any) -> None:
        """Log out-of-band errors; request errors already went back in the response."""
        from pygls.exceptions import FeatureRequestError

        if source is FeatureRequestError:
            return
        log.error("server error: %s", error)
        try:
            self.window_log_message(
                lsp.LogMessageParams(type=lsp.MessageType.Error, message=f"sessiontree: {error}")
            )
        except Exception:
            pass

    # -- helpers for features ----------------------------------------------------------
    def notify(self, method: str, params: Any) -> None:
        """Send a notification (params: a protocol attrs instance or a dict)."""
        self.protocol.notify(method, params)

    def show_warning(self, message: str) -> None:
        """A `window/showMessage` warning."""
        self.window_show_message(lsp.ShowMessageParams(type=lsp.MessageType.Warning, message=message))

    def default_roots(self) -> list[str]:
        """agent dir, sessions root and workspace folders."""
        from sessiontree.core import paths

        roots: list[str] = []
        agent = self.config.agent_dir or paths.get_agent_dir()
        roots.append(str(agent))
        try:
            roots.append(str(paths.sessions_root(agent)))
        except TypeError:
            roots.append(str(paths.sessions_root()))
        roots.extend(self.workspace_roots)
        return roots


def typed(params_cls: type, method: str) -> Callable[[Callable[..., Awaitable[Any]]], Callable[..., Any]]:
    """Structure the raw params into `params_cls` (-32602 naming the field on failure),
    map core errors onto PROTOCOL.md codes, and unstructure an attrs result."""

    def deco(fn: Callable[..., Awaitable[Any]]) -> Callable[..., Any]:
        @functools.wraps(fn)
        async def handler(ls: SessionTreeServer, raw: Any) -> Any:
            if raw is not None and not isinstance(raw, dict):
                raise errors.InvalidParams(
                    f"Invalid params for {method}: params must be an object",
                    {"field": "", "reason": "params must be an object"},
                )
            try:
                params: Any = wire.structure(raw, params_cls)
            except wire.ParamsError as exc:
                where = exc.field or "params"
                raise errors.InvalidParams(
                    f"Invalid params for {method}: {where}: {exc.reason}",
                    {"field": exc.field, "reason": exc.reason},
                ) from None
            try:
                result = await fn(ls, params)
            except (JsonRpcException, asyncio.CancelledError):
                raise
            except SessionTreeError as exc:
                mapped = errors.from_core(exc)
                if mapped is None:
                    log.exception("%s failed", method)
                    raise errors.InternalError(f"{type(exc).__name__}: {exc}") from exc
                raise mapped from exc
            except FileNotFoundError as exc:
                raise errors.InvalidParams(
                    f"{method}: no such file: {exc.filename}", {"field": "path", "reason": "no such file"}
                ) from exc
            except Exception as exc:
                log.exception("%s failed", method)
                raise errors.InternalError(f"{method} failed: {type(exc).__name__}: {exc}") from exc
            if attrs.has(type(result)):
                return wire.unstructure(result)
            return result

        return handler

    return deco


def request(server: SessionTreeServer, method: str) -> Callable[[Callable[..., Awaitable[Any]]], Any]:
    """Register an async handler for `method` with the params class of METHOD_TO_TYPES."""
    params_cls, _ = METHOD_TO_TYPES[method]

    def deco(fn: Callable[..., Awaitable[Any]]) -> Any:
        server.feature(method)(typed(params_cls, method)(fn))
        return fn

    return deco


def create_server(log_level: str | None = None) -> SessionTreeServer:
    """A configured daemon with every feature registered."""
    from sessiontree.lsp.setup import setup

    server = SessionTreeServer()
    setup(server)
    server.feature(INVALID_MESSAGE_METHOD)(lambda ls, params: ls.answer_invalid_message(params))
    return server


def state_file_for(server: SessionTreeServer) -> Path:
    """Where the navigation state lives for this daemon."""
    return server.config.resolved_state_dir() / "state.json"
