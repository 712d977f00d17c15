"""The entries a replay reads, kept small and read once per session.

A replay needs, of each entry on a path, only: an assistant message's calls of the file and
command tools (name and arguments), a tool result of such a call (its id, whether it failed,
the `details` keys that tell a file, and for a read its text), a user's ``!command``, and
Claude Code's backups. The first plan of a session reads them (assistant messages, then only
the results whose call matters, found by the skeletons' call ids without reading the others)
and keeps them per entry index: entries never change once written, so later plans, on any
branch, read only the entries appended since. A reloaded file gets a new index, and so a new
cache.
"""

from __future__ import annotations

import re
import threading
import weakref
from collections.abc import Mapping
from typing import Any

from ..compare.effects import BASH_TOOLS, EDIT_TOOLS, READ_TOOLS, WRITE_TOOLS
from ..view.tool_calls import calls_of

__all__ = ["path_events", "warm_events"]

_TOOLS = WRITE_TOOLS | EDIT_TOOLS | READ_TOOLS | BASH_TOOLS
_DETAIL_KEYS = (
    "originalFile",
    "oldText",
    "newText",
    "diff",
    "file",
    "perFileResults",
    "path",
    "snapshotsPruned",
    "truncation",
    "isDirectory",
    "meta",
    "resolvedPath",
)
_BACKUPS = "claude:file-history-snapshot"
#: A call of one of `_TOOLS` in an assistant message's raw line (any JSON spacing); a line
#: without one calls nothing the replay reads, whatever else it holds.
_TOOL_NAME = re.compile(
    rb'"name"\s*:\s*"(?:'
    + b"|".join(re.escape(n.encode()) for n in sorted(_TOOLS, key=len, reverse=True))
    + rb')"'
)


class _Cache:
    def __init__(self) -> None:
        self.events: dict[str, dict[str, Any] | None] = {}
        self.calls: dict[str, str] = {}  # call id -> tool name, for the calls that matter
        self.lock = threading.Lock()
        self.warm: tuple[str | None, list[Any], int] | None = None  # (leaf, its path, done up to)


_CACHES: weakref.WeakKeyDictionary[Any, _Cache] = weakref.WeakKeyDictionary()
_CACHES_LOCK = threading.Lock()


def _cache_of(index: Any) -> _Cache:
    with _CACHES_LOCK:
        cache = _CACHES.get(index)
        if cache is None:
            cache = _CACHES[index] = _Cache()
        return cache


def _assistant(e: Mapping[str, Any], cache: _Cache) -> dict[str, Any] | None:
    kept = []
    for call in calls_of(e):
        name = call.get("name")
        if isinstance(name, str) and name in _TOOLS:
            kept.append(call)
            cid = call.get("id")
            if isinstance(cid, str):
                cache.calls[cid] = name
    if not kept:
        return None
    return {"type": "message", "id": e.get("id"), "message": {"role": "assistant", "content": kept}}


def _result(e: Mapping[str, Any], name: str) -> dict[str, Any] | None:
    msg = e.get("message")
    if not isinstance(msg, Mapping):
        return None
    small: dict[str, Any] = {
        "role": "toolResult",
        "toolCallId": msg.get("toolCallId"),
        "isError": msg.get("isError"),
    }
    details = msg.get("details")
    if isinstance(details, Mapping):
        small["details"] = {k: details[k] for k in _DETAIL_KEYS if k in details}
    if name in READ_TOOLS or name == "apply_patch":
        small["content"] = msg.get("content")
    return {"type": "message", "id": e.get("id"), "message": small}


def _with_file_calls(index: Any, events: dict[str, Any], assistants: list[Any]) -> list[Any]:
    """The assistant messages of ``assistants`` whose line may call a tool the replay reads
    (`_TOOLS`): their raw lines are looked at without parsing them (most calls of a long
    session search or list, which change no file), and the others noted as holding none."""
    raw_loader = getattr(index, "raw_loader", None)
    backed = [sk for sk in assistants if sk.offset >= 0]
    if raw_loader is None or not backed:
        return assistants
    keep = [sk for sk in assistants if sk.offset < 0]  # held in memory: read as they are
    for sk, line in raw_loader(sorted(backed, key=lambda k: k.offset)):
        if _TOOL_NAME.search(line) is None:
            events[sk.id] = None
        else:
            keep.append(sk)
    return keep


def _fill(index: Any, cache: _Cache, sks: list[Any]) -> None:
    """Read the entries of ``sks`` (in path order) the cache does not hold yet."""
    events = cache.events
    assistants = [sk for sk in sks if sk.call_ids and sk.id not in events]
    if assistants:
        assistants = _with_file_calls(index, events, assistants)
        for sk, e in zip(assistants, index.entries_bulk(assistants), strict=True):
            events[sk.id] = _assistant(e, cache)
    calls = cache.calls
    wanted = []
    for sk in sks:
        if sk.id in events or (sk.type == "message" and sk.role == "assistant"):
            continue
        if sk.type == "message":
            if sk.role == "toolResult":
                if sk.tool_call_id in calls:
                    wanted.append(sk)
                else:
                    events[sk.id] = None
            elif sk.role == "bashExecution":
                wanted.append(sk)
        elif sk.type == "custom" and sk.custom_type == _BACKUPS:
            wanted.append(sk)
    if wanted:
        for sk, e in zip(wanted, index.entries_bulk(wanted), strict=True):
            if sk.role == "toolResult":
                events[sk.id] = _result(e, calls[sk.tool_call_id])
            else:
                events[sk.id] = dict(e)


def path_events(manager: Any, node_id: str | None) -> tuple[list[str], list[tuple[int, dict[str, Any]]]]:
    """The ids of the path root → ``node_id`` and the (small) entries on it that the replay
    reads, with their positions on it."""
    index = manager.index
    sks = index.path_skeletons(node_id) if node_id is not None else []
    cache = _cache_of(index)
    with cache.lock:
        _fill(index, cache, sks)
        ids = [sk.id for sk in sks]
        get = cache.events.get
        found = [(pos, ev) for pos, i in enumerate(ids) if (ev := get(i)) is not None]
    return ids, found


def warm_events(manager: Any, size: int) -> bool:
    """One step of reading the leaf's path's entries ahead of a first preview (``size``
    entries of the path a call, for idle time); True when they are all read."""
    index = manager.index
    cache = _cache_of(index)
    leaf = manager.get_leaf_id()
    with cache.lock:
        if cache.warm is None or cache.warm[0] != leaf:
            cache.warm = (leaf, index.path_skeletons(leaf) if leaf is not None else [], 0)
        _, sks, at = cache.warm
        _fill(index, cache, sks[at : at + size])
        at += size
        cache.warm = (leaf, sks, at) if at < len(sks) else (leaf, [], 0)
        return at >= len(sks)
