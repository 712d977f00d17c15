"""build_session_context: reference-behavior.md section 13 with DIVERGENCES 3 and 5."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from sessiontree.core.tree.context import (
    LAST_ENTRY,
    SessionContext,
    build_session_context,
    path_to_leaf,
)

TS = "2026-01-01T00:00:00.000Z"
TS_MS = 1767225600000


def ent(eid: str, parent: str | None, etype: str = "message", ts: str = TS, **kw: Any) -> dict[str, Any]:
    d: dict[str, Any] = {"type": etype, "id": eid, "parentId": parent, "timestamp": ts}
    d.update(kw)
    return d


def user(eid: str, parent: str | None, text: str) -> dict[str, Any]:
    return ent(eid, parent, message={"role": "user", "content": text, "timestamp": 1})


def assistant(
    eid: str, parent: str | None, text: str, provider: str = "p", model: str = "m"
) -> dict[str, Any]:
    return ent(
        eid,
        parent,
        message={
            "role": "assistant",
            "content": [{"type": "text", "text": text}],
            "provider": provider,
            "model": model,
            "stopReason": "stop",
            "timestamp": 2,
        },
    )


def texts(ctx: SessionContext) -> list[str]:
    out = []
    for m in ctx.messages:
        role = m["role"]
        if role in ("user", "assistant"):
            c = m["content"]
            out.append(f"{role}:{c if isinstance(c, str) else c[0]['text']}")
        elif role == "compactionSummary":
            out.append(f"compaction:{m['summary']}")
        elif role == "branchSummary":
            out.append(f"branch:{m['summary']}")
        else:
            out.append(role)
    return out


def test_leaf_null_gives_the_empty_context() -> None:
    ctx = build_session_context([user("a", None, "x")], None)
    assert ctx.to_dict() == {
        "messages": [],
        "thinkingLevel": "off",
        "models": {},
        "injectedTtsrRules": [],
        "selectedMCPToolNames": [],
        "hasPersistedMCPToolSelection": False,
        "mode": "none",
    }


def test_no_entries_and_unknown_leaf() -> None:
    assert build_session_context([]).messages == []
    entries = [user("a", None, "one"), assistant("b", "a", "two"), user("c", None, "other root")]
    # an unknown leaf id falls back to the last entry, like the default
    assert texts(build_session_context(entries, "nope")) == ["user:other root"]
    assert texts(build_session_context(entries, LAST_ENTRY)) == ["user:other root"]
    assert texts(build_session_context(entries, "b")) == ["user:one", "assistant:two"]


def test_message_objects_are_returned_as_is() -> None:
    entries = [user("a", None, "one")]
    ctx = build_session_context(entries, "a")
    assert ctx.messages[0] is entries[0]["message"]


def test_state_last_value_wins_and_defaults() -> None:
    entries = [
        user("a", None, "x"),
        ent("t1", "a", "thinking_level_change", thinkingLevel="high"),
        ent("t2", "t1", "thinking_level_change", thinkingLevel=None),
        ent("s1", "t2", "service_tier_change", serviceTier="priority"),
        ent("c1", "s1", "context_change", contextName="ctx", tenant="ten", namespace="ns"),
        ent("m1", "c1", "mode_change", mode="plan", data={"k": 1}),
        ent("m2", "m1", "mode_change", mode="build"),
        ent("x1", "m2", "mcp_tool_selection", selectedToolNames=["a", "b"]),
        ent("r1", "x1", "ttsr_injection", injectedRules=["r1", "r2"]),
        ent("r2", "r1", "ttsr_injection", injectedRules=["r2", "r3", "r1"]),
    ]
    ctx = build_session_context(entries)
    assert ctx.thinking_level == "off"
    assert ctx.service_tier == "priority"
    assert (ctx.active_context_name, ctx.active_context_tenant) == ("ctx", "ten")
    assert ctx.mode == "build" and ctx.mode_data is None
    assert ctx.selected_mcp_tool_names == ["a", "b"]
    assert ctx.selected_mcp_tool_names is not entries[7]["selectedToolNames"]
    assert ctx.has_persisted_mcp_tool_selection is True
    assert ctx.injected_ttsr_rules == ["r1", "r2", "r3"]
    d = ctx.to_dict()
    assert list(d) == [
        "messages",
        "thinkingLevel",
        "serviceTier",
        "models",
        "activeContextName",
        "activeContextTenant",
        "injectedTtsrRules",
        "selectedMCPToolNames",
        "hasPersistedMCPToolSelection",
        "mode",
    ]
    # mode data kept from the last mode_change that has it; service tier null resets
    ctx2 = build_session_context(
        [*entries[:6], ent("s2", "m1", "service_tier_change", serviceTier=None)], "s2"
    )
    assert ctx2.mode == "plan" and ctx2.mode_data == {"k": 1} and ctx2.service_tier is None
    assert "serviceTier" not in ctx2.to_dict() and ctx2.to_dict()["modeData"] == {"k": 1}


def test_models_assistant_is_a_fallback_divergence_5() -> None:
    base = [user("a", None, "x"), assistant("b", "a", "y", "anthropic", "claude")]
    assert build_session_context(base).models == {"default": "anthropic/claude"}
    # an explicit default model_change anywhere on the path wins over assistants
    entries = [
        *base,
        ent("mc", "b", "model_change", model="openai/gpt-4o"),
        assistant("c", "mc", "z", "anthropic", "claude"),
    ]
    assert build_session_context(entries).models == {"default": "openai/gpt-4o"}
    # a model_change before the assistant: still the explicit one
    entries = [
        user("a", None, "x"),
        ent("mc", "a", "model_change", model="openai/gpt-4o", role="default"),
        assistant("b", "mc", "y", "anthropic", "claude"),
    ]
    assert build_session_context(entries).models == {"default": "openai/gpt-4o"}
    # other roles do not block the fallback; an empty model is ignored
    entries = [
        user("a", None, "x"),
        ent("mc", "a", "model_change", model="openai/o3", role="smol"),
        ent("me", "mc", "model_change", model=""),
        assistant("b", "me", "y", "anthropic", "claude"),
    ]
    assert build_session_context(entries).models == {"smol": "openai/o3", "default": "anthropic/claude"}


def test_compaction_kept_range_and_after() -> None:
    entries = [
        user("1", None, "u1"),
        assistant("2", "1", "a1"),
        user("3", "2", "u2"),
        assistant("4", "3", "a2"),
        ent("c", "4", "compaction", summary="S", firstKeptEntryId="3", tokensBefore=1234),
        user("5", "c", "u3"),
    ]
    ctx = build_session_context(entries)
    assert texts(ctx) == ["compaction:S", "user:u2", "assistant:a2", "user:u3"]
    assert ctx.messages[0] == {
        "role": "compactionSummary",
        "summary": "S",
        "tokensBefore": 1234,
        "timestamp": TS_MS,
    }


def test_nested_compactions_use_the_last_one() -> None:
    entries = [
        user("1", None, "u1"),
        assistant("2", "1", "a1"),
        ent("c1", "2", "compaction", summary="S1", firstKeptEntryId="2", tokensBefore=10),
        user("3", "c1", "u2"),
        assistant("4", "3", "a2"),
        ent(
            "c2", "4", "compaction", summary="S2", shortSummary="short", firstKeptEntryId="2", tokensBefore=20
        ),
        user("5", "c2", "u3"),
    ]
    ctx = build_session_context(entries)
    # kept from "2" up to c2; the earlier compaction inside the range emits nothing
    assert texts(ctx) == ["compaction:S2", "assistant:a1", "user:u2", "assistant:a2", "user:u3"]
    assert ctx.messages[0]["shortSummary"] == "short"


def test_dangling_or_later_first_kept_id_keeps_nothing() -> None:
    for first_kept in ("missing", "5", "c", None):
        kw = {} if first_kept is None else {"firstKeptEntryId": first_kept}
        entries = [
            user("1", None, "u1"),
            assistant("2", "1", "a1"),
            ent("c", "2", "compaction", summary="S", tokensBefore=1, **kw),
            user("5", "c", "u3"),
        ]
        assert texts(build_session_context(entries)) == ["compaction:S", "user:u3"], first_kept


def test_remote_compaction_provider_payload_skips_kept_messages() -> None:
    remote = {"openaiRemoteCompaction": {"provider": "openai", "replacementHistory": [{"type": "x"}]}}
    entries = [
        user("1", None, "u1"),
        ent("c", "1", "compaction", summary="S", firstKeptEntryId="1", tokensBefore=5, preserveData=remote),
        user("2", "c", "u2"),
    ]
    ctx = build_session_context(entries)
    assert texts(ctx) == ["compaction:S", "user:u2"]
    assert ctx.messages[0]["providerPayload"] == {
        "type": "openaiResponsesHistory",
        "provider": "openai",
        "items": [{"type": "x"}],
    }
    # an empty provider or a non-list history is not a payload: the kept range applies
    for bad in ({"provider": "", "replacementHistory": []}, {"provider": "o", "replacementHistory": {}}):
        entries[1]["preserveData"] = {"openaiRemoteCompaction": bad}
        ctx = build_session_context(entries)
        assert texts(ctx) == ["compaction:S", "user:u1", "user:u2"]
        assert "providerPayload" not in ctx.messages[0]


def test_branch_summary_and_custom_message_conversion() -> None:
    entries = [
        ent("b", None, "branch_summary", fromId="root", summary="went elsewhere"),
        ent("e", "b", "branch_summary", fromId="x", summary=""),
        ent(
            "cm",
            "e",
            "custom_message",
            ts="2026-01-01T00:00:01.500Z",
            customType="note",
            content="hello",
            display=True,
            details=None,
        ),
        ent("cu", "cm", "custom", customType="hidden", data={}),
        ent("lb", "cu", "label", targetId="b", label="x"),
    ]
    ctx = build_session_context(entries)
    assert ctx.messages == [
        {"role": "branchSummary", "summary": "went elsewhere", "fromId": "root", "timestamp": TS_MS},
        {
            "role": "custom",
            "customType": "note",
            "content": "hello",
            "display": True,
            "details": None,
            "timestamp": TS_MS + 1500,
        },
    ]


def test_orphan_path_is_short() -> None:
    entries = [user("1", None, "u1"), user("2", "gone", "orphan"), assistant("3", "2", "a")]
    assert texts(build_session_context(entries)) == ["user:orphan", "assistant:a"]


def test_cycles_terminate_divergence_3() -> None:
    self_parent = [user("a", "a", "loop")]
    assert texts(build_session_context(self_parent)) == ["user:loop"]
    entries = [user("a", "c", "A"), user("b", "a", "B"), user("c", "b", "C"), user("x", "c", "X")]
    # The loop's last entry in file order (c) closes it and is a root, as in the tree.
    assert texts(build_session_context(entries, "x")) == ["user:C", "user:X"]
    assert texts(build_session_context(entries, "b")) == ["user:C", "user:A", "user:B"]
    assert len(build_session_context(entries, "b").messages) == 3


@pytest.mark.parametrize(
    "parents",
    [
        {"a": "b", "b": "a"},  # a 2-cycle
        {"a": "c", "b": "a", "c": "b"},  # a 3-cycle
        {"a": None, "b": "d", "c": "b", "d": "c"},  # a loop below a separate root
        {"b": "a", "a": "b", "x": "a"},  # a tail hanging off a loop
    ],
)
def test_a_loop_is_cut_where_the_manager_cuts_it(tmp_path: Path, parents: dict[str, str | None]) -> None:
    # DIVERGENCES 3: the free function and the manager give one path for every leaf.
    from sessiontree.core.session import SessionManager

    entries = [user(eid, pid, eid.upper()) for eid, pid in parents.items()]
    p = tmp_path / "loop.jsonl"
    header = {"type": "session", "version": 3, "id": "s", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/"}
    p.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in [header, *entries]))
    m = SessionManager.open(str(p), read_only=True)
    by_id = {e["id"]: e for e in entries}
    for leaf in parents:
        free_path = [e["id"] for e in path_to_leaf(by_id[leaf], by_id.get, entries)]
        assert free_path == [e["id"] for e in m.get_branch(leaf)] == m.index.path_to_root(leaf), leaf
        assert texts(build_session_context(entries, leaf)) == texts(m.build_session_context(leaf)), leaf


def test_by_id_is_used_and_entries_only_for_fallback() -> None:
    entries = [user("a", None, "x"), user("b", "a", "y")]
    by_id = {e["id"]: e for e in entries}

    class NoIter(list[dict[str, Any]]):
        def __iter__(self):  # type: ignore[no-untyped-def]
            raise AssertionError("entries iterated")

    ctx = build_session_context(NoIter(entries), "b", by_id)
    assert texts(ctx) == ["user:x", "user:y"]
