"""Typed handlers: how a feature module's functions become request handlers.

A handler is a module-level `async def name(ls, params: <ParamsCls>) -> <ResultCls>` in
`features/<noun>.py`, registered by that module's `setup(server)` with `register`. The
wrapper `typed` does what every handler needs:

- the raw params are structured into the method's params class of `METHOD_TO_TYPES`; what
  does not fit is a -32602 whose `data` names the field (`{field, reason}`), and a path
  field holding a NUL byte is one too;
- core exceptions become the codes of docs/protocol.md "Errors" (`errors.from_core`), a
  missing file a -32602 on `path`, anything else a -32603 with a readable message; the
  daemon keeps running;
- an attrs result is unstructured to wire JSON by the protocol converter.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import attrs
from pygls.exceptions import JsonRpcException
from sessiontree_protocol import converters as wire
from sessiontree_protocol.types import METHOD_TO_TYPES

from sessiontree.core.errors import SessionTreeError
from sessiontree.lsp import errors

if TYPE_CHECKING:
    from sessiontree.lsp.server import SessionTreeServer

log = logging.getLogger("sessiontree.lsp")

Handler = Callable[["SessionTreeServer", Any], Awaitable[Any]]
"""A feature's handler: the server and the structured params; the result."""

_PATH_FIELDS = ("path", "source_path", "cwd", "session_dir")
"""Params fields that name a file or directory: a NUL byte cannot be part of a path."""


def _refuse_nul_paths(params: Any, method: str) -> None:
    for name in _PATH_FIELDS:
        value = getattr(params, name, None)
        if isinstance(value, str) and "\x00" in value:
            field = wire.camel(name)
            reason = "contains a NUL byte, which no path can hold"
            raise errors.InvalidParams(
                f"Invalid params for {method}: {field} {reason}", {"field": field, "reason": reason}
            )


def typed(params_cls: type, method: str) -> Callable[[Handler], Callable[..., Any]]:
    """Structure the raw params into `params_cls` (-32602 naming the field on failure),
    map core errors onto protocol codes, and unstructure an attrs result."""

    def deco(fn: Handler) -> Callable[..., Any]:
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
            ls.requests_in_flight += 1
            ls.last_request = time.monotonic()
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
            finally:
                ls.requests_in_flight -= 1
                ls.last_request = time.monotonic()
            if attrs.has(type(result)):
                return wire.unstructure(result)
            return result

        return handler

    return deco


def register(server: SessionTreeServer, method: str, fn: Handler) -> None:
    """Register `fn` as the handler of `method`, typed by the params class of METHOD_TO_TYPES."""
    params_cls, _ = METHOD_TO_TYPES[method]
    server.feature(method)(typed(params_cls, method)(fn))
