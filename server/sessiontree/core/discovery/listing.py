"""Finding sessions: the recent sessions of a directory, and listings with titles and counts.

Semantics follow the reference agent's discovery:
`get_recent_sessions` and `find_most_recent_session` read only a 4096-byte prefix of each
file; `list_sessions` / `list_all_sessions` read whole files (their summaries cached,
`summary`). `SessionInfo.all_messages_text` is read on first access because it can be as
big as the conversation.

Every function takes an optional ``guard`` (`core.store.guard.PathGuard`, the daemon's
allowed roots): with one, a file is read only through a descriptor the guard opened (a
symlink in a session directory that points outside the roots, or a directory swapped for
such a link, is skipped and never read), and a cached summary is used only for the file
that descriptor names.
"""

from __future__ import annotations

import os
import re
import stat
from datetime import UTC, datetime
from typing import Any

import msgspec

from .. import paths
from ..format.dialects import Evidence, home_dialect
from ..format.jscompat import js_trim
from ..format.jsonl import is_session_header, parse_jsonl_lenient, scrub_text
from ..format.title_slot import fold_into_header, split_slot
from ..store.guard import PathGuard
from .files import list_jsonl, open_listed, read_fd
from .homes import AgentHome
from .records import RecentSessionInfo, SessionInfo
from .summary import Summary, disk_cache_file, load_disk_cache, memo, memo_lock, save_disk_cache, summarize_fd

__all__ = [
    "find_most_recent_session",
    "find_most_recent_session_of_dirs",
    "get_recent_sessions",
    "list_all_sessions",
    "list_all_sessions_of_homes",
    "list_sessions",
    "list_sessions_of_dirs",
]

PREFIX_BYTES = 4096
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def _sanitize_first_line(s: str) -> str:
    return js_trim(_CONTROL.sub("", s.split("\n", 1)[0]))


