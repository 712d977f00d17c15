"""File checks and repair for session files (`sessiontree doctor`).

`check_file(path)` reads a session file without ever writing to it and reports every
problem it finds: lines the lenient loader drops, a torn last line, a missing or invalid
header, entries that are not objects, duplicate ids, orphans (a parent that is not in the
file), parent cycles, labels whose target is missing, compactions whose
`firstKeptEntryId` is not on the path before them, blob references that are malformed,
missing or whose content does not match their hash, and a version that needs migration (a
note, not a problem: the next write migrates it). A file that is not a pi session at all (a
Claude Code or Codex transcript, binary data) is reported as one `not-a-session` finding
instead of a finding per line.

`repair_file(path)` applies only safe, explained changes: it removes the byte ranges the
lenient loader drops anyway (garbage lines, the rest of a line after a first value, a torn
tail), so that the repaired file loads to exactly the same entries as before, and
optionally migrates an old version with the core's migrations. It never invents data:
orphans, cycles, duplicate ids, dangling labels and missing blobs are reported, not
"fixed". Before writing, the original bytes are kept beside the file as a quarantine copy
(whose name does not end in `.jsonl`, so it never shows up as a session), and the new
file is written atomically (temp file, fsync, rename, fsync of the directory).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sessiontree.core.errors import InvalidSessionFileError
from sessiontree.core.format.jsonl import dumps_line, parse_jsonl_lenient

BLOB_PREFIX = "blob:sha256:"

# Problem kinds, in the order the checks run. `severity` is "error" for damage (something
# is lost or unreachable), "warning" for things that load but look wrong, "note" for
# facts that need no action (the file is fine as it is).
KINDS: dict[str, str] = {
    "not-regular-file": "error",
    "empty": "warning",
    "not-a-session": "error",
    "dropped-line": "error",
    "torn-tail": "error",
    "missing-header": "error",
    "invalid-header": "error",
    "extra-header": "warning",
    "invalid-entry": "error",
    "missing-id": "error",
    "duplicate-id": "error",
    "orphan": "warning",
    "cycle": "error",
    "dangling-label": "warning",
    "dangling-compaction-anchor": "warning",
    "invalid-blob-ref": "error",
    "missing-blob": "error",
    "corrupt-blob": "error",
    "needs-migration": "note",
    "newer-version": "warning",
}


# Kinds that mean the file holds no session at all (nothing in it can be checked, shown or
# repaired): the command line treats them as unusable input, not as damage.
UNUSABLE_KINDS = frozenset({"empty", "not-a-session"})


@dataclass(frozen=True)
class Problem:
    """One finding of `check_file`: a kind from `KINDS`, a readable message, and where
    (`line`, 1-based; `offset` and `length`, the byte range of a dropped region)."""

    kind: str
    message: str
    line: int | None = None
    entry_id: str | None = None
    offset: int | None = None
    length: int | None = None

    @property
    def severity(self) -> str:
        return KINDS.get(self.kind, "error")

    @property
    def is_note(self) -> bool:
        """A finding that needs no action (it does not make the file unhealthy)."""
        return self.severity == "note"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "severity": self.severity, "message": self.message}
        if self.line is not None:
            out["line"] = self.line
        if self.entry_id is not None:
            out["entryId"] = self.entry_id
        if self.offset is not None:
            out["offset"] = self.offset
        if self.length is not None:
            out["length"] = self.length
        return out


@dataclass
class DoctorReport:
    """The result of `check_file`: the problems found plus a few facts about the file."""

    path: str
    problems: list[Problem] = field(default_factory=list)
    entry_count: int = 0
    version: int | None = None
    size: int = 0
    skipped_lines: int = 0
    torn_tail: bool = False

    @property
    def ok(self) -> bool:
        """No finding other than notes."""
        return all(p.is_note for p in self.problems)

    @property
    def unusable(self) -> Problem | None:
        """The finding that makes the file no session at all (empty, not a pi session), if any."""
        return next((p for p in self.problems if p.kind in UNUSABLE_KINDS), None)

    def kinds(self) -> list[str]:
        return [p.kind for p in self.problems]

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "ok": self.ok,
            "entryCount": self.entry_count,
            "version": self.version,
            "size": self.size,
            "skippedLines": self.skipped_lines,
            "tornTail": self.torn_tail,
            "problems": [p.to_dict() for p in self.problems],
        }


@dataclass
class RepairResult:
    """The result of `repair_file`: what changed (one sentence each), the quarantine copy
    of the original bytes (None when nothing was written), and the report after repair."""

    path: str
    changes: list[str] = field(default_factory=list)
    quarantined_copy: str | None = None
    remaining: list[Problem] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.changes)

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "changes": list(self.changes),
            "quarantinedCopy": self.quarantined_copy,
            "remaining": [p.to_dict() for p in self.remaining],
        }


class DoctorError(InvalidSessionFileError):
    """The file could not be checked or repaired at all (missing, not a regular file, I/O,
    or a repair that would have to invent data). A subclass of `InvalidSessionFileError`
    so that callers handling the core's errors (the daemon: -32007) handle it too."""

    def __init__(self, path: str, reason: str) -> None:
        Exception.__init__(self, f"{path}: {reason}")
        self.path = path
        self.reason = reason


