"""The context of a node as oh-my-pi 18 rebuilds it (`buildSessionContext`,
``session/session-context.ts``, the model context: no transcript options).

Where omp differs from xcsh (`context.py`):

* ``reset_boundary`` (``/clear``): when the latest one on the path is after the latest
  compaction (or there is none), only the entries after it are emitted;
* the compaction summary message carries ``shortSummary``, ``tokensAfter``, ``method``,
  ``providerPayload`` and ``warning`` beside ``summary`` and ``tokensBefore``; with an
  OpenAI remote payload and ``providerReplayThroughEntryId`` the entries after that id up to
  the compaction are emitted instead of the kept range;
* assistant turns marked ``retryRecovery`` and error turns with no content are skipped;
  custom messages ``prewalk-plan`` and ``vibe-mode-context`` are skipped; a custom message
  is normalized (its type ``custom-message`` when empty, ``display`` false unless a boolean,
  ``attribution`` ``user`` or ``agent``; content that is neither text nor blocks drops it);
* then every ``toolCall`` without a ``toolResult`` in the emitted messages is removed from
  its assistant turn (with the turn's ``redactedThinking`` and thinking signatures; a turn
  left empty is dropped), and every aborted or errored assistant turn is dropped with the
  tool results of its calls (unless an ``interrupted-thinking`` custom message follows it);
* the thinking level is ``"off"`` for a null one, and ``configured ?? thinkingLevel`` is
  kept as ``configuredThinkingLevel``; a service tier is coerced to omp's per-family form.

Not reproduced (omp features no other writer produces): snapcompact image frames on the
summary, Anthropic-native compaction payloads, experimental context notes and rollovers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..format.jscompat import UNDEFINED, date_ms, js_get, js_string
from .payload import provider_payload

__all__ = ["OmpContext", "coerce_service_tier", "omp_context_from_path", "restorable_models"]

_SKIPPED_CUSTOM = frozenset({"prewalk-plan", "vibe-mode-context"})
_TIERS = frozenset({"auto", "default", "flex", "scale", "priority"})
_SCALAR_TIERS: dict[str, dict[str, str]] = {
    "priority": {"openai": "priority", "anthropic": "priority", "google": "priority"},
    "openai-only": {"openai": "priority"},
    "claude-only": {"anthropic": "priority"},
    "auto": {"openai": "auto"},
    "default": {"openai": "default"},
    "flex": {"openai": "flex"},
    "scale": {"openai": "scale"},
}


def coerce_service_tier(value: Any) -> dict[str, str] | None:
    """omp's ``coerceServiceTierByFamily``: a family map, from a map or a legacy scalar."""
    if value is None or value is UNDEFINED:
        return None
    if isinstance(value, Mapping):
        out = {f: value[f] for f in ("openai", "anthropic", "google") if value.get(f) in _TIERS}
        return out or None
    if isinstance(value, str):
        tier = _SCALAR_TIERS.get(value)
        return dict(tier) if tier is not None else None
    return None


def _defined(obj: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if v is not UNDEFINED and v is not _ABSENT}


_ABSENT = object()


class OmpContext:
    """What omp's ``buildSessionContext`` returns (its keys, in its order, by `to_dict`)."""

    __slots__ = (
        "configured_thinking_level",
        "injected_ttsr_rules",
        "last_model_role",
        "messages",
        "mode",
        "mode_data",
        "models",
        "service_tier",
        "thinking_level",
    )

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []
        self.thinking_level: Any = "off"
        self.configured_thinking_level: Any = UNDEFINED
        self.service_tier: dict[str, str] | None = None
        self.models: dict[str, str] = {}
        self.injected_ttsr_rules: list[str] = []
        self.mode: Any = "none"
        self.mode_data: Any = UNDEFINED
        #: The role of the last model change on the path (``"default"`` for none given;
        #: None without a model change): which model omp restores (`restorable_models`).
        self.last_model_role: str | None = None


def restorable_models(models: Mapping[str, str], last_role: str | None) -> list[str]:
    """omp's ``getRestorableSessionModels``: the models a resume tries, in order."""
    default = models.get("default")
    if not last_role or last_role in ("default", "fallback"):
        return [default] if default else []
    role_model = models.get(last_role)
    if not role_model:
        return [default] if default else []
    if not default or role_model == default:
        return [role_model]
    return [role_model, default]


