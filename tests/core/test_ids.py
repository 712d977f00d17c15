"""Clock, IdSource and session file names."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from sessiontree.core.ids import (
    SNOWFLAKE_EPOCH_MS,
    Clock,
    FixedClock,
    IdSource,
    iso_from_ms,
    session_file_name,
)


def test_iso_format_is_like_to_iso_string() -> None:
    assert iso_from_ms(0) == "1970-01-01T00:00:00.000Z"
    assert iso_from_ms(1_767_225_601_007) == "2026-01-01T00:00:01.007Z"
    assert FixedClock(1_767_225_600_000).now_iso() == "2026-01-01T00:00:00.000Z"


def test_real_clock_is_close_to_now() -> None:
    clock = Clock()
    now = datetime.now(UTC).timestamp() * 1000
    assert abs(clock.now_ms() - now) < 5_000
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", clock.now_iso())


def test_fixed_clock_steps() -> None:
    clock = FixedClock(1000, step_ms=5)
    assert [clock.now_ms() for _ in range(3)] == [1000, 1005, 1010]
    clock.advance(100)
    assert clock.now_ms() == 1115


def test_entry_ids_are_8_hex_and_deterministic_with_a_seed() -> None:
    a = IdSource(seed=1)
    b = IdSource(seed=1)
    ids_a = [a.new_entry_id(set()) for _ in range(20)]
    assert ids_a == [b.new_entry_id(set()) for _ in range(20)]
    assert all(re.fullmatch(r"[0-9a-f]{8}", i) for i in ids_a)
    assert len(set(ids_a)) == 20
    assert IdSource().new_entry_id() != IdSource().new_entry_id()  # OS randomness


def test_entry_id_retries_collisions_then_falls_back_to_a_snowflake() -> None:
    probe = IdSource(seed=3)
    first_two = [probe.new_entry_id(()) for _ in range(2)]
    ids = IdSource(seed=3)
    assert ids.new_entry_id({first_two[0]}) == first_two[1]

    class Everything:
        def __contains__(self, item: object) -> bool:
            return True

    fallback = IdSource(seed=3, clock=FixedClock(SNOWFLAKE_EPOCH_MS + 1)).new_entry_id(Everything())
    assert re.fullmatch(r"[0-9a-f]{16}", fallback)


def test_snowflake_layout_and_sequence() -> None:
    clock = FixedClock(SNOWFLAKE_EPOCH_MS + 123_456)
    ids = IdSource(seed=9, clock=clock)
    first = int(ids.new_session_id(), 16)
    second = int(ids.new_session_id(), 16)
    assert first >> 22 == 123_456 and second >> 22 == 123_456
    assert (second & 0x3FFFFF) == ((first & 0x3FFFFF) + 1) & 0x3FFFFF
    # The counter starts at a random value and wraps at 22 bits.
    ids._seq = 0x3FFFFF
    assert int(ids.snowflake(), 16) & 0x3FFFFF == 0x3FFFFF
    assert int(ids.snowflake(), 16) & 0x3FFFFF == 0
    real = IdSource().new_session_id()
    assert re.fullmatch(r"[0-9a-f]{16}", real)


def test_session_file_name() -> None:
    assert (
        session_file_name("2026-01-01T00:00:01.000Z", "143503fefa00001d")
        == "2026-01-01T00-00-01-000Z_143503fefa00001d.jsonl"
    )
