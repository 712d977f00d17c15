"""The blob store, the persistence transform (reference §8) and blob resolution (§9)."""

from __future__ import annotations

import base64
import copy
import hashlib
import os
from pathlib import Path
from typing import Any

import pytest
from sessiontree.core.errors import BlobError
from sessiontree.core.format.blobs import make_blob_ref, parse_blob_ref
from sessiontree.core.format.jscompat import utf16_length
from sessiontree.core.format.jsonl import dumps_line, parse_session_entries
from sessiontree.core.format.persistence import (
    TRUNCATION_NOTICE,
    prepare_entry_for_persistence,
    resolve_blob_refs,
    serialize_entry_for_persistence,
)
from sessiontree.core.store import MemorySessionStorage
from sessiontree.core.store.blobs import BlobStore
from shared_data import real_v1_session

LIMIT = 500_000
CUT = 499_953


@pytest.fixture
def blobs(tmp_path: Path) -> BlobStore:
    return BlobStore(str(tmp_path / "blobs"))


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def png_b64(n_bytes: int) -> str:
    return base64.b64encode(bytes(range(256)) * (n_bytes // 256) + bytes(n_bytes % 256)).decode()


# ------------------------------------------------------------------ blob store


def test_put_get_round_trip(blobs: BlobStore, tmp_path: Path) -> None:
    data = b"\x00\x01hello\xff"
    put = blobs.put(data)
    assert put.hash == sha(data)
    assert put.path == str(tmp_path / "blobs" / put.hash)
    assert put.ref == "blob:sha256:" + put.hash
    assert Path(put.path).read_bytes() == data
    assert blobs.get(put.hash) == data
    assert blobs.has(put.hash)
    # The same content gives the same blob (an intact one is not rewritten); no temp files.
    inode = os.stat(put.path).st_ino
    again = blobs.put(data)
    assert again == put
    assert os.stat(put.path).st_ino == inode
    assert os.listdir(tmp_path / "blobs") == [put.hash]


def test_put_repairs_a_corrupted_blob(blobs: BlobStore) -> None:
    put = blobs.put(b"payload")
    Path(put.path).write_bytes(b"paylOad")  # same size, wrong content
    with pytest.raises(BlobError):
        blobs.get(put.hash)
    assert blobs.put(b"payload") == put
    assert blobs.get(put.hash) == b"payload"
    Path(put.path).write_bytes(b"short")
    blobs.put(b"payload")
    assert blobs.get(put.hash) == b"payload"


def test_get_missing_and_corrupted(blobs: BlobStore) -> None:
    assert blobs.get("0" * 64) is None
    put = blobs.put(b"original")
    Path(put.path).write_bytes(b"tampered")
    with pytest.raises(BlobError) as info:
        blobs.get(put.hash)
    assert info.value.blob_hash == put.hash


@pytest.mark.parametrize("bad", ["../../etc/passwd", "A" * 64, "0" * 63, "0" * 65, "", "g" * 64])
def test_invalid_hashes_never_become_paths(blobs: BlobStore, bad: str) -> None:
    with pytest.raises(BlobError):
        blobs.get(bad)
    with pytest.raises(BlobError):
        blobs.path_for(bad)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("blob:sha256:" + "a" * 64, "a" * 64),
        ("blob:sha256:" + "0123456789abcdef" * 4, "0123456789abcdef" * 4),
        ("blob:sha256:" + "A" * 64, None),
        ("blob:sha256:" + "a" * 63, None),
        ("blob:sha256:" + "a" * 65, None),
        ("blob:sha256:../" + "a" * 61, None),
        ("blob:sha1:" + "a" * 64, None),
        (" blob:sha256:" + "a" * 64, None),
        ("blob:sha256:" + "a" * 63 + "\n", None),
        (None, None),
        (42, None),
    ],
)
def test_parse_blob_ref(value: Any, expected: str | None) -> None:
    assert parse_blob_ref(value) == expected


