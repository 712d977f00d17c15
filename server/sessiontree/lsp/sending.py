"""Sending: every message leaves as orjson with a Content-Length counted in bytes.

`OrjsonProtocol` replaces pygls' JSON encoding of outgoing messages (`_send_data`, a
private pygls method: pygls is pinned in pyproject.toml). Protocol attrs objects are
unstructured by the protocol converter (camelCase, absent fields left out), LSP objects
by pygls' converter. What orjson cannot write (strings that hold lone surrogates,
integers beyond 64 bits) is sent as JSON escapes and digits; a response that still cannot
be encoded becomes a -32603 error for its id, so the client is never left waiting.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import attrs
import orjson
from pygls.protocol import (
    JsonRPCNotification,
    JsonRPCRequestMessage,
    JsonRPCResponseMessage,
    LanguageServerProtocol,
)
from sessiontree_protocol import converters as wire

from sessiontree.lsp import errors
from sessiontree.lsp.decoding import LONE_SURROGATE

log = logging.getLogger("sessiontree.lsp")

_PENDING_WRITES: set[Any] = set()
"""Writes of async writers still running (kept so that they are not collected early)."""


def is_protocol_obj(obj: Any) -> bool:
    """An attrs instance of `sessiontree_protocol` (unstructured by the protocol converter)."""
    return attrs.has(type(obj)) and type(obj).__module__.startswith("sessiontree_protocol")


class OrjsonProtocol(LanguageServerProtocol):
    """pygls' LSP protocol with orjson encoding and `reply_error` for screened messages."""

    def answered(self, msg_id: Any) -> None:
        """A response to ``msg_id`` is being sent (the dispatcher counts requests in flight)."""

    def reply_error(self, msg_id: Any, code: int, message: str, data: Any = None) -> None:
        """Send an error response."""
        error: dict[str, Any] = {"code": code, "message": message}
        if data is not None:
            error["data"] = data
        self._send_data({"jsonrpc": "2.0", "id": msg_id, "error": error})

    def _value(self, value: Any) -> Any:
        if value is None or isinstance(value, dict | list | str | int | float | bool):
            return value
        if is_protocol_obj(value):
            return wire.unstructure(value)
        return self._converter.unstructure(value)

    def _orjson_default(self, obj: Any) -> Any:
        if is_protocol_obj(obj):
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
            return orjson.Fragment(json.dumps(value)) if LONE_SURROGATE.search(value) else value
        if value is None or isinstance(value, bool | float | orjson.Fragment):
            return value
        if isinstance(value, int):
            return value if -(1 << 63) <= value < (1 << 64) else orjson.Fragment(str(value))
        if isinstance(value, dict):
            if all(isinstance(k, str) and LONE_SURROGATE.search(k) is None for k in value):
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

    def _send_data(self, data: Any) -> None:
        if not data:
            return
        if self.writer is None:
            log.error("Unable to send data, no available transport")
            return
        try:
            payload = self._envelope(data)
            if isinstance(payload, dict) and "method" not in payload and "id" in payload:
                self.answered(payload["id"])
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
