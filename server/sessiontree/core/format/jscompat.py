"""JavaScript's rules, as the reference agent (TypeScript on Node) applies them: one home each.

The reference's outputs are what sessiontree reproduces, and Python's defaults differ in
many small places: ``trim()`` and ``\\s`` match another whitespace set, ``length`` and
``slice`` count UTF-16 code units, ``String(v)`` prints ``undefined``, ``null``, ``1`` for
``1.0`` and ``[object Object]``, numbers print with their own exponent rule, ``Date.parse``
reads its own ISO forms, ``Buffer.from(s, "base64")`` forgives what ``base64`` refuses.
Every part of the core that follows one of these rules imports it from here
(CONVENTIONS 18).

Absent and null: Python's ``dict.get`` gives ``None`` for both, while JS tells a missing key
(``undefined``) from a ``null`` value. `js_get` keeps the difference (`UNDEFINED`), and
`js_string` prints each as JS does.
"""

from __future__ import annotations

import base64
import binascii
import calendar
import math
import re
import time
from collections.abc import Mapping
from datetime import datetime
from decimal import Decimal
from typing import Any, Final

__all__ = [
    "JS_LINE_TERMINATORS",
    "JS_WHITESPACE",
    "UNDEFINED",
    "date_ms",
    "date_parse",
    "decode_base64_lenient",
    "js_get",
    "js_int_literal",
    "js_number",
    "js_or",
    "js_round",
    "js_string",
    "js_trim",
    "js_truthy",
    "js_utf8",
    "json_number",
    "json_quote",
    "json_stringify",
    "to_number",
    "utf16_length",
    "utf16_slice",
]

# --- strings ------------------------------------------------------------------------------

JS_WHITESPACE: Final = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009"
    "\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)
"""What ``String.prototype.trim`` removes and regex ``\\s`` matches (WhiteSpace + LineTerminator).

Python's whitespace differs: it includes ``\\x1c``-``\\x1f`` and ``\\x85`` and leaves out
``\\ufeff``."""

JS_LINE_TERMINATORS: Final = "\n\r\u2028\u2029"
"""The characters a regex ``.`` (without the ``s`` flag) does not match."""

_SURROGATE = re.compile("[\ud800-\udfff]")


def js_trim(s: str) -> str:
    """``s.trim()``."""
    return s.strip(JS_WHITESPACE)


def utf16_length(s: str) -> int:
    """``s.length``: UTF-16 code units (a character beyond U+FFFF counts two)."""
    if s.isascii():
        return len(s)
    return len(s.encode("utf-16-le", "surrogatepass")) // 2


def utf16_slice(s: str, n: int) -> str:
    """``s.slice(0, n)`` in UTF-16 code units; a surrogate pair cut in two is left out whole
    (the text is shown, and half a pair would show as garbage)."""
    if len(s) <= n and (s.isascii() or utf16_length(s) <= n):
        return s
    if s.isascii():
        return s[:n]
    units = 0
    for i, ch in enumerate(s):
        units += 2 if ord(ch) > 0xFFFF else 1
        if units > n:
            return s[:i]
    return s


def js_utf8(s: str) -> bytes:
    """UTF-8 bytes as Node's ``Buffer.from(s, "utf8")``: a lone surrogate becomes U+FFFD."""
    if _SURROGATE.search(s):
        s = s.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return s.encode("utf-8")


# --- numbers ------------------------------------------------------------------------------


def _finite_number(value: float) -> str:
    """The shortest round-trip digits of a finite double, in ECMAScript's Number::toString form."""
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    mantissa, _, exp = repr(abs(value)).partition("e")
    int_part, _, frac_part = mantissa.partition(".")
    digits = int_part + frac_part
    exp10 = (int(exp) if exp else 0) - len(frac_part)
    stripped = digits.rstrip("0")
    exp10 += len(digits) - len(stripped)
    s = stripped.lstrip("0")
    k = len(s)
    n = k + exp10  # value = 0.s * 10**n
    if k <= n <= 21:
        body = s + "0" * (n - k)
    elif 0 < n <= 21:
        body = s[:n] + "." + s[n:]
    elif -6 < n <= 0:
        body = "0." + "0" * (-n) + s
    else:
        e = n - 1
        esign = "+" if e >= 0 else "-"
        body = (s if k == 1 else s[0] + "." + s[1:]) + "e" + esign + str(abs(e))
    return sign + body