# ---------------------------------------------------------------------------------------
# reading


def read_regular_file(path: str | os.PathLike[str]) -> bytes:
    """Read a file's bytes, refusing anything that is not a regular file.

    The file is opened with O_NONBLOCK and checked with fstat on the open descriptor, so a
    FIFO never blocks the caller and a file swapped for something else between a stat and
    the open is still caught.
    """
    p = os.fspath(path)
    try:
        st = os.stat(p)
    except OSError as exc:
        raise DoctorError(p, exc.strerror or str(exc)) from exc
    if not stat.S_ISREG(st.st_mode):
        raise DoctorError(p, f"not a regular file ({_kind_of_mode(st.st_mode)})")
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(p, flags)
    except OSError as exc:
        raise DoctorError(p, exc.strerror or str(exc)) from exc
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise DoctorError(p, f"not a regular file ({_kind_of_mode(st.st_mode)})")
        chunks = []
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError as exc:
        raise DoctorError(p, exc.strerror or str(exc)) from exc
    finally:
        os.close(fd)


def _kind_of_mode(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def default_blobs_dir(path: str | os.PathLike[str]) -> Path | None:
    """The blob store a session file uses: `<agentDir>/blobs` when the file lives under
    `<agentDir>/sessions/<dir>/`, else the agent dir of the environment."""
    p = Path(os.path.abspath(os.fspath(path)))
    if len(p.parents) >= 3 and p.parents[1].name == "sessions":
        return p.parents[2] / "blobs"
    env = os.environ.get("PI_CODING_AGENT_DIR")
    if env:
        return Path(os.path.abspath(os.path.expanduser(env))) / "blobs"
    return Path(os.path.expanduser("~/.xcsh/agent")) / "blobs"


def _walk_strings(value: Any, depth: int = 0) -> Iterator[str]:
    # Iterative so that a deeply nested entry cannot blow the stack.
    stack: list[Any] = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            yield v
        elif isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)


def _is_hex64(s: str) -> bool:
    return len(s) == 64 and all(c in "0123456789abcdef" for c in s)


# ---------------------------------------------------------------------------------------
# checks


# Top-level keys and entry types of other agents' transcripts, which also are JSONL: named
# so that such a file is called what it is rather than a damaged session.
_CLAUDE_CODE_KEYS = frozenset({"parentUuid", "uuid", "leafUuid"})
_CODEX_TYPES = frozenset({"session_meta", "response_item", "event_msg", "turn_context", "compacted"})
_SNIFF_VALUES = 50


def _foreign_format(values: list[Any]) -> str | None:
    for v in values[:_SNIFF_VALUES]:
        if not isinstance(v, dict):
            continue
        if v.get("type") == "session":
            return None
        if _CLAUDE_CODE_KEYS & v.keys() or ("sessionId" in v and "id" not in v):
            return "a Claude Code transcript"
        if isinstance(v.get("payload"), dict) and v.get("type") in _CODEX_TYPES:
            return "a Codex rollout"
    return None


