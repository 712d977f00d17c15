"""Conformance of the persistence transform (reference section 8) and navigateTree (16)."""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path
from typing import Any

import pytest
from sessiontree.core import BlobStore, SessionManager
from sessiontree.core.format.persistence import prepare_entry_for_persistence
from sessiontree.core.tree.navigation import navigate_tree

NOTICE = "\n\n[Session persistence truncated large content]"


def _u16(s: str) -> int:
    return len(s.encode("utf-16-le")) // 2


def _entry(**message: Any) -> dict[str, Any]:
    return {
        "type": "message",
        "id": "e",
        "parentId": None,
        "timestamp": "2026-01-01T00:00:00.000Z",
        "message": message,
    }


@pytest.fixture
def blobs(tmp_path: Path) -> BlobStore:
    return BlobStore(str(tmp_path / "blobs"))


def test_notice_is_47_units() -> None:
    assert len(NOTICE) == 47


def test_exactly_500000_is_untouched(blobs: BlobStore) -> None:
    e = _entry(role="user", content="a" * 500_000)
    out = prepare_entry_for_persistence(e, blobs)
    assert out["message"]["content"] == "a" * 500_000


def test_500001_is_cut_to_499953_plus_notice(blobs: BlobStore) -> None:
    e = _entry(role="user", content="a" * 500_001)
    out = prepare_entry_for_persistence(e, blobs)
    assert out["message"]["content"] == "a" * 499_953 + NOTICE
    assert e["message"]["content"] == "a" * 500_001  # the in-memory entry is not changed


def test_emoji_counts_two_units(blobs: BlobStore) -> None:
    exact = "😀" * 250_000
    assert (
        prepare_entry_for_persistence(_entry(role="user", content=exact), blobs)["message"]["content"]
        == exact
    )
    over = exact + "a"
    out = prepare_entry_for_persistence(_entry(role="user", content=over), blobs)["message"]["content"]
    # 499,953 units end on a high surrogate (odd count), which is dropped too
    assert out == "😀" * 249_976 + NOTICE
    assert _u16(out) == 499_999


def test_signatures_are_cleared_not_truncated(blobs: BlobStore) -> None:
    big = "s" * 500_001
    blocks = [
        {"type": "thinking", "thinking": "t", "thinkingSignature": big},
        {"type": "text", "text": "x", "textSignature": big},
        {"type": "toolCall", "id": "c", "name": "n", "arguments": {}, "thoughtSignature": big},
        {"type": "thinking", "thinking": "t", "thinkingSignature": "k" * 500_000},
    ]
    out = prepare_entry_for_persistence(_entry(role="assistant", content=blocks), blobs)["message"]["content"]
    assert out[0]["thinkingSignature"] == ""
    assert out[1]["textSignature"] == ""
    assert out[2]["thoughtSignature"] == ""
    assert out[3]["thinkingSignature"] == "k" * 500_000


def test_partial_json_removal_recomputes_line_count(blobs: BlobStore) -> None:
    e = _entry(
        role="toolResult",
        content=[],
        details={"content": "short\nbody", "lineCount": 99, "partialJson": "{", "x": {"jsonlEvents": []}},
    )
    out = prepare_entry_for_persistence(e, blobs)
    assert out["message"]["details"] == {"content": "short\nbody", "lineCount": 2, "x": {}}


def test_unchanged_object_keeps_line_count(blobs: BlobStore) -> None:
    e = _entry(role="toolResult", content=[], details={"content": "a\nb\nc", "lineCount": 99})
    assert prepare_entry_for_persistence(e, blobs)["message"]["details"]["lineCount"] == 99


def test_images_only_under_content_and_at_least_1024(blobs: BlobStore) -> None:
    raw = bytes(range(256)) * 4
    big = base64.b64encode(raw).decode()
    assert len(big) >= 1024
    small = base64.b64encode(b"tiny").decode()
    img = {"type": "image", "data": big, "mimeType": "image/png"}
    e = _entry(
        role="toolResult",
        content=[dict(img), {"type": "image", "data": small, "mimeType": "image/png"}],
        details={"images": [dict(img)]},
    )
    out = prepare_entry_for_persistence(e, blobs)
    digest = hashlib.sha256(raw).hexdigest()
    assert out["message"]["content"][0] == {
        "type": "image",
        "data": f"blob:sha256:{digest}",
        "mimeType": "image/png",
    }
    assert list(out["message"]["content"][0]) == ["type", "data", "mimeType"]
    assert out["message"]["content"][1]["data"] == small
    assert out["message"]["details"]["images"][0]["data"] == big
    assert blobs.get(digest) == raw


