"""Finding sessions: recent sessions of a directory, listings with titles and counts.

Semantics follow the reference's "Discovery" (reference-behavior.md §16):
`get_recent_sessions` and `find_most_recent_session` read only a 4096-byte prefix of each
file; `list_sessions` / `list_all_sessions` read whole files. To keep listing thousands of
sessions fast, the summary of each file is cached (in process and in a small file in the
index cache directory, never beside the sessions), keyed by path, size, mtime and inode.
`SessionInfo.all_messages_text` is computed on first access because it can be as big as
the conversation.

Every function takes an optional ``guard`` (`core.guard.PathGuard`, the daemon's allowed
roots): with one, a file is read only through a descriptor the guard opened (a symlink in a
session directory that points outside the roots, or a directory swapped for such a link,
is skipped and never read), and a cached summary is used only for the file that
descriptor names.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import threading
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import msgspec
import orjson

from .format.jscompat import js_trim
from .format.jsonl import scrub_text
from .store.guard import PathGuard

__all__ = [
    "DISPLAY_NAME_LIMIT",
    "NO_MESSAGES",
    "RecentSessionInfo",
    "SessionInfo",
    "display_name",
    "display_name_of_manager",
    "find_most_recent_session",
    "find_most_recent_session_of_dirs",
    "get_recent_sessions",
    "list_all_sessions",
    "list_sessions",
    "list_sessions_of_dirs",
]

PREFIX_BYTES = 4096
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")

DISPLAY_NAME_LIMIT = 60
"""Characters of a session's display name (a longer one is cut and ends with "…")."""

NO_MESSAGES = "(no messages)"
"""`SessionInfo.first_message` of a session without a user message (the reference's)."""

_CONTROL_OR_SPACE = re.compile("[\x00-\x1f\x7f-\x9f\\s]+")


def _name_line(s: str) -> str:
    """The first line of ``s`` with something to show, on one line."""
    for line in s.split("\n"):
        name = _CONTROL_OR_SPACE.sub(" ", line).strip()
        if name:
            return name
    return ""


def display_name(
    title: str | None,
    first_message: str | None,
    path: str | None,
    session_id: str | None = None,
    limit: int = DISPLAY_NAME_LIMIT,
) -> str:
    """The one name a session is shown under: in listings, tree titles and the CLI.

    The title (the header's, else the last compaction's short summary: `SessionInfo.title`),
    else the first line of the first user message (``first_message``, ``NO_MESSAGES`` or
    empty: none), else the file name without ``.jsonl``, else the session id. Control
    characters and runs of whitespace are one space; cut to ``limit`` characters.
    """
    name = ""
    for candidate in (title, None if first_message == NO_MESSAGES else first_message):
        if isinstance(candidate, str):
            name = _name_line(candidate)
            if name:
                break
    if not name and path:
        base = os.path.basename(path)
        name = _name_line(base[: -len(".jsonl")] if base.endswith(".jsonl") else base)
    if not name and session_id:
        name = _name_line(session_id)
    name = scrub_text(name)
    return name if len(name) <= limit else name[: max(0, limit - 1)] + "…"


def display_name_of_manager(manager: Any) -> str:
    """`display_name` of an open session, from the inputs a listing uses (`SessionInfo`).

    The title is the header's, else the short summary of the last compaction in file
    order; the first message is the text of the first user message in file order; so an
    open session has the name its listing row has.
    """
    header = manager.get_header() or {}
    title = header.get("title")
    index: Any = getattr(manager, "index", None)
    sks = index.skeletons() if index is not None and hasattr(index, "skeletons") else None
    entries: Any = None
    if sks is None:
        entries = manager.get_entries()
    if title is None:
        if sks is not None:
            last = next((sk for sk in reversed(sks) if sk.type == "compaction"), None)
            entry = index.entry_of(last) if last is not None else None
        else:
            entry = next((e for e in reversed(entries) if e.get("type") == "compaction"), None)
        short = entry.get("shortSummary") if entry is not None else None
        title = short if isinstance(short, str) else None
    first: str | None = None
    if sks is not None:
        user = next((sk for sk in sks if sk.type == "message" and sk.role == "user"), None)
        msg = index.entry_of(user).get("message") if user is not None else None
    else:
        msg = next(
            (
                e.get("message")
                for e in entries
                if e.get("type") == "message"
                and isinstance(e.get("message"), dict)
                and e["message"].get("role") == "user"
            ),
            None,
        )
    if isinstance(msg, dict):
        first = _message_text(msg.get("content"))
    path = manager.get_session_file() if manager.is_persisted() else None
    sid = header.get("id")
    return display_name(
        title if isinstance(title, str) else None,
        scrub_text(first) if first is not None else None,
        path,
        sid if isinstance(sid, str) else None,
    )


