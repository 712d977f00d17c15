"""Session file migrations: numbered single-step functions chained by one loop.

Semantics follow the reference agent's migrations exactly (docs/storage-format.md; the file stays compatible with the
reference agent): v1 → v2 gives every non-header entry an id (derived from the file, the
same on every read: DIVERGENCES 10) and a linear parent chain
and turns ``firstKeptEntryIndex`` into ``firstKeptEntryId``; v2 → v3 renames the message
role ``hookMessage`` to ``custom``. Keys that are new to an object are appended at its end
(Python dicts keep insertion order like JS objects); existing keys keep their position.

Values that are not objects (the lenient parser returns scalars as values) are left alone.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Container
from typing import Any, Protocol

from ..ids import IdSource
from .jscompat import to_number

__all__ = [
    "CURRENT_SESSION_VERSION",
    "MIGRATIONS",
    "fill_missing_ids",
    "find_header",
    "is_current_version",
    "migrate_session_entries",
    "migrate_v1_to_v2",
    "migrate_v2_to_v3",
    "session_version",
    "stable_entry_ids",
]

#: The version written by this code and by the reference agent.
CURRENT_SESSION_VERSION = 3


def is_current_version(v: Any) -> bool:
    """Whether a header's version needs no migration (the fast path's condition)."""
    return not isinstance(v, bool) and isinstance(v, int | float) and v >= CURRENT_SESSION_VERSION


class _EntryIdSource(Protocol):
    def new_entry_id(self, existing: Container[str] = ...) -> str: ...


#: ``new_id`` may be an :class:`~sessiontree.core.ids.IdSource` (anything with
#: ``new_entry_id(existing)``) or a zero-argument callable returning a fresh id.
NewId = _EntryIdSource | Callable[[], str]


def stable_entry_ids(entries: list[Any]) -> Callable[[], str]:
    """Ids for the v1 → v2 migration derived from the file (DIVERGENCES 10).

    The n-th id is the first 8 hex digits of SHA-256 over the header's session id and n
    (another counter is mixed in when that id is already taken), so every read of the same
    file, in every process, gives the same ids, and they are the ones the migration writes.
    The ids have the shape of the reference's (8 lowercase hex digits). An entry keeps its
    id when later lines are appended, since it depends only on its position.
    """
    header = find_header(entries)
    sid = header.get("id") if header is not None else None
    seed = (sid if isinstance(sid, str) else "").encode("utf-8", "surrogatepass")
    taken: set[str] = set()
    counter = 0

    def make() -> str:
        nonlocal counter
        counter += 1
        salt = 0
        while True:
            text = f"{counter}" if salt == 0 else f"{counter}:{salt}"
            candidate = hashlib.sha256(seed + b"\0" + text.encode()).hexdigest()[:8]
            if candidate not in taken:
                taken.add(candidate)
                return candidate
            salt += 1

    return make


def fill_missing_ids(entries: list[Any]) -> int:
    """Give entries without a string id one derived from the file, in place; returns how many.

    For files of the current version whose entries lack ``id`` (a v3 header over v1-style
    entries: the reference crashes on them). The ids are those of :func:`stable_entry_ids`
    for the entry's position, so they are the same on every read (DIVERGENCES 10); an entry
    without ``parentId`` at all is chained to the entry before it, as v1 entries are.
    """
    if not any(
        isinstance(e, dict) and e.get("type") != "session" and not isinstance(e.get("id"), str)
        for e in entries
    ):
        return 0
    make_id = stable_entry_ids(entries)
    taken = {e.get("id") for e in entries if isinstance(e, dict) and isinstance(e.get("id"), str)}
    filled = 0
    prev_id: str | None = None
    for entry in entries:
        if not isinstance(entry, dict) or entry.get("type") == "session":
            continue
        candidate = make_id()  # one per position, so a later entry's id does not move
        if not isinstance(entry.get("id"), str):
            while candidate in taken:
                candidate = make_id()
            entry["id"] = candidate
            taken.add(candidate)
            if "parentId" not in entry:
                entry["parentId"] = prev_id
            filled += 1
        prev_id = entry["id"]
    return filled


def _id_factory(new_id: NewId | None) -> Callable[[], str]:
    if new_id is None:
        new_id = IdSource()
    if callable(new_id):
        return new_id
    source = new_id
    # The reference hands the generator an empty set that is never filled in, so the
    # v1 -> v2 migration does no collision checking at all.
    return lambda: source.new_entry_id(frozenset())


def find_header(entries: list[Any]) -> dict[str, Any] | None:
    """The first ``type: "session"`` object in ``entries``, or ``None``."""
    for entry in entries:
        if isinstance(entry, dict) and entry.get("type") == "session":
            return entry
    return None


def session_version(entries: list[Any]) -> float:
    """The header's version as a number; a missing header or version (or null) means 1.

    A version that is not numeric gives NaN, for which no migration runs (as in the
    reference, where every comparison with NaN is false).
    """
    header = find_header(entries)
    version = header.get("version") if header is not None else None
    return 1.0 if version is None else to_number(version)


def migrate_v1_to_v2(entries: list[Any], new_id: NewId | None = None) -> None:
    """v1 → v2, in place: fresh ids, a linear parent chain, ``firstKeptEntryId``."""
    make_id = _id_factory(new_id)
    prev_id: str | None = None
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        if entry.get("type") == "session":
            entry["version"] = 2
            continue
        entry["id"] = make_id()
        entry["parentId"] = prev_id
        prev_id = entry["id"]
        if entry.get("type") == "compaction" and "firstKeptEntryIndex" in entry:
            index = entry["firstKeptEntryIndex"]
            if isinstance(index, int | float) and not isinstance(index, bool):
                # The index counts the header as 0; an index past this entry points at an
                # entry without an id yet, which leaves firstKeptEntryId undefined (omitted).
                target = (
                    entries[int(index)] if float(index).is_integer() and 0 <= index < len(entries) else None
                )
                if isinstance(target, dict) and target.get("type") != "session":
                    target_id = target.get("id")
                    if target_id is None:
                        entry.pop("firstKeptEntryId", None)
                    else:
                        entry["firstKeptEntryId"] = target_id
                del entry["firstKeptEntryIndex"]


def migrate_v2_to_v3(entries: list[Any]) -> None:
    """v2 → v3, in place: message role ``hookMessage`` becomes ``custom``."""
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        if entry.get("type") == "session":
            entry["version"] = 3
            continue
        if entry.get("type") == "message":
            message = entry.get("message")
            if isinstance(message, dict) and message.get("role") == "hookMessage":
                message["role"] = "custom"


#: ``MIGRATIONS[v]`` turns a version ``v`` file into version ``v + 1``.
MIGRATIONS: dict[int, Callable[..., None]] = {
    1: migrate_v1_to_v2,
    2: migrate_v2_to_v3,
}


def migrate_session_entries(entries: list[Any], new_id: NewId | None = None) -> int | None:
    """Bring ``entries`` (header included) to :data:`CURRENT_SESSION_VERSION`, in place.

    Returns the version migrated from, or ``None`` when nothing ran (version 3 or later,
    including future versions, which pass through untouched). ``new_id`` supplies the
    ids of the v1 migration: an ``IdSource`` or a zero-argument callable; without it the
    ids are derived from the file (:func:`stable_entry_ids`), the same on every read.
    """
    version = session_version(entries)
    if not version < CURRENT_SESSION_VERSION:  # also true for NaN
        return None
    make_id = stable_entry_ids(entries) if new_id is None else _id_factory(new_id)
    # One loop over the numbered steps: a version-v file runs MIGRATIONS[v], v+1, ...
    # Fractional versions run the step whose range they fall in (the reference compares
    # with "<"): 1.5 runs v1->v2 and v2->v3.
    step_from = max(1, math.floor(version)) if math.isfinite(version) else 1
    while step_from < CURRENT_SESSION_VERSION:
        if step_from == 1:
            migrate_v1_to_v2(entries, make_id)
        else:
            MIGRATIONS[step_from](entries)
        step_from += 1
    return math.floor(version) if math.isfinite(version) else 1
