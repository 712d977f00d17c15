"""The JavaScript rules of `core.format.jscompat`, each against what JS gives."""

from __future__ import annotations

import base64
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sessiontree.core.format.jscompat import (
    JS_WHITESPACE,
    UNDEFINED,
    date_ms,
    date_parse,
    decode_base64_lenient,
    js_get,
    js_int_literal,
    js_number,
    js_or,
    js_round,
    js_string,
    js_trim,
    js_truthy,
    js_utf8,
    json_number,
    json_quote,
    json_stringify,
    to_number,
    utf16_length,
    utf16_slice,
)
from sessiontree.core.format.jsonl import dumps_line
from sessiontree.core.tree.context import context_from_path
from sessiontree.core.tree.messages import bash_execution_to_text, file_mention_text

TS_MS = 1767225600000  # 2026-01-01T00:00:00.000Z

# --- strings ------------------------------------------------------------------------------


def test_trim_removes_what_js_trim_removes() -> None:
    assert js_trim("\ufeff\u00a0 x \u3000\u2028") == "x"
    # Python's whitespace that is not JavaScript's stays.
    assert js_trim("\x1cx\x85") == "\x1cx\x85"
    assert set(JS_WHITESPACE) >= {"\t", "\n", "\v", "\f", "\r", " ", "\ufeff"}


def test_utf16_length_and_slice() -> None:
    assert utf16_length("abc") == 3
    assert utf16_length("é😀") == 3  # an astral character counts two
    assert utf16_length("\ud800") == 1  # a lone surrogate is one unit
    assert utf16_slice("a😀b", 2) == "a"  # a pair cut in two is left out whole
    assert utf16_slice("a😀b", 3) == "a😀"
    assert utf16_slice("abc", 5) == "abc"


def test_utf8_as_node_writes_it() -> None:
    assert js_utf8("é") == "é".encode()
    assert js_utf8("a\ud800b") == "a\ufffdb".encode()


# --- numbers ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1.0, "1"),
        (-0.0, "0"),
        (1.5, "1.5"),
        (1e21, "1e+21"),
        (1e-7, "1e-7"),
        (1e-6, "0.000001"),
        (123456789012.0, "123456789012"),
        (2**53 + 2, "9007199254740994"),
        (math.nan, "NaN"),
        (math.inf, "Infinity"),
        (-math.inf, "-Infinity"),
        (True, "true"),
    ],
)
def test_number_to_string(value: Any, text: str) -> None:
    assert js_number(value) == text


def test_json_writes_non_finite_numbers_as_null() -> None:
    assert json_number(math.nan) == json_number(math.inf) == "null"
    assert json_number(2.0) == "2"


@settings(max_examples=500)
@given(st.floats(allow_nan=False, allow_infinity=False))
def test_number_round_trips_and_matches_the_line_writer(f: float) -> None:
    text = json_number(f)
    assert float(text) == f or (f == 0 and float(text) == 0)
    assert js_number(f) == text
    assert dumps_line(f) == text.encode()
    assert dumps_line([f]) == f"[{text}]".encode()


def test_math_round() -> None:
    assert [js_round(x) for x in (0.5, 1.499, 1.5, 2.5, -2.5, 0.49999999999999994)] == [1, 1, 2, 3, -2, 0]
    assert math.isnan(js_round(math.nan))


def test_json_parse_reads_big_integers_as_doubles() -> None:
    assert js_int_literal("12") == 12
    assert js_int_literal("12345678901234567890") == 12345678901234567000
    assert js_int_literal("1" + "0" * 30) == 1e30


@pytest.mark.parametrize(
    ("value", "number"),
    [
        ("3", 3.0),
        (" 2.5\ufeff", 2.5),
        ("", 0.0),
        ("0x10", 16.0),
        ("Infinity", math.inf),
        ("1_000", math.nan),  # Python reads it, JavaScript does not
        ("inf", math.nan),
        ("abc", math.nan),
        (True, 1.0),
        (None, 0.0),
        ([], 0.0),
        ([7], 7.0),
        ({}, math.nan),
    ],
)
def test_number_coercion(value: Any, number: float) -> None:
    got = to_number(value)
    assert got == number or (math.isnan(got) and math.isnan(number))


# --- values -------------------------------------------------------------------------------


