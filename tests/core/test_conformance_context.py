"""Conformance of buildSessionContext with reference-behavior.md section 13 and DIVERGENCES.md."""

from __future__ import annotations

from typing import Any

from sessiontree.core.tree.context import build_session_context


class _B:
    def __init__(self) -> None:
        self.entries: list[dict[str, Any]] = []

    def add(self, eid: str, parent: str | None, type_: str = "message", **fields: Any) -> dict[str, Any]:
        e: dict[str, Any] = {
            "type": type_,
            "id": eid,
            "parentId": parent,
            "timestamp": f"2026-01-01T00:00:{len(self.entries):02d}.000Z",
        }
        e.update(fields)
        self.entries.append(e)
        return e

    def user(self, eid: str, parent: str | None) -> dict[str, Any]:
        return self.add(eid, parent, message={"role": "user", "content": eid, "timestamp": 1})

    def asst(self, eid: str, parent: str | None, provider: str = "p", model: str = "m") -> dict[str, Any]:
        msg = {
            "role": "assistant",
            "content": [{"type": "text", "text": eid}],
            "provider": provider,
            "model": model,
            "stopReason": "stop",
            "timestamp": 1,
        }
        return self.add(eid, parent, message=msg)


def _roles(ctx: Any) -> list[Any]:
    return [m.get("role") for m in ctx.messages]


def test_null_leaf_gives_empty_context() -> None:
    b = _B()
    b.user("u", None)
    b.add("t", "u", "thinking_level_change", thinkingLevel="high")
    ctx = build_session_context(b.entries, None)
    assert ctx.messages == [] and ctx.thinking_level == "off" and ctx.models == {}
    assert ctx.mode == "none" and ctx.mode_data is None and ctx.injected_ttsr_rules == []
    assert ctx.selected_mcp_tool_names == [] and ctx.has_persisted_mcp_tool_selection is False


def test_unknown_leaf_uses_last_entry() -> None:
    b = _B()
    b.user("a", None)
    b.user("b", "a")
    b.user("c", "a")
    ctx = build_session_context(b.entries, "nope")
    assert [m["content"] for m in ctx.messages] == ["a", "c"]
    by_id = {e["id"]: e for e in b.entries}
    ctx = build_session_context(b.entries, "nope", by_id)
    assert [m["content"] for m in ctx.messages] == ["a", "c"]
    assert build_session_context([], "x").messages == []


def test_messages_are_the_same_objects() -> None:
    b = _B()
    u = b.user("a", None)
    assert build_session_context(b.entries).messages[0] is u["message"]


def test_compaction_with_dangling_first_kept_keeps_nothing() -> None:
    b = _B()
    b.user("a", None)
    b.user("b", "a")
    b.add("c", "b", "compaction", summary="S", firstKeptEntryId="zzz", tokensBefore=10)
    b.user("d", "c")
    ctx = build_session_context(b.entries)
    assert _roles(ctx) == ["compactionSummary", "user"]
    assert ctx.messages[1]["content"] == "d"
    cs = ctx.messages[0]
    assert cs["summary"] == "S" and cs["tokensBefore"] == 10
    assert cs["timestamp"] == 1767225602000  # ms of 2026-01-01T00:00:02.000Z
    assert cs.get("providerPayload") is None


def test_compaction_first_kept_after_compaction_keeps_nothing() -> None:
    b = _B()
    b.user("a", None)
    b.add("c", "a", "compaction", summary="S", firstKeptEntryId="d", tokensBefore=1)
    b.user("d", "c")
    ctx = build_session_context(b.entries)
    assert [m.get("content") for m in ctx.messages] == [None, "d"]


def test_compaction_keeps_from_first_kept_and_last_compaction_wins() -> None:
    b = _B()
    b.user("a", None)
    b.add("c1", "a", "compaction", summary="S1", firstKeptEntryId="a", tokensBefore=1)
    b.user("b", "c1")
    b.user("k", "b")
    b.add("c2", "k", "compaction", summary="S2", firstKeptEntryId="c1", tokensBefore=2)
    b.user("z", "c2")
    ctx = build_session_context(b.entries)
    assert _roles(ctx) == ["compactionSummary", "user", "user", "user"]
    assert ctx.messages[0]["summary"] == "S2"
    assert [m["content"] for m in ctx.messages[1:]] == ["b", "k", "z"]


def _payload_case(remote: Any) -> Any:
    b = _B()
    b.user("a", None)
    b.add(
        "c",
        "a",
        "compaction",
        summary="S",
        firstKeptEntryId="a",
        tokensBefore=1,
        preserveData={"openaiRemoteCompaction": remote},
    )
    b.user("d", "c")
    return build_session_context(b.entries)


def test_provider_payload_drops_kept_entries() -> None:
    ctx = _payload_case({"provider": "openai", "replacementHistory": [{"x": 1}]})
    assert _roles(ctx) == ["compactionSummary", "user"]
    assert ctx.messages[0]["providerPayload"] == {
        "type": "openaiResponsesHistory",
        "provider": "openai",
        "items": [{"x": 1}],
    }
    assert ctx.messages[1]["content"] == "d"


