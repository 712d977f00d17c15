"""oh-my-pi's title slot: a fixed-width first line before the session header.

oh-my-pi 18 starts its session files with one line of exactly `SLOT_BYTES` UTF-8 bytes
(newline included), ``{"type":"title","v":1,"title":...,"source"?:...,"updatedAt":...,
"pad":"   ..."}``, and rewrites that line in place when the title changes: the rest of the
file is never moved. The session header is the line after it. Its loader folds the slot
into the header: a non-empty slot title becomes the header's ``title`` (an empty one
removes it) and the slot's ``source`` its ``titleSource`` (none removes it).

This module is the one home of that rule (omp ``session/session-title-slot.ts``): what
counts as a slot, where the header starts, the slot's exact serialization (key order,
JavaScript escaping, the title truncated by code points to fit, padded with spaces) and
the fold. Anything that is not exactly a slot is left to the session parser, as omp does.
"""

from __future__ import annotations

from typing import Any

from .jsonl import dumps_line, loads_line

__all__ = [
    "SLOT_BYTES",
    "SLOT_TYPE",
    "TitleSlot",
    "fold_into_header",
    "parse_slot_line",
    "serialize_slot",
    "split_slot",
]

#: The slot line's width in UTF-8 bytes, its newline included.
SLOT_BYTES = 256
SLOT_TYPE = "title"
_SOURCES = ("auto", "user")


class TitleSlot:
    """A parsed title slot: the title, its source (``"auto"``, ``"user"`` or None) and
    when it was set; ``width`` is the byte length of the slot line as found in the file
    (with its newline), where the header begins."""

    __slots__ = ("source", "title", "updated_at", "width")

    def __init__(self, title: str, source: str | None, updated_at: str, width: int = SLOT_BYTES) -> None:
        self.title = title
        self.source = source
        self.updated_at = updated_at
        self.width = width

    def __repr__(self) -> str:
        return f"TitleSlot({self.title!r}, source={self.source!r}, updated_at={self.updated_at!r}, width={self.width})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TitleSlot) and (self.title, self.source, self.updated_at, self.width) == (
            other.title,
            other.source,
            other.updated_at,
            other.width,
        )

    def __hash__(self) -> int:
        return hash((self.title, self.source, self.updated_at, self.width))


def _slot_of(value: Any, width: int) -> TitleSlot | None:
    # omp's parseTitleSlotObject: every check, in its order; anything else is no slot.
    if not isinstance(value, dict) or value.get("type") != SLOT_TYPE:
        return None
    v = value.get("v")
    if type(v) not in (int, float) or v != 1:
        return None
    title, updated_at, pad = value.get("title"), value.get("updatedAt"), value.get("pad")
    if not isinstance(title, str) or not isinstance(updated_at, str) or not isinstance(pad, str):
        return None
    if "source" in value and value["source"] not in _SOURCES:
        return None  # a present but unknown source (null too) disqualifies the slot
    source = value.get("source")
    return TitleSlot(title, source or None, updated_at, width)


def parse_slot_line(line: bytes | bytearray | memoryview) -> TitleSlot | None:
    """The slot a physical first line (without its newline) holds, or None."""
    try:
        value = loads_line(bytes(line))
    except ValueError:
        return None
    return _slot_of(value, len(line) + 1)


def split_slot(data: bytes | bytearray | memoryview) -> tuple[TitleSlot | None, int]:
    """``(slot, start)``: the title slot that begins ``data`` (a file's first bytes) and the
    offset where the session proper (its header line) starts; ``(None, 0)`` without one.

    A first line with no newline yet is no slot (omp: the header is not written yet)."""
    if bytes(data[:1]) != b"{":
        return None, 0
    nl = bytes(data[: 1 << 16]).find(b"\n")
    if nl < 0:
        nl = bytes(data).find(b"\n")
        if nl < 0:
            return None, 0
    slot = parse_slot_line(data[:nl])
    if slot is None:
        return None, 0
    return slot, nl + 1


def fold_into_header(header: dict[str, Any], slot: TitleSlot | None) -> dict[str, Any]:
    """The logical header omp reads: ``header`` with the slot's title and source folded in
    (omp ``applyTitleSlot``). Returns ``header`` itself, changed, when there is a slot."""
    if slot is None:
        return header
    if slot.title:
        header["title"] = slot.title
    else:
        header.pop("title", None)
    if slot.source:
        header["titleSource"] = slot.source
    else:
        header.pop("titleSource", None)
    return header


def _line(title: str, source: str | None, updated_at: str, pad: str) -> bytes:
    obj: dict[str, Any] = {"type": SLOT_TYPE, "v": 1, "title": title}
    if source:
        obj["source"] = source
    obj["updatedAt"] = updated_at
    obj["pad"] = pad
    return dumps_line(obj) + b"\n"


def _truncated(title: str, source: str | None, updated_at: str) -> str:
    # omp's truncateTitleForSlot: the longest prefix, by code points, whose unpadded line
    # fits (a binary search, as there, so that the result is the same prefix).
    points = list(title)
    low, high, best = 0, len(points), ""
    while low <= high:
        mid = (low + high) >> 1
        candidate = "".join(points[:mid])
        if len(_line(candidate, source, updated_at, "")) <= SLOT_BYTES:
            best = candidate
            low = mid + 1
        else:
            high = mid - 1
    return best


def serialize_slot(title: str | None, source: str | None, updated_at: str) -> bytes:
    """The slot line exactly as omp writes it: `SLOT_BYTES` bytes, newline included.

    Raises ``ValueError`` when the metadata alone does not fit (omp throws too)."""
    text = _truncated(title or "", source, updated_at)
    unpadded = _line(text, source, updated_at, "")
    pad = SLOT_BYTES - len(unpadded)
    if pad < 0:
        raise ValueError("session title slot metadata exceeds the fixed slot size")
    line = _line(text, source, updated_at, " " * pad)
    if len(line) != SLOT_BYTES:  # pragma: no cover - the arithmetic above makes it so
        raise ValueError("session title slot serialization is not fixed-width")
    return line
