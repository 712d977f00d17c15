"""A message body to a JSON value, with the rules the daemon takes bodies by.

orjson reads almost every body; what it refuses and JSON allows (escaped lone surrogates,
which JavaScript clients send when a string was cut inside a pair, and nesting beyond
1024 levels) goes to the stdlib parser with orjson's rules for numbers, so a body means
the same whichever parser read it. What no JSON text the daemon takes may hold (`NaN`,
`Infinity`, numbers beyond a double, invalid UTF-8, a byte-order mark) is a `BodyError`,
answered with -32700 (docs/protocol.md "Errors", docs/reliability.md "The wire").
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import orjson

MAX_NESTING = 900
"""Messages nested deeper are refused (-32600) before anything recursive walks them."""

LONE_SURROGATE = re.compile("[\ud800-\udfff]")
"""A UTF-16 surrogate on its own: names no character (only the stdlib parser lets one in)."""

LONE_SURROGATE_REASON = (
    "holds a lone surrogate (a \\uD800-\\uDFFF escape without its pair), which names no "
    "character; send the text as valid Unicode"
)


class BodyError(ValueError):
    """A body that is not a JSON text the daemon takes (answered with -32700)."""


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise BodyError(f"number out of range: {text[:40]}")
    return value


def _integer(text: str) -> int | float:
    # orjson's rule: integers beyond 64 bits become floats, beyond a double they are refused.
    if len(text) <= 20:
        value = int(text)
        if -(1 << 63) <= value < (1 << 64):
            return value
    return _finite_float(text)


def _not_json(name: str) -> Any:
    raise BodyError(f"{name} is not JSON")


def parse_body(body: bytes) -> tuple[Any, bool]:
    """The JSON value of a body and whether orjson read it (then it holds no lone surrogate)."""
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


def may_nest_deeper(body: bytes, limit: int = MAX_NESTING) -> bool:
    """False when `body` cannot hold a value nested deeper than `limit` (too few brackets)."""
    return body.count(b"[") + body.count(b"{") > limit


def depth_exceeds(obj: Any, limit: int = MAX_NESTING) -> bool:
    """Whether `obj` nests deeper than `limit` levels (walked without recursion)."""
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
    return LONE_SURROGATE.sub(lambda mo: f"\\u{ord(mo.group()):04x}", text)


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
            if LONE_SURROGATE.search(v) is not None:
                return where
        elif isinstance(v, dict):
            for k, x in reversed(list(v.items())):
                path = _field(where, k)
                stack.append((path, x))
                stack.append((path, k))  # the key is looked at before its value
        elif isinstance(v, list):
            stack.extend((f"{where}[{i}]", v[i]) for i in range(len(v) - 1, -1, -1))
    return None