def _is_text(data: bytes) -> bool:
    if b"\x00" in data:
        return False
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        # A multi-byte character cut by the end of a prefix is still text.
        return exc.start >= len(data) - 3 and exc.reason == "unexpected end of data"
    return True


def not_a_session_reason(data: bytes, values: list[Any] | None = None) -> str | None:
    """Why ``data`` (a whole file or its first bytes) is no pi session at all, or None.

    None when it has a session header anywhere, or holds JSON objects that may be pi
    entries (a headerless pi file is a damaged session, not a foreign one). Otherwise one
    sentence: an empty file, a Claude Code or Codex transcript, binary data, or text
    without a JSON object line. ``values`` are the parsed values of ``data`` when the
    caller has them.
    """
    if not data.strip():
        return "empty file: no session header (no session has been written to it yet)"
    if values is None:
        values = parse_jsonl_lenient(data).values
    if any(isinstance(v, dict) and v.get("type") == "session" for v in values):
        return None
    foreign = _foreign_format(values)
    if foreign is not None:
        return f"not a pi session: it looks like {foreign} (no session header)"
    if any(isinstance(v, dict) for v in values):
        return None
    if not _is_text(data):
        return f"not a session file: binary data ({len(data)} bytes, no JSON object line)"
    return f"not a session file: no line is a JSON object ({len(data)} bytes)"


def _article(word: str) -> str:
    """The article before ``word``, by its first letter (right for the entry types)."""
    return "an" if word[:1].lower() in ("a", "e", "i", "o", "u") else "a"


def check_bytes(
    data: bytes, path: str = "<bytes>", *, blobs_dir: str | os.PathLike[str] | None = None
) -> DoctorReport:
    """Check the bytes of a session file (see `check_file`)."""
    report = DoctorReport(path=path, size=len(data))
    problems = report.problems
    if not data.strip():
        problems.append(Problem("empty", "the file is empty (it starts a new session when opened)"))
        return report

    parsed = parse_jsonl_lenient(data)
    report.skipped_lines = int(parsed.skipped_lines)
    report.torn_tail = bool(parsed.torn_tail)
    foreign = not_a_session_reason(data, parsed.values)
    if foreign is not None:
        # One finding instead of one per line: nothing in such a file is a session entry.
        problems.append(Problem("not-a-session", foreign))
        return report
    for d in parsed.dropped:
        if d.reason == "torn":
            rest = data[d.offset : d.offset + d.length].split(b"\n")[1:]
            swallowed = sum(1 for ln in rest if ln.strip())
            extra = f" and the {swallowed} line(s) after it" if swallowed else ""
            msg = f"an incomplete value ({d.length} bytes); the loader drops it{extra}"
            problems.append(Problem("torn-tail", msg, d.line, offset=d.offset, length=d.length))
        else:
            what = "junk after a value" if d.reason == "trailing" else "not JSON"
            problems.append(
                Problem(
                    "dropped-line",
                    f"{d.length} bytes the loader drops ({what})",
                    d.line,
                    offset=d.offset,
                    length=d.length,
                )
            )
    if report.torn_tail and not any(p.kind == "torn-tail" for p in problems):
        problems.append(Problem("torn-tail", "the last line is incomplete; the loader drops it"))

    values = parsed.values
    header = values[0] if values else None
    if not isinstance(header, dict) or header.get("type") != "session":
        later = [i for i, v in enumerate(values) if isinstance(v, dict) and v.get("type") == "session"]
        if later:
            problems.append(
                Problem(
                    "invalid-header",
                    f"the first value is not a session header (a header appears as value {later[0] + 1}); "
                    "the file does not open",
                )
            )
        else:
            problems.append(Problem("missing-header", "no session header; the file does not open"))
        header = None
    elif not isinstance(header.get("id"), str):
        problems.append(
            Problem("invalid-header", "the session header has no string id; the file does not open")
        )
        header = None  # its version means nothing for a file that does not open

    entries = values[1:] if values else []
    report.entry_count = len(entries)

    if isinstance(header, dict):
        version = header.get("version")
        v = version if isinstance(version, int) and not isinstance(version, bool) else 1
        report.version = v
        try:
            from sessiontree.core.format.migrations import CURRENT_SESSION_VERSION as current
        except ImportError:  # pragma: no cover - the core always has it
            current = 3
        if v < current:
            problems.append(
                Problem(
                    "needs-migration",
                    f"version {v} file: migrated to version {current} on the next write to it",
                )
            )
        elif v > current:
            problems.append(
                Problem(
                    "newer-version",
                    f"version {v} is newer than this tool's {current}; entries are kept as-is",
                )
            )

    migrated_view = report.version is not None and report.version < 2
    by_id: dict[str, dict[str, Any]] = {}
    for i, e in enumerate(entries):
        if not isinstance(e, dict) or not isinstance(e.get("type"), str):
            problems.append(Problem("invalid-entry", f"value {i + 2} is not an entry object: {_short(e)}"))
            continue
        if e.get("type") == "session":
            problems.append(Problem("extra-header", f"a second session header at value {i + 2} is ignored"))
            continue
        if migrated_view:
            continue  # v1 entries get ids and parents from the migration
        eid = e.get("id")
        if not isinstance(eid, str):
            problems.append(
                Problem(
                    "missing-id", f"{_article(e['type'])} {e['type']} entry at value {i + 2} has no string id"
                )
            )
            continue
        if eid in by_id:
            problems.append(
                Problem("duplicate-id", f"id {eid} is used more than once; the last one wins", entry_id=eid)
            )
        by_id[eid] = e

    if not migrated_view:
        _check_graph(by_id, problems)

    bdir = Path(blobs_dir) if blobs_dir is not None else default_blobs_dir(path)
    _check_blobs(entries, bdir, problems)
    return report


