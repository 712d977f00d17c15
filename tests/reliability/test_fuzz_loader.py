"""Fuzzing of the loader: arbitrary and corrupted bytes never raise anything but the
documented errors, never hang, and never cause a write of a file that needs no migration."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sessiontree.core.doctor import DoctorError, check_bytes, repaired_bytes
from sessiontree.core.jsonl import dumps_line, parse_jsonl_lenient

from .corrupt import corrupted
from .helpers import chain, line, real_v1_fixture

V3_SMALL = b"".join(line(e) for e in chain(25, seed=3))
_v1 = real_v1_fixture()
V1_REAL = _v1.read_bytes()[:60_000] if _v1 else b""
if V1_REAL:
    V1_REAL = V1_REAL[: V1_REAL.rfind(b"\n") + 1]

FUZZ = settings(
    max_examples=150,
    deadline=2000,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    derandomize=True,
)


def _is_subsequence(small: list, big: list) -> bool:
    it = iter(big)
    return all(any(x == y for y in it) for x in small)


@FUZZ
@given(st.binary(max_size=4096))
def test_parser_and_doctor_total_on_arbitrary_bytes(data: bytes) -> None:
    report = parse_jsonl_lenient(data)
    for d in report.dropped:
        assert 0 <= d.offset <= len(data) and d.length >= 0
    check_bytes(data, "fuzz.jsonl", blobs_dir=None)
    try:
        fixed, _changes = repaired_bytes(data)
    except DoctorError:
        return
    again = parse_jsonl_lenient(fixed)
    assert not again.dropped
    assert _is_subsequence(report.values, again.values)


@FUZZ
@given(corrupted(V3_SMALL))
@pytest.mark.timeout(120)
def test_doctor_repair_on_corrupted_v3(data: bytes) -> None:
    report = parse_jsonl_lenient(data)
    doc = check_bytes(data, "fuzz.jsonl", blobs_dir=None)
    if report.dropped:
        assert {"dropped-line", "torn-tail"} & set(doc.kinds())
    try:
        fixed, changes = repaired_bytes(data)
    except DoctorError:
        assert {"missing-header", "invalid-header", "empty"} & set(doc.kinds())
        return
    assert bool(changes) == bool(report.dropped)
    again = parse_jsonl_lenient(fixed)
    assert not again.dropped
    assert _is_subsequence(report.values, again.values)
    # the repair only cuts: every line it keeps is a piece of the input, byte for byte
    # (unless it fell back to writing the kept values one per line)
    if fixed != data:
        kept = [ln for ln in fixed.split(b"\n") if ln]
        assert all(ln in data for ln in kept) or fixed == b"".join(
            dumps_line(v) + b"\n" for v in report.values
        )