def _first_text(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        for b in content:
            if isinstance(b, dict) and isinstance(b.get("text"), str):
                return b["text"]  # type: ignore[no-any-return]
    return None


def get_recent_sessions(
    session_dir: str, limit: int = 3, guard: PathGuard | None = None
) -> list[RecentSessionInfo]:
    """The newest sessions of a directory (by mtime), read from a 4096-byte prefix each."""
    try:
        found: list[tuple[float, RecentSessionInfo]] = []
        for path, _listed in list_jsonl(session_dir, guard=guard):
            opened = open_listed(path, guard)
            if opened is None:
                continue
            fd, st = opened
            try:
                prefix = read_fd(fd, PREFIX_BYTES)
            except OSError:
                continue
            slot, start = split_slot(prefix)
            values = parse_jsonl_lenient(prefix[start:].decode("utf-8", "replace")).values
            if not values or not is_session_header(values[0]):
                continue
            header = fold_into_header(dict(values[0]), slot)
            evidence = Evidence(slot is not None, header)
            for v in values[1:]:
                if isinstance(v, dict):
                    evidence.see(v)
            full = ""
            # The name by the file's agent's rule, as far as the prefix shows it.
            pi = evidence.dialect(home_dialect(path)) == "pi"
            title = evidence.info_name if pi else header.get("title")
            if isinstance(title, str) and title:
                full = _sanitize_first_line(title)
            else:
                for v in values[1:]:
                    if not isinstance(v, dict) or v.get("type") != "message":
                        continue
                    msg = v.get("message")
                    if isinstance(msg, dict) and msg.get("role") == "user":
                        text = _first_text(msg.get("content"))
                        if text is not None:
                            full = _sanitize_first_line(text)
                        break
            if not full:
                full = _sanitize_first_line(str(header.get("id", "")))
            if not full:
                base = os.path.basename(path)
                full = base[: -len(".jsonl")]
            full = scrub_text(full)
            name = full if len(full) <= 40 else full[:39] + "…"
            mtime = datetime.fromtimestamp(st.st_mtime, UTC)
            found.append((st.st_mtime, RecentSessionInfo(path, name, full, mtime)))
        found.sort(key=lambda p: p[0], reverse=True)
        return [info for _, info in found[: max(0, limit)]]
    except Exception:
        return []


def find_most_recent_session(session_dir: str, guard: PathGuard | None = None) -> str | None:
    """The path of the newest valid session of a directory, or None."""
    recent = get_recent_sessions(session_dir, limit=1, guard=guard)
    return recent[0].path if recent else None


def find_most_recent_session_of_dirs(
    session_dirs: list[str], guard: PathGuard | None = None
) -> tuple[str, str] | None:
    """``(path, its dir)`` of the newest valid session across several directories (one
    project under every encoding), or None."""
    newest: tuple[float, str, str] | None = None
    for d in session_dirs:
        recent = get_recent_sessions(d, limit=1, guard=guard)
        if recent:
            mtime = recent[0].mtime.timestamp()
            if newest is None or mtime > newest[0]:
                newest = (mtime, recent[0].path, d)
    return (newest[1], newest[2]) if newest is not None else None


def _info(path: str, s: Summary, guard: PathGuard | None = None) -> SessionInfo:
    created = datetime.fromtimestamp(s.created_ms / 1000, UTC) if s.created_ms is not None else None
    modified = datetime.fromtimestamp(s.mtime_ns / 1e9, UTC)
    return SessionInfo(
        path,
        s.id,
        s.cwd,
        s.title,
        s.parent,
        created,
        modified,
        s.message_count,
        s.first_message,
        s.all_text,
        guard,
        dialect=s.dialect or None,
    )


def _list(
    directory: str, recursive: bool, cache_dir: str | None, use_cache: bool, guard: PathGuard | None = None
) -> list[SessionInfo]:
    files = list_jsonl(directory, recursive, guard)
    disk_file = disk_cache_file(directory, cache_dir) if use_cache else None
    disk = load_disk_cache(disk_file) if disk_file else {}
    fresh: dict[str, Summary] = {}
    changed = False
    out: list[tuple[int, SessionInfo]] = []
    for path, st in files:
        fd = None
        if guard is not None:
            # The identity a cached summary must match is that of the file the guard
            # opened, not of whatever the name pointed to when the directory was listed.
            opened = open_listed(path, guard)
            if opened is None:
                continue
            fd, st = opened
        s = None
        with memo_lock:
            m = memo.get(path)
        for cand in (m, disk.get(path)):
            if (
                cand is not None
                and cand.size == st.st_size
                and cand.mtime_ns == st.st_mtime_ns
                and cand.inode == st.st_ino
            ):
                s = cand
                break
        if s is None:
            if fd is None:
                opened = open_listed(path, None) if stat.S_ISREG(st.st_mode) else None
                s = summarize_fd(*opened, path=path) if opened is not None else None
            else:
                s, fd = summarize_fd(fd, st, path=path), None
            changed = True
            if s is None:
                continue
        if fd is not None:
            os.close(fd)
        if s.all_text is not None:
            s = msgspec.structs.replace(s, all_text=None)
        with memo_lock:
            memo[path] = s
        fresh[path] = s
        out.append((st.st_mtime_ns, _info(path, s, guard)))
    if disk_file and (changed or len(fresh) != len(disk)):
        save_disk_cache(disk_file, fresh)
    out.sort(key=lambda p: p[0], reverse=True)
    return [info for _, info in out]


def list_sessions(
    session_dir: str,
    cache_dir: str | None = None,
    use_cache: bool = True,
    guard: PathGuard | None = None,
    **_: Any,
) -> list[SessionInfo]:
    """Every valid session file directly in `session_dir`, newest (mtime) first."""
    return _list(session_dir, False, cache_dir, use_cache, guard)


def list_sessions_of_dirs(
    session_dirs: list[str],
    cache_dir: str | None = None,
    use_cache: bool = True,
    guard: PathGuard | None = None,
    **_: Any,
) -> list[SessionInfo]:
    """The sessions of several directories (one project under every encoding), newest first."""
    found: list[SessionInfo] = []
    seen: set[str] = set()
    for d in session_dirs:
        for info in _list(d, False, cache_dir, use_cache, guard):
            if info.path not in seen:
                seen.add(info.path)
                found.append(info)
    found.sort(key=lambda i: i.modified, reverse=True)
    return found


def list_all_sessions(
    agent_dir: str | None = None,
    cache_dir: str | None = None,
    use_cache: bool = True,
    guard: PathGuard | None = None,
    **_: Any,
) -> list[SessionInfo]:
    """Every valid session file under `<agent_dir>/sessions` (recursive), newest first."""
    root = str(paths.sessions_root(agent_dir))
    return _list(root, True, cache_dir, use_cache, guard)


def list_all_sessions_of_homes(
    homes: list[AgentHome],
    cache_dir: str | None = None,
    use_cache: bool = True,
    guard: PathGuard | None = None,
    **_: Any,
) -> list[SessionInfo]:
    """Every valid session file under each home's sessions root (`homes.agent_homes`), newest
    first; a file two homes reach is listed once."""
    found: list[SessionInfo] = []
    seen: set[str] = set()
    for home in homes:
        for info in _list(home.sessions_root, True, cache_dir, use_cache, guard):
            key = os.path.realpath(info.path)
            if key not in seen:
                seen.add(key)
                found.append(info)
    found.sort(key=lambda i: i.modified, reverse=True)
    return found
