"""Corruptions of session file bytes for the fuzz tests (hypothesis strategies)."""

from __future__ import annotations

from hypothesis import strategies as st


@st.composite
def corrupted(draw: st.DrawFn, data: bytes, max_ops: int = 4) -> bytes:
    """`data` with 1..max_ops random corruptions: bit flips, deleted, duplicated or
    overwritten byte ranges, inserted newlines or garbage, and truncation."""
    buf = bytearray(data)
    for _ in range(draw(st.integers(1, max_ops))):
        op = draw(st.sampled_from(["flip", "delete", "dup", "newline", "insert", "truncate", "overwrite"]))
        n = len(buf)
        if n == 0:
            buf += draw(st.binary(max_size=64))
            continue
        i = draw(st.integers(0, n - 1))
        if op == "flip":
            buf[i] ^= 1 << draw(st.integers(0, 7))
        elif op == "delete":
            j = min(n, i + draw(st.integers(1, 200)))
            del buf[i:j]
        elif op == "dup":
            j = min(n, i + draw(st.integers(1, 300)))
            buf[j:j] = buf[i:j]
        elif op == "newline":
            buf[i:i] = b"\n"
        elif op == "insert":
            buf[i:i] = draw(st.binary(min_size=1, max_size=32))
        elif op == "truncate":
            del buf[i:]
        else:
            j = min(n, i + draw(st.integers(1, 16)))
            buf[i:j] = draw(st.binary(min_size=j - i, max_size=j - i))
    return bytes(buf)
