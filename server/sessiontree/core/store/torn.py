"""Appending after a torn line: what separates new lines from another writer's unfinished one.

A file that ends inside a line was left so by a writer that crashed, or is being written by
one right now. New lines never glue onto it (DIVERGENCES 2): once the fragment is certainly
torn (`settled_tail`), a newline goes first, and a breaker line when the fragment could be
read as the start of a longer value (`separator_after`). Every backend appends this way.
"""

from __future__ import annotations

import os
import time

from ..format.jsonl import parse_jsonl_lenient

__all__ = [
    "TORN_LINE_BREAKER",
    "TORN_QUIET_SECONDS",
    "TORN_WAIT_MAX_SECONDS",
    "separator_after",
    "settled_tail",
]


#: Written on its own line after a torn last line whose fragment could still be read as
#: the start of a longer value. The reference parser would otherwise read on into the next
#: line and lose it; a line starting with "#" is a syntax error in every JSON context, so
#: the parser drops the torn line and this one and resumes at the appended data.
TORN_LINE_BREAKER = b"# sessiontree: the line above was torn; this line keeps it from swallowing the next"
_TAIL_SCAN_LIMIT = 1 << 20


def separator_after(last_line: bytes | None) -> bytes:
    """What to write before new lines, given the file's unterminated last line.

    ``None`` or ``b""`` (empty file, or it ends with a newline): nothing. A fragment that
    parses as complete values: a newline. Anything else (an incomplete value, garbage, or a
    line too long to check): a newline and :data:`TORN_LINE_BREAKER`.
    """
    if not last_line:
        return b""
    report = parse_jsonl_lenient(last_line)
    if report.values and not report.dropped:
        return b"\n"
    return b"\n" + TORN_LINE_BREAKER + b"\n"


def _unterminated_tail(fd: int) -> bytes | None:
    """The bytes after the file's last newline (``None`` when it ends with one or is empty).

    A fragment longer than the scan limit is returned as a single byte of garbage, which
    makes :func:`separator_after` choose the breaker.
    """
    size = os.fstat(fd).st_size
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return None
    chunks: list[bytes] = []
    end = size
    while end > 0 and size - end < _TAIL_SCAN_LIMIT:
        start = max(0, end - 65536)
        chunk = os.pread(fd, end - start, start)
        nl = chunk.rfind(b"\n")
        if nl >= 0:
            chunks.append(chunk[nl + 1 :])
            return b"".join(reversed(chunks))
        chunks.append(chunk)
        end = start
    if end == 0:
        return b"".join(reversed(chunks))
    return b"#"


#: A file that ends inside a line is only taken for torn (another writer crashed) once
#: nobody has written to it for this long; before that the line may still be in flight
#: (another writer's `write` in pieces), and a separator would split it.
TORN_QUIET_SECONDS = 2.0
#: The longest an append waits for another writer's unfinished line.
TORN_WAIT_MAX_SECONDS = 10.0


def settled_tail(fd: int, quiet: float | None = None, limit: float | None = None) -> bytes | None:
    """:func:`_unterminated_tail`, decided only from what is certain.

    A file that ends with a newline gives ``None`` at once. A file that ends inside a line
    is watched until that line is finished (``None``) or the file has not changed for
    ``quiet`` seconds (judged by its mtime, so a fragment left long ago costs no wait),
    and at most ``limit`` seconds in all; then the fragment is returned.
    """
    quiet = TORN_QUIET_SECONDS if quiet is None else quiet
    limit = TORN_WAIT_MAX_SECONDS if limit is None else limit
    tail = _unterminated_tail(fd)
    deadline = time.monotonic() + limit
    while tail is not None:
        st = os.fstat(fd)
        if time.time() - st.st_mtime_ns / 1e9 >= quiet or time.monotonic() >= deadline:
            return tail
        time.sleep(0.01)
        tail = _unterminated_tail(fd)
    return None
