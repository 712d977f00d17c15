"""The summary of one session file a listing shows, and the caches that spare reading it again.

Summaries are cached in process and in a small file in sessiontree's own cache directory
(never beside the sessions), keyed by path, size, mtime and inode.
"""

from __future__ import annotations

import hashlib
import os
import threading
from typing import Any

import msgspec
import orjson

from ..format.content import content_text
from ..format.dialects import Evidence, home_dialect
from ..format.jscompat import date_ms
from ..format.jsonl import parse_jsonl_lenient, scrub_text
from ..format.title_slot import fold_into_header, split_slot
from ..index import default_cache_dir
from ..store.guard import PathGuard
from .files import open_listed, read_fd

__all__ = [
    "NO_MESSAGES",
    "Summary",
    "disk_cache_file",
    "load_disk_cache",
    "message_text",
    "save_disk_cache",
    "summarize_fd",
    "summarize_file",
]

NO_MESSAGES = "(no messages)"
"""`SessionInfo.first_message` of a session without a user message (the reference's)."""


class Summary(msgspec.Struct, array_like=True):
    """What a listing row shows of a file, and what identifies the file it was read from."""

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
    dialect: str = ""
    """The agent whose words the file uses (`format.dialects.Dialect`)."""


def message_text(content: Any) -> str:
    """A listed message's text: its text blocks joined with a space (the reference's list)."""
    return content_text(content, " ")


def _parse_values(data: bytes) -> list[Any]:
    """Fast path: orjson per line; any irregularity uses the lenient parser."""
    if data.startswith(b"\xef\xbb\xbf") or b"\r" in data:
        return parse_jsonl_lenient(data).values
    values: list[Any] = []
    loads = orjson.loads
    for line in data.split(b"\n"):
        if not line:
            continue
        try:
            values.append(loads(line))
        except orjson.JSONDecodeError:
            return parse_jsonl_lenient(data).values
    return values


def summarize_file(path: str, with_text: bool = False, guard: PathGuard | None = None) -> Summary | None:
    opened = open_listed(path, guard)
    if opened is None:
        return None
    return summarize_fd(*opened, with_text=with_text, path=path)


def summarize_fd(
    fd: int, st: os.stat_result, with_text: bool = False, path: str | None = None
) -> Summary | None:
    """The summary of the open regular file ``fd`` (closed here) whose ``fstat`` is ``st``;
    ``path`` (where it was listed) tells the agent dir it lives in (`format.dialects`)."""
    try:
        data = read_fd(fd)
    except OSError:
        return None
    # oh-my-pi's title slot, when the file has one, is the line before the header.
    slot, start = split_slot(data)
    values = _parse_values(data[start:] if start else data)
    if not values:
        return None
    header = values[0]
    if not isinstance(header, dict) or header.get("type") != "session" or not header.get("id"):
        return None
    header = fold_into_header(dict(header), slot)
    evidence = Evidence(slot is not None, header)
    count = 0
    first: str | None = None
    texts: list[str] | None = [] if with_text else None
    short: str | None = None
    for v in values[1:]:
        if not isinstance(v, dict):
            continue
        evidence.see(v)
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
                    text = message_text(msg.get("content"))
                    first = text
                if texts is not None:
                    texts.append(text if text is not None else message_text(msg.get("content")))
        elif t == "compaction":
            ss = v.get("shortSummary")
            short = ss if isinstance(ss, str) else None
    dialect = evidence.dialect(home_dialect(path))
    # The session's name by its agent's rule (pi: its latest session_info), else the last
    # compaction's short summary.
    title = evidence.info_name if dialect == "pi" else header.get("title")
    if title is None:
        title = short
    created_ms: float | None = None
    ts = header.get("timestamp")
    if ts is not None:
        ms = date_ms(ts)
        created_ms = float(ms) if ms is not None else None
    cwd = header.get("cwd")
    parent = header.get("parentSession")
    # A lone surrogate (a JavaScript writer cut a string inside an emoji) is shown as U+FFFD,
    # the rule of every output (jsonl.scrub_text); the cache encoder could not hold it either.
    return Summary(
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
        str(dialect),
    )


memo: dict[str, Summary] = {}
memo_lock = threading.Lock()
_LIST_CACHE_DECODER = msgspec.msgpack.Decoder(dict[str, Summary])
_LIST_CACHE_ENCODER = msgspec.msgpack.Encoder()


def disk_cache_file(key_dir: str, cache_dir: str | None) -> str:
    base = os.path.join(os.path.dirname(cache_dir or default_cache_dir()), "list")
    h = hashlib.sha256(os.path.realpath(key_dir).encode("utf-8", "surrogateescape")).hexdigest()[:40]
    # v2: the names of pi and oh-my-pi files by their agents' rules, and their dialect
    return os.path.join(base, h + ".v2.msgpack")


def load_disk_cache(file: str) -> dict[str, Summary]:
    try:
        with open(file, "rb") as f:
            return _LIST_CACHE_DECODER.decode(f.read())
    except (OSError, msgspec.DecodeError, msgspec.ValidationError):
        return {}


def save_disk_cache(file: str, summaries: dict[str, Summary]) -> None:
    try:
        os.makedirs(os.path.dirname(file), exist_ok=True)
        tmp = f"{file}.{os.getpid()}.tmp"
        with open(tmp, "wb") as f:
            f.write(_LIST_CACHE_ENCODER.encode(summaries))
        os.replace(tmp, file)
    except OSError:
        pass
