"""The wire converter: camelCase, omitted absent fields, meaningful nulls, strict types."""

from __future__ import annotations

import typing

import attrs
import pytest
from sessiontree_protocol import converters as c
from sessiontree_protocol import types as t


def _row(**kw: object) -> t.Row:
    base: dict[str, object] = dict(
        id="a",
        parent_id=None,
        type="message",
        depth=0,
        prefix="",
        on_active_path=True,
        is_leaf=True,
        text="user: hi",
        timestamp="2026-01-01T00:00:00.000Z",
    )
    base.update(kw)
    return t.Row(**base)  # type: ignore[arg-type]


def test_unstructure_camel_case_and_meaningful_nulls() -> None:
    wire = c.unstructure(t.ViewResult(rows=[_row()], total=1, selected_index=0, leaf_id=None))
    assert wire == {
        "rows": [
            {
                "id": "a",
                "parentId": None,
                "type": "message",
                "depth": 0,
                "prefix": "",
                "onActivePath": True,
                "isLeaf": True,
                "text": "user: hi",
                "timestamp": "2026-01-01T00:00:00.000Z",
            }
        ],
        "total": 1,
        "selectedIndex": 0,
        "leafId": None,
    }


def test_absent_optionals_are_omitted_not_null() -> None:
    wire = c.unstructure(t.OpenResult(session="s1", header={"type": "session"}, leaf_id="x", entry_count=2))
    assert wire == {"session": "s1", "header": {"type": "session"}, "leafId": "x", "entryCount": 2}
    assert "path" not in wire and "recovered" not in wire
    wire = c.unstructure(t.NavigateResult(cancelled=False, new_leaf_id=None, old_leaf_id="b"))
    assert wire == {"cancelled": False, "newLeafId": None, "oldLeafId": "b"}


@pytest.mark.parametrize("cls", sorted({p for p, _ in t.METHOD_TO_TYPES.values()}, key=lambda k: k.__name__))
def test_missing_required_fields_are_named(cls: type) -> None:
    required = [c.camel(f.name) for f in attrs.fields(cls) if f.default is attrs.NOTHING]
    for name in required:
        raw = {k: _sample(cls, k) for k in required if k != name}
        with pytest.raises(c.ParamsError) as err:
            c.structure(raw, cls)
        assert err.value.field == name


def _sample(cls: type, wire: str) -> object:
    for f in attrs.fields(cls):
        if c.camel(f.name) == wire:
            tp, _ = c._strip_optional(f.type)
            if typing.get_origin(tp) is typing.Literal:
                return typing.get_args(tp)[0]
            return {str: "x", int: 1, bool: True}.get(
                tp, {"type": "message"} if tp is dict or "dict" in str(tp) else "x"
            )
    raise AssertionError(wire)


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ({"session": 1}, "session"),
        ({"session": "s", "offset": "3"}, "offset"),
        ({"session": "s", "offset": True}, "offset"),
        ({"session": "s", "limit": 2.5}, "limit"),
        ({"session": "s", "filter": "tools"}, "filter"),
        ({"session": None}, "session"),
    ],
)
def test_wrong_types_are_refused_with_the_field(raw: dict, field: str) -> None:
    with pytest.raises(c.ParamsError) as err:
        c.structure(raw, t.ViewParams)
    assert err.value.field == field


def test_nested_paths_in_errors() -> None:
    bad = {
        "roots": [
            {"id": "a", "parentId": None, "type": "m", "timestamp": "t", "text": "x", "children": [{"id": 3}]}
        ],
        "leafId": None,
    }
    with pytest.raises(c.ParamsError) as err:
        c.structure(bad, t.TreeResult)
    assert err.value.field == "roots[0].children[0].id"


def test_absent_differs_from_null_where_it_matters() -> None:
    assert (
        c.structure(
            {"session": "s", "entry": {"type": "custom", "customType": "x"}}, t.AppendParams
        ).expected_leaf_id
        is t.ABSENT
    )
    assert (
        c.structure(
            {"session": "s", "entry": {"type": "custom", "customType": "x"}, "expectedLeafId": None},
            t.AppendParams,
        ).expected_leaf_id
        is None
    )
    assert c.structure({"session": "s"}, t.ContextParams).leaf_id is t.ABSENT
    assert c.unstructure(t.ContextParams(session="s")) == {"session": "s", "llm": False, "offset": 0}


def test_round_trip_of_every_type_with_defaults() -> None:
    res = t.TreeResult(
        roots=[
            t.TreeNode(
                id="a",
                parent_id=None,
                type="message",
                timestamp="t",
                text="x",
                children=[
                    t.TreeNode(
                        id="b", parent_id="a", type="message", timestamp="t", text="y", role="user", label="L"
                    )
                ],
            )
        ],
        leaf_id="b",
    )
    assert c.structure(c.unstructure(res), t.TreeResult) == res


def test_unknown_keys_are_ignored_and_params_must_be_an_object() -> None:
    assert c.structure({"session": "s", "future": 1}, t.SessionParams) == t.SessionParams(session="s")
    with pytest.raises(c.ParamsError):
        c.structure(["s"], t.SessionParams)


def test_wire_name_overrides_follow_the_reference_spelling() -> None:
    ctx = t.ContextResult(
        thinking_level="off",
        models={},
        mode="none",
        selected_mcp_tool_names=["a"],
        has_persisted_mcp_tool_selection=True,
    )
    wire = c.unstructure(ctx)
    assert wire["selectedMCPToolNames"] == ["a"] and wire["hasPersistedMCPToolSelection"] is True
    assert c.structure(wire, t.ContextResult) == ctx
