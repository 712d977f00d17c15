"""The first-block shortcut of the skeleton's `has_text` agrees with the dict rule."""

from __future__ import annotations

import msgspec
import orjson
import pytest
from sessiontree.core.index import compute_has_text
from sessiontree.core.index.scan import _raw_has_text

CASES = [
    b'[{"type":"text","text":"hi"}]',
    b'[{"type":"text","text":" "}]',
    b'[{"type":"text","text":""},{"type":"text","text":"x"}]',
    b'[{"type":"text","text":""},{"type":"toolCall","arguments":{"type":"text","text":"x"}}]',
    b'[{"type":"text","text":"\\u0020"}]',
    b'[{"type":"text","text":"\\ta"}]',
    b'[{"type":"text","text":"\\n"}]',
    b'[{"type":"text","text":"\xc2\xa0"}]',
    b'[{"type":"text","text":"\xe3\x80\x80x"}]',
    b'[{"type":"text","text":"\xe3\x80\x80"}]',
    b'[{"type":"text","text":5}]',
    b'[{"type":"text" ,"text":"x"}]',
    b'[{"type":"thinking","thinking":"x"},{"type":"text","text":"y"}]',
    b'"  "',
    b'"a"',
    b"[]",
    b"null",
]


@pytest.mark.parametrize("raw", CASES)
def test_raw_has_text_matches_compute_has_text(raw: bytes) -> None:
    assert _raw_has_text(msgspec.Raw(raw)) == compute_has_text(orjson.loads(raw))
