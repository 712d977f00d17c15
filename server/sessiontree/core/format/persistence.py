"""The persistence transform applied to every entry before it is written, and what
loading does to an entry (docs/storage-format.md "The persistence transform").

Before writing: keys ``partialJson``/``jsonlEvents`` are removed at any depth; a data URL
under the key ``image_url`` goes to the blob store (any size); a string longer than 500,000
UTF-16 code units is cut to 499,953 units plus a 47-character notice (signature keys are
cleared instead); image blocks with base64 ``data`` of 1024 or more characters in arrays
under the key ``content`` are externalized by the SHA-256 of the decoded bytes; an object
that changed and has a string ``content`` and a numeric ``lineCount`` gets ``lineCount``
recomputed. The caller's entry is never mutated: changed objects are copies, unchanged
ones are returned as they are (the same object when nothing changed at all).

On load: blob references are resolved (`resolve_blob_refs`, in place, after the cheap test
`has_blob_ref`) and OpenAI-Responses replay metadata is dropped in memory
(`clean_openai_replay`).
"""

from __future__ import annotations

import base64
from typing import Any

import orjson

from .blobs import BLOB_REF_BYTES, Blobs, make_blob_ref, parse_blob_ref
from .jscompat import decode_base64_lenient, js_utf8, utf16_length
from .jsonl import dumps_line, needs_js_number_fixup

__all__ = [
    "BLOB_EXTERNALIZE_THRESHOLD",
    "MAX_PERSISTED_STRING_LENGTH",
    "SIGNATURE_KEYS",
    "TRUNCATION_NOTICE",
    "clean_openai_replay",
    "has_blob_ref",
    "prepare_entry_for_persistence",
    "resolve_blob_refs",
    "serialize_entry_for_persistence",
    "truncate_string",
]

MAX_PERSISTED_STRING_LENGTH = 500_000
TRUNCATION_NOTICE = "\n\n[Session persistence truncated large content]"
BLOB_EXTERNALIZE_THRESHOLD = 1024
SIGNATURE_KEYS = frozenset({"thinkingSignature", "thoughtSignature", "textSignature"})
_STRIPPED_KEYS = frozenset({"partialJson", "jsonlEvents"})

# Substrings without which the transform cannot change anything (checked on a quick
# serialization first, so that clean entries skip the recursive walk).
_PROBES = (b"partialJson", b"jsonlEvents", b"data:image/", b'"image"')


def truncate_string(value: str) -> str:
    """Cut a string to 499,953 UTF-16 units (dropping a split high surrogate) + the notice."""
    cut = MAX_PERSISTED_STRING_LENGTH - len(TRUNCATION_NOTICE)
    if value.isascii():
        return value[:cut] + TRUNCATION_NOTICE
    units = value.encode("utf-16-le", "surrogatepass")[: cut * 2]
    if len(units) >= 2 and 0xD8 <= units[-1] <= 0xDB:
        units = units[:-2]
    return units.decode("utf-16-le", "surrogatepass") + TRUNCATION_NOTICE


def _is_data_url(value: str) -> bool:
    return value.startswith("data:image/") and ";base64," in value


def _is_image_to_externalize(item: object) -> bool:
    if not isinstance(item, dict) or item.get("type") != "image":
        return False
    data = item.get("data")
    return (
        isinstance(data, str)
        and parse_blob_ref(data) is None
        and utf16_length(data) >= BLOB_EXTERNALIZE_THRESHOLD
    )


def _transform(value: Any, key: str | None, blobs: Blobs | None) -> Any:
    if isinstance(value, str):
        if key == "image_url" and blobs is not None and _is_data_url(value):
            return blobs.put(js_utf8(value)).ref
        if (
            len(value) > MAX_PERSISTED_STRING_LENGTH // 2
            and utf16_length(value) > MAX_PERSISTED_STRING_LENGTH
        ):
            return "" if key in SIGNATURE_KEYS else truncate_string(value)
        return value
    if isinstance(value, list):
        changed = False
        items: list[Any] = []
        for item in value:
            if key == "content" and blobs is not None and _is_image_to_externalize(item):
                put = blobs.put(decode_base64_lenient(item["data"]))
                new_item: Any = {k: (make_blob_ref(put.hash) if k == "data" else v) for k, v in item.items()}
            else:
                # Array elements sit under no key of their own.
                new_item = _transform(item, None, blobs)
            if new_item is not item:
                changed = True
            items.append(new_item)
        return items if changed else value
    if isinstance(value, dict):
        changed = False
        result: dict[str, Any] = {}
        for k, v in value.items():
            if k in _STRIPPED_KEYS:
                changed = True
                continue
            new_v = _transform(v, k, blobs)
            if new_v is not v:
                changed = True
            result[k] = new_v
        if not changed:
            return value
        content = result.get("content")
        line_count = result.get("lineCount")
        if (
            isinstance(content, str)
            and isinstance(line_count, int | float)
            and not isinstance(line_count, bool)
        ):
            result["lineCount"] = content.count("\n") + 1
        return result
    return value


