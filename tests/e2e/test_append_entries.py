"""session/append: every entry kind as written, and every refusal naming its field.

The payload of each kind is typed (`sessiontree_protocol.types.AppendEntry`); what is
stored is the payload as sent (ids, parent and timestamp assigned by the store), and a
missing or mistyped payload field is -32602 with `data.field` the dotted path to it.
"""

from __future__ import annotations

from typing import Any

import pytest
from e2e_helpers import call
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient

pytestmark = pytest.mark.asyncio(loop_scope="session")

STORE_ASSIGNED = ("id", "parentId", "timestamp")

# fmt: off
WRITTEN: list[tuple[dict[str, Any], dict[str, Any]]] = [
    ({'type': 'message', 'message': {'role': 'user', 'content': [{'type': 'text', 'text': 'hi'}], 'timestamp': 1}}, {'type': 'message', 'message': {'role': 'user', 'content': [{'type': 'text', 'text': 'hi'}], 'timestamp': 1}}),
    ({'type': 'message', 'message': {'role': 'assistant', 'content': [], 'extra': {'k': 1}}, 'id': 'zz', 'parentId': 'p', 'timestamp': 't'}, {'type': 'message', 'message': {'role': 'assistant', 'content': [], 'extra': {'k': 1}}}),
    ({'type': 'thinking_level_change', 'thinkingLevel': 'high'}, {'type': 'thinking_level_change', 'thinkingLevel': 'high'}),
    ({'type': 'thinking_level_change'}, {'type': 'thinking_level_change', 'thinkingLevel': None}),
    ({'type': 'thinking_level_change', 'thinkingLevel': None}, {'type': 'thinking_level_change', 'thinkingLevel': None}),
    ({'type': 'model_change', 'model': 'm/x', 'role': 'default'}, {'type': 'model_change', 'model': 'm/x', 'role': 'default'}),
    ({'type': 'model_change', 'model': 'm/x'}, {'type': 'model_change', 'model': 'm/x'}),
    ({'type': 'model_change', 'model': 'm/x', 'role': None}, {'type': 'model_change', 'model': 'm/x'}),
    ({'type': 'compaction', 'summary': 's', 'shortSummary': 'ss', 'firstKeptEntryId': 'abc', 'tokensBefore': 10, 'details': {'a': 1}, 'fromExtension': True, 'preserveData': {'p': 2}}, {'type': 'compaction', 'summary': 's', 'shortSummary': 'ss', 'firstKeptEntryId': 'abc', 'tokensBefore': 10, 'details': {'a': 1}, 'fromExtension': True, 'preserveData': {'p': 2}}),
    ({'type': 'compaction', 'summary': 's', 'firstKeptEntryId': 'abc', 'tokensBefore': 1.5}, {'type': 'compaction', 'summary': 's', 'firstKeptEntryId': 'abc', 'tokensBefore': 1.5}),
    ({'type': 'compaction', 'summary': 's', 'firstKeptEntryId': 'abc', 'tokensBefore': 3, 'fromExtension': 'weird'}, {'type': 'compaction', 'summary': 's', 'firstKeptEntryId': 'abc', 'tokensBefore': 3, 'fromExtension': 'weird'}),
    ({'type': 'custom', 'customType': 'x', 'data': {'d': [1, 2]}}, {'type': 'custom', 'customType': 'x', 'data': {'d': [1, 2]}}),
    ({'type': 'custom', 'customType': 'x'}, {'type': 'custom', 'customType': 'x'}),
    ({'type': 'custom', 'customType': 'x', 'data': None}, {'type': 'custom', 'customType': 'x'}),
    ({'type': 'custom_message', 'customType': 'c', 'content': 'text', 'display': True}, {'type': 'custom_message', 'customType': 'c', 'content': 'text', 'display': True, 'attribution': 'agent'}),
    ({'type': 'custom_message', 'customType': 'c', 'content': [{'type': 'text', 'text': 't'}], 'display': False, 'details': {'x': 1}, 'attribution': 'user'}, {'type': 'custom_message', 'customType': 'c', 'content': [{'type': 'text', 'text': 't'}], 'display': False, 'details': {'x': 1}, 'attribution': 'user'}),
    ({'type': 'custom_message', 'customType': 'c', 'content': [1, 'x'], 'display': False, 'attribution': None}, {'type': 'custom_message', 'customType': 'c', 'content': [1, 'x'], 'display': False, 'attribution': 'agent'}),
    ({'type': 'ttsr_injection', 'injectedRules': ['a', 'b']}, {'type': 'ttsr_injection', 'injectedRules': ['a', 'b']}),
    ({'type': 'ttsr_injection', 'ruleNames': ['r']}, {'type': 'ttsr_injection', 'injectedRules': ['r']}),
    ({'type': 'ttsr_injection', 'injectedRules': []}, {'type': 'ttsr_injection', 'injectedRules': []}),
    ({'type': 'session_init', 'systemPrompt': 'p', 'task': 't', 'tools': ['a'], 'id': 'no', 'parentId': 'no', 'timestamp': 'no'}, {'type': 'session_init', 'systemPrompt': 'p', 'task': 't', 'tools': ['a']}),
    ({'type': 'session_init', 'init': {'systemPrompt': 'p2', 'tools': []}, 'task': 'ignored'}, {'type': 'session_init', 'systemPrompt': 'p2', 'tools': []}),
    ({'type': 'session_init', 'init': 'notadict', 'task': 't'}, {'type': 'session_init', 'init': 'notadict', 'task': 't'}),
    ({'type': 'session_init'}, {'type': 'session_init'}),
    ({'type': 'mode_change', 'mode': 'plan', 'data': {'k': 1}}, {'type': 'mode_change', 'mode': 'plan', 'data': {'k': 1}}),
    ({'type': 'mode_change', 'mode': 'plan'}, {'type': 'mode_change', 'mode': 'plan'}),
    ({'type': 'mode_change', 'mode': 'plan', 'data': None}, {'type': 'mode_change', 'mode': 'plan'}),
]

