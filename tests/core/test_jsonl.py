"""The lenient JSONL parser (reference golden cases, reporting, properties) and dumps_line."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sessiontree.core.format.jsonl import (
    DroppedLine,
    _Scanner,
    dumps_line,
    load_entries_from_file,
    parse_jsonl_lenient,
    parse_session_entries,
)
from shared_data import real_v1_session

REF = Path(__file__).parent.parent / "fixtures" / "reference"
CASES: dict[str, str] = json.loads((REF / "inputs.json").read_text())["parserCases"]
EXPECTED: dict[str, list[Any]] = json.loads((REF / "parser.expected.json").read_text())


def canon(values: list[Any]) -> bytes:
    """Compare values as the reference would print them (key order and JS numbers included)."""
    return b"\n".join(dumps_line(v) for v in values)


# ------------------------------------------------------------------ golden reference cases


def test_every_reference_case_is_present() -> None:
    assert set(CASES) == set(EXPECTED)
    assert len(CASES) >= 25


@pytest.mark.parametrize("name", sorted(CASES))
def test_reference_case_from_string(name: str) -> None:
    values = parse_session_entries(CASES[name])
    assert values == EXPECTED[name]
    assert canon(values) == canon(EXPECTED[name])


@pytest.mark.parametrize("name", sorted(set(CASES) - {"bom"}))
def test_reference_case_from_bytes(name: str) -> None:
    assert parse_session_entries(CASES[name].encode("utf-8")) == EXPECTED[name]


def test_bom_string_drops_first_line_but_bom_file_loads_everything() -> None:
    text = CASES["bom"]
    assert text.startswith("\ufeff")
    assert parse_session_entries(text) == [{"b": 2}]
    assert parse_session_entries(text.encode("utf-8")) == [{"a": 1}, {"b": 2}]


def test_big_int_rounds_like_a_js_double() -> None:
    (value,) = parse_session_entries('{"a":12345678901234567890}\n')
    assert value["a"] == 12345678901234567000
    assert dumps_line(value) == b'{"a":12345678901234567000}'
    # 2**53 + 1 is not a double; 2**53 is.
    assert parse_session_entries("[9007199254740993, 9007199254740992, -9007199254740993]")[0] == [
        9007199254740992,
        9007199254740992,
        -9007199254740992,
    ]
    assert parse_session_entries("[1e400, 123456789012345678901234567890]")[0] == [
        math.inf,
        1.2345678901234568e29,
    ]


def test_long_float_literals_parse_exactly() -> None:
    (value,) = parse_session_entries(b'{"x":0.30000000000000004,"y":0.1000000000000000055511151231257827}\n')
    assert value == {"x": 0.30000000000000004, "y": 0.1}


# ------------------------------------------------------------------ reporting (DIVERGENCES 2)


def test_report_lists_dropped_regions_with_byte_offsets() -> None:
    data = b'{"a":1}\nnot json\n{"b":2} junk\n{"c":'
    report = parse_jsonl_lenient(data)
    assert report.values == [{"a": 1}, {"b": 2}]
    assert report.dropped == [
        DroppedLine(line=2, offset=8, length=8, reason="syntax"),
        DroppedLine(line=3, offset=25, length=4, reason="trailing"),
        DroppedLine(line=4, offset=30, length=5, reason="torn"),
    ]
    for d in report.dropped:
        assert data[d.offset : d.offset + d.length] in (b"not json", b"junk", b'{"c":')
    assert report.skipped_lines == 2
    assert report.torn_tail is True
    assert report.recovered


def test_clean_input_reports_nothing() -> None:
    report = parse_jsonl_lenient(b'{"a":1}\r\n\n  \n{"b":2}')
    assert report.values == [{"a": 1}, {"b": 2}]
    assert report.dropped == [] and report.skipped_lines == 0 and not report.torn_tail
    assert not report.recovered


def test_offsets_count_bytes_of_multibyte_text_and_bom() -> None:
    data = "\ufeff" + '{"é":"ü😀"}\nxx\n'
    report = parse_jsonl_lenient(data.encode("utf-8"))
    assert report.values == [{"é": "ü😀"}]
    (drop,) = report.dropped
    raw = data.encode("utf-8")
    assert raw[drop.offset : drop.offset + drop.length] == b"xx"
    assert drop.line == 2


def test_torn_middle_line_swallowing_the_rest_is_reported_as_torn() -> None:
    report = parse_jsonl_lenient(b'{"a":1}\n{"b":\n{"c":3}\n')
    assert report.values == [{"a": 1}]
    assert report.torn_tail
    (drop,) = report.dropped
    assert (drop.line, drop.offset, drop.reason) == (2, 8, "torn")


# ------------------------------------------------------------------ scanner details


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a":\n\n  [1,\n2]}\n{"b":2}\n', [{"a": [1, 2]}, {"b": 2}]),
        ('{"s":"\\ud800x"}\n', [{"s": "\ud800x"}]),  # lone surrogate escapes are kept (JS strings)
        ('{"s":"\\ud83d\\ude00"}\n', [{"s": "😀"}]),
        ('{"a":1}\r\n{"b":2}\r\n', [{"a": 1}, {"b": 2}]),
        ("01\n2\n", [2]),  # a leading zero is a syntax error
        ("truex\nnull\n", [None]),
        ("[1,2\n", []),
        ("-\n", []),  # "-" then a newline is an error, not a torn value
        ('{"a":1} {"b":2}\n', [{"a": 1}]),
        ('"\\x"\n"ok"\n', ["ok"]),
        ('{"a":"tab\there"}\n{"b":1}\n', [{"b": 1}]),  # raw control characters are errors
        ('{"a":1,"a":{"b":2},"c":3}\n', [{"a": {"b": 2}, "c": 3}]),
        ("[]\n{}\n", [[], {}]),
        ('{"a":[{"b":[{"c":{}}]}]}', [{"a": [{"b": [{"c": {}}]}]}]),
    ],
)
def test_scanner_cases(text: str, expected: list[Any]) -> None:
    assert parse_session_entries(text) == expected
    assert parse_session_entries(text.encode("utf-8")) == expected


def test_duplicate_keys_keep_the_first_position_and_the_last_value() -> None:
    (value,) = parse_session_entries('{"a":1,"b":2,"a":3}\n')
    assert list(value.items()) == [("a", 3), ("b", 2)]


def test_invalid_utf8_in_a_file_becomes_replacement_characters() -> None:
    values = parse_session_entries(b'{"a":"x\xffy"}\n{"b":"\xed\xa0\x80"}\n')
    assert values == [{"a": "x\ufffdy"}, {"b": "\ufffd\ufffd\ufffd"}]


def test_deep_nesting_does_not_overflow() -> None:
    depth = 50_000
    data = ("[" * depth + "]" * depth + "\n" + '{"ok":1}\n').encode()
    values = parse_session_entries(data)
    assert values[-1] == {"ok": 1}
    assert len(values) == 2
    torn = parse_jsonl_lenient(b"[" * depth)
    assert torn.values == [] and torn.torn_tail


def test_scanner_agrees_with_json_on_single_values() -> None:
    samples = ['{"a":[1,2.5,-3e2,true,false,null,"x\\n\\"y"]}', '"\\u00e9"', "[[],{}]", "-0.5e-3", '{"":""}']
    for text in samples:
        raw = text.encode()
        status, value, end = _Scanner(raw, "replace").value(0)
        assert (status, end) == (0, len(raw))
        assert value == json.loads(text)


# ------------------------------------------------------------------ properties

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53), max_value=2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
json_objects = st.dictionaries(st.text(max_size=8), json_values, max_size=5)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=300))
def test_never_raises_on_any_bytes(data: bytes) -> None:
    report = parse_jsonl_lenient(data)
    assert report.skipped_lines == sum(1 for d in report.dropped if d.reason != "torn")
    for d in report.dropped:
        assert d.offset >= 0 and d.offset + d.length <= len(data)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(alphabet=st.characters(exclude_categories=()), max_size=200))
def test_never_raises_on_any_text(text: str) -> None:
    # Lone surrogates included: a Python str can hold them, as a JS string can.
    parse_jsonl_lenient(text)


@settings(max_examples=200)
@given(st.lists(st.text(alphabet=st.characters(exclude_categories=()), max_size=20), max_size=5))
def test_strings_with_lone_surrogates_round_trip(texts: list[str]) -> None:
    data = b"".join(dumps_line({"s": t}) + b"\n" for t in texts)
    data.decode("utf-8")  # always valid UTF-8 (surrogates are escaped): raises otherwise
    assert [dumps_line(v) for v in parse_session_entries(data)] == [dumps_line({"s": t}) for t in texts]


jsonish = st.lists(
    st.sampled_from(
        [
            '{"a":1}',
            '{"a":',
            "[1,2]",
            "[",
            "]",
            "}",
            '"s"',
            '"\\ud800"',
            '"\\u12',
            "\\",
            ",",
            ":",
            "0",
            "01",
            "-",
            "1e5",
            "1.",
            "12345678901234567890",
            "0.30000000000000004",
            "tru",
            "true",
            "nul",
            "\n",
            "\r\n",
            " ",
            "\t",
            "\x0c",
            "\ufeff",
            "é",
            "x",
            "#",
            "NaN",
            "{}",
        ]
    ),
    max_size=12,
).map("".join)


@settings(max_examples=500, suppress_health_check=[HealthCheck.too_slow])
@given(jsonish, st.booleans())
def test_fast_path_agrees_with_the_exact_scanner(text: str, as_bytes: bool) -> None:
    data: bytes | str = text.encode("utf-8") if as_bytes else text
    fast = parse_jsonl_lenient(data)
    exact = parse_jsonl_lenient(data, fast=False)
    assert canon(fast.values) == canon(exact.values)
    assert fast.dropped == exact.dropped
    assert (fast.skipped_lines, fast.torn_tail) == (exact.skipped_lines, exact.torn_tail)


@pytest.mark.parametrize("name", sorted(CASES))
def test_reference_cases_without_the_fast_path(name: str) -> None:
    assert parse_jsonl_lenient(CASES[name], fast=False).values == EXPECTED[name]


structural = st.sampled_from(
    ['{"a":', "[", "]", "}", '"', "\\", ",", "1", "tru", "\n", " ", "x", "{}", '"\\u12']
)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.text(alphabet=st.sampled_from(list('{}[]",:\\ 1tnx\r')), max_size=20), max_size=4),
    json_objects,
    st.lists(structural, max_size=6),
)
def test_complete_line_between_valid_lines_is_never_lost(
    garbage: list[str], obj: dict[str, Any], after: list[str]
) -> None:
    # Garbage before, then a valid line, our object line, a valid line, then more garbage.
    line = dumps_line(obj)
    data = ("\n".join(garbage) + "\n").encode() + b'{"before":1}\n' + line + b'\n{"after":2}\n'
    data += "".join(after).encode()
    values = [dumps_line(v) for v in parse_session_entries(data)]
    assert line in values
    assert b'{"after":2}' in values


@settings(max_examples=200)
@given(st.lists(json_values, max_size=6))
def test_dumps_then_parse_round_trips(values: list[Any]) -> None:
    data = b"".join(dumps_line(v) + b"\n" for v in values)
    parsed = parse_session_entries(data)
    assert canon(parsed) == canon(values)
    # Bytes are stable: writing what we read gives the same bytes.
    assert b"".join(dumps_line(v) + b"\n" for v in parsed) == data


@settings(max_examples=200)
@given(st.lists(json_values, min_size=1, max_size=6))
def test_multiline_values_parse_like_single_lines(values: list[Any]) -> None:
    # json.dumps(indent=1) spreads each value over several lines; the reference reads on.
    pretty = "\n".join(json.dumps(v, indent=1, ensure_ascii=False) for v in values) + "\n"
    assert canon(parse_session_entries(pretty.encode("utf-8", "surrogatepass"))) == canon(values)


# ------------------------------------------------------------------ dumps_line


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (1.0, b"1"),
        (-0.0, b"0"),
        (100.0, b"100"),
        (1e21, b"1e+21"),
        (1e20, b"100000000000000000000"),
        (1e-6, b"0.000001"),
        (1e-7, b"1e-7"),
        (1.5e-7, b"1.5e-7"),
        (123.456, b"123.456"),
        (0.1 + 0.2, b"0.30000000000000004"),
        (5e-324, b"5e-324"),
        (1.7976931348623157e308, b"1.7976931348623157e+308"),
        (1.2345678901234567e19, b"12345678901234567000"),
        (math.inf, b"null"),
        (math.nan, b"null"),
        ({"a": [1.0, 2.5, {"b": 1e100}]}, b'{"a":[1,2.5,{"b":1e+100}]}'),
        ("é/😀\u2028\x7f", '"é/😀\u2028\x7f"'.encode()),
        ('\x00\x01\x1f\b\f\n\r\t"\\', b'"\\u0000\\u0001\\u001f\\b\\f\\n\\r\\t\\"\\\\"'),
        ("a\ud800b", b'"a\\ud800b"'),
        ("\udfff", b'"\\udfff"'),
        ("\ud83d\ude00", '"😀"'.encode()),  # a pair held as two code points is one character
        ({"\ud800": 1}, b'{"\\ud800":1}'),
        (2**70, b"1180591620717411303424"),
        ({"b": 1, "a": 2}, b'{"b":1,"a":2}'),
        ([None, True, False], b"[null,true,false]"),
    ],
)
def test_dumps_line_matches_json_stringify(value: Any, expected: bytes) -> None:
    assert dumps_line(value) == expected


def test_dumps_line_rejects_non_json_values() -> None:
    with pytest.raises(TypeError):
        dumps_line({"a": {1, 2}})
    with pytest.raises(TypeError):
        dumps_line({"a": b"bytes"})


def test_real_v1_file_rewrites_byte_identically() -> None:
    data = real_v1_session().read_bytes()
    values = parse_session_entries(data)
    assert len(values) == 1019
    assert b"".join(dumps_line(v) + b"\n" for v in values) == data


# ------------------------------------------------------------------ loader


def test_load_entries_from_file(tmp_path: Path) -> None:
    header = '{"type":"session","version":3,"id":"s","timestamp":"t","cwd":"/"}'
    cases = {
        "missing.jsonl": None,
        "empty.jsonl": "",
        "garbage.jsonl": "nope\n",
        "no-id.jsonl": '{"type":"session","version":3}\n{"type":"x"}\n',
        "numeric-id.jsonl": '{"type":"session","id":5}\n',
        "first-not-header.jsonl": '{"type":"message","id":"a"}\n' + header + "\n",
        "garbage-before.jsonl": "junk\n" + header + '\n{"type":"x","id":"1"}\n',
        "bom.jsonl": "\ufeff" + header + "\n",
        "scalar-first.jsonl": "42\n" + header + "\n",
    }
    for name, text in cases.items():
        if text is not None:
            (tmp_path / name).write_text(text, encoding="utf-8")
    got = {name: load_entries_from_file(str(tmp_path / name)) for name in cases}
    assert got["missing.jsonl"] == []
    assert got["empty.jsonl"] == []
    assert got["garbage.jsonl"] == []
    assert got["no-id.jsonl"] == []
    assert got["numeric-id.jsonl"] == []
    assert got["first-not-header.jsonl"] == []
    assert got["scalar-first.jsonl"] == []
    assert [e["type"] for e in got["garbage-before.jsonl"]] == ["session", "x"]
    assert got["bom.jsonl"][0]["id"] == "s"


def test_load_entries_from_file_raises_other_read_errors(tmp_path: Path) -> None:
    with pytest.raises(IsADirectoryError):
        load_entries_from_file(str(tmp_path))


# ------------------------------------------------------------------ speed (bounded)


def test_parses_tens_of_megabytes_quickly() -> None:
    line = dumps_line(
        {
            "type": "message",
            "id": "abcdef12",
            "parentId": "12345678",
            "timestamp": "2026-01-01T00:00:00.000Z",
            "message": {
                "role": "assistant",
                "content": [{"type": "text", "text": "x" * 400}],
                "cost": 0.0012,
            },
        }
    )
    data = (line + b"\n") * (20_000_000 // (len(line) + 1))
    start = time.perf_counter()
    report = parse_jsonl_lenient(data)
    elapsed = time.perf_counter() - start
    assert not report.dropped and len(report.values) == data.count(b"\n")
    # About 0.2 s on a laptop; the bound leaves room for a loaded CI machine.
    assert elapsed < 10, f"parsing 20 MB took {elapsed:.1f} s"
