"""The entry kinds of `session/append`: a tagged union, payloads kept as sent, older names."""

from __future__ import annotations

from typing import Any, get_args

import attrs
import pytest
from sessiontree_protocol import converters as c
from sessiontree_protocol import types as t


def _entry(value: Any) -> Any:
    return c.structure({"session": "s", "entry": value}, t.AppendParams).entry


def test_the_type_picks_the_kind() -> None:
    kinds = c.tagged_kinds(t.AppendEntry)
    assert kinds is not None
    assert list(kinds) == [
        "message",
        "thinking_level_change",
        "model_change",
        "compaction",
        "custom",
        "custom_message",
        "ttsr_injection",
        "session_init",
        "mode_change",
    ]
    for tag, cls in kinds.items():
        assert cls().type == tag if not [f for f in attrs.fields(cls) if f.default is attrs.NOTHING] else True
    assert isinstance(_entry({"type": "model_change", "model": "m"}), t.ModelChangeEntry)
    assert _entry({"type": "custom", "customType": "x", "data": [1]}) == t.CustomEntry(
        custom_type="x", data=[1]
    )


@pytest.mark.parametrize(
    ("value", "field", "reason"),
    [
        ({}, "entry.type", "missing required field"),
        ({"type": "label"}, "entry.type", "expected one of 'message', "),
        ({"type": 5}, "entry.type", "got 5"),
        ("custom", "entry", "expected object, got string"),
        ({"type": "custom"}, "entry.customType", "missing required field"),
    ],
)
def test_an_entry_of_no_kind_is_refused_naming_the_tag(value: Any, field: str, reason: str) -> None:
    with pytest.raises(c.ParamsError) as err:
        _entry(value)
    assert err.value.field == field
    assert reason in err.value.reason


def test_a_message_is_kept_whole_and_in_order() -> None:
    message = {
        "timestamp": 1,
        "role": "user",
        "content": [{"type": "text", "text": "x"}],
        "extra": {"k": None},
    }
    entry = _entry({"type": "message", "message": message, "id": "ignored"})
    assert entry.message.role == "user"
    assert entry.message.as_sent == message
    assert list(entry.message.as_sent) == list(message)
    assert entry.message.as_sent is not message


def test_session_init_keeps_the_other_fields_but_the_stores() -> None:
    entry = _entry(
        {"type": "session_init", "id": "x", "parentId": "y", "timestamp": "z", "task": "t", "tools": []}
    )
    assert entry.init is None
    assert entry.as_sent == {"task": "t", "tools": []}


def test_an_older_name_is_read_when_the_wire_name_is_absent() -> None:
    assert _entry({"type": "ttsr_injection", "ruleNames": ["a"]}).injected_rules == ["a"]
    assert _entry({"type": "ttsr_injection", "injectedRules": ["b"], "ruleNames": ["a"]}).injected_rules == [
        "b"
    ]
    with pytest.raises(c.ParamsError) as err:
        _entry({"type": "ttsr_injection", "ruleNames": ["a", 2]})
    assert err.value.field == "entry.ruleNames[1]"


def test_entries_round_trip_through_the_converter() -> None:
    for value in (
        {"type": "message", "message": {"role": "user", "content": "hi"}},
        {"type": "custom_message", "customType": "c", "content": [{"type": "text"}], "display": True},
        {"type": "session_init", "task": "t"},
        {"type": "compaction", "summary": "s", "firstKeptEntryId": "a", "tokensBefore": 3},
    ):
        params = c.structure({"session": "s", "entry": value}, t.AppendParams)
        assert c.unstructure(params) == {"session": "s", "entry": value}


def test_every_kind_is_in_the_schema_with_its_tag_required() -> None:
    from sessiontree_protocol.schema import build_schema

    defs = build_schema()["definitions"]
    entry = defs["AppendParams"]["properties"]["entry"]
    assert [a["$ref"].rsplit("/", 1)[1] for a in entry["anyOf"]] == [
        k.__name__ for k in get_args(t.AppendEntry)
    ]
    for cls in get_args(t.AppendEntry):
        assert "type" in defs[cls.__name__]["required"]
    assert defs["AppendMessage"]["additionalProperties"] is True
    assert "asSent" not in defs["SessionInitEntry"]["properties"]