@dataclass
class RecentSessionInfo:
    """A recent session: path, display name (cut to 40 characters), full name, mtime."""

    path: str
    name: str
    full_name: str
    mtime: datetime


class SessionInfo:
    """One session of a listing (reference `SessionInfo`).

    `created` comes from the header timestamp, `modified` is the file's mtime.
    `all_messages_text` (user and assistant texts joined with spaces) is read lazily.
    """

    __slots__ = (
        "_all_text",
        "_guard",
        "created",
        "cwd",
        "first_message",
        "id",
        "message_count",
        "modified",
        "parent_session_path",
        "path",
        "title",
    )

    def __init__(
        self,
        path: str,
        id: str,
        cwd: str,
        title: str | None,
        parent_session_path: str | None,
        created: datetime | None,
        modified: datetime,
        message_count: int,
        first_message: str,
        all_messages_text: str | None = None,
        guard: PathGuard | None = None,
    ) -> None:
        self._guard = guard
        self.path = path
        self.id = id
        self.cwd = cwd
        self.title = title
        self.parent_session_path = parent_session_path
        self.created = created
        self.modified = modified
        self.message_count = message_count
        self.first_message = first_message
        self._all_text = all_messages_text

    @property
    def all_messages_text(self) -> str:
        if self._all_text is None:
            summary = _summarize_file(self.path, with_text=True, guard=self._guard)
            self._all_text = summary.all_text if summary is not None and summary.all_text is not None else ""
        return self._all_text

    @property
    def display_name(self) -> str:
        """The name the session is shown under (`display_name`)."""
        return display_name(self.title, self.first_message, self.path, self.id)

    def to_dict(self) -> dict[str, Any]:
        """The wire shape (camelCase, ISO timestamps)."""
        out: dict[str, Any] = {"path": self.path, "id": self.id, "cwd": self.cwd}
        if self.title is not None:
            out["title"] = self.title
        out["firstMessage"] = self.first_message
        out["displayName"] = self.display_name
        out["messageCount"] = self.message_count
        out["created"] = _iso(self.created) if self.created else None
        out["modified"] = _iso(self.modified)
        if self.parent_session_path is not None:
            out["parentSession"] = self.parent_session_path
        return out

    def __repr__(self) -> str:
        return f"SessionInfo(path={self.path!r}, id={self.id!r}, title={self.title!r}, messages={self.message_count})"


def _iso(dt: datetime) -> str:
    dt = dt.astimezone(UTC)
    return f"{dt:%Y-%m-%dT%H:%M:%S}.{dt.microsecond // 1000:03d}Z"


# ----------------------------------------------------------------------------- recent


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


def _list_jsonl(
    directory: str, recursive: bool = False, guard: PathGuard | None = None
) -> list[tuple[str, os.stat_result]]:
    out: list[tuple[str, os.stat_result]] = []
    if guard is not None and not guard.accept(directory):
        return out
    if recursive:
        for root, _dirs, files in os.walk(directory):
            for name in files:
                if name.endswith(".jsonl"):
                    p = os.path.join(root, name)
                    try:
                        st = os.stat(p)
                    except OSError:
                        continue
                    out.append((p, st))
        return out
    try:
        it = os.scandir(directory)
    except OSError:
        return out
    with it:
        for de in it:
            if de.name.endswith(".jsonl"):
                try:
                    if not de.is_file():
                        continue
                    out.append((de.path, de.stat()))
                except OSError:
                    continue
    return out