def _short(v: Any) -> str:
    s = repr(v)
    return s if len(s) <= 60 else s[:57] + "..."


def _check_graph(by_id: dict[str, dict[str, Any]], problems: list[Problem]) -> None:
    parent: dict[str, str | None] = {}
    for eid, e in by_id.items():
        p = e.get("parentId")
        parent[eid] = p if isinstance(p, str) else None
        if p is not None and not isinstance(p, str):
            problems.append(
                Problem("orphan", f"entry {eid} has a parentId that is not a string", entry_id=eid)
            )
        elif isinstance(p, str) and p != eid and p not in by_id:
            problems.append(
                Problem(
                    "orphan",
                    f"entry {eid} has parent {p}, which is not in the file; it shows as a root",
                    entry_id=eid,
                )
            )

    # Cycles: each entry has one parent, so walk with three colours.
    state: dict[str, int] = {}
    for start in by_id:
        if state.get(start):
            continue
        path: list[str] = []
        pos: dict[str, int] = {}
        cur: str | None = start
        while cur is not None and cur in by_id and not state.get(cur):
            state[cur] = 1
            pos[cur] = len(path)
            path.append(cur)
            cur = parent.get(cur)
        if cur is not None and state.get(cur) == 1 and cur in pos:
            cycle = path[pos[cur] :]
            if len(cycle) == 1:
                msg = f"entry {cur} is its own parent; it shows as a root"
            else:
                msg = f"entries {' -> '.join(cycle)} form a parent cycle; the loop is cut at one of them"
            problems.append(Problem("cycle", msg, entry_id=cur))
        for n in path:
            state[n] = 2

    for eid, e in by_id.items():
        t = e.get("type")
        if t == "label":
            target = e.get("targetId")
            if not isinstance(target, str) or target not in by_id:
                problems.append(
                    Problem(
                        "dangling-label",
                        f"label {eid} points at {target!r}, which is not in the file",
                        entry_id=eid,
                    )
                )
        elif t == "compaction":
            anchor = e.get("firstKeptEntryId")
            if anchor is None:
                continue  # a v1-migrated compaction may have no anchor: nothing is kept
            if not isinstance(anchor, str) or not _on_path_before(anchor, eid, parent):
                problems.append(
                    Problem(
                        "dangling-compaction-anchor",
                        f"compaction {eid} keeps entries from {anchor!r}, which is not on its path",
                        entry_id=eid,
                    )
                )


