"""The lenient JSONL parser (reference semantics plus reporting) and JS-compatible output.

Parsing follows the reference agent's streaming parser exactly (docs/storage-format.md):

* blank and whitespace-only lines are ignored; ``\\r\\n`` is fine; the final newline is optional;
* a value may span several lines (a newline inside a value is whitespace);
* a syntax error drops everything from the start of the failing value through the end of
  the physical line where that value *started*; parsing resumes on the next line;
* after a complete value, anything else on the same line (junk, a second value) is dropped;
* an incomplete value at the end of the input (a torn tail) is dropped, and with it
  everything it swallowed when a torn line in the middle reads on into the following lines;
* any JSON value is returned (scalars and arrays too), duplicate keys keep the last value,
  integers beyond 2**53 are rounded like JS doubles;
* a *string* that starts with U+FEFF loses its first line, but bytes are decoded like a
  file (a leading UTF-8 BOM is skipped); invalid UTF-8 inside strings becomes U+FFFD.

On top of that every dropped region is reported (DIVERGENCES 2): :class:`ParseReport`.
Nothing in here raises on any input.

Speed: each physical line is first handed to ``orjson.loads``; only a line that does not
parse on its own (or that holds a long digit run, which needs JS number rounding) goes
through the exact hand-written scanner, from that line on.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from .jscompat import js_int_literal, json_stringify

__all__ = [
    "DroppedLine",
    "ParseReport",
    "dumps_line",
    "load_entries_from_file",
    "loads_line",
    "mask_lone_surrogate_escapes",
    "parse_jsonl_lenient",
    "parse_session_entries",
    "scrub_surrogates",
    "scrub_text",
]

_BOM = b"\xef\xbb\xbf"

_WS = re.compile(rb"[ \t\r\n]*")
_HWS = re.compile(rb"[ \t\r]*")
_STR_PLAIN = re.compile(rb'[^"\\\x00-\x1f]*')
_NUM_SPAN = re.compile(rb"[-+0-9.eE]*")
_NUM_FULL = re.compile(rb"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?")
_NUM_PARTIAL = re.compile(rb"-?|-?(?:0|[1-9][0-9]*)(?:\.|(?:\.[0-9]+)?[eE][+-]?)")
# Long digit runs are found on a digit map of the whole input (one C-speed pass) rather
# than by a regex per line, which would cost more than parsing.
_DIGIT_MAP = bytes(0x30 if 0x30 <= c <= 0x39 else 0x20 for c in range(256))
_DIGIT_RUN = b"0" * 16
_HEX4 = re.compile(rb"[0-9a-fA-F]{4}")
_HEX_PREFIX = re.compile(rb"[0-9a-fA-F]{0,3}")
_SURROGATE = re.compile("[\ud800-\udfff]")
_LITERALS: dict[int, tuple[bytes, Any]] = {
    ord("t"): (b"true", True),
    ord("f"): (b"false", False),
    ord("n"): (b"null", None),
}
_ESCAPES = {
    ord('"'): '"',
    ord("\\"): "\\",
    ord("/"): "/",
    ord("b"): "\b",
    ord("f"): "\f",
    ord("n"): "\n",
    ord("r"): "\r",
    ord("t"): "\t",
}
_IDENT_CHARS = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_$")

_OK, _ERROR, _INCOMPLETE = 0, 1, 2


@dataclass(frozen=True, slots=True)
class DroppedLine:
    """A region of the input that the lenient parser dropped.

    ``line`` is the 1-based line number where the region starts, ``offset`` and ``length``
    its byte range in the UTF-8 data (for ``bytes`` input: in the original bytes, a BOM
    included; the terminating newline is not part of the range) and ``reason`` one of
    ``"syntax"`` (the line is not JSON), ``"trailing"`` (junk or a second value after a
    complete value on the same line) or ``"torn"`` (an incomplete value at the end of the
    input; it may span several lines).
    """

    line: int
    offset: int
    length: int
    reason: str


@dataclass(slots=True)
class ParseReport:
    """The result of :func:`parse_jsonl_lenient`: the values plus what was dropped.

    ``skipped_lines`` counts the dropped regions other than the torn tail; ``torn_tail`` is
    true when the input ended inside an incomplete value.
    """

    values: list[Any] = field(default_factory=list)
    skipped_lines: int = 0
    torn_tail: bool = False
    dropped: list[DroppedLine] = field(default_factory=list)

    @property
    def recovered(self) -> bool:
        """True when anything was dropped."""
        return bool(self.dropped)


# ---------------------------------------------------------------------------- lone surrogates
#
# JSON allows a ``\udxxx`` escape that is not half of a pair; a JavaScript agent writes one
# whenever it cuts a string inside an emoji (``"cut \ud83d here"``). Python's ``str`` can
# hold such a code point, but it has no UTF-8 form: orjson and msgspec refuse to read or
# write it and ``str.encode("utf-8")`` raises. The rule (docs/storage-format.md): values
# keep the lone surrogate in memory, so that a rewrite writes the same escape back
# (`dumps_line`); everything that is *shown* (view text, titles, the wire, summarizer
# input) gets U+FFFD in its place (`scrub_text`, `scrub_surrogates`).

# An escaped backslash, a surrogate pair, or a single surrogate escape (the lone one).
_SURROGATE_ESCAPE = re.compile(
    rb"\\(?:\\|u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}|(u[dD][89a-fA-F][0-9a-fA-F]{2}))"
)
_REPLACEMENT_ESCAPE = b"\\ufffd"


def mask_lone_surrogate_escapes(
    data: bytes | bytearray | memoryview, positions: list[int] | None = None
) -> bytes | None:
    """``data`` with every lone surrogate escape replaced by ``\\ufffd``, or ``None`` when it
    has none. The replacement has the same length, so byte offsets stay valid; pairs and
    escaped backslashes are left alone. For decoders that refuse lone surrogates.
    ``positions``, when given, receives the offset of each replaced escape."""
    buf = bytes(data)
    if b"\\u" not in buf:
        return None
    found: list[int] = [] if positions is None else positions
    before = len(found)

    def repl(m: re.Match[bytes]) -> bytes:
        if m.group(1) is None:
            return m.group(0)
        found.append(m.start())
        return _REPLACEMENT_ESCAPE

    out = _SURROGATE_ESCAPE.sub(repl, buf)
    return out if len(found) > before else None


def loads_line(line: bytes | bytearray | memoryview) -> Any:
    """One physical line as one JSON value: orjson, and the stdlib parser for a line that
    orjson refuses only because of lone surrogate escapes (same values as the lenient
    parser). Raises ``ValueError`` when the line is not one JSON value."""
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        buf = bytes(line)
        if b"\\u" not in buf:
            raise
    try:
        return _stdlib_line(buf)
    except (ValueError, RecursionError) as exc:
        raise ValueError(f"not one JSON value: {exc}") from exc


def scrub_text(s: str) -> str:
    """``s`` with each lone surrogate shown as U+FFFD (a pair held as two code points is
    joined into its character). Returns ``s`` itself when there is nothing to replace."""
    if s.isascii():
        return s
    try:
        s.encode("utf-8")  # only a surrogate has no UTF-8 form (4-5x faster than a regex search)
    except UnicodeEncodeError:
        return s.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return s


def scrub_surrogates(value: Any) -> Any:
    """A JSON-like value whose strings (keys too) have gone through `scrub_text`.

    Returns ``value`` itself when no string needs it; otherwise a copy of the dicts and
    lists (tuples become lists), built without recursion so any depth works. Other
    objects are kept as they are.
    """
    if isinstance(value, str):
        return scrub_text(value)
    if not isinstance(value, dict | list | tuple) or not _needs_scrub(value):
        return value
    out: Any = {} if isinstance(value, dict) else []
    stack: list[tuple[Any, Any]] = [(value, out)]
    while stack:
        src, dst = stack.pop()
        if isinstance(src, dict):
            for k, v in src.items():
                k2 = scrub_text(k) if isinstance(k, str) else k
                if isinstance(v, dict | list | tuple):
                    child: Any = {} if isinstance(v, dict) else []
                    dst[k2] = child
                    stack.append((v, child))
                else:
                    dst[k2] = scrub_text(v) if isinstance(v, str) else v
        else:
            for v in src:
                if isinstance(v, dict | list | tuple):
                    child = {} if isinstance(v, dict) else []
                    dst.append(child)
                    stack.append((v, child))
                else:
                    dst.append(scrub_text(v) if isinstance(v, str) else v)
    return out


def _needs_scrub(value: Any) -> bool:
    try:
        orjson.dumps(value)
    except orjson.JSONEncodeError as exc:
        # Any other refusal (depth, big integers) is the caller's to handle; look anyway.
        if "surrogates" in str(exc):
            return True
        return _has_surrogate(value)
    except TypeError:
        return _has_surrogate(value)
    return False


def _has_surrogate(value: Any) -> bool:
    stack = [value]
    search = _SURROGATE.search
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            if not v.isascii() and search(v) is not None:
                return True
        elif isinstance(v, dict):
            for k in v:
                if isinstance(k, str) and not k.isascii() and search(k) is not None:
                    return True
            stack.extend(v.values())
        elif isinstance(v, list | tuple):
            stack.extend(v)
    return False


# ---------------------------------------------------------------------------- numbers


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _stdlib_line(line: bytes) -> Any:
    """Parse one line with exact JS number semantics (used for lines with long digit runs)."""
    return json.loads(
        line.decode("utf-8"),
        parse_int=js_int_literal,
        parse_constant=_reject_constant,
    )


# ---------------------------------------------------------------------------- scanner


class _Scanner:
    """The exact streaming semantics over UTF-8 bytes (one value at a time)."""

    __slots__ = ("buf", "errors", "n")

    def __init__(self, buf: bytes, errors: str) -> None:
        self.buf = buf
        self.n = len(buf)
        self.errors = errors

    def string(self, i: int) -> tuple[int, Any, int]:
        """Parse the string literal whose quote is at ``i``."""
        buf, n = self.buf, self.n
        parts: list[str] = []
        escaped_surrogate = False
        j = i + 1
        while True:
            k = _STR_PLAIN.match(buf, j).end()  # type: ignore[union-attr]
            if k > j:
                parts.append(buf[j:k].decode("utf-8", self.errors))
            if k >= n:
                return _INCOMPLETE, None, n
            c = buf[k]
            if c == 0x22:
                text = "".join(parts)
                if (escaped_surrogate or self.errors != "replace") and _SURROGATE.search(text):
                    text = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
                return _OK, text, k + 1
            if c != 0x5C:
                return _ERROR, None, k  # a raw control character
            if k + 1 >= n:
                return _INCOMPLETE, None, n
            e = buf[k + 1]
            simple = _ESCAPES.get(e)
            if simple is not None:
                parts.append(simple)
                j = k + 2
                continue
            if e != 0x75:  # 'u'
                return _ERROR, None, k
            if _HEX4.match(buf, k + 2):
                cp = int(buf[k + 2 : k + 6], 16)
                if 0xD800 <= cp <= 0xDFFF:
                    escaped_surrogate = True
                parts.append(chr(cp))
                j = k + 6
                continue
            if _HEX_PREFIX.match(buf, k + 2).end() >= n:  # type: ignore[union-attr]
                return _INCOMPLETE, None, n
            return _ERROR, None, k

    def number(self, i: int) -> tuple[int, Any, int]:
        buf, n = self.buf, self.n
        k = _NUM_SPAN.match(buf, i).end()  # type: ignore[union-attr]
        span = buf[i:k]
        m = _NUM_FULL.fullmatch(span)
        if m is None:
            if k >= n and _NUM_PARTIAL.fullmatch(span):
                return _INCOMPLETE, None, n
            return _ERROR, None, i
        if m.group(1) is None and m.group(2) is None:
            return _OK, js_int_literal(span), k
        return _OK, float(span), k

    def literal(self, i: int) -> tuple[int, Any, int]:
        buf, n = self.buf, self.n
        word, value = _LITERALS[buf[i]]
        end = i + len(word)
        if buf.startswith(word, i):
            if end < n and buf[end] in _IDENT_CHARS:
                return _ERROR, None, end
            return _OK, value, end
        if end > n and word.startswith(buf[i:n]):
            return _INCOMPLETE, None, n
        return _ERROR, None, i

    def value(self, pos: int) -> tuple[int, Any, int]:
        """Parse one JSON value starting at ``pos`` (whitespace, newlines included, allowed)."""
        buf, n = self.buf, self.n
        ws = _WS.match
        # Each frame is [container, pending_key]; iterative so deep nesting cannot overflow.
        stack: list[list[Any]] = []
        i = pos
        while True:
            # ---- expect a value at i
            i = ws(buf, i).end()  # type: ignore[union-attr]
            if i >= n:
                return _INCOMPLETE, None, n
            c = buf[i]
            value: Any
            if c == 0x7B:  # {
                i = ws(buf, i + 1).end()  # type: ignore[union-attr]
                if i >= n:
                    return _INCOMPLETE, None, n
                if buf[i] == 0x7D:
                    value = {}
                    i += 1
                else:
                    status, key, i = self._key(i)
                    if status != _OK:
                        return status, None, i
                    stack.append([{}, key])
                    continue
            elif c == 0x5B:  # [
                i = ws(buf, i + 1).end()  # type: ignore[union-attr]
                if i >= n:
                    return _INCOMPLETE, None, n
                if buf[i] == 0x5D:
                    value = []
                    i += 1
                else:
                    stack.append([[], None])
                    continue
            else:
                if c == 0x22:
                    status, value, i = self.string(i)
                elif c == 0x2D or 0x30 <= c <= 0x39:
                    status, value, i = self.number(i)
                elif c in _LITERALS:
                    status, value, i = self.literal(i)
                else:
                    return _ERROR, None, i
                if status != _OK:
                    return status, None, i
            # ---- a value is complete: attach it and close finished containers
            while True:
                if not stack:
                    return _OK, value, i
                frame = stack[-1]
                container = frame[0]
                is_obj = type(container) is dict
                if is_obj:
                    container[frame[1]] = value
                else:
                    container.append(value)
                i = ws(buf, i).end()  # type: ignore[union-attr]
                if i >= n:
                    return _INCOMPLETE, None, n
                c = buf[i]
                if c == 0x2C:  # ,
                    if is_obj:
                        i = ws(buf, i + 1).end()  # type: ignore[union-attr]
                        status, key, i = self._key(i)
                        if status != _OK:
                            return status, None, i
                        frame[1] = key
                    else:
                        i += 1
                    break
                if c == (0x7D if is_obj else 0x5D):
                    i += 1
                    value = container
                    stack.pop()
                    continue
                return _ERROR, None, i

    def _key(self, i: int) -> tuple[int, Any, int]:
        """An object key at ``i`` followed by ``:``; returns the position after the colon."""
        buf, n = self.buf, self.n
        if i >= n:
            return _INCOMPLETE, None, n
        if buf[i] != 0x22:
            return _ERROR, None, i
        status, key, i = self.string(i)
        if status != _OK:
            return status, None, i
        i = _WS.match(buf, i).end()  # type: ignore[union-attr]
        if i >= n:
            return _INCOMPLETE, None, n
        if buf[i] != 0x3A:
            return _ERROR, None, i
        return _OK, key, i + 1


_FAIL = object()


def parse_jsonl_lenient(data: bytes | bytearray | memoryview | str, *, fast: bool = True) -> ParseReport:
    """Parse JSONL text with the reference's lenient semantics and report what was dropped.

    ``bytes`` are treated like a file's contents (a leading UTF-8 BOM is skipped, invalid
    UTF-8 in strings becomes U+FFFD); a ``str`` is parsed as the reference parses a string
    (a leading U+FEFF makes the first line garbage). Never raises. ``fast=False`` skips the
    orjson fast path and uses only the exact scanner (same results, slower; for tests).
    """
    if isinstance(data, str):
        buf = data.encode("utf-8", "surrogatepass")
        errors = "surrogatepass"
        pos = 0
    else:
        buf = bytes(data)
        errors = "replace"
        pos = 3 if buf.startswith(_BOM) else 0
    report = ParseReport()
    values = report.values
    n = len(buf)
    view = memoryview(buf)
    find = buf.find
    loads = orjson.loads
    decode_error = orjson.JSONDecodeError
    digit_map = buf.translate(_DIGIT_MAP)
    next_long = digit_map.find(_DIGIT_RUN)
    scanner: _Scanner | None = None
    line_no = 1
    line_pos = 0

    def line_of(offset: int) -> int:
        nonlocal line_no, line_pos
        line_no += buf.count(b"\n", line_pos, offset)
        line_pos = offset
        return line_no

    def drop(start: int, stop: int, reason: str) -> None:
        report.dropped.append(DroppedLine(line_of(start), start, stop - start, reason))
        if reason == "torn":
            report.torn_tail = True
        else:
            report.skipped_lines += 1

    while pos < n:
        nl = find(b"\n", pos)
        end = n if nl < 0 else nl
        # ---- fast path: the physical line is one complete value
        if end > pos and fast:
            value: Any = _FAIL
            try:
                value = loads(view[pos:end])
            except decode_error:
                if find(b"\\u", pos, end) >= 0:
                    # orjson refuses lone surrogate escapes, the stdlib parser reads them
                    # with the same results as the scanner (which takes anything else).
                    try:
                        value = _stdlib_line(buf[pos:end])
                    except Exception:
                        value = _FAIL
            except Exception:  # orjson limits (e.g. nesting depth): let the scanner decide
                pass
            if value is not _FAIL and next_long != -1 and next_long < end:
                if next_long < pos:
                    next_long = digit_map.find(_DIGIT_RUN, pos)
                if next_long != -1 and next_long < end:
                    # A long digit run (big integer or long float literal): JS rounding.
                    try:
                        value = _stdlib_line(buf[pos:end])
                    except Exception:
                        value = _FAIL
            if value is not _FAIL:
                values.append(value)
                pos = end + 1
                continue
            if not buf[pos:end].strip(b" \t\r"):
                pos = end + 1
                continue
        elif nl >= 0 and end == pos:
            pos = end + 1
            continue
        # ---- exact streaming semantics for one value, from this line on
        if scanner is None:
            scanner = _Scanner(buf, errors)
        start = _WS.match(buf, pos).end()  # type: ignore[union-attr]
        if start >= n:
            break
        try:
            status, value, stop = scanner.value(start)
        except Exception:  # defensive: the scanner is total, but never raise on input
            status, value, stop = _ERROR, None, start
        if status == _INCOMPLETE:
            drop(start, n, "torn")
            break
        line_end = find(b"\n", start if status == _ERROR else stop)
        line_end = n if line_end < 0 else line_end
        if status == _ERROR:
            drop(start, line_end, "syntax")
            pos = line_end + 1
            continue
        values.append(value)
        after = _HWS.match(buf, stop).end()  # type: ignore[union-attr]
        if after < line_end:
            drop(after, line_end, "trailing")
        pos = line_end + 1
    return report


def parse_session_entries(data: bytes | bytearray | memoryview | str) -> list[Any]:
    """The reference's ``parseSessionEntries``: the parsed values only."""
    return parse_jsonl_lenient(data).values