def _may_change(entry: Any) -> bool:
    try:
        probe = orjson.dumps(entry)
    except (TypeError, orjson.JSONEncodeError):
        return True
    if len(probe) > MAX_PERSISTED_STRING_LENGTH:
        # A string longer than the limit needs at least that many bytes in the output.
        return True
    return any(p in probe for p in _PROBES)


def prepare_entry_for_persistence(entry: Any, blobs: Blobs | None) -> Any:
    """Apply the persistence transform to one entry (or header).

    Returns ``entry`` itself when nothing changes, otherwise a new object sharing the
    unchanged parts. The caller's objects are never mutated. With ``blobs=None`` nothing
    is externalized (images and data URLs stay inline); truncation and stripping still apply.
    """
    if not _may_change(entry):
        return entry
    return _transform(entry, None, blobs)


def serialize_entry_for_persistence(entry: Any, blobs: Blobs | None) -> bytes:
    """``dumps_line(prepare_entry_for_persistence(entry, blobs))`` with one serialization
    for clean entries (the common case of a full rewrite): the line, without its newline."""
    try:
        out = orjson.dumps(entry)
    except (TypeError, orjson.JSONEncodeError):
        return dumps_line(prepare_entry_for_persistence(entry, blobs))
    if len(out) > MAX_PERSISTED_STRING_LENGTH or any(p in out for p in _PROBES):
        return dumps_line(_transform(entry, None, blobs))
    if needs_js_number_fixup(out):
        return dumps_line(entry)
    return out


def _resolve_image_blocks(content: object, blobs: Blobs, missing: list[str]) -> None:
    if not isinstance(content, list):
        return
    for block in content:
        if not isinstance(block, dict) or block.get("type") != "image":
            continue
        digest = parse_blob_ref(block.get("data"))
        if digest is None:
            continue
        data = _get_blob(blobs, digest)
        if data is None:
            missing.append(digest)
        else:
            block["data"] = base64.b64encode(data).decode("ascii")


def _get_blob(blobs: Blobs, digest: str) -> bytes | None:
    try:
        return blobs.get(digest)
    except Exception:
        # A corrupted or unreadable blob is treated like a missing one: the ref stays.
        return None


def _resolve_image_urls(value: Any, blobs: Blobs, missing: list[str]) -> None:
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            url = node.get("image_url")
            if isinstance(url, str):
                digest = parse_blob_ref(url)
                if digest is not None:
                    data = _get_blob(blobs, digest)
                    if data is None:
                        missing.append(digest)
                    else:
                        node["image_url"] = data.decode("utf-8", "replace")
            stack.extend(v for v in node.values() if isinstance(v, dict | list))
        elif isinstance(node, list):
            stack.extend(v for v in node if isinstance(v, dict | list))


def resolve_blob_refs(entry: Any, blobs: Blobs) -> list[str]:
    """Resolve blob references of a loaded entry in place.

    Image blocks in ``message.content`` and ``custom_message`` ``content`` get their base64
    back; every string ``image_url`` anywhere that is a blob ref gets the stored data URL
    back. Missing (or corrupted) blobs leave the reference in place; their hashes are
    returned. Headers and non-objects are left alone.
    """
    missing: list[str] = []
    if not isinstance(entry, dict) or entry.get("type") == "session":
        return missing
    if entry.get("type") == "message":
        message = entry.get("message")
        if isinstance(message, dict):
            _resolve_image_blocks(message.get("content"), blobs, missing)
    elif entry.get("type") == "custom_message":
        _resolve_image_blocks(entry.get("content"), blobs, missing)
    _resolve_image_urls(entry, blobs, missing)
    return missing


def has_blob_ref(entry: Any) -> bool:
    """Whether an entry may hold a blob reference (a cheap test before walking it)."""
    try:
        return BLOB_REF_BYTES in orjson.dumps(entry)
    except TypeError:
        return True


def clean_openai_replay(entry: dict[str, Any]) -> bool:
    """The reference's in-memory cleanup of OpenAI-Responses replay metadata on load."""
    if entry.get("type") != "message":
        return False
    msg = entry.get("message")
    if not isinstance(msg, dict) or msg.get("role") != "assistant":
        return False
    payload = msg.get("providerPayload")
    if not isinstance(payload, dict):
        return False
    ptype = payload.get("type")
    if not (isinstance(ptype, str) and ptype.startswith("openaiResponses")):
        return False
    del msg["providerPayload"]
    content = msg.get("content")
    if isinstance(content, list):
        for block in content:
            if isinstance(block, dict) and block.get("type") == "thinking" and "thinkingSignature" in block:
                del block["thinkingSignature"]
    return True