def test_blob_store_on_memory_storage() -> None:
    storage = MemorySessionStorage()
    store = BlobStore("/agent/blobs", storage)
    put = store.put(b"abc")
    assert storage.read_bytes(put.path) == b"abc"
    assert store.get(put.hash) == b"abc"
    assert store.get("1" * 64) is None


# ------------------------------------------------------------------ transform: identity and stripping


def test_unchanged_entry_is_returned_as_is(blobs: BlobStore) -> None:
    entry = {
        "type": "message",
        "id": "a",
        "message": {"role": "user", "content": [{"type": "text", "text": "hi"}], "lineCount": 99},
    }
    assert prepare_entry_for_persistence(entry, blobs) is entry
    assert prepare_entry_for_persistence("scalar", blobs) == "scalar"


def test_partial_json_and_jsonl_events_are_removed_at_any_depth(blobs: BlobStore) -> None:
    entry = {
        "type": "message",
        "message": {
            "content": [{"type": "toolCall", "partialJson": "{", "arguments": {}}],
            "jsonlEvents": [1],
            "deep": {"list": [{"partialJson": 1, "keep": True}]},
        },
        "other": {"untouched": [1, 2]},
    }
    original = copy.deepcopy(entry)
    out = prepare_entry_for_persistence(entry, blobs)
    assert out == {
        "type": "message",
        "message": {
            "content": [{"type": "toolCall", "arguments": {}}],
            "deep": {"list": [{"keep": True}]},
        },
        "other": {"untouched": [1, 2]},
    }
    assert entry == original  # never mutated
    assert out["other"] is entry["other"]  # unchanged parts are shared


def test_line_count_is_recomputed_on_any_change() -> None:
    entry = {"content": "short\nbody", "lineCount": 99, "partialJson": "x"}
    assert prepare_entry_for_persistence(entry, None) == {"content": "short\nbody", "lineCount": 2}
    # No change: lineCount stays as it was.
    clean = {"content": "short\nbody", "lineCount": 99}
    assert prepare_entry_for_persistence(clean, None) is clean
    # Only numeric lineCount and string content qualify.
    assert prepare_entry_for_persistence({"content": "a\nb", "lineCount": True, "jsonlEvents": 1}, None) == {
        "content": "a\nb",
        "lineCount": True,
    }
    assert prepare_entry_for_persistence({"content": ["a"], "lineCount": 5, "jsonlEvents": 1}, None) == {
        "content": ["a"],
        "lineCount": 5,
    }


# ------------------------------------------------------------------ truncation


def test_truncation_boundaries() -> None:
    exact = "x" * LIMIT
    entry = {"text": exact}
    assert prepare_entry_for_persistence(entry, None) is entry
    over = "y" * (LIMIT + 1)
    out = prepare_entry_for_persistence({"text": over}, None)["text"]
    assert out == "y" * CUT + TRUNCATION_NOTICE
    assert len(out) == LIMIT
    assert len(TRUNCATION_NOTICE) == 47