def js_number(value: float | int) -> str:
    """``String(n)``: ``1.0`` → ``1``, ``1e21`` → ``1e+21``, ``1e-7`` → ``1e-7``, ``NaN``, ``Infinity``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if value != value:
        return "NaN"
    if value in (math.inf, -math.inf):
        return "Infinity" if value > 0 else "-Infinity"
    return _finite_number(value)


def json_number(value: float | int) -> str:
    """A number as ``JSON.stringify`` writes it: as `js_number`, non-finite values as ``null``."""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if value != value or value in (math.inf, -math.inf):
        return "null"
    return _finite_number(float(value))


def js_round(x: float) -> int | float:
    """``Math.round``: halves round up (towards +infinity); NaN and infinities stay."""
    if isinstance(x, float) and (math.isnan(x) or math.isinf(x)):
        return x
    r = math.floor(x)
    return r + 1 if x - r >= 0.5 else r


_SAFE_INT: Final = 2**53


def _double_value(f: float) -> int | float:
    """A double as the value JS prints for it: an int below 1e21, else the float."""
    if math.isinf(f) or abs(f) >= 1e21:
        return f
    return int(Decimal(repr(f)))


def js_int_literal(text: str | bytes) -> int | float:
    """An integer literal as ``JSON.parse`` reads it: a double, kept as an int where JS
    prints it as one (so 12345678901234567890 reads as 12345678901234567000)."""
    if len(text) <= 17:
        value = int(text)
        if -_SAFE_INT <= value <= _SAFE_INT:
            return value
    # float() of a decimal string is correctly rounded and has no digit limit.
    return _double_value(float(text))


_DECIMAL = re.compile(r"[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|Infinity)")
_RADIX = {"0x": 16, "0X": 16, "0o": 8, "0O": 8, "0b": 2, "0B": 2}


def to_number(value: object) -> float:
    """``Number(value)`` for JSON values (the coercion of relational operators): NaN when
    not numeric; a string is trimmed, empty means 0, ``0x``/``0o``/``0b`` and ``Infinity`` read."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float):
        return float(value)
    if value is None:
        return 0.0
    if isinstance(value, list | tuple):
        return to_number(js_string(value))  # [] is 0, [5] is 5, [1, 2] is NaN
    if not isinstance(value, str):
        return math.nan
    text = js_trim(value)
    if not text:
        return 0.0
    radix = _RADIX.get(text[:2])
    if radix is not None:
        try:
            return float(int(text[2:], radix)) if text[2:].isalnum() and text[2:].isascii() else math.nan
        except ValueError:
            return math.nan
    if _DECIMAL.fullmatch(text) is None:
        return math.nan
    return float(text.replace("Infinity", "inf"))


# --- values -------------------------------------------------------------------------------


class _Undefined:
    """JS ``undefined``: what a missing key reads as (`js_get`)."""

    _instance: _Undefined | None = None

    def __new__(cls) -> _Undefined:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNDEFINED"

    def __bool__(self) -> bool:
        return False


UNDEFINED: Final = _Undefined()


def js_get(obj: Mapping[str, Any], key: str) -> Any:
    """``obj[key]``: `UNDEFINED` when the key is missing (``None`` is JSON ``null``)."""
    return obj.get(key, UNDEFINED)


def js_string(value: Any) -> str:
    """``String(value)`` (and template interpolation ``${value}``) of a JSON value.

    ``None`` is JSON ``null`` → ``"null"``; `UNDEFINED` (a missing key, see `js_get`) →
    ``"undefined"``; an array joins its items with ``,`` (null and undefined items empty);
    an object is ``[object Object]``.
    """
    if value is None:
        return "null"
    if value is UNDEFINED:
        return "undefined"
    if isinstance(value, str):
        return value
    if isinstance(value, bool | int | float):
        return js_number(value)
    if isinstance(value, list | tuple):
        return ",".join("" if x is None or x is UNDEFINED else js_string(x) for x in value)
    if isinstance(value, Mapping):
        return "[object Object]"
    return str(value)


def js_truthy(value: Any) -> bool:
    """JS truthiness: ``""``, ``0``, ``NaN``, null and undefined are false; objects and arrays
    (even empty ones) are true."""
    if isinstance(value, float) and math.isnan(value):
        return False
    if isinstance(value, Mapping | list):
        return True
    return bool(value)


def js_or(*values: Any) -> Any:
    """``a || b || c``."""
    for v in values[:-1]:
        if js_truthy(v):
            return v
    return values[-1]


# --- JSON ---------------------------------------------------------------------------------

_ESCAPE_CHARS = re.compile('["\\\\\x00-\x1f\ud800-\udfff]')
_SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape_char(m: re.Match[str]) -> str:
    ch = m.group()
    short = _SHORT_ESCAPES.get(ch)
    return short if short is not None else f"\\u{ord(ch):04x}"