REFUSED: list[tuple[dict[str, Any], str]] = [
    ({}, 'entry.type'),
    ({'type': None}, 'entry.type'),
    ({'type': 5}, 'entry.type'),
    ({'type': 'nope'}, 'entry.type'),
    ({'type': 'label', 'targetId': 'x'}, 'entry.type'),
    ({'type': 'message'}, 'entry.message'),
    ({'type': 'message', 'message': None}, 'entry.message'),
    ({'type': 'message', 'message': 'hi'}, 'entry.message'),
    ({'type': 'message', 'message': []}, 'entry.message'),
    ({'type': 'message', 'message': {}}, 'entry.message.role'),
    ({'type': 'message', 'message': {'role': 5}}, 'entry.message.role'),
    ({'type': 'message', 'message': {'role': None}}, 'entry.message.role'),
    ({'type': 'thinking_level_change', 'thinkingLevel': 5}, 'entry.thinkingLevel'),
    ({'type': 'model_change'}, 'entry.model'),
    ({'type': 'model_change', 'model': None}, 'entry.model'),
    ({'type': 'model_change', 'model': 1}, 'entry.model'),
    ({'type': 'model_change', 'model': 'm', 'role': 1}, 'entry.role'),
    ({'type': 'compaction', 'firstKeptEntryId': 'a', 'tokensBefore': 1}, 'entry.summary'),
    ({'type': 'compaction', 'summary': 1, 'firstKeptEntryId': 'a', 'tokensBefore': 1}, 'entry.summary'),
    ({'type': 'compaction', 'summary': 's', 'shortSummary': 1, 'firstKeptEntryId': 'a', 'tokensBefore': 1}, 'entry.shortSummary'),
    ({'type': 'compaction', 'summary': 's', 'tokensBefore': 1}, 'entry.firstKeptEntryId'),
    ({'type': 'compaction', 'summary': 's', 'firstKeptEntryId': None, 'tokensBefore': 1}, 'entry.firstKeptEntryId'),
    ({'type': 'compaction', 'summary': 's', 'firstKeptEntryId': 'a'}, 'entry.tokensBefore'),
    ({'type': 'compaction', 'summary': 's', 'firstKeptEntryId': 'a', 'tokensBefore': '1'}, 'entry.tokensBefore'),
    ({'type': 'custom'}, 'entry.customType'),
    ({'type': 'custom', 'customType': 3}, 'entry.customType'),
    ({'type': 'custom_message', 'content': 't', 'display': True}, 'entry.customType'),
    ({'type': 'custom_message', 'customType': 'c', 'display': True}, 'entry.content'),
    ({'type': 'custom_message', 'customType': 'c', 'content': 5, 'display': True}, 'entry.content'),
    ({'type': 'custom_message', 'customType': 'c', 'content': {'a': 1}, 'display': True}, 'entry.content'),
    ({'type': 'custom_message', 'customType': 'c', 'content': 't'}, 'entry.display'),
    ({'type': 'custom_message', 'customType': 'c', 'content': 't', 'display': 'yes'}, 'entry.display'),
    ({'type': 'custom_message', 'customType': 'c', 'content': 't', 'display': None}, 'entry.display'),
    ({'type': 'ttsr_injection'}, 'entry.injectedRules'),
    ({'type': 'ttsr_injection', 'injectedRules': None}, 'entry.injectedRules'),
    ({'type': 'ttsr_injection', 'injectedRules': 'a'}, 'entry.injectedRules'),
    ({'type': 'ttsr_injection', 'injectedRules': ['a', 1]}, 'entry.injectedRules[1]'),
    ({'type': 'ttsr_injection', 'injectedRules': None, 'ruleNames': ['a']}, 'entry.injectedRules'),
    ({'type': 'ttsr_injection', 'ruleNames': 'a'}, 'entry.ruleNames'),
    ({'type': 'mode_change'}, 'entry.mode'),
    ({'type': 'mode_change', 'mode': 1}, 'entry.mode'),
    ({'type': 'mode_change', 'mode': 'm', 'data': 'x'}, 'entry.data'),
    ({'type': 'mode_change', 'mode': 'm', 'data': [1]}, 'entry.data'),
    ({'type': 'compaction', 'summary': 's', 'firstKeptEntryId': 'a', 'tokensBefore': True}, 'entry.tokensBefore'),
]
# fmt: on


