"""Params and result of `session/append`, and its entry kinds."""

from __future__ import annotations

from typing import Final, Literal

import attrs

from sessiontree_protocol.types.base import ABSENT, JSON, Absent, JSONObject, _as_sent, _opt, _req, _tag

# ---------------------------------------------------------------------------------------
# Appending

STORE_ASSIGNED: Final = ("id", "parentId", "timestamp")
"""Entry fields the store assigns: in an entry to append they are ignored."""


@attrs.define(kw_only=True)
class AppendMessage:
    """The message of a `message` entry: an agent message, stored exactly as sent."""

    role: str = _req("user, assistant, toolResult, bashExecution, custom, ... (the agent's roles).")
    as_sent: JSONObject = _as_sent("The whole message object as sent (role, content, ...).")


@attrs.define(kw_only=True)
class MessageEntry:
    """Entry to append: one agent message."""

    type: Literal["message"] = _tag("message")
    message: AppendMessage = _req("The message.")


@attrs.define(kw_only=True)
class ThinkingLevelChangeEntry:
    """Entry to append: the thinking level changed."""

    type: Literal["thinking_level_change"] = _tag("thinking_level_change")
    thinking_level: str | None = _opt("The new level (absent or null: stored as null).")


@attrs.define(kw_only=True)
class ModelChangeEntry:
    """Entry to append: the model (of a role) changed."""

    type: Literal["model_change"] = _tag("model_change")
    model: str = _req("The new model.")
    role: str | None = _opt("The role it is the model of (absent: the default role).")


@attrs.define(kw_only=True)
class CompactionEntry:
    """Entry to append: a compaction (the summary of the history before `firstKeptEntryId`)."""

    type: Literal["compaction"] = _tag("compaction")
    summary: str = _req("The summary.")
    short_summary: str | None = _opt("A short form of the summary.")
    first_kept_entry_id: str = _req("The first entry kept after the summary.")
    tokens_before: float = _req("Tokens of the context before the compaction.")
    details: JSON | None = _opt("Free-form details, stored as sent.")
    from_extension: JSON | None = _opt("Set when an extension made it, stored as sent.")
    preserve_data: JSON | None = _opt("Data kept across the compaction, stored as sent.")


@attrs.define(kw_only=True)
class CustomEntry:
    """Entry to append: extension data, outside the model's context."""

    type: Literal["custom"] = _tag("custom")
    custom_type: str = _req("The extension's name for the kind of data.")
    data: JSON | None = _opt("The data, stored as sent.")


@attrs.define(kw_only=True)
class CustomMessageEntry:
    """Entry to append: a message an extension puts into the model's context."""

    type: Literal["custom_message"] = _tag("custom_message")
    custom_type: str = _req("The extension's name for the kind of message.")
    content: str | list[JSON] = _req("The text, or content blocks.")
    display: bool = _req("Whether front ends show it.")
    details: JSON | None = _opt("Free-form details, stored as sent.")
    attribution: JSON | None = _opt(
        'Who it is attributed to (absent or null: the store\'s default, "agent").'
    )


@attrs.define(kw_only=True)
class TtsrInjectionEntry:
    """Entry to append: rules injected into the context."""

    type: Literal["ttsr_injection"] = _tag("ttsr_injection")
    injected_rules: list[str] = attrs.field(
        metadata={"doc": "The names of the rules.", "nullable": False, "aliases": ("ruleNames",)}
    )


@attrs.define(kw_only=True)
class SessionInitEntry:
    """Entry to append: how the session was started (systemPrompt, task, tools, outputSchema...)."""

    type: Literal["session_init"] = _tag("session_init")
    init: JSON | None = _opt(
        "An init object: when the value is an object, it is stored instead of the other fields."
    )
    as_sent: JSONObject = _as_sent(
        "The entry's other fields as sent, stored after the store's own.", ("type", *STORE_ASSIGNED)
    )


@attrs.define(kw_only=True)
class ModeChangeEntry:
    """Entry to append: the agent's mode changed."""

    type: Literal["mode_change"] = _tag("mode_change")
    mode: str = _req("The new mode.")
    data: JSONObject | None = _opt("Data of the mode.")


AppendEntry = (
    MessageEntry
    | ThinkingLevelChangeEntry
    | ModelChangeEntry
    | CompactionEntry
    | CustomEntry
    | CustomMessageEntry
    | TtsrInjectionEntry
    | SessionInitEntry
    | ModeChangeEntry
)
"""An entry `session/append` takes, told apart by `type`."""


@attrs.define(kw_only=True)
class AppendParams:
    """Params of `session/append`."""

    session: str = _req("The session handle.")
    entry: AppendEntry = _req(
        "The entry: `type` names its kind, the other fields are the payload as stored "
        "(id, parentId and timestamp are the store's)."
    )
    expected_leaf_id: str | Absent | None = _opt(
        "Compare-and-append: refuse with -32004 unless the leaf is this (null: before the first entry).",
        ABSENT,
        nullable=True,
    )


@attrs.define(kw_only=True)
class AppendResult:
    """Result of `session/append`."""

    id: str = _req("The new entry id.")
    leaf_id: str = _req("The leaf after the append (the new entry).")