def test_image_url_data_url_externalized_at_any_size(blobs: BlobStore) -> None:
    url = "data:image/png;base64,AAAA"
    e = _entry(
        role="user", content=[{"type": "x", "image_url": url}, {"type": "x", "image_url": "https://e/x.png"}]
    )
    out = prepare_entry_for_persistence(e, blobs)
    digest = hashlib.sha256(url.encode()).hexdigest()
    assert out["message"]["content"][0]["image_url"] == f"blob:sha256:{digest}"
    assert out["message"]["content"][1]["image_url"] == "https://e/x.png"
    assert blobs.get(digest) == url.encode()


# --- navigateTree ---------------------------------------------------------------------------


def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text, "timestamp": 1}


def _asst(text: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [{"type": "text", "text": text}],
        "provider": "p",
        "model": "m",
        "stopReason": "stop",
        "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "cost": {"total": 0}},
        "timestamp": 2,
    }


def _chain() -> tuple[SessionManager, dict[str, str]]:
    m = SessionManager.in_memory()
    ids = [
        m.append_message(_user("one")),
        m.append_message(_asst("r1")),
        m.append_message(
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "tw"},
                    {"type": "image", "data": "A"},
                    {"type": "text", "text": "o"},
                ],
                "timestamp": 3,
            }
        ),
        m.append_message(_asst("r2")),
    ]
    return m, dict(zip(("u1", "a1", "u2", "a2"), ids, strict=True))


def test_user_target_moves_to_parent_with_editor_text() -> None:
    m, ids = _chain()
    r = navigate_tree(m, ids["u2"])
    assert r.cancelled is False
    assert m.get_leaf_id() == ids["a1"] and r.new_leaf_id == ids["a1"] and r.old_leaf_id == ids["a2"]
    assert r.editor_text == "two"


def test_root_user_target_gives_null_leaf() -> None:
    m, ids = _chain()
    r = navigate_tree(m, ids["u1"])
    assert m.get_leaf_id() is None and r.editor_text == "one"
    assert m.build_session_context().messages == []


def test_non_user_target_becomes_leaf() -> None:
    m, ids = _chain()
    r = navigate_tree(m, ids["a1"])
    assert m.get_leaf_id() == ids["a1"] and r.editor_text is None


def test_custom_message_target_moves_to_parent() -> None:
    m, ids = _chain()
    cm = m.append_custom_message_entry("note", "hello", True)
    m.branch(ids["a2"])
    r = navigate_tree(m, cm)
    assert m.get_leaf_id() == ids["a2"] and r.editor_text == "hello"


def test_current_leaf_is_noop_but_its_parent_user_message_is_not() -> None:
    m, ids = _chain()
    n = len(m.get_entries())
    r = navigate_tree(m, ids["a2"], summarize=True, summary="ignored")
    assert r.cancelled is False and m.get_leaf_id() == ids["a2"] and len(m.get_entries()) == n
    m.branch(ids["u2"])
    r = navigate_tree(m, ids["u2"])
    assert m.get_leaf_id() == ids["u2"] and r.editor_text is None
    m.branch(ids["a2"])
    navigate_tree(m, ids["u2"])
    assert m.get_leaf_id() == ids["a1"]


def test_summary_hangs_at_new_position() -> None:
    m, ids = _chain()
    r = navigate_tree(m, ids["u2"], summarize=True, summary="went")
    s = r.summary_entry
    assert s is not None and s["type"] == "branch_summary"
    assert s["parentId"] == ids["a1"] and s["fromId"] == ids["a1"] and s["summary"] == "went"
    assert m.get_leaf_id() == s["id"]


def test_root_summary_has_null_parent_and_from_root() -> None:
    m, ids = _chain()
    r = navigate_tree(m, ids["u1"], summarize=True, summary="all")
    s = r.summary_entry
    assert s is not None and s["parentId"] is None and s["fromId"] == "root"
    assert m.get_leaf_id() == s["id"]


def test_unknown_target_raises() -> None:
    m, _ids = _chain()
    with pytest.raises(Exception, match="Entry nope not found"):
        navigate_tree(m, "nope")