def test_truncation_counts_utf16_units_and_drops_a_split_high_surrogate() -> None:
    # 250,000 emoji are 500,000 UTF-16 units: untouched. One more is over the limit.
    fits = "😀" * 250_000
    assert utf16_length(fits) == LIMIT
    entry = {"t": fits}
    assert prepare_entry_for_persistence(entry, None) is entry
    over = "😀" * 250_001
    out = prepare_entry_for_persistence({"t": over}, None)["t"]
    # 499,953 is odd: the last unit would be a high surrogate, so it is dropped.
    assert out == "😀" * (CUT // 2) + TRUNCATION_NOTICE
    assert utf16_length(out) == CUT - 1 + len(TRUNCATION_NOTICE)
    # With an even prefix the cut falls between pairs and keeps 499,953 units.
    shifted = "a" + "😀" * 250_001
    out2 = prepare_entry_for_persistence({"t": shifted}, None)["t"]
    assert out2 == "a" + "😀" * ((CUT - 1) // 2) + TRUNCATION_NOTICE
    assert utf16_length(out2) == LIMIT


def test_signature_keys_are_cleared_not_truncated() -> None:
    big = "s" * (LIMIT + 1)
    entry = {
        "content": [
            {"type": "thinking", "thinking": "t", "thinkingSignature": big},
            {"type": "text", "text": "x", "textSignature": big, "thoughtSignature": "s" * LIMIT},
        ]
    }
    out = prepare_entry_for_persistence(entry, None)
    assert out["content"][0]["thinkingSignature"] == ""
    assert out["content"][1]["textSignature"] == ""
    assert out["content"][1]["thoughtSignature"] == "s" * LIMIT


# ------------------------------------------------------------------ image externalization


def test_image_blocks_in_content_are_externalized_by_decoded_bytes(blobs: BlobStore) -> None:
    data = png_b64(2000)
    raw = base64.b64decode(data)
    entry = {
        "type": "message",
        "message": {
            "role": "user",
            "content": [
                {"type": "image", "data": data, "mimeType": "image/png"},
                {"type": "image", "data": "a" * 1023, "mimeType": "image/png"},
                {"type": "text", "text": "hello"},
            ],
        },
    }
    original = copy.deepcopy(entry)
    out = prepare_entry_for_persistence(entry, blobs)
    block = out["message"]["content"][0]
    assert list(block) == ["type", "data", "mimeType"]
    assert block["data"] == make_blob_ref(sha(raw))
    assert blobs.get(sha(raw)) == raw
    assert out["message"]["content"][1]["data"] == "a" * 1023  # under 1024 chars: inline
    assert out["message"]["content"][2] is entry["message"]["content"][2]
    assert entry == original


def test_image_threshold_is_1024_chars(blobs: BlobStore) -> None:
    at = "QUJD" * 256  # 1024 chars
    out = prepare_entry_for_persistence({"content": [{"type": "image", "data": at}]}, blobs)
    assert out["content"][0]["data"] == make_blob_ref(sha(base64.b64decode(at)))


def test_only_arrays_under_content_qualify(blobs: BlobStore, tmp_path: Path) -> None:
    data = png_b64(2000)
    entry = {
        "type": "message",
        "message": {"role": "toolResult", "content": [{"type": "text", "text": "x"}]},
        "details": {"images": [{"type": "image", "data": data}]},
    }
    assert prepare_entry_for_persistence(entry, blobs) is entry
    assert not (tmp_path / "blobs").exists()
    custom = {"type": "custom_message", "content": [{"type": "image", "data": data}]}
    assert prepare_entry_for_persistence(custom, blobs)["content"][0]["data"].startswith("blob:sha256:")
    ref = make_blob_ref("0" * 64)
    already = {"content": [{"type": "image", "data": ref + ""}]}
    assert prepare_entry_for_persistence(already, blobs) is already


def test_image_url_data_urls_are_externalized_at_any_size(blobs: BlobStore) -> None:
    url = "data:image/png;base64,AAAA"
    entry = {"a": {"image_url": url}, "b": {"image_url": "https://example.com/x.png"}, "c": {"url": url}}
    out = prepare_entry_for_persistence(entry, blobs)
    assert out["a"]["image_url"] == make_blob_ref(sha(url.encode()))
    assert blobs.get(sha(url.encode())) == url.encode()
    assert out["b"] is entry["b"]
    assert out["c"] is entry["c"]
    not_base64 = {"image_url": "data:image/png,raw"}
    assert prepare_entry_for_persistence(not_base64, blobs) is not_base64


def test_without_a_blob_store_nothing_is_externalized() -> None:
    data = png_b64(2000)
    entry = {"content": [{"type": "image", "data": data}], "image_url": "data:image/png;base64,AA"}
    assert prepare_entry_for_persistence(entry, None) is entry


# ------------------------------------------------------------------ resolution on load


def test_resolve_restores_what_the_transform_externalized(blobs: BlobStore) -> None:
    data = png_b64(3000)
    url = "data:image/jpeg;base64," + png_b64(10)
    entry = {
        "type": "message",
        "id": "x",
        "message": {
            "role": "toolResult",
            "content": [{"type": "image", "data": data, "mimeType": "image/png"}],
            "extra": [{"image_url": url}],
        },
    }
    stored = prepare_entry_for_persistence(entry, blobs)
    assert stored != entry
    loaded = copy.deepcopy(stored)
    assert resolve_blob_refs(loaded, blobs) == []
    assert loaded == entry
    custom = prepare_entry_for_persistence(
        {"type": "custom_message", "content": [{"type": "image", "data": data}]}, blobs
    )
    assert resolve_blob_refs(custom, blobs) == []
    assert custom["content"][0]["data"] == data


def test_missing_and_corrupted_blobs_leave_the_ref(blobs: BlobStore) -> None:
    missing = "1" * 64
    put = blobs.put(b"good")
    Path(put.path).write_bytes(b"bad")
    entry = {
        "type": "message",
        "message": {
            "content": [
                {"type": "image", "data": make_blob_ref(missing)},
                {"type": "image", "data": put.ref},
            ]
        },
        "x": {"image_url": make_blob_ref(missing)},
    }
    assert resolve_blob_refs(entry, blobs) == [missing, put.hash, missing]
    assert entry["message"]["content"][0]["data"] == make_blob_ref(missing)
    assert entry["message"]["content"][1]["data"] == put.ref
    assert entry["x"]["image_url"] == make_blob_ref(missing)


def test_resolution_scope(blobs: BlobStore) -> None:
    put = blobs.put(b"img")
    header = {"type": "session", "id": "s", "content": [{"type": "image", "data": put.ref}]}
    assert resolve_blob_refs(header, blobs) == [] and header["content"][0]["data"] == put.ref
    # Image blocks are only resolved in message.content and custom_message content.
    other = {"type": "custom", "data": {"content": [{"type": "image", "data": put.ref}]}}
    resolve_blob_refs(other, blobs)
    assert other["data"]["content"][0]["data"] == put.ref
    assert resolve_blob_refs(["not", "an", "entry"], blobs) == []


# ------------------------------------------------------------------ one-pass serialization


@pytest.mark.parametrize(
    "entry",
    [
        {"type": "message", "id": "a", "message": {"role": "user", "content": "hi", "cost": 0.5}},
        {"type": "x", "n": 1.0, "e": 1e-7, "big": 1e21},
        {"type": "x", "s": "lone \ud800 surrogate"},
        {"type": "x", "partialJson": "{", "content": "a\nb", "lineCount": 7},
        {"type": "x", "t": "z" * (LIMIT + 5)},
        {"content": [{"type": "image", "data": "QUJD" * 300}]},
        {"image_url": "data:image/gif;base64,R0lG"},
    ],
)
def test_serialize_entry_equals_prepare_then_dumps(entry: dict[str, Any], tmp_path: Path) -> None:
    a = BlobStore(str(tmp_path / "a"))
    b = BlobStore(str(tmp_path / "b"))
    assert serialize_entry_for_persistence(entry, a) == dumps_line(prepare_entry_for_persistence(entry, b))
    written_a = sorted(os.listdir(tmp_path / "a")) if (tmp_path / "a").exists() else []
    written_b = sorted(os.listdir(tmp_path / "b")) if (tmp_path / "b").exists() else []
    assert written_a == written_b


def test_serialize_real_session_matches_the_two_step_path(blobs: BlobStore) -> None:
    data = real_v1_session().read_bytes()
    values = parse_session_entries(data)
    one_pass = [serialize_entry_for_persistence(v, blobs) for v in values]
    assert one_pass == [dumps_line(prepare_entry_for_persistence(v, blobs)) for v in values]
    # The real file carries partialJson (streamed tool-call arguments): those lines shrink,
    # every other line is written back byte for byte.
    original = data.split(b"\n")[:-1]
    changed = [i for i, (a, b) in enumerate(zip(one_pass, original, strict=True)) if a != b]
    assert changed and all(
        b"partialJson" in original[i] and b"partialJson" not in one_pass[i] for i in changed
    )
