"""Dispatch: each framed body is screened, then answered or handed to pygls.

`SessionTreeProtocol.receive` parses a body once (`decoding.parse_body`) and checks it
before pygls sees it, so every message that can be answered is answered, whatever its
bytes: not an object, a bad id, a wrong `jsonrpc`, too deep, a lone surrogate in the
method or the params, a notification sent with an id, anything after `shutdown`, a second
`initialize`, a TCP connection without its token. Only the members pygls reads are passed
on (a request with a stray `error` member would otherwise be taken for a response), and a
message that does not fit its LSP types is a -32602 naming the field.
(docs/protocol.md "Transport and lifecycle" and "Errors", docs/reliability.md "The wire".)
"""

from __future__ import annotations

import asyncio
import hmac
import logging
from collections import Counter
from typing import Any

from cattrs import transform_error
from lsprotocol import types as lsp
from pygls.protocol import (
    JsonRPCNotification,
    JsonRPCRequestMessage,
    JsonRPCResponseMessage,
    default_converter,
    lsp_method,
)
from sessiontree_protocol import converters as wire
from sessiontree_protocol import methods as m

from sessiontree.lsp.decoding import (
    LONE_SURROGATE,
    LONE_SURROGATE_REASON,
    MAX_NESTING,
    BodyError,
    depth_exceeds,
    find_lone_surrogate,
    may_nest_deeper,
    parse_body,
    printable,
)
from sessiontree.lsp.sending import OrjsonProtocol
from sessiontree.lsp.transport import TooLarge

log = logging.getLogger("sessiontree.lsp")

PARSE_INLINE_BYTES = 1 << 20
"""Bodies larger than this are parsed in a worker thread, so the event loop stays free."""

NOTIFICATION_METHODS: frozenset[str] = frozenset(
    name for name, types in lsp.METHOD_TO_TYPES.items() if types[1] is None
) | frozenset(m.NOTIFICATIONS)
"""Notifications of LSP and of the sessiontree protocol: sent with an id they are refused
rather than run as a notification nobody would answer."""

_MESSAGE_KEYS = ("jsonrpc", "id", "method", "params")
_RESPONSE_KEYS = ("jsonrpc", "id", "result", "error")


def make_converter() -> Any:
    """pygls' converter, except that custom params and results stay plain dicts (pygls
    would turn them into namedtuples); the handlers structure them (`handlers.typed`)."""
    conv = default_converter()
    for cls in (JsonRPCRequestMessage, JsonRPCNotification, JsonRPCResponseMessage):
        conv.register_structure_hook(cls, lambda obj, cls: cls(**obj))
    return conv


def _structure_problem(exc: BaseException) -> tuple[str, str]:
    """(field, reason) of a failure to structure LSP params, from cattrs' description."""
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


class SessionTreeProtocol(OrjsonProtocol):
    """LSP protocol with our own screening of incoming messages, orjson sending and the
    sessionTree experimental capability."""

    def __init__(self, server: Any, converter: Any) -> None:
        super().__init__(server, converter)
        self.required_token: str | None = None
        """The token an initialize must carry (TCP); None: no token (stdio)."""
        self.authenticated = True
        self.initialize_received = False
        self.exit_code: int | None = None
        """Set by `exit`: 0 after `shutdown`, else 1 (LSP)."""
        self.unanswered: Counter[Any] = Counter()
        """Requests handed to a handler and not answered yet, by id (a TCP connection reads
        no more requests while too many are: `server.SessionTreeServer.start_tcp`)."""

    def require_token(self, token: str) -> None:
        """Refuse everything but an initialize carrying `token` (TCP connections)."""
        self.required_token = token
        self.authenticated = False

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
        return self._receive_value(obj, strict, may_nest_deeper(item))

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
        if deep and depth_exceeds(obj, MAX_NESTING):
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
            if LONE_SURROGATE.search(method) is not None:
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
        # counted before: pygls may answer at once (an unknown method), inside the dispatch
        self.unanswered[mid] += 1
        self._dispatch(obj, answer=True)
        return True

    def in_flight(self) -> int:
        """How many of this connection's requests are being handled (not answered yet)."""
        return self.unanswered.total()

    def answered(self, msg_id: Any) -> None:
        """A response to ``msg_id`` went out (`sending.OrjsonProtocol._send_data`)."""
        if self.unanswered.get(msg_id, 0) > 0:
            self.unanswered[msg_id] -= 1
            if not self.unanswered[msg_id]:
                del self.unanswered[msg_id]

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

    @lsp_method(lsp.INITIALIZE)
    def lsp_initialize(self, params: lsp.InitializeParams) -> Any:
        """pygls' initialize, plus the sessionTree capability with the protocol version."""
        result = yield from super().lsp_initialize(params)
        result.capabilities.experimental = {"sessionTree": {"protocolVersion": m.PROTOCOL_VERSION}}
        return result
