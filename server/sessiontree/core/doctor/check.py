"""Checking a session file (`sessiontree doctor`): every problem, and nothing written.

`check_file(path)` reads a session file without ever writing to it and reports every
problem it finds: lines the lenient loader drops, a torn last line, a missing or invalid
header, entries that are not objects, duplicate ids, orphans (a parent that is not in the
file), parent cycles, labels whose target is missing, compactions whose
`firstKeptEntryId` is not on the path before them, blob references that are malformed,
missing or whose content does not match their hash, and a version that needs migration (a
note, not a problem: the next write migrates it). A file that is not a pi session at all (a
Claude Code or Codex transcript, binary data) is reported as one `not-a-session` finding
instead of a finding per line.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .. import paths
from ..format.blobs import BLOB_REF_PREFIX, is_blob_hash
from ..format.jsonl import parse_jsonl_lenient
from ..format.migrations import CURRENT_SESSION_VERSION
from ..format.title_slot import split_slot
from ..sources.sniff import foreign_format_of, not_a_session_reason
from ..store.blobs import MAX_BLOB_BYTES
from .report import DoctorError, DoctorReport, Problem

__all__ = ["check_bytes", "check_file", "default_blobs_dir", "read_regular_file"]


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
    from ..paths import file_kind

    return file_kind(mode)


def default_blobs_dir(path: str | os.PathLike[str]) -> Path | None:
    """The blob store a session file uses: `<agentDir>/blobs` when the file lives under
    `<agentDir>/sessions/<dir>/`, else the agent dir of the environment."""
    p = Path(os.path.abspath(os.fspath(path)))
    if len(p.parents) >= 3 and p.parents[1].name == "sessions":
        return p.parents[2] / "blobs"
    return Path(paths.blobs_dir())


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
    agent = foreign_format_of(data, parsed.values)
    if agent is not None:
        from .foreign import check_foreign

        return check_foreign(report, data, agent)
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
    if split_slot(data)[0] is not None:
        values = values[1:]  # oh-my-pi's title slot: the header is the line after it
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
        if v < CURRENT_SESSION_VERSION:
            problems.append(
                Problem(
                    "needs-migration",
                    f"version {v} file: migrated to version {CURRENT_SESSION_VERSION} on the next write to it",
                )
            )
        elif v > CURRENT_SESSION_VERSION:
            problems.append(
                Problem(
                    "newer-version",
                    f"version {v} is newer than this tool's {CURRENT_SESSION_VERSION}; entries are kept as-is",
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
            if not s.startswith(BLOB_REF_PREFIX):
                continue
            h = s[len(BLOB_REF_PREFIX) :]
            if not is_blob_hash(h):
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
