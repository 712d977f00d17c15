"""The pygls server of the daemon: the wire, typed params, errors, initialize, connections.

- Reading: `SessionTreeServer.serve_stream` frames messages itself (headers are normalized
  so that the stream resynchronizes after junk), parses each body once and screens it in
  `SessionTreeProtocol.receive` before pygls sees it, so every message that can be answered
  is answered, whatever its bytes (docs/protocol.md "Transport and lifecycle" and "Errors",
  docs/reliability.md "The wire").
- Sending: orjson, Content-Length counted in bytes. What orjson cannot write (strings that
  hold lone surrogates, integers beyond 64 bits) is sent as JSON escapes and digits, and a
  response that still cannot be encoded becomes a -32603 error for its id.
- `make_converter` keeps custom params as plain dicts (pygls would turn them into
  namedtuples); `typed(ParamsCls)` structures them in the handler, so bad params always
  get a -32602 response whose `data` names the field.
- Every handler failure becomes an error response (core errors mapped to PROTOCOL.md's
  codes, anything else -32603 with a readable message); the daemon keeps running.
- Connections: over stdio the daemon serves one client; over `--tcp` each connection gets
  its own server object (its own initialize, allowedRoots, session handles and responses)
  once it has shown the token.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import hmac
import json
import logging
import math
import os
import re
import signal
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from threading import Event
from typing import Any

import attrs
import orjson
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException
from pygls.io_ import StdinAsyncReader, StdoutWriter
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

MAX_NESTING = 900
"""Messages nested deeper are refused (-32600) before anything recursive walks them."""

PARSE_INLINE_BYTES = 1 << 20
"""Bodies larger than this are parsed in a worker thread, so the event loop stays free."""

PREAUTH_MAX_BYTES = 1 << 20
"""Largest message a TCP connection may send before its initialize showed the token."""

AUTH_TIMEOUT = 30.0
"""Seconds a TCP connection has to send an initialize with the token before it is closed."""

LONE_SURROGATE_REASON = (
    "holds a lone surrogate (a \\uD800-\\uDFFF escape without its pair), which names no "
    "character; send the text as valid Unicode"
)

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")

# Methods that are notifications in LSP or in the sessiontree protocol: sent with an id
# they are refused rather than run as a notification nobody would answer.
NOTIFICATION_METHODS: frozenset[str] = frozenset(
    name for name, types in lsp.METHOD_TO_TYPES.items() if types[1] is None
) | frozenset(m.NOTIFICATIONS)

CURRENT_SERVER: contextvars.ContextVar[SessionTreeServer | None] = contextvars.ContextVar(
    "sessiontree_current_server", default=None
)
"""The server object of the connection whose task is running (for per-connection logs)."""


def current_server() -> SessionTreeServer | None:
    """The server of the connection being served in this context, if any."""
    return CURRENT_SERVER.get()


# -- reading -------------------------------------------------------------------------------
class BodyError(ValueError):
    """A body that is not a JSON text the daemon takes (answered with -32700)."""


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise BodyError(f"number out of range: {text[:40]}")
    return value


def _integer(text: str) -> int | float:
    # orjson's rule, so that a body means the same whichever parser read it: integers
    # beyond 64 bits become floats, beyond a double they are refused.
    if len(text) <= 20:
        value = int(text)
        if -(1 << 63) <= value < (1 << 64):
            return value
    return _finite_float(text)


def _not_json(name: str) -> Any:
    raise BodyError(f"{name} is not JSON")


def parse_body(body: bytes) -> tuple[Any, bool]:
    """The JSON value of a body and whether orjson read it (then it holds no lone surrogate).

    orjson refuses escaped lone surrogates, which JSON allows and JavaScript clients send
    when a string was cut inside a pair, and nesting beyond 1024 levels; the stdlib parser
    then decides, with orjson's rules for numbers. `NaN`, `Infinity`, numbers beyond a
    double, invalid UTF-8 and a byte-order mark raise `BodyError`.
    """
    try:
        return orjson.loads(body), True
    except orjson.JSONDecodeError as exc:
        first = exc
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BodyError(f"not UTF-8 ({exc.reason} at byte {exc.start})") from None
    try:
        return json.loads(
            text, parse_int=_integer, parse_float=_finite_float, parse_constant=_not_json
        ), False
    except BodyError:
        raise
    except RecursionError:
        raise BodyError("nested too deeply") from None
    except ValueError:
        raise BodyError(str(first)) from None


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


def printable(text: str) -> str:
    """`text` with each lone surrogate written as its `\\uXXXX` escape."""
    return _LONE_SURROGATE.sub(lambda mo: f"\\u{ord(mo.group()):04x}", text)


def _field(prefix: str, key: Any) -> str:
    name = printable(key) if isinstance(key, str) else str(key)
    return f"{prefix}.{name}" if prefix else name


def find_lone_surrogate(value: Any) -> str | None:
    """The field (protocol.md's dotted form, `entry.message.content[0].text`) of the first
    string or object key in `value` that holds a lone surrogate; None when there is none."""
    stack: list[tuple[str, Any]] = [("", value)]
    while stack:
        where, v = stack.pop()
        if isinstance(v, str):
            if _LONE_SURROGATE.search(v) is not None:
                return where
        elif isinstance(v, dict):
            for k, x in reversed(list(v.items())):
                path = _field(where, k)
                stack.append((path, x))
                stack.append((path, k))  # the key is looked at before its value
        elif isinstance(v, list):
            stack.extend((f"{where}[{i}]", v[i]) for i in range(len(v) - 1, -1, -1))
    return None


@attrs.frozen
class TooLarge:
    """A body over the request size limit, skipped without being held in memory."""

    size: int
    limit: int
    msg_id: Any


_ID_IN_HEAD = re.compile(rb'"id"\s*:\s*("(?:[^"\\]|\\.)*"|-?\d{1,20})(?=\s*[,}])')


def too_large(n: int, limit: int, head: bytes) -> TooLarge:
    """The refusal of a body over the limit, with the id found in its first bytes."""
    match = _ID_IN_HEAD.search(head)
    msg_id: Any = None
    if match:
        try:
            msg_id = json.loads(match.group(1))
        except ValueError:
            msg_id = None
    return TooLarge(n, limit, msg_id)


_HEADER = re.compile(rb"content-length[ \t]*:[ \t]*(\d+)[ \t]*\r?\n?$", re.IGNORECASE)
_CONTENT_LENGTH = re.compile(rb"Content-Length: (\d+)\r\n")


def normalize_header_line(line: bytes) -> bytes:
    """Only exactly "Content-Length: N\\r\\n" is a header to the framing. Garbage glued in
    front of a header (a body that was shorter than announced, junk without a newline), a
    lower-case name or a bare \\n would make it skip the header and lose every later
    message; such lines are normalized so that the stream resynchronizes."""
    if not line or (line.startswith(b"Content-Length: ") and line.endswith(b"\r\n")):
        return line
    i = line.lower().rfind(b"content-length")
    if i >= 0:
        mo = _HEADER.match(line, i)
        if mo:
            return b"Content-Length: " + mo.group(1) + b"\r\n"
    return line


class Framing:
    """The header state of one stream: LSP base framing, as pygls reads it."""

    def __init__(self) -> None:
        self.length = 0

    def feed(self, line: bytes) -> int | None:
        """One header line; the body length once a blank line ends the headers, else None."""
        line = normalize_header_line(line)
        if not self.length:
            mo = _CONTENT_LENGTH.fullmatch(line)
            if mo:
                self.length = int(mo.group(1))
        if self.length and not line.strip():
            n, self.length = self.length, 0
            return n
        return None


class _LimitedStreamReader:
    """Reads header lines and bodies from an asyncio stream; bodies over the limit are skipped."""

    def __init__(self, reader: asyncio.StreamReader, limit: Callable[[], int]) -> None:
        self._reader = reader
        self._limit = limit

    async def readline(self) -> bytes:
        try:
            return await self._reader.readuntil(b"\n")
        except asyncio.IncompleteReadError as exc:
            return exc.partial
        except asyncio.LimitOverrunError as exc:
            return await self._reader.readexactly(exc.consumed)
        except (ConnectionError, OSError):
            return b""

    async def readexactly(self, n: int) -> bytes | TooLarge:
        limit = self._limit()
        try:
            if n <= limit:
                return await self._reader.readexactly(n)
            head = await self._reader.readexactly(min(n, 4096))
            left = n - len(head)
            while left > 0:
                chunk = await self._reader.read(min(left, 1 << 20))
                if not chunk:
                    return b""
                left -= len(chunk)
        except (asyncio.IncompleteReadError, ConnectionError, OSError):
            return b""  # the client went away: the read loop stops
        return too_large(n, limit, head)


class _LimitedReader(StdinAsyncReader):
    """stdin reader that skips bodies over the limit without holding them in memory."""

    def __init__(self, stdin: Any, executor: Any, limit: Callable[[], int]) -> None:
        super().__init__(stdin, executor)
        self._limit = limit

    def _read_header_line(self) -> bytes:
        return self.stdin.readline(65536)  # type: ignore[no-any-return]

    def readline(self) -> Any:
        return self.loop.run_in_executor(self.executor, self._read_header_line)

    def _read_body(self, n: int) -> bytes | TooLarge:
        limit = self._limit()
        if n <= limit:
            data: bytes = self.stdin.read(n)
            return data  # short at the end of input: answered, then the read loop stops
        head = self.stdin.read(min(n, 4096))
        left = n - len(head)
        while left > 0:
            chunk = self.stdin.read(min(left, 1 << 20))
            if not chunk:
                break
            left -= len(chunk)
        return too_large(n, limit, head)

    def readexactly(self, n: int) -> Any:
        return self.loop.run_in_executor(self.executor, self._read_body, n)


class _LoopWriter:
    """An asyncio stream writer that any thread may write to (worker threads send
    notifications); writes after the connection closed are dropped."""

    def __init__(self, writer: asyncio.StreamWriter, loop: asyncio.AbstractEventLoop) -> None:
        self._writer = writer
        self._loop = loop

    def _write(self, data: bytes) -> None:
        if not self._writer.is_closing():
            self._writer.write(data)

    def write(self, data: bytes) -> None:
        try:
            running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self._loop:
            self._write(data)
        else:
            with contextlib.suppress(RuntimeError):  # the loop is gone: nobody is listening
                self._loop.call_soon_threadsafe(self._write, data)

    def close(self) -> None:
        with contextlib.suppress(RuntimeError):
            self._loop.call_soon_threadsafe(self._writer.close)


_PENDING_WRITES: set[Any] = set()


def make_converter() -> Any:
    """pygls' converter, except that custom params and results stay plain dicts."""
    conv = default_converter()
    for cls in (JsonRPCRequestMessage, JsonRPCNotification, JsonRPCResponseMessage):
        conv.register_structure_hook(cls, lambda obj, cls: cls(**obj))
    return conv


def _is_protocol_obj(obj: Any) -> bool:
    return attrs.has(type(obj)) and type(obj).__module__.startswith("sessiontree_protocol")


def _structure_problem(exc: BaseException) -> tuple[str, str]:
    """(field, reason) of a failure to structure LSP params, from cattrs' description."""
    from cattrs import transform_error

    cause = exc.__cause__ or exc
    try:
        described = transform_error(cause)  # type: ignore[arg-type]
    except Exception:
        described = [str(cause)]
    first = described[0] if described else str(cause)
    reason, _, where = first.partition(" @ ")
    parts = [p for p in where.removeprefix("$").split(".") if p]
    if parts and parts[0] == "params":
        parts = parts[1:]
    return ".".join(wire.camel(p) for p in parts), reason or "does not fit the method's params"


# The members pygls reads; anything else is dropped (a request with a stray "error"
# member would otherwise be taken for a response).
_MESSAGE_KEYS = ("jsonrpc", "id", "method", "params")
_RESPONSE_KEYS = ("jsonrpc", "id", "result", "error")


class SessionTreeProtocol(LanguageServerProtocol):
    """LSP protocol with our own reading and screening, orjson sending and the
    sessionTree experimental capability."""

    def __init__(self, server: Any, converter: Any) -> None:
        super().__init__(server, converter)
        self.required_token: str | None = None
        """The token an initialize must carry (TCP); None: no token (stdio)."""
        self.authenticated = True
        self.initialize_received = False
        self.exit_code: int | None = None
        """Set by `exit`: 0 after `shutdown`, else 1 (LSP)."""

    def require_token(self, token: str) -> None:
        """Refuse everything but an initialize carrying `token` (TCP connections)."""
        self.required_token = token
        self.authenticated = False

    # -- receiving -----------------------------------------------------------------------
    async def receive(self, item: bytes | TooLarge) -> bool:
        """Answer, dispatch or drop one incoming message; False when the connection ends."""
        if isinstance(item, TooLarge):
            self.reply_error(
                item.msg_id,
                -32600,
                f"Request of {item.size} bytes exceeds maxRequestBytes ({item.limit})",
                {"size": item.size, "limit": item.limit},
            )
            return True
        try:
            if len(item) > PARSE_INLINE_BYTES:
                obj, strict = await asyncio.get_running_loop().run_in_executor(None, parse_body, item)
            else:
                obj, strict = parse_body(item)
        except BodyError as exc:
            self.reply_error(None, -32700, f"Parse error: {exc}")
            return True
        deep = item.count(b"[") + item.count(b"{") > MAX_NESTING
        return self._receive_value(obj, strict, deep)

    def _invalid(self, msg_id: Any, why: str) -> bool:
        self.reply_error(msg_id, -32600, f"Invalid Request: {why}")
        return True

    def _receive_value(self, obj: Any, strict: bool, deep: bool) -> bool:
        if not isinstance(obj, dict):
            return self._invalid(None, "a message must be a JSON object")
        has_id = "id" in obj
        mid = obj.get("id")
        if has_id and not (isinstance(mid, str) or (isinstance(mid, int) and not isinstance(mid, bool))):
            return self._invalid(None, "id must be a string or an integer")
        if deep and _depth_exceeds(obj, MAX_NESTING):
            return self._invalid(mid, f"nested deeper than {MAX_NESTING} levels")
        if obj.get("jsonrpc") != "2.0":
            return self._invalid(mid, '"jsonrpc" must be "2.0"')
        if "method" not in obj:
            if not has_id or ("result" not in obj and "error" not in obj):
                return self._invalid(mid, "no method, result or error")
            if self.authenticated:
                self._dispatch(obj, answer=False)
            return True
        method = obj["method"]
        if not isinstance(method, str):
            return self._invalid(mid, "method must be a string")
        if not strict:
            if _LONE_SURROGATE.search(method) is not None:
                if has_id:
                    self.reply_error(mid, -32601, f"Method Not Found: {printable(method)}")
                else:
                    log.warning("ignored a notification whose method holds a lone surrogate")
                return True
            where = find_lone_surrogate(obj.get("params"))
            if where is not None:
                if has_id:
                    self.reply_error(
                        mid,
                        m.INVALID_PARAMS,
                        f"Invalid params for {method}: {where or 'params'} {LONE_SURROGATE_REASON}",
                        {"field": where, "reason": LONE_SURROGATE_REASON},
                    )
                else:
                    log.warning("ignored a %s notification: %s %s", method, where, LONE_SURROGATE_REASON)
                return True
        if not has_id:
            return self._notification(method, obj)
        return self._request(mid, method, obj)

    def _notification(self, method: str, obj: dict[str, Any]) -> bool:
        if method == lsp.EXIT:
            self.exit_code = 0 if self._shutdown else 1
            return False
        if self._shutdown:
            log.info("ignored a %s notification after shutdown", method)
        elif not self.authenticated:
            log.info("ignored a %s notification before initialize", method)
        else:
            self._dispatch(obj, answer=False)
        return True

    def _request(self, mid: Any, method: str, obj: dict[str, Any]) -> bool:
        if method in NOTIFICATION_METHODS:
            return self._invalid(mid, f"{method} is a notification: send it without an id")
        if self._shutdown:
            return self._invalid(mid, "shutdown was received; only exit is accepted now")
        if method == lsp.INITIALIZE:
            if self.initialize_received:
                return self._invalid(mid, "initialize was already received (one client per connection)")
            refusal = self._check_token(obj)
            if refusal is not None:
                self.reply_error(mid, m.ACCESS_DENIED, f"Access denied: {refusal}", {"reason": refusal})
                return False
            self.authenticated = True
            if self._dispatch(obj, answer=True):
                self.initialize_received = True
            return True
        if not self.authenticated:
            self.reply_error(
                mid,
                m.ACCESS_DENIED,
                "Access denied: send initialize with initializationOptions.token first",
                {"reason": "not authenticated"},
            )
            return True
        self._dispatch(obj, answer=True)
        return True

    def _check_token(self, obj: dict[str, Any]) -> str | None:
        """Why an initialize is refused (None: accepted). The token is taken out of the
        params either way, so that it is neither logged nor kept."""
        params = obj.get("params")
        options = params.get("initializationOptions") if isinstance(params, dict) else None
        token = options.pop("token", None) if isinstance(options, dict) else None
        if self.required_token is None:
            return None
        if not isinstance(token, str) or not token:
            return "this daemon needs its token in initializationOptions.token"
        if not hmac.compare_digest(token.encode("utf-8"), self.required_token.encode("utf-8")):
            return "wrong token"
        return None

    def _dispatch(self, obj: dict[str, Any], *, answer: bool) -> bool:
        """Hand a screened message to pygls; False when it does not fit its method's types."""
        keys = _MESSAGE_KEYS if "method" in obj else _RESPONSE_KEYS
        clean = {k: obj[k] for k in keys if k in obj}
        method = clean.get("method")
        if method is not None and "params" not in clean and method not in lsp.METHOD_TO_TYPES:
            clean["params"] = None  # pygls' generic message classes require the key
        try:
            message = self.structure_message(clean)
        except Exception as exc:
            if not answer:
                log.warning("dropped a %s message that does not fit its types: %s", method or "response", exc)
                return False
            field, reason = _structure_problem(exc)
            self.reply_error(
                clean.get("id"),
                m.INVALID_PARAMS,
                f"Invalid params for {method}: {field or 'params'}: {reason}",
                {"field": field, "reason": reason},
            )
            return False
        try:
            self.handle_message(message)
        except Exception as exc:
            log.exception("handling %s failed", method)
            if answer:
                self.reply_error(clean.get("id"), -32603, f"{method} failed: {type(exc).__name__}: {exc}")
        return True

    # -- sending -------------------------------------------------------------------------
    def reply_error(self, msg_id: Any, code: int, message: str, data: Any = None) -> None:
        """Send an error response."""
        error: dict[str, Any] = {"code": code, "message": message}
        if data is not None:
            error["data"] = data
        self._send_data({"jsonrpc": "2.0", "id": msg_id, "error": error})

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

    def _wire_safe(self, value: Any) -> Any:
        """`value` with what orjson cannot write replaced by pre-encoded JSON: strings with
        lone surrogates become `\\uXXXX` escapes, integers beyond 64 bits plain digits."""
        if isinstance(value, str):
            return orjson.Fragment(json.dumps(value)) if _LONE_SURROGATE.search(value) else value
        if value is None or isinstance(value, bool | float | orjson.Fragment):
            return value
        if isinstance(value, int):
            return value if -(1 << 63) <= value < (1 << 64) else orjson.Fragment(str(value))
        if isinstance(value, dict):
            if all(isinstance(k, str) and _LONE_SURROGATE.search(k) is None for k in value):
                return {k: self._wire_safe(v) for k, v in value.items()}
            parts = [
                json.dumps(k if isinstance(k, str) else str(k)).encode()
                + b":"
                + orjson.dumps(self._wire_safe(v), default=self._orjson_default)
                for k, v in value.items()
            ]
            return orjson.Fragment(b"{" + b",".join(parts) + b"}")
        if isinstance(value, list | tuple):
            return [self._wire_safe(v) for v in value]
        if attrs.has(type(value)):
            return self._wire_safe(self._value(value))
        return value

    def _encode(self, payload: Any) -> bytes:
        try:
            return orjson.dumps(payload, default=self._orjson_default)
        except (orjson.JSONEncodeError, TypeError):
            pass
        try:
            return orjson.dumps(self._wire_safe(payload), default=self._orjson_default)
        except (orjson.JSONEncodeError, TypeError, RecursionError):
            pass
        # deeper than orjson writes: the stdlib encoder, ASCII only (lone surrogates escaped)
        return json.dumps(payload, default=self._orjson_default, allow_nan=False).encode("ascii")

    def _send_data(self, data: Any) -> None:  # pygls private API (pygls is pinned)
        if not data:
            return
        if self.writer is None:
            log.error("Unable to send data, no available transport")
            return
        try:
            payload = self._envelope(data)
            try:
                body = self._encode(payload)
            except Exception as exc:
                if not (isinstance(payload, dict) and "id" in payload and "method" not in payload):
                    raise
                log.exception("could not encode the response to %r", payload.get("id"))
                error = {
                    "code": -32603,
                    "message": f"the response could not be encoded: {type(exc).__name__}",
                }
                body = self._encode({"jsonrpc": "2.0", "id": payload.get("id"), "error": error})
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


class SessionTreeServer(LanguageServer):
    """The daemon: configuration, open sessions, access policy, navigation state."""

    protocol: SessionTreeProtocol

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

    @property
    def exit_code(self) -> int:
        """The process exit code once serving ended: 1 after `exit` without `shutdown`."""
        return self.protocol.exit_code or 0

    # -- transport ---------------------------------------------------------------------
    async def serve_stream(self, reader: Any) -> None:
        """Read, frame and handle messages until the input ends or `exit` arrives."""
        if self._stop_event is None:
            self._stop_event = Event()
        context_token = CURRENT_SERVER.set(self)
        framing = Framing()
        try:
            while not self._stop_event.is_set():
                line = await reader.readline()
                if not line:
                    break
                n = framing.feed(line)
                if n is None:
                    continue
                item = await reader.readexactly(n)
                if not item:
                    break
                try:
                    keep = await self.protocol.receive(item)
                except Exception:
                    log.exception("could not handle a message")
                    keep = True
                if not keep:
                    break
        finally:
            CURRENT_SERVER.reset(context_token)

    def end_connection(self) -> None:
        """Stop following files and close this connection's sessions (locks, descriptors)."""
        follower = getattr(self, "live_follower", None)
        self.live_follower = None
        if follower is not None:
            try:
                follower.stop()
            except Exception:
                log.exception("stopping the live follower failed")
        self.registry.shutdown()
        for session in self.registry.sessions():
            # a worker may still hold the lock for a long call; it is not waited for long
            if session.lock.acquire(timeout=2):
                try:
                    session.manager.close_quietly()
                except Exception:
                    log.exception("closing %s failed", session.handle)
                finally:
                    session.lock.release()
            self.registry.remove(session)

    def start_io(self, stdin: Any = None, stdout: Any = None) -> None:
        """Serve one client over stdio with the request size limit."""
        self._stop_event = Event()
        reader = _LimitedReader(
            stdin or sys.stdin.buffer, self.thread_pool, lambda: self.config.max_request_bytes
        )
        self.protocol.set_writer(StdoutWriter(stdout or sys.stdout.buffer))
        try:
            asyncio.run(self.serve_stream(reader))
        except BrokenPipeError:
            log.error("Connection to the client is lost; shutting down")
        except KeyboardInterrupt:
            pass
        finally:
            self.end_connection()
            self.shutdown()

    def request_limit(self) -> int:
        """The largest body this connection may send now."""
        if not self.protocol.authenticated:
            return min(PREAUTH_MAX_BYTES, self.config.max_request_bytes)
        return self.config.max_request_bytes

    def start_tcp(
        self,
        host: str,
        port: int,
        token: str | None = None,
        on_listening: Callable[[list[Any]], None] | None = None,
    ) -> None:
        """Serve over TCP until SIGTERM or SIGINT.

        Each connection gets its own server object from `create_server()`: its own
        initialize (and allowedRoots), session handles, navigation state and responses.
        With `token`, a connection must send it in `initializationOptions.token` of its
        initialize within AUTH_TIMEOUT seconds, or it is refused and closed. A connection
        that ends (a port check, `exit`, a client that went away) never stops the daemon.
        """
        self._stop_event = Event()
        writers: set[asyncio.StreamWriter] = set()

        async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            loop = asyncio.get_running_loop()
            writers.add(writer)
            conn = create_server()
            if token is not None:
                conn.protocol.require_token(token)
            conn.protocol.set_writer(_LoopWriter(writer, loop))  # type: ignore[arg-type]
            watchdog = loop.call_later(
                AUTH_TIMEOUT, lambda: None if conn.protocol.authenticated else writer.close()
            )
            try:
                await conn.serve_stream(_LimitedStreamReader(reader, conn.request_limit))
            except Exception:
                log.exception("a TCP connection failed")
            finally:
                watchdog.cancel()
                writers.discard(writer)
                conn.end_connection()
                conn._stop_event.set()  # type: ignore[union-attr]
                writer.close()
                with contextlib.suppress(Exception):
                    await writer.wait_closed()

        async def serve() -> None:
            loop = asyncio.get_running_loop()
            self._server = srv = await asyncio.start_server(connection, host, port)
            stop: asyncio.Future[None] = loop.create_future()

            def request_stop() -> None:
                if not stop.done():
                    stop.set_result(None)

            for sig in (signal.SIGTERM, signal.SIGINT):
                with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                    loop.add_signal_handler(sig, request_stop)
            addresses = [s.getsockname() for s in srv.sockets]
            log.info("serving on %s", ", ".join(str(a) for a in addresses))
            if on_listening is not None:
                on_listening(addresses)
            try:
                await stop
            finally:
                srv.close()
                for w in list(writers):
                    w.close()
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(srv.wait_closed(), 5)

        try:
            asyncio.run(serve())
        except (asyncio.CancelledError, KeyboardInterrupt):
            pass
        finally:
            self._server = None
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


# Params fields that name a file or directory: a NUL byte cannot be part of a path.
_PATH_FIELDS = ("path", "source_path", "cwd", "session_dir")


def _refuse_nul_paths(params: Any, method: str) -> None:
    for name in _PATH_FIELDS:
        value = getattr(params, name, None)
        if isinstance(value, str) and "\x00" in value:
            field = wire.camel(name)
            reason = "contains a NUL byte, which no path can hold"
            raise errors.InvalidParams(
                f"Invalid params for {method}: {field} {reason}", {"field": field, "reason": reason}
            )


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
            _refuse_nul_paths(params, method)
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
    """A configured daemon with every feature registered (one per client connection)."""
    from sessiontree.lsp.setup import setup

    server = SessionTreeServer()
    setup(server)
    return server


def state_file_for(server: SessionTreeServer) -> Path:
    """Where the navigation state lives for this daemon."""
    return server.config.resolved_state_dir() / "state.json"