def _on_path_before(anchor: str, eid: str, parent: dict[str, str | None]) -> bool:
    seen = {eid}
    cur = parent.get(eid)
    while cur is not None and cur not in seen:
        if cur == anchor:
            return True
        seen.add(cur)
        cur = parent.get(cur)
    return False


def _check_blobs(entries: list[Any], bdir: Path | None, problems: list[Problem]) -> None:
    checked: dict[str, str | None] = {}
    for e in entries:
        if not isinstance(e, (dict, list)):
            continue
        eid = e.get("id") if isinstance(e, dict) and isinstance(e.get("id"), str) else None
        for s in _walk_strings(e):
            if not s.startswith(BLOB_PREFIX):
                continue
            h = s[len(BLOB_PREFIX) :]
            if not _is_hex64(h):
                problems.append(
                    Problem(
                        "invalid-blob-ref",
                        f"malformed blob reference {_short(s)} is never used as a path",
                        entry_id=eid,
                    )
                )
                continue
            if h in checked:
                verdict = checked[h]
            else:
                verdict = _verify_blob(bdir, h)
                checked[h] = verdict
                if verdict == "missing":
                    problems.append(Problem("missing-blob", f"blob {h} is missing from {bdir}", entry_id=eid))
                elif verdict == "corrupt":
                    problems.append(
                        Problem(
                            "corrupt-blob",
                            f"blob {h} does not match its hash (the content changed)",
                            entry_id=eid,
                        )
                    )


def _verify_blob(bdir: Path | None, h: str) -> str | None:
    if bdir is None:
        return "missing"
    p = bdir / h
    try:
        st = os.stat(p)
    except OSError:
        return "missing"
    if not stat.S_ISREG(st.st_mode):
        return "corrupt"
    from sessiontree.core.format.blobs import MAX_BLOB_BYTES

    if st.st_size > MAX_BLOB_BYTES:
        return "corrupt"  # larger than any blob sessiontree reads (a planted sparse file)
    try:
        data = read_regular_file(p)
    except DoctorError:
        return "corrupt"
    return None if hashlib.sha256(data).hexdigest() == h else "corrupt"


def check_file(
    path: str | os.PathLike[str], *, blobs_dir: str | os.PathLike[str] | None = None
) -> DoctorReport:
    """Check one session file and report its problems. Never writes anything.

    Raises `DoctorError` when the file cannot be read at all (missing, a directory, a FIFO,
    a device, permission denied).
    """
    p = os.path.abspath(os.fspath(path))
    data = read_regular_file(p)
    return check_bytes(data, p, blobs_dir=blobs_dir)


# ---------------------------------------------------------------------------------------
# repair


def quarantine_name(path: str, clock_ms: int | None = None) -> str:
    """The name of the quarantine copy kept beside `path` (`core/backups.py`: one naming
    scheme for every copy), which is not a `*.jsonl` and so never listed as a session."""
    from datetime import UTC, datetime

    from sessiontree.core.format.backups import copy_path

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
    if not values or not isinstance(values[0], dict) or values[0].get("type") != "session":
        raise DoctorError("<bytes>", "no session header at the start: not repairable without inventing data")
    if not isinstance(values[0].get("id"), str):
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

    if migrate:
        from sessiontree.core.format.migrations import migrate_session_entries

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
            from sessiontree.core.store import FileSessionStorage

            storage = FileSessionStorage()
        q = quarantine_name(p)
        lock = getattr(storage, "lock", None)
        try:
            # Under the writers' advisory lock, so that a daemon or agent appending at the
            # same moment is not overwritten; the file must still be what was read.
            with lock(p) if lock is not None else contextlib.nullcontext():
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
