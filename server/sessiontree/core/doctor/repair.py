"""Repairing a session file (`sessiontree doctor --repair`): only safe, explained changes.

`repair_file(path)` removes the byte ranges the lenient loader drops anyway (garbage lines,
the rest of a line after a first value, a torn tail), so that the repaired file loads to
exactly the same entries as before, and optionally migrates an old version with the
core's migrations. It never invents data: orphans, cycles, duplicate ids, dangling labels
and missing blobs are reported, not "fixed". Before writing, the original bytes are kept
beside the file as a quarantine copy (whose name does not end in `.jsonl`, so it never
shows up as a session), and the new file is written atomically under the session's lock.
"""

from __future__ import annotations

import os
import time
from typing import Any

from ..errors import ReadOnlySessionError
from ..format.backups import copy_path
from ..format.jsonl import dumps_line, parse_jsonl_lenient
from ..format.migrations import migrate_session_entries
from ..format.title_slot import split_slot
from ..sources.sniff import foreign_format_of
from ..store import FileSessionStorage
from .check import check_bytes, read_regular_file
from .report import DoctorError, RepairResult

__all__ = ["quarantine_name", "repair_file", "repaired_bytes"]


def quarantine_name(path: str, clock_ms: int | None = None) -> str:
    """The name of the quarantine copy kept beside `path` (`format/backups.py`: one naming
    scheme for every copy), which is not a `*.jsonl` and so never listed as a session."""
    from datetime import UTC, datetime

    ms = int(time.time() * 1000) if clock_ms is None else clock_ms
    stamp = datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"
    return copy_path(path, "quarantine", stamp)


def _cut(data: bytes, ranges: list[tuple[int, int]]) -> bytes:
    ranges.sort()
    out = bytearray()
    pos = 0
    for a, b in ranges:
        a = max(a, pos)
        out += data[pos:a]
        pos = max(pos, b)
    out += data[pos:]
    # Remove lines left blank by the cuts and make sure the file ends with a newline.
    lines = [ln for ln in bytes(out).split(b"\n") if ln.strip()]
    return b"".join(ln + b"\n" for ln in lines)


def _is_subsequence(small: list[Any], big: list[Any]) -> bool:
    it = iter(big)
    return all(any(x == y for y in it) for x in small)


def repaired_bytes(data: bytes, *, migrate: bool = False) -> tuple[bytes, list[str]]:
    """Compute the repaired content of a file and the list of changes (no I/O).

    Dropped regions are cut out of the bytes, so every kept line stays byte for byte. A
    torn line in the middle of the file makes the loader read on and lose the lines after
    it; the repair cuts only the torn line itself, which gives those entries back.
    """
    parsed = parse_jsonl_lenient(data)
    changes: list[str] = []
    values = parsed.values
    agent = foreign_format_of(data, values)
    if agent is not None:
        raise ReadOnlySessionError(None, agent)  # another agent's transcript: never rewritten
    first = 1 if split_slot(data)[0] is not None else 0  # after oh-my-pi's title slot
    if len(values) <= first or not isinstance(values[first], dict) or values[first].get("type") != "session":
        raise DoctorError("<bytes>", "no session header at the start: not repairable without inventing data")
    if not isinstance(values[first].get("id"), str):
        raise DoctorError("<bytes>", "the session header has no id: not repairable without inventing data")

    new = data
    if parsed.dropped:
        cur = data
        removed_lines = 0
        torn_lines = 0
        for _ in range(10_000):
            rep = parse_jsonl_lenient(cur)
            if not rep.dropped:
                break
            ranges: list[tuple[int, int]] = []
            for d in rep.dropped:
                end = d.offset + d.length
                if d.reason == "torn":
                    nl = cur.find(b"\n", d.offset, end)
                    if nl != -1:
                        end = nl  # only the torn line; what follows is read again
                    torn_lines += 1
                else:
                    removed_lines += 1
                ranges.append((d.offset, end))
            nxt = _cut(cur, ranges)
            if nxt == cur:
                break
            cur = nxt
        again = parse_jsonl_lenient(cur)
        if again.dropped or not _is_subsequence(values, again.values):
            # Cutting did not give a clean file that keeps every value: write the values
            # the loader keeps, one per line (what any rewrite of the session writes).
            cur = b"".join(dumps_line(v) + b"\n" for v in values)
            again = parse_jsonl_lenient(cur)
        if removed_lines:
            changes.append(
                f"removed {removed_lines} unreadable line(s) or line tail(s) that the loader drops"
            )
        if torn_lines:
            changes.append(f"removed {torn_lines} incomplete (torn) line(s)")
        gained = len(again.values) - len(values)
        if gained > 0:
            changes.append(
                f"kept {gained} entr{'y' if gained == 1 else 'ies'} after a torn line that the loader would lose"
            )
        new = cur

    if migrate and not first:  # (a file with a title slot is oh-my-pi 18's: version 3)
        entries = [dict(v) if isinstance(v, dict) else v for v in parse_jsonl_lenient(new).values]
        before = entries[0].get("version", 1)
        migrated_from = migrate_session_entries(entries)
        if migrated_from is not None:
            new = b"".join(dumps_line(v) + b"\n" for v in entries)
            changes.append(f"migrated from version {before} to {entries[0].get('version')}")
    return new, changes


def repair_file(
    path: str | os.PathLike[str],
    *,
    migrate: bool = False,
    blobs_dir: str | os.PathLike[str] | None = None,
    storage: Any = None,
) -> RepairResult:
    """Repair a session file in place with safe, explained changes only.

    The original bytes are first written to a quarantine copy beside the file (atomically),
    then the repaired content replaces the file atomically through the storage's
    `write_atomic` (temp file, fsync, rename, fsync of the directory). Nothing is written
    when there is nothing to change. Raises `DoctorError` when the file cannot be read or
    cannot be repaired without inventing data (no header).
    """
    p = os.path.abspath(os.fspath(path))
    data = read_regular_file(p)
    result = RepairResult(path=p)
    try:
        new, changes = repaired_bytes(data, migrate=migrate)
    except DoctorError as exc:
        raise DoctorError(p, exc.reason) from None
    if new != data and changes:
        if storage is None:
            storage = FileSessionStorage()
        q = quarantine_name(p)
        try:
            # Under the writers' advisory lock, so that a daemon or agent appending at the
            # same moment is not overwritten; the file must still be what was read.
            with storage.lock(p):
                if read_regular_file(p) != data:
                    raise DoctorError(p, "the file changed while it was being repaired; nothing was replaced")
                storage.write_atomic(q, data)
                storage.write_atomic(p, new)
        except OSError as exc:
            raise DoctorError(p, f"write failed: {exc}") from exc
        except DoctorError:
            raise
        except Exception as exc:  # PersistError, LockTimeoutError from the storage layer
            raise DoctorError(p, f"write failed: {exc}") from exc
        result.changes = changes
        result.quarantined_copy = q
    result.remaining = check_bytes(new, p, blobs_dir=blobs_dir).problems
    return result