def json_quote(s: str) -> str:
    """A string literal exactly as ``JSON.stringify`` writes it (lone surrogates as ``\\udxxx``)."""
    if _SURROGATE.search(s):
        # Python keeps the halves of a pair as two code points; JS sees one character.
        s = s.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    return '"' + _ESCAPE_CHARS.sub(_escape_char, s) + '"'


def _is_array_index(k: str) -> bool:
    return k.isdigit() and k.isascii() and (k == "0" or k[0] != "0") and int(k) < 4294967295


_MAX_DEPTH: Final = 10_000


def json_stringify(value: Any, *, js_key_order: bool = True, strict: bool = False) -> str:
    """``JSON.stringify(value)`` without indentation, character for character.

    ``js_key_order``: integer-like keys first in ascending order, as in a JS object (the
    order an object parsed from JSON has); off, keys keep their order (the line writer's
    order, that of the file). ``strict``: a value that is not JSON raises ``TypeError``;
    otherwise it is written as the string of its ``str()``. Nesting deeper than 10,000
    raises ``ValueError``.
    """
    out: list[str] = []
    try:
        _encode(value, out, 0, js_key_order, strict)
    except RecursionError as exc:
        raise ValueError("value nested too deeply to serialize") from exc
    return "".join(out)


def _encode(obj: Any, out: list[str], depth: int, key_order: bool, strict: bool) -> None:
    if depth > _MAX_DEPTH:
        raise ValueError("value nested too deeply to serialize")
    if obj is None:
        out.append("null")
    elif obj is True:
        out.append("true")
    elif obj is False:
        out.append("false")
    elif isinstance(obj, str):
        out.append(json_quote(obj))
    elif isinstance(obj, int | float):
        out.append(json_number(obj))
    elif isinstance(obj, Mapping):
        keys: list[tuple[str, Any]] = []
        for key, val in obj.items():
            if isinstance(key, str):
                k = key
            elif isinstance(key, int | float) and not isinstance(key, bool):
                k = json_number(key)
            elif strict:
                raise TypeError(f"dict key must be str, not {type(key).__name__}")
            else:
                k = str(key)
            keys.append((k, val))
        if key_order and any(_is_array_index(k) for k, _ in keys):
            index = sorted((kv for kv in keys if _is_array_index(kv[0])), key=lambda kv: int(kv[0]))
            keys = index + [kv for kv in keys if not _is_array_index(kv[0])]
        out.append("{")
        for i, (k, val) in enumerate(keys):
            if i:
                out.append(",")
            out.append(json_quote(k))
            out.append(":")
            _encode(val, out, depth + 1, key_order, strict)
        out.append("}")
    elif isinstance(obj, list | tuple):
        out.append("[")
        for i, val in enumerate(obj):
            if i:
                out.append(",")
            _encode(val, out, depth + 1, key_order, strict)
        out.append("]")
    elif strict:
        raise TypeError(f"{type(obj).__name__} is not JSON serializable")
    else:
        out.append(json_quote(str(obj)))


# --- dates --------------------------------------------------------------------------------

_ISO_RE = re.compile(
    r"^(?P<year>[+-]\d{6}|\d{4})"
    r"(?:-(?P<month>\d\d)(?:-(?P<day>\d\d))?)?"
    r"(?:T(?P<hour>\d\d):(?P<minute>\d\d)(?::(?P<second>\d\d)(?:[.,](?P<frac>\d+))?)?"
    r"(?P<tz>Z|[+-]\d\d:?\d\d)?)?$",
    re.IGNORECASE | re.ASCII,
)
_LOCAL_RE = re.compile(
    r"^(?P<year>\d{4})-(?P<month>\d\d)-(?P<day>\d\d)[ T](?P<hour>\d\d):(?P<minute>\d\d)"
    r"(?::(?P<second>\d\d)(?:\.(?P<frac>\d+))?)?$",
    re.ASCII,
)
# What `Date.prototype.toISOString` writes, the form of every timestamp a writer makes.
_CANONICAL = re.compile(r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)\.(\d{3})Z", re.ASCII)
_DAYS_IN_MONTH = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
_MAX_TIME_MS = 8.64e15


def _utc_ms(year: int, month: int, day: int, hour: int, minute: int, second: int, ms: int) -> int:
    # calendar.timegm handles any proleptic Gregorian year datetime supports; compute days
    # ourselves so that years outside 1..9999 (the ±YYYYYY form) also work.
    days = _days_from_civil(year, month, day)
    return ((days * 24 + hour) * 60 + minute) * 60_000 + second * 1000 + ms


