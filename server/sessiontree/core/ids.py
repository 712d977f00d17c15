"""Injectable time and randomness: timestamps, entry ids, session ids (snowflakes).

The reference agent uses ``new Date().toISOString()`` for timestamps, the last 8 hex
characters of a UUID v4 for entry ids and a 16-hex snowflake for session ids. Both sources
are objects so that tests can pass seeded or fixed ones (CONVENTIONS 14).
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Container
from datetime import UTC, datetime, timedelta

__all__ = [
    "SNOWFLAKE_EPOCH_MS",
    "Clock",
    "FixedClock",
    "IdSource",
    "iso_from_ms",
    "session_file_name",
]

#: 2015-01-01T00:00:00Z in epoch milliseconds, the snowflake epoch.
SNOWFLAKE_EPOCH_MS = 1_420_070_400_000
_SEQ_MASK = (1 << 22) - 1
_UNIX_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


_LAST_SECOND: tuple[int, str] = (0, "1970-01-01T00:00:00")


def iso_from_ms(ms: int) -> str:
    """Format epoch milliseconds like JS ``Date.prototype.toISOString`` (``...T..:..:..mmmZ``)."""
    global _LAST_SECOND
    second, milli = divmod(int(ms), 1000)
    cached = _LAST_SECOND  # one tuple read: safe across threads
    if cached[0] == second:
        prefix = cached[1]
    else:
        dt = _UNIX_EPOCH + timedelta(seconds=second)
        prefix = f"{dt:%Y-%m-%dT%H:%M:%S}"
        _LAST_SECOND = (second, prefix)
    return f"{prefix}.{milli:03d}Z"


class Clock:
    """The wall clock. Subclass or use :class:`FixedClock` in tests."""

    def now_ms(self) -> int:
        """Milliseconds since the Unix epoch."""
        return time.time_ns() // 1_000_000

    def now_iso(self) -> str:
        """The current time as ``2026-01-01T00:00:00.000Z``."""
        return iso_from_ms(self.now_ms())


class FixedClock(Clock):
    """A deterministic clock: starts at ``start_ms`` and advances ``step_ms`` after each read."""

    def __init__(self, start_ms: int = 1_767_225_600_000, step_ms: int = 0) -> None:
        self.current_ms = start_ms
        self.step_ms = step_ms

    def now_ms(self) -> int:
        value = self.current_ms
        self.current_ms += self.step_ms
        return value

    def advance(self, ms: int) -> None:
        """Move the clock forward by ``ms`` milliseconds."""
        self.current_ms += ms


class IdSource:
    """Generates entry ids and snowflakes from an injectable random source and clock.

    ``IdSource()`` uses the operating system's randomness; ``IdSource(seed=1)`` is
    deterministic (given a :class:`FixedClock` for the snowflake time part).
    """

    def __init__(
        self,
        rng: random.Random | None = None,
        clock: Clock | None = None,
        *,
        seed: int | None = None,
    ) -> None:
        if rng is None:
            rng = random.Random(seed) if seed is not None else random.SystemRandom()
        self.rng = rng
        self.clock = clock if clock is not None else Clock()
        self._seq = rng.getrandbits(22)
        self._lock = threading.Lock()

    def _random_entry_id(self) -> str:
        # The last 8 hex characters of a UUID v4 are 32 fully random bits.
        return f"{self.rng.getrandbits(32):08x}"

    def new_entry_id(self, existing: Container[str] = ()) -> str:
        """An 8-hex id not in ``existing`` (100 tries, then a 16-hex snowflake)."""
        for _ in range(100):
            candidate = self._random_entry_id()
            if candidate not in existing:
                return candidate
        return self.snowflake()

    def snowflake(self) -> str:
        """``(ms since 2015-01-01Z) << 22 | seq`` as 16 lowercase hex characters."""
        with self._lock:
            seq = self._seq
            self._seq = (seq + 1) & _SEQ_MASK
        value = ((self.clock.now_ms() - SNOWFLAKE_EPOCH_MS) << 22) | seq
        return f"{value & 0xFFFF_FFFF_FFFF_FFFF:016x}"

    def new_session_id(self) -> str:
        """A new session id (a snowflake)."""
        return self.snowflake()

    def uuid7(self) -> str:
        """A UUID version 7 (RFC 9562: 48 bits of Unix milliseconds, then random bits), the
        session id pi and oh-my-pi give a new session."""
        ms = self.clock.now_ms() & 0xFFFF_FFFF_FFFF
        rand_a = self.rng.getrandbits(12)
        rand_b = self.rng.getrandbits(62)
        value = (ms << 80) | (0x7 << 76) | (rand_a << 64) | (0b10 << 62) | rand_b
        h = f"{value:032x}"
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def session_file_name(iso_ts: str, session_id: str) -> str:
    """``<iso with ':' and '.' replaced by '-'>_<id>.jsonl``."""
    return f"{iso_ts.replace(':', '-').replace('.', '-')}_{session_id}.jsonl"
