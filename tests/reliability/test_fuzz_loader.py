"""Fuzzing of the loader: arbitrary and corrupted bytes never raise anything but the
documented errors, never hang, and never cause a write of a file that needs no migration."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sessiontree.core import SessionManager
from sessiontree.core.doctor import DoctorError, check_bytes, repaired_bytes
from sessiontree.core.errors import InvalidSessionFileError
from sessiontree.core.format.jsonl import dumps_line, is_session_header, parse_jsonl_lenient
from sessiontree.core.store import FileSessionStorage
from shared_data import REAL_V1_NAME, real_v1_session_bytes_or_empty, skip_unless_shared

from .corrupt import corrupted
from .helpers import chain, line

V3_SMALL = b"".join(line(e) for e in chain(25, seed=3))
V1_REAL = real_v1_session_bytes_or_empty()[:20_000]
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
        # a file that is no session at all gets one finding instead of one per line
        assert {"dropped-line", "torn-tail", "not-a-session"} & set(doc.kinds())
    try:
        fixed, changes = repaired_bytes(data)
    except DoctorError:
        assert {"missing-header", "invalid-header", "empty", "not-a-session"} & set(doc.kinds())
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


def _listing(d: Path) -> dict[str, tuple[int, int]]:
    return {p.name: (p.stat().st_size, p.stat().st_mtime_ns) for p in d.iterdir()}


@FUZZ
@given(data=corrupted(V3_SMALL))
@pytest.mark.timeout(300)
def test_open_of_corrupted_v3_never_raises_unexpectedly_and_never_writes(
    tmp_path_factory: Any, data: bytes
) -> None:
    d = tmp_path_factory.mktemp("v3")
    f = d / "s.jsonl"
    f.write_bytes(data)
    os.utime(f, ns=(1_600_000_000_000_000_000, 1_600_000_000_000_000_000))
    listing = _listing(d)
    report = parse_jsonl_lenient(data)
    header_ok = bool(report.values) and is_session_header(report.values[0])
    version = report.values[0].get("version") if header_ok else None
    needs_migration = header_ok and not (isinstance(version, int) and version >= 3)
    t0 = time.monotonic()
    try:
        sm = SessionManager.open(str(f), storage=FileSessionStorage())
    except InvalidSessionFileError:
        assert data and not header_ok
        assert f.read_bytes() == data and _listing(d) == listing
        return
    assert time.monotonic() - t0 < 5
    if not data:
        return  # a zero-byte file starts a new session there (by design)
    assert header_ok
    sm.get_tree()
    sm.build_session_context()
    for e in sm.get_entries()[:50]:
        sm.get_branch(e["id"]) if isinstance(e.get("id"), str) else None
    if needs_migration:
        # migrations are written when they run; a quarantine copy when something was dropped
        if report.dropped:
            assert any(p.name.startswith(".s.jsonl.quarantine") for p in d.iterdir())
        return
    assert f.read_bytes() == data
    assert _listing(d) == listing, "opening a v3 file must not write anything"


@skip_unless_shared(REAL_V1_NAME)
@settings(max_examples=25, deadline=10_000, derandomize=True, suppress_health_check=list(HealthCheck))
@given(data=corrupted(V1_REAL or V3_SMALL, max_ops=3))
@pytest.mark.timeout(300)
def test_open_of_corrupted_v1_rewrites_with_quarantine(tmp_path_factory: Any, data: bytes) -> None:
    d = tmp_path_factory.mktemp("v1")
    f = d / "s.jsonl"
    f.write_bytes(data)
    report = parse_jsonl_lenient(data)
    header_ok = bool(report.values) and is_session_header(report.values[0])
    try:
        sm = SessionManager.open(str(f), storage=FileSessionStorage())
    except InvalidSessionFileError:
        assert not header_ok and f.read_bytes() == data
        return
    if not data or not header_ok:
        return
    version = report.values[0].get("version")
    if isinstance(version, int) and version >= 3:
        return
    rewritten = f.read_bytes()
    again = parse_jsonl_lenient(rewritten)
    assert again.values[0]["version"] == 3
    assert not again.dropped
    assert len(sm.get_entries()) == len(again.values) - 1
    quarantined = [p for p in d.iterdir() if p.name.startswith(".s.jsonl.quarantine")]
    if report.dropped:
        assert len(quarantined) == 1 and quarantined[0].read_bytes() == data
    assert not [p for p in d.iterdir() if p.name.endswith(".tmp")]