def _open_listed(path: str, guard: PathGuard | None) -> tuple[int, os.stat_result] | None:
    """A descriptor of a listed file and its ``fstat`` (None: gone, refused or not a file).

    O_NONBLOCK: a FIFO named ``*.jsonl`` must not block the open forever.
    """
    from .errors import AccessDeniedError

    try:
        if guard is not None:
            fd = guard.open(path, os.O_RDONLY | os.O_NONBLOCK)
        else:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except (OSError, AccessDeniedError):
        return None
    try:
        st = os.fstat(fd)
    except OSError:
        os.close(fd)
        return None
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        return None
    return fd, st


def _read_fd(fd: int, limit: int | None = None) -> bytes:
    with os.fdopen(fd, "rb") as f:
        return f.read() if limit is None else f.read(limit)


def get_recent_sessions(
    session_dir: str, limit: int = 3, guard: PathGuard | None = None
) -> list[RecentSessionInfo]:
    """The newest sessions of a directory (by mtime), read from a 4096-byte prefix each."""
    from .format.jsonl import is_session_header, parse_jsonl_lenient

    try:
        found: list[tuple[float, RecentSessionInfo]] = []
        for path, _listed in _list_jsonl(session_dir, guard=guard):
            opened = _open_listed(path, guard)
            if opened is None:
                continue
            fd, st = opened
            try:
                prefix = _read_fd(fd, PREFIX_BYTES)
            except OSError:
                continue
            values = parse_jsonl_lenient(prefix.decode("utf-8", "replace")).values
            if not values or not is_session_header(values[0]):
                continue
            header = values[0]
            full = ""
            title = header.get("title")
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


# ----------------------------------------------------------------------------- listing


class _Summary(msgspec.Struct, array_like=True):
    size: int
    mtime_ns: int
    inode: int
    id: str
    cwd: str
    title: str | None
    parent: str | None
    created_ms: float | None
    message_count: int
    first_message: str
    all_text: str | None = None


def _message_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(
            b["text"]
            for b in content
            if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
        )
    return ""


def _parse_values(data: bytes) -> list[Any]:
    """Fast path: orjson per line; any irregularity uses the lenient parser."""
    if data.startswith(b"\xef\xbb\xbf") or b"\r" in data:
        from .format.jsonl import parse_jsonl_lenient

        return parse_jsonl_lenient(data).values
    values: list[Any] = []
    loads = orjson.loads
    for line in data.split(b"\n"):
        if not line:
            continue
        try:
            values.append(loads(line))
        except orjson.JSONDecodeError:
            from .format.jsonl import parse_jsonl_lenient

            return parse_jsonl_lenient(data).values
    return values


def _summarize_file(path: str, with_text: bool = False, guard: PathGuard | None = None) -> _Summary | None:
    opened = _open_listed(path, guard)
    if opened is None:
        return None
    return _summarize_fd(*opened, with_text=with_text)


def _summarize_fd(fd: int, st: os.stat_result, with_text: bool = False) -> _Summary | None:
    """The summary of the open regular file ``fd`` (closed here) whose ``fstat`` is ``st``."""
    try:
        data = _read_fd(fd)
    except OSError:
        return None
    values = _parse_values(data)
    if not values:
        return None
    header = values[0]
    if not isinstance(header, dict) or header.get("type") != "session" or not header.get("id"):
        return None
    count = 0
    first: str | None = None
    texts: list[str] | None = [] if with_text else None
    short: str | None = None
    for v in values[1:]:
        if not isinstance(v, dict):
            continue
        t = v.get("type")
        if t == "message":
            count += 1
            msg = v.get("message")
            if not isinstance(msg, dict):
                continue
            role = msg.get("role")
            if role == "user" or role == "assistant":
                text = None
                if role == "user" and first is None:
                    text = _message_text(msg.get("content"))
                    first = text
                if texts is not None:
                    texts.append(text if text is not None else _message_text(msg.get("content")))
        elif t == "compaction":
            ss = v.get("shortSummary")
            short = ss if isinstance(ss, str) else None
    title = header.get("title")
    if title is None:
        title = short
    created_ms: float | None = None
    ts = header.get("timestamp")
    if ts is not None:
        from .format.jscompat import date_ms

        ms = date_ms(ts)
        created_ms = float(ms) if ms is not None else None
    cwd = header.get("cwd")
    parent = header.get("parentSession")
    # A lone surrogate (a JavaScript writer cut a string inside an emoji) is shown as U+FFFD,
    # the rule of every output (jsonl.scrub_text); the cache encoder could not hold it either.
    return _Summary(
        st.st_size,
        st.st_mtime_ns,
        st.st_ino,
        scrub_text(str(header.get("id"))),
        scrub_text(cwd) if isinstance(cwd, str) else "",
        scrub_text(title) if isinstance(title, str) else None,
        scrub_text(parent) if isinstance(parent, str) else None,
        created_ms,
        count,
        scrub_text(first) if first is not None else NO_MESSAGES,
        scrub_text(" ".join(texts)) if texts is not None else None,
    )


