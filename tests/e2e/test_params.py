"""Malformed params of EVERY request are answered with -32602 naming the field.

The cases are generated from `METHOD_TO_TYPES`: params that are not an object, each
required field missing, and each field with a value of the wrong type.
"""

from __future__ import annotations

import types as pytypes
import typing
from typing import Any, Literal, get_args, get_origin

import attrs
import pytest
from e2e_helpers import call
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient
from sessiontree_protocol import methods
from sessiontree_protocol.converters import tagged_kinds, wire_name
from sessiontree_protocol.types import METHOD_TO_TYPES

pytestmark = pytest.mark.asyncio(loop_scope="session")


def _core_type(tp: Any) -> Any:
    if get_origin(tp) in (typing.Union, pytypes.UnionType):
        alts = [a for a in get_args(tp) if a is not type(None) and get_origin(a) is not Literal]
        lits = [a for a in get_args(tp) if get_origin(a) is Literal and not hasattr(get_args(a)[0], "name")]
        if len(alts) == 1:
            return alts[0]
        if lits:
            return lits[0]
        return tuple(alts)
    return tp


def _tagged(tp: Any) -> bool:
    return tagged_kinds(tp) is not None


def valid_value(tp: Any) -> Any:
    if _tagged(tp):
        return {"type": "custom", "customType": "x"}
    tp = _core_type(tp)
    if isinstance(tp, tuple):
        return valid_value(tp[0])
    if tp is str:
        return "x"
    if tp is int:
        return 1
    if tp is bool:
        return True
    if get_origin(tp) is Literal:
        return get_args(tp)[0]
    if tp is dict or get_origin(tp) is dict:
        return {"type": "custom", "customType": "x"}
    if tp is list or get_origin(tp) is list:
        return []
    return None


def wrong_values(tp: Any) -> list[Any]:
    if _tagged(tp):  # an object of no kind is refused naming its `type`: see test_append_entries
        return ["x", [1]]
    tp = _core_type(tp)
    if tp is Any:
        return []
    if isinstance(tp, tuple):  # int | str
        return [1.5, [], {}]
    if tp is str:
        return [12345, ["x"], {"a": 1}]
    if tp is int:
        return ["1", 1.5, True]
    if tp is bool:
        return ["yes", 1]
    if get_origin(tp) is Literal:
        return ["definitely-not-allowed", 7]
    if tp is dict or get_origin(tp) is dict:
        return ["x", [1]]
    if tp is list or get_origin(tp) is list:
        return ["x", {"a": 1}]
    return []


def cases() -> list[tuple[str, str, dict[str, Any] | list[Any], str]]:
    out: list[tuple[str, str, dict[str, Any] | list[Any], str]] = []
    for method in methods.REQUESTS:
        params_cls, _ = METHOD_TO_TYPES[method]
        attrs.resolve_types(params_cls)
        fields = attrs.fields(params_cls)
        required = {wire_name(f): valid_value(f.type) for f in fields if f.default is attrs.NOTHING}
        out.append((method, "not-an-object", ["positional"], ""))
        for name in required:
            broken = {k: v for k, v in required.items() if k != name}
            out.append((method, f"missing-{name}", broken, name))
        for f in fields:
            wire = wire_name(f)
            for i, bad in enumerate(wrong_values(f.type)):
                out.append((method, f"wrong-{wire}-{i}", {**required, wire: bad}, wire))
    return out


CASES = cases()


async def test_every_request_has_malformed_cases() -> None:
    covered = {c[0] for c in CASES if c[1].startswith(("missing", "wrong"))}
    assert covered == set(methods.REQUESTS)


@pytest.mark.parametrize(("method", "case", "params", "field"), CASES, ids=[f"{c[0]}:{c[1]}" for c in CASES])
async def test_malformed_params_get_32602(
    client: LanguageClient, method: str, case: str, params: Any, field: str
) -> None:
    with pytest.raises(JsonRpcException) as err:
        await call(client, method, params)
    assert err.value.code == -32602, (method, case, err.value.message)
    assert isinstance(err.value.data, dict)
    assert err.value.data["field"] == field
    assert method in err.value.message


async def test_daemon_still_answers_after_bad_params(client: LanguageClient) -> None:
    res = await call(client, "session/openInMemory", {})
    assert res["session"]