def _is_empty_error_turn(message: Mapping[str, Any]) -> bool:
    if message.get("stopReason") != "error":
        return False
    content = message.get("content")
    if not isinstance(content, list):
        return False
    for block in content:
        if not isinstance(block, Mapping):
            return False  # an unknown shape counts as content: never discard silently
        kind = block.get("type")
        if kind == "text":
            if js_string(block.get("text", "")).strip():
                return False
        elif kind == "thinking":
            if (
                js_string(block.get("thinking", "")).strip()
                or js_string(block.get("thinkingSignature") or "").strip()
            ):
                return False
        elif kind == "redactedThinking":
            if js_string(block.get("data", "")).strip():
                return False
        elif kind == "fallback":
            continue
        else:
            return False  # toolCall and unknown kinds are content
    return True


def _custom_message(entry: Mapping[str, Any]) -> dict[str, Any] | None:
    content = entry.get("content", UNDEFINED)
    if not isinstance(content, str | list):
        return None  # unsendable content: no message
    ctype = entry.get("customType")
    display = entry.get("display")
    attribution: Any = UNDEFINED
    if "attribution" in entry:
        attribution = "user" if entry.get("attribution") == "user" else "agent"
    return _defined(
        {
            "role": "custom",
            "customType": ctype if isinstance(ctype, str) and ctype else "custom-message",
            "content": content,
            "display": display if isinstance(display, bool) else False,
            "details": js_get(entry, "details"),
            "attribution": attribution,
            "timestamp": date_ms(entry.get("timestamp")),
        }
    )


def _emit(entry: Mapping[str, Any], out: list[dict[str, Any]]) -> None:
    etype = entry.get("type")
    if etype == "message":
        message = entry.get("message")
        if not isinstance(message, Mapping):
            return
        if message.get("role") == "assistant" and (
            message.get("retryRecovery") or _is_empty_error_turn(message)
        ):
            return
        out.append(message)  # type: ignore[arg-type]
    elif etype == "custom_message":
        if entry.get("customType") in _SKIPPED_CUSTOM:
            return
        msg = _custom_message(entry)
        if msg is not None:
            out.append(msg)
    elif etype == "branch_summary":
        summary = entry.get("summary")
        if summary:
            out.append(
                _defined(
                    {
                        "role": "branchSummary",
                        "summary": summary,
                        "fromId": js_get(entry, "fromId"),
                        "timestamp": date_ms(entry.get("timestamp")),
                    }
                )
            )


def _summary_message(comp: Mapping[str, Any], payload: dict[str, Any] | None) -> dict[str, Any]:
    return _defined(
        {
            "role": "compactionSummary",
            "summary": js_get(comp, "summary"),
            "shortSummary": js_get(comp, "shortSummary"),
            "tokensBefore": js_get(comp, "tokensBefore"),
            "tokensAfter": js_get(comp, "tokensAfter"),
            "method": js_get(comp, "method"),
            "providerPayload": payload if payload is not None else UNDEFINED,
            "warning": js_get(comp, "warning"),
            "timestamp": date_ms(comp.get("timestamp")),
        }
    )


def _strip_dangling_calls(messages: list[dict[str, Any]]) -> None:
    paired = {
        m.get("toolCallId") for m in messages if isinstance(m, Mapping) and m.get("role") == "toolResult"
    }
    for i in range(len(messages) - 1, -1, -1):
        message = messages[i]
        if not isinstance(message, Mapping) or message.get("role") != "assistant":
            continue
        content = message.get("content")
        if not isinstance(content, list):
            continue
        dangling = sum(
            1
            for b in content
            if isinstance(b, Mapping) and b.get("type") == "toolCall" and b.get("id") not in paired
        )
        if not dangling:
            continue
        kept: list[Any] = []
        for b in content:
            if isinstance(b, Mapping):
                kind = b.get("type")
                if (kind == "toolCall" and b.get("id") not in paired) or kind == "redactedThinking":
                    continue
                if kind == "thinking" and b.get("thinkingSignature"):
                    b = {k: v for k, v in b.items() if k != "thinkingSignature"}
            kept.append(b)
        if not kept:
            del messages[i]
        else:
            messages[i] = {**message, "content": kept}