def test_provider_payload_needs_provider_and_array() -> None:
    remotes: tuple[Any, ...] = (
        {"provider": "", "replacementHistory": []},
        {"provider": "openai", "replacementHistory": {}},
        {"replacementHistory": []},
        "str",
    )
    for remote in remotes:
        ctx = _payload_case(remote)
        assert ctx.messages[0].get("providerPayload") is None, remote
        assert [m.get("content") for m in ctx.messages] == [None, "a", "d"], remote


def test_empty_branch_summary_produces_no_message() -> None:
    b = _B()
    b.user("a", None)
    b.add("e", "a", "branch_summary", fromId="a", summary="")
    b.add("s", "e", "branch_summary", fromId="root", summary="went away")
    ctx = build_session_context(b.entries)
    assert _roles(ctx) == ["user", "branchSummary"]
    assert ctx.messages[1]["summary"] == "went away" and ctx.messages[1]["fromId"] == "root"


def test_custom_message_conversion() -> None:
    b = _B()
    b.add(
        "cm",
        None,
        "custom_message",
        customType="n",
        content="hi",
        display=False,
        details={"k": 1},
        attribution="user",
    )
    m = build_session_context(b.entries).messages[0]
    assert m["role"] == "custom" and m["customType"] == "n" and m["content"] == "hi"
    assert m["display"] is False and m["details"] == {"k": 1} and m["attribution"] == "user"
    assert m["timestamp"] == 1767225600000


def test_thinking_null_resets_to_off() -> None:
    b = _B()
    b.add("t1", None, "thinking_level_change", thinkingLevel="high")
    assert build_session_context(b.entries).thinking_level == "high"
    b.add("t2", "t1", "thinking_level_change", thinkingLevel=None)
    assert build_session_context(b.entries).thinking_level == "off"
    b.add("t3", "t2", "thinking_level_change", thinkingLevel="low")
    b.add("t4", "t3", "thinking_level_change")
    assert build_session_context(b.entries).thinking_level == "off"


def test_empty_model_string_ignored_and_roles() -> None:
    b = _B()
    b.add("m1", None, "model_change", model="a/b")
    b.add("m2", "m1", "model_change", model="")
    b.add("m3", "m2", "model_change", model="c/d", role="smol")
    assert build_session_context(b.entries).models == {"default": "a/b", "smol": "c/d"}


def test_divergence_5_assistant_model_is_only_a_fallback() -> None:
    b = _B()
    b.user("u", None)
    b.asst("a", "u", "prov", "mod")
    assert build_session_context(b.entries).models == {"default": "prov/mod"}
    b.add("m", "a", "model_change", model="x/y")
    b.asst("a2", "m", "prov", "other")
    assert build_session_context(b.entries).models == {"default": "x/y"}
    b.add("m2", "a2", "model_change", model="x/y", role="smol")
    b.asst("a3", "m2", "prov", "third")
    assert build_session_context(b.entries).models == {"default": "x/y", "smol": "x/y"}


def test_ttsr_dedupe_keeps_first_seen_order() -> None:
    b = _B()
    b.add("t1", None, "ttsr_injection", injectedRules=["b", "a"])
    b.add("t2", "t1", "ttsr_injection", injectedRules=["a", "c", "b"])
    assert build_session_context(b.entries).injected_ttsr_rules == ["b", "a", "c"]


def test_mode_change_without_data_clears_mode_data() -> None:
    b = _B()
    b.add("m1", None, "mode_change", mode="plan", data={"x": 1})
    ctx = build_session_context(b.entries)
    assert ctx.mode == "plan" and ctx.mode_data == {"x": 1}
    b.add("m2", "m1", "mode_change", mode="none")
    ctx = build_session_context(b.entries)
    assert ctx.mode == "none" and ctx.mode_data is None


def test_state_entries() -> None:
    b = _B()
    b.add("s", None, "service_tier_change", serviceTier="flex")
    b.add("c", "s", "context_change", contextName="n", tenant="t", namespace="ns")
    b.add("mc", "c", "mcp_tool_selection", selectedToolNames=["a", "b"])
    ctx = build_session_context(b.entries)
    assert ctx.service_tier == "flex" and ctx.active_context_name == "n" and ctx.active_context_tenant == "t"
    assert ctx.selected_mcp_tool_names == ["a", "b"] and ctx.has_persisted_mcp_tool_selection is True
    b.add("s2", "mc", "service_tier_change", serviceTier=None)
    assert build_session_context(b.entries).service_tier is None


def test_self_parented_entry_terminates() -> None:
    b = _B()
    b.add("x", "x", message={"role": "user", "content": "x", "timestamp": 1})
    b.user("y", "x")
    assert [m["content"] for m in build_session_context(b.entries).messages] == ["x", "y"]