async def _session(client: LanguageClient) -> str:
    return (await call(client, "session/openInMemory", {}))["session"]  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("entry", "stored"), WRITTEN, ids=[f"{i}:{e['type']}" for i, (e, _) in enumerate(WRITTEN)]
)
async def test_each_kind_is_stored_as_sent(
    client: LanguageClient, entry: dict[str, Any], stored: dict[str, Any]
) -> None:
    handle = await _session(client)
    res = await call(client, "session/append", {"session": handle, "entry": entry})
    got = (await call(client, "session/entry", {"session": handle, "id": res["id"]}))["entry"]
    assert res["leafId"] == res["id"] == got["id"]
    assert {k: v for k, v in got.items() if k not in STORE_ASSIGNED} == stored
    assert list(got)[:1] == ["type"]


@pytest.mark.parametrize(("entry", "field"), REFUSED, ids=[f"{i}:{f}" for i, (_, f) in enumerate(REFUSED)])
async def test_a_bad_payload_is_refused_naming_the_field(
    client: LanguageClient, entry: dict[str, Any], field: str
) -> None:
    handle = await _session(client)
    with pytest.raises(JsonRpcException) as err:
        await call(client, "session/append", {"session": handle, "entry": entry})
    assert err.value.code == -32602
    assert err.value.data["field"] == field, err.value.message
    assert err.value.message.startswith(f"Invalid params for session/append: {field}")
    assert (await call(client, "session/entries", {"session": handle}))["total"] == 0