def _drop_failed_turns(messages: list[dict[str, Any]]) -> None:
    i = len(messages) - 1
    while i >= 0:
        message = messages[i] if i < len(messages) else None
        if (
            isinstance(message, Mapping)
            and message.get("role") == "assistant"
            and message.get("stopReason") in ("aborted", "error")
        ):
            nxt = messages[i + 1] if i + 1 < len(messages) else None
            if not (
                isinstance(nxt, Mapping)
                and nxt.get("role") == "custom"
                and nxt.get("customType") == "interrupted-thinking"
            ):
                content = message.get("content")
                ids = {
                    b.get("id")
                    for b in (content if isinstance(content, list) else [])
                    if isinstance(b, Mapping) and b.get("type") == "toolCall"
                }
                del messages[i]
                if ids:
                    for j in range(len(messages) - 1, i - 1, -1):
                        cand = messages[j]
                        if (
                            isinstance(cand, Mapping)
                            and cand.get("role") == "toolResult"
                            and cand.get("toolCallId") in ids
                        ):
                            del messages[j]
        i -= 1


def omp_context_from_path(path: Sequence[Mapping[str, Any]]) -> OmpContext:
    """The context of a root → leaf path as oh-my-pi 18 builds it for the model."""
    ctx = OmpContext()
    explicit_default = False
    compaction_index = -1
    reset_index = -1
    ttsr: dict[str, None] = {}
    for i, entry in enumerate(path):
        etype = entry.get("type")
        if etype == "thinking_level_change":
            level = entry.get("thinkingLevel")
            ctx.thinking_level = level if level is not None else "off"
            configured = entry.get("configured")
            ctx.configured_thinking_level = (
                configured if configured is not None else level if level is not None else UNDEFINED
            )
        elif etype == "model_change":
            role_of = entry.get("role")
            ctx.last_model_role = js_string(role_of) if role_of is not None else "default"
            model = entry.get("model")
            if model:
                role = entry.get("role")
                role = role if role is not None else "default"
                ctx.models[js_string(role)] = model
                if role == "default":
                    explicit_default = True
        elif etype == "service_tier_change":
            ctx.service_tier = coerce_service_tier(js_get(entry, "serviceTier"))
        elif etype == "message":
            message = entry.get("message")
            if isinstance(message, Mapping) and message.get("role") == "assistant" and not explicit_default:
                ctx.models["default"] = (
                    f"{js_string(js_get(message, 'provider'))}/{js_string(js_get(message, 'model'))}"
                )
        elif etype == "compaction":
            compaction_index = i
        elif etype == "ttsr_injection":
            rules = entry.get("injectedRules")
            if isinstance(rules, list):
                for name in rules:
                    ttsr.setdefault(name, None)
        elif etype == "mode_change":
            ctx.mode = js_get(entry, "mode")
            ctx.mode_data = js_get(entry, "data")
        elif etype == "reset_boundary":
            reset_index = i
    ctx.injected_ttsr_rules = list(ttsr)

    messages: list[dict[str, Any]] = []
    if reset_index >= 0 and reset_index > compaction_index:
        for entry in path[reset_index + 1 :]:
            _emit(entry, messages)
    elif compaction_index >= 0:
        comp = path[compaction_index]
        payload = provider_payload(comp)
        messages.append(_summary_message(comp, payload))
        if payload is None:
            first_kept = comp.get("firstKeptEntryId")
            start = next(
                (j for j in range(compaction_index) if path[j].get("id") == first_kept),
                -1,
            )
            if start >= 0:
                for entry in path[start:compaction_index]:
                    _emit(entry, messages)
        else:
            through = comp.get("providerReplayThroughEntryId")
            if through:
                at = next((j for j in range(len(path)) if path[j].get("id") == through), -1)
                if 0 <= at < compaction_index:
                    for entry in path[at + 1 : compaction_index]:
                        _emit(entry, messages)
        for entry in path[compaction_index + 1 :]:
            _emit(entry, messages)
    else:
        for entry in path:
            _emit(entry, messages)
    _strip_dangling_calls(messages)
    _drop_failed_turns(messages)
    ctx.messages = messages
    return ctx