def test_string_of_null_and_of_undefined() -> None:
    # JSON null is None; a missing key reads as UNDEFINED (dict.get would give None for both).
    assert js_string(None) == "null"
    assert js_string(UNDEFINED) == "undefined"
    assert js_string(js_get({"a": None}, "a")) == "null"
    assert js_string(js_get({}, "a")) == "undefined"


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("s", "s"),
        (2.0, "2"),
        (False, "false"),
        ([1, None, "x", [2, 3]], "1,,x,2,3"),
        ({"a": 1}, "[object Object]"),
    ],
)
def test_string_of_json_values(value: Any, text: str) -> None:
    assert js_string(value) == text


def test_truthiness_and_or() -> None:
    assert [js_truthy(v) for v in ("", 0, math.nan, None, UNDEFINED, [], {}, "0")] == [
        False,
        False,
        False,
        False,
        False,
        True,
        True,
        True,
    ]
    assert js_or("", 0, "x") == "x"
    assert js_or(None, []) == []


def test_the_context_and_the_messages_tell_null_from_undefined() -> None:
    # `${message.provider}/${message.model}` and `Ran \`${msg.command}\``, as the reference
    # interpolates them: a missing field prints "undefined", a null one "null".
    def default_model(message: dict[str, Any]) -> str:
        path = [{"type": "message", "id": "a", "parentId": None, "timestamp": "t", "message": message}]
        return context_from_path(path).models["default"]

    assert default_model({"role": "assistant", "model": "m"}) == "undefined/m"
    assert default_model({"role": "assistant", "provider": None, "model": "m"}) == "null/m"
    assert bash_execution_to_text({"role": "bashExecution"}).startswith("Ran `undefined`")
    assert bash_execution_to_text({"role": "bashExecution", "command": None}).startswith("Ran `null`")
    assert '<file path="undefined">' in file_mention_text([{"content": ""}])


# --- JSON ---------------------------------------------------------------------------------


def test_json_stringify() -> None:
    assert json_stringify({"b": 1.0, "10": 2, "2": 3, "a": [1.5, -0.0, 1e21, 123456789012.0]}) == (
        '{"2":3,"10":2,"b":1,"a":[1.5,0,1e+21,123456789012]}'
    )
    assert json_stringify({"b": 1, "2": 3}, js_key_order=False) == '{"b":1,"2":3}'
    assert json_stringify('q"\\\u0001') == '"q\\"\\\\\\u0001"'
    with pytest.raises(TypeError):
        json_stringify({"a": {1}}, strict=True)
    assert json_stringify({1}) == '"{1}"'


def test_json_quote_escapes_lone_surrogates_and_keeps_pairs() -> None:
    assert json_quote("a\ud800") == '"a\\ud800"'
    assert json_quote("😀") == '"😀"'
    # two halves of a pair held as two code points are one character to JS
    assert json_quote("\ud83d\ude00") == '"😀"'


# --- dates --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("2026-01-01T00:00:00.000Z", TS_MS),
        ("2026-01-01T00:00:00Z", TS_MS),
        ("2026-01-01T00:00:00.1234Z", TS_MS + 123),
        ("2026-01-01T01:00:00.000+01:00", TS_MS),
        ("2026-01-01", TS_MS),
        ("2026-01", TS_MS),
        ("2026", TS_MS),
        ("2025-12-31T24:00:00Z", TS_MS),
        ("2025-12-31T24:00:00.000Z", TS_MS),
        (" 2026-01-01T00:00:00.000Z ", TS_MS),
        ("+002026-01-01T00:00:00Z", TS_MS),
        ("not a date", None),
        ("2026-13-01T00:00:00Z", None),
        ("2026-02-29T00:00:00.000Z", None),
        ("٢٠٢٦-01-01T00:00:00.000Z", None),  # digits JS does not read
        ("", None),
    ],
)
def test_date_parse(text: str, ms: int | None) -> None:
    assert date_parse(text) == ms


def test_date_of_json_values() -> None:
    assert date_ms(TS_MS) == TS_MS
    assert date_ms("2026-01-01T00:00:00.000Z") == TS_MS
    assert date_ms(True) is None
    assert date_ms(None) is None


# --- Node's Buffer ------------------------------------------------------------------------


def test_lenient_base64_decoding() -> None:
    assert decode_base64_lenient("aGVsbG8=") == b"hello"
    assert decode_base64_lenient("aGVsbG8") == b"hello"
    assert decode_base64_lenient("aGVs\nbG8=") == b"hello"
    assert decode_base64_lenient("-_8") == base64.urlsafe_b64decode("-_8=")
    assert decode_base64_lenient("aGVsbG8=garbage") == b"hello"