_memo: dict[str, _Summary] = {}
_memo_lock = threading.Lock()
_LIST_CACHE_DECODER = msgspec.msgpack.Decoder(dict[str, _Summary])
_LIST_CACHE_ENCODER = msgspec.msgpack.Encoder()


def _disk_cache_file(key_dir: str, cache_dir: str | None) -> str:
    from .index import default_cache_dir

    base = os.path.join(os.path.dirname(cache_dir or default_cache_dir()), "list")
    h = hashlib.sha256(os.path.realpath(key_dir).encode("utf-8", "surrogateescape")).hexdigest()[:40]
    return os.path.join(base, h + ".msgpack")


def _load_disk_cache(file: str) -> dict[str, _Summary]:
    try:
        with open(file, "rb") as f:
            return _LIST_CACHE_DECODER.decode(f.read())
    except (OSError, msgspec.DecodeError, msgspec.ValidationError):
        return {}


def _save_disk_cache(file: str, summaries: dict[str, _Summary]) -> None:
    try:
        os.makedirs(os.path.dirname(file), exist_ok=True)
        tmp = f"{file}.{os.getpid()}.tmp"
        with open(tmp, "wb") as f:
            f.write(_LIST_CACHE_ENCODER.encode(summaries))
        os.replace(tmp, file)
    except OSError:
        pass


def _info(path: str, s: _Summary, guard: PathGuard | None = None) -> SessionInfo:
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
    )


def _list(
    directory: str, recursive: bool, cache_dir: str | None, use_cache: bool, guard: PathGuard | None = None
) -> list[SessionInfo]:
    files = _list_jsonl(directory, recursive, guard)
    disk_file = _disk_cache_file(directory, cache_dir) if use_cache else None
    disk = _load_disk_cache(disk_file) if disk_file else {}
    fresh: dict[str, _Summary] = {}
    changed = False
    out: list[tuple[int, SessionInfo]] = []
    for path, st in files:
        fd = None
        if guard is not None:
            # The identity a cached summary must match is that of the file the guard
            # opened, not of whatever the name pointed to when the directory was listed.
            opened = _open_listed(path, guard)
            if opened is None:
                continue
            fd, st = opened
        s = None
        with _memo_lock:
            m = _memo.get(path)
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
                opened = _open_listed(path, None) if stat.S_ISREG(st.st_mode) else None
                s = _summarize_fd(*opened) if opened is not None else None
            else:
                s, fd = _summarize_fd(fd, st), None
            changed = True
            if s is None:
                continue
        if fd is not None:
            os.close(fd)
        if s.all_text is not None:
            s = msgspec.structs.replace(s, all_text=None)
        with _memo_lock:
            _memo[path] = s
        fresh[path] = s
        out.append((st.st_mtime_ns, _info(path, s, guard)))
    if disk_file and (changed or len(fresh) != len(disk)):
        _save_disk_cache(disk_file, fresh)
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
    from . import paths

    root = str(paths.sessions_root(agent_dir))
    return _list(root, True, cache_dir, use_cache, guard)