def _days_from_civil(y: int, m: int, d: int) -> int:
    # Howard Hinnant's algorithm: days since 1970-01-01 of a proleptic Gregorian date.
    y -= m <= 2
    era = (y if y >= 0 else y - 399) // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def _valid_date(year: int, month: int, day: int) -> bool:
    if not 1 <= month <= 12 or not 1 <= day <= _DAYS_IN_MONTH[month - 1]:
        return False
    return not (month == 2 and day == 29 and not (year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)))


def date_parse(value: str) -> int | None:
    """Epoch milliseconds of a string the way ``Date.parse`` reads it; ``None`` where JS gives NaN.

    The ECMAScript date-time format is supported in full (``YYYY``, ``YYYY-MM``,
    ``YYYY-MM-DD`` as UTC; a date-time without an offset as local time; ``Z`` or
    ``±HH:MM``; 1-9 fraction digits truncated to milliseconds; ``24:00``; the extended
    years ``±YYYYYY``), plus the common ``YYYY-MM-DD HH:MM[:SS]`` local form.
    """
    c = _CANONICAL.fullmatch(value)
    if c is not None:
        year, month, day, hour, minute, second, ms = map(int, c.groups())
        if _valid_date(year, month, day) and hour < 24 and minute < 60 and second < 60:
            return _utc_ms(year, month, day, hour, minute, second, ms)
        if hour != 24:
            return None
    s = js_trim(value)
    m = _ISO_RE.match(s)
    local = False
    if m is None:
        m = _LOCAL_RE.match(s)
        if m is None:
            return None
        local = True
    g = m.groupdict()
    year_s = g["year"]
    if year_s == "-000000":
        return None
    year = int(year_s)
    month = int(g["month"] or 1)
    day = int(g.get("day") or 1)
    hour = int(g["hour"] or 0)
    minute = int(g["minute"] or 0)
    second = int(g["second"] or 0)
    frac = g["frac"] or ""
    ms = int((frac + "00")[:3]) if frac else 0
    if not _valid_date(year, month, day):
        return None
    if hour > 24 or minute > 59 or second > 59 or (hour == 24 and (minute or second or ms)):
        return None
    tz = g.get("tz")
    if tz is None and g["hour"] is not None:
        local = True
    total = _utc_ms(year, month, day, hour, minute, second, ms)
    if local:
        total -= _local_offset_ms(total)
    elif tz and tz.upper() != "Z":
        sign = 1 if tz[0] == "+" else -1
        digits = tz[1:].replace(":", "")
        oh, om = int(digits[:2]), int(digits[2:])
        if oh > 23 or om > 59:
            return None
        total -= sign * (oh * 60 + om) * 60_000
    if abs(total) > _MAX_TIME_MS:
        return None
    return total


def _local_offset_ms(wall_ms: int) -> int:
    # Offset of local time from UTC at the given wall-clock time (best effort; outside the
    # range the platform supports, the current offset is used).
    try:
        secs = wall_ms // 1000
        lt = time.localtime(secs)
        guess = calendar.timegm(lt) - secs
        lt2 = time.localtime(secs - guess)
        return (calendar.timegm(lt2) - (secs - guess)) * 1000
    except (OverflowError, OSError, ValueError):
        return int(datetime.now().astimezone().utcoffset().total_seconds() * 1000)  # type: ignore[union-attr]


def date_ms(ts: Any) -> int | float | None:
    """``new Date(ts).getTime()`` for a JSON value (``None`` stands for NaN): a number is the
    time itself, a string is parsed (`date_parse`), anything else is NaN."""
    if isinstance(ts, bool):
        return None
    if isinstance(ts, int | float):
        return ts
    if isinstance(ts, str):
        return date_parse(ts)
    return None


# --- Node's Buffer ------------------------------------------------------------------------

_NOT_BASE64 = re.compile(r"[^A-Za-z0-9+/]")


def decode_base64_lenient(value: str) -> bytes:
    """Decode base64 as leniently as Node's ``Buffer.from(s, "base64")``.

    URL-safe characters are accepted, anything outside the alphabet is ignored, decoding
    stops at the first ``=``, and missing padding is tolerated.
    """
    text = value.split("=", 1)[0].replace("-", "+").replace("_", "/")
    text = _NOT_BASE64.sub("", text)
    if len(text) % 4 == 1:
        text = text[:-1]
    text += "=" * (-len(text) % 4)
    try:
        return base64.b64decode(text)
    except (binascii.Error, ValueError):
        return b""