def is_session_header(value: object) -> bool:
    """True for a dict with ``type == "session"`` and a string ``id`` (the loader's check)."""
    return isinstance(value, dict) and value.get("type") == "session" and isinstance(value.get("id"), str)


def load_entries_from_file(path: str) -> list[Any]:
    """The reference's ``loadEntriesFromFile``: ``[]`` for a missing or empty file or one
    without a valid header as its first parsed value; other read errors propagate."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return []
    values = parse_jsonl_lenient(data).values
    if not values or not is_session_header(values[0]):
        return []
    return values


# ---------------------------------------------------------------------------- output

# Number tokens orjson prints differently from JS: "1.0" (JS "1") and exponent forms
# (JS "1e+21", "0.000001"). Inside strings this can match too; that only costs a slow path.
# The exact pattern is slow to search (its first item is an alternation), so cheap
# literal-prefixed probes run first and the exact one only on outputs they flag.
_SUSPECT_NUMBER = re.compile(rb"(?:^|[:,\[])-?[0-9]+(?:\.0(?![0-9])|(?:\.[0-9]+)?e)")
_PROBE_INTEGRAL = re.compile(rb"\.0[,\]}]")
_PROBE_NEG_EXP = re.compile(rb"e-[0-9]")
_dumps_fast: Callable[[Any], bytes] = orjson.dumps


def _dumps_slow(obj: Any) -> bytes:
    # The file keeps its keys in their order (no JS integer-key reordering), and a value
    # that is not JSON is an error, not a string.
    return json_stringify(obj, js_key_order=False, strict=True).encode("utf-8")


def needs_js_number_fixup(out: bytes) -> bool:
    """True when orjson output ``out`` may hold a number JS prints differently."""
    return bool(
        (_PROBE_INTEGRAL.search(out) or b"e+" in out or _PROBE_NEG_EXP.search(out) or out.endswith(b".0"))
        and _SUSPECT_NUMBER.search(out)
    )


def dumps_line(obj: Any) -> bytes:
    """Compact JSON exactly as JS ``JSON.stringify`` writes it, as UTF-8, without a newline.

    Non-ASCII is kept raw, ``/`` is not escaped, numbers are formatted like JS (``1.0`` →
    ``1``, ``1e21`` → ``1e+21``, ``1e-6`` → ``0.000001``), lone surrogates become
    ``\\udxxx`` escapes. Raises ``TypeError`` for values that are not JSON (sets, bytes,
    objects) where JS would silently skip or convert them.
    """
    try:
        out = _dumps_fast(obj)
    except (TypeError, orjson.JSONEncodeError):
        return _dumps_slow(obj)
    if needs_js_number_fixup(out):
        return _dumps_slow(obj)
    return out
