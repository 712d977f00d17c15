"""Rebuilding what the model sees from a node of the session tree.

`build_session_context(entries, leaf_id, by_id)` follows the reference's
`buildSessionContext` (docs/tree-view.md "Context and conversion") with two deliberate
divergences (DIVERGENCES.md):

* item 3: the walk from the leaf to the root stops when it meets an entry it has already
  visited, so a self-parented entry or a longer parent cycle cannot hang it;
* item 5: an assistant message sets ``models["default"]`` only when the path holds no
  ``model_change`` for the role ``"default"`` (the design documents' "fallback" rule).

Everything here is pure and works over plain entry dicts; the manager calls it with its
own entries (or with the path it already knows, through `context_from_path`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from ..format.jscompat import UNDEFINED, date_ms, js_get, js_string
from .payload import provider_payload

__all__ = [
    "LAST_ENTRY",
    "SessionContext",
    "build_session_context",
    "context_from_path",
    "path_to_leaf",
    "provider_payload",
]


class _LastEntry:
    """Sentinel type: "no leaf id given", meaning the last entry of the list."""

    _instance: _LastEntry | None = None

    def __new__(cls) -> _LastEntry:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "LAST_ENTRY"


LAST_ENTRY: Final = _LastEntry()
"""Default of ``leaf_id``: like the reference's ``undefined``, use the last entry."""


@dataclass
class SessionContext:
    """The state the agent rebuilds from the path root → leaf.

    ``messages`` are the agent messages in order (message entries as stored, plus the
    synthetic ``custom``, ``branchSummary`` and ``compactionSummary`` messages).
    Absent optional state is ``None``; `to_dict` leaves it out like ``JSON.stringify``
    leaves out ``undefined``.
    """

    messages: list[dict[str, Any]] = field(default_factory=list)
    thinking_level: Any = "off"
    models: dict[str, str] = field(default_factory=dict)
    injected_ttsr_rules: list[str] = field(default_factory=list)
    mode: Any = "none"
    mode_data: Any = None
    service_tier: Any = None
    active_context_name: Any = None
    active_context_tenant: Any = None
    selected_mcp_tool_names: list[str] = field(default_factory=list)
    has_persisted_mcp_tool_selection: bool = False
    #: The agent whose rules built it (`format.dialects.Dialect`): its result's shape.
    dialect: str = "xcsh"
    #: pi: ``{provider, modelId}`` of the selected model (None: none); ``models["default"]``
    #: names it too.
    model: dict[str, Any] | None = None
    #: oh-my-pi: the thinking level the user configured (``"auto"`` in auto mode).
    configured_thinking_level: Any = None
    #: oh-my-pi: the role of the last model change on the path (None: no model change).
    last_model_role: str | None = None

    def model_to_restore(self) -> str | None:
        """``"provider/modelId"`` of the model the file's agent takes up on resume: pi's
        selected model, oh-my-pi's first restorable model (the last model change's role,
        then the default), xcsh's default."""
        if self.dialect == "pi":
            m = self.model or {}
            p, i = m.get("provider"), m.get("modelId")
            return f"{p}/{i}" if isinstance(p, str) and isinstance(i, str) else None
        if self.dialect == "omp":
            from .context_omp import restorable_models

            found = restorable_models(self.models, self.last_model_role)
            return found[0] if found else None
        return self.models.get("default")

    def to_dict(self) -> dict[str, Any]:
        """The result object of the file's agent, with its camelCase keys, in its key order."""
        if self.dialect == "pi":
            out_pi: dict[str, Any] = {"messages": self.messages}
            if self.thinking_level is not UNDEFINED:
                out_pi["thinkingLevel"] = self.thinking_level
            out_pi["model"] = self.model
            return out_pi
        if self.dialect == "omp":
            out_omp: dict[str, Any] = {"messages": self.messages, "thinkingLevel": self.thinking_level}
            if self.configured_thinking_level is not None:
                out_omp["configuredThinkingLevel"] = self.configured_thinking_level
            if self.service_tier is not None:
                out_omp["serviceTier"] = self.service_tier
            out_omp["models"] = self.models
            out_omp["injectedTtsrRules"] = self.injected_ttsr_rules
            out_omp["mode"] = self.mode
            if self.mode_data is not None:
                out_omp["modeData"] = self.mode_data
            return out_omp
        out: dict[str, Any] = {"messages": self.messages, "thinkingLevel": self.thinking_level}
        if self.service_tier is not None:
            out["serviceTier"] = self.service_tier
        out["models"] = self.models
        if self.active_context_name is not None:
            out["activeContextName"] = self.active_context_name
        if self.active_context_tenant is not None:
            out["activeContextTenant"] = self.active_context_tenant
        out["injectedTtsrRules"] = self.injected_ttsr_rules
        out["selectedMCPToolNames"] = self.selected_mcp_tool_names
        out["hasPersistedMCPToolSelection"] = self.has_persisted_mcp_tool_selection
        out["mode"] = self.mode
        if self.mode_data is not None:
            out["modeData"] = self.mode_data
        return out


# --- the path -------------------------------------------------------------------------


def path_to_leaf(
    leaf: Mapping[str, Any],
    get: Callable[[str], Mapping[str, Any] | None],
    entries: Iterable[Mapping[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """The entries from the root down to ``leaf`` following ``parentId``.

    The walk ends at a null or unknown parent. A parent cycle (DIVERGENCES.md item 3) is
    cut where the tree cuts it, so that this path is the manager's (`EntryIndex`) and the
    tree view's: the tree links entries in file order, and the one whose link would close
    the loop, the loop's last entry in file order, becomes a root. ``entries`` gives that
    order; without it the walk stops where it first meets an id again.
    """
    out: list[Any] = []
    seen: dict[Any, int] = {}
    cur: Mapping[str, Any] | None = leaf
    loop_start = -1
    while cur is not None:
        eid = cur.get("id")
        if eid in seen:
            loop_start = seen[eid]
            break
        seen[eid] = len(out)
        out.append(cur)
        pid = cur.get("parentId")
        if not isinstance(pid, str):
            break
        cur = get(pid)
    if loop_start >= 0 and entries is not None:
        members = {e.get("id") for e in out[loop_start:]}
        last_pos: dict[Any, int] = {}
        for pos, e in enumerate(entries):
            if isinstance(e, Mapping):
                eid = e.get("id")
                if eid in members:
                    last_pos[eid] = pos
        at = max(range(loop_start, len(out)), key=lambda i: last_pos.get(out[i].get("id"), -1))
        out = out[: at + 1]
    out.reverse()
    return out


# --- state and messages ---------------------------------------------------------------


def _custom_message(entry: Mapping[str, Any]) -> dict[str, Any]:
    msg: dict[str, Any] = {"role": "custom"}
    for key in ("customType", "content", "display", "details", "attribution"):
        if key in entry:  # a missing key is JS undefined, left out; null stays null
            msg[key] = entry[key]
    msg["timestamp"] = date_ms(entry.get("timestamp"))
    return msg


def _append_message(entry: Mapping[str, Any], out: list[dict[str, Any]]) -> None:
    etype = entry.get("type")
    if etype == "message":
        message = entry.get("message")
        if message is not None:
            out.append(message)  # type: ignore[arg-type]
    elif etype == "custom_message":
        out.append(_custom_message(entry))
    elif etype == "branch_summary":
        summary = entry.get("summary")
        if summary:
            out.append(
                {
                    "role": "branchSummary",
                    "summary": summary,
                    "fromId": entry.get("fromId"),
                    "timestamp": date_ms(entry.get("timestamp")),
                }
            )


def context_from_path(path: Sequence[Mapping[str, Any]], dialect: str = "xcsh") -> SessionContext:
    """The context of a root → leaf path: its state, then its messages (from the last
    compaction on), by the rules of the file's agent (``dialect``: xcsh, pi or omp)."""
    if dialect == "pi":
        return _pi_context(path)
    if dialect == "omp":
        return _omp_context(path)
    ctx = SessionContext()
    # DIVERGENCE 5: an explicit default model on the path beats every assistant message.
    has_default_model_change = any(
        e.get("type") == "model_change" and e.get("model") and (e.get("role") or "default") == "default"
        for e in path
    )
    ttsr: dict[str, None] = {}
    compaction_index = -1
    for i, entry in enumerate(path):
        etype = entry.get("type")
        if etype == "thinking_level_change":
            level = entry.get("thinkingLevel")
            ctx.thinking_level = level if level is not None else "off"
        elif etype == "model_change":
            model = entry.get("model")
            if model:
                role = entry.get("role")
                ctx.models[role if role is not None else "default"] = model
        elif etype == "message":
            message = entry.get("message")
            if (
                isinstance(message, dict)
                and message.get("role") == "assistant"
                and not has_default_model_change
            ):
                ctx.models["default"] = (
                    f"{js_string(js_get(message, 'provider'))}/{js_string(js_get(message, 'model'))}"
                )
        elif etype == "context_change":
            ctx.active_context_name = entry.get("contextName")
            ctx.active_context_tenant = entry.get("tenant")
        elif etype == "service_tier_change":
            ctx.service_tier = entry.get("serviceTier")
        elif etype == "compaction":
            compaction_index = i
        elif etype == "ttsr_injection":
            rules = entry.get("injectedRules")
            if isinstance(rules, list):
                for name in rules:
                    ttsr.setdefault(name, None)
        elif etype == "mcp_tool_selection":
            names = entry.get("selectedToolNames")
            ctx.selected_mcp_tool_names = list(names) if isinstance(names, list) else []
            ctx.has_persisted_mcp_tool_selection = True
        elif etype == "mode_change":
            ctx.mode = entry.get("mode")
            ctx.mode_data = entry.get("data")
    ctx.injected_ttsr_rules = list(ttsr)

    messages: list[dict[str, Any]] = []
    if compaction_index < 0:
        for entry in path:
            _append_message(entry, messages)
    else:
        comp = path[compaction_index]
        payload = provider_payload(comp)
        summary_msg: dict[str, Any] = {"role": "compactionSummary"}
        for key in ("summary", "shortSummary", "tokensBefore"):
            if key in comp:
                summary_msg[key] = comp[key]
        if payload is not None:
            summary_msg["providerPayload"] = payload
        summary_msg["timestamp"] = date_ms(comp.get("timestamp"))
        messages.append(summary_msg)
        if payload is None:
            first_kept = comp.get("firstKeptEntryId")
            found = False
            for entry in path[:compaction_index]:
                if not found and first_kept is not None and entry.get("id") == first_kept:
                    found = True
                if found:
                    _append_message(entry, messages)
        for entry in path[compaction_index + 1 :]:
            _append_message(entry, messages)
    ctx.messages = messages
    return ctx


def build_session_context(
    entries: Sequence[Mapping[str, Any]],
    leaf_id: str | _LastEntry | None = LAST_ENTRY,
    by_id: Mapping[str, Mapping[str, Any]] | None = None,
) -> SessionContext:
    """The reference's ``buildSessionContext(entries, leafId?, byId?)`` (section 13).

    ``leaf_id=None`` gives the empty context (what ``resetLeaf`` leads to). A leaf id
    that is not found, and the default `LAST_ENTRY`, use the last entry of ``entries``.
    When ``by_id`` is given, ``entries`` is only consulted for that fallback, so a caller
    holding many entries may pass a lazy sequence.
    """
    if leaf_id is None:
        return SessionContext()
    if by_id is None:
        by_id = _index(entries)
    leaf: Mapping[str, Any] | None = None
    if isinstance(leaf_id, str) and leaf_id:
        leaf = by_id.get(leaf_id)
    if leaf is None:
        if len(entries) == 0:
            return SessionContext()
        leaf = entries[-1]
    path = path_to_leaf(leaf, by_id.get, entries)
    return context_from_path(path)


def _index(entries: Iterable[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    by_id: dict[str, Mapping[str, Any]] = {}
    for e in entries:
        if isinstance(e, Mapping):
            eid = e.get("id")
            if isinstance(eid, str) and e.get("type") != "session":
                by_id[eid] = e
    return by_id


def _pi_context(path: Sequence[Mapping[str, Any]]) -> SessionContext:
    from .context_pi import pi_context_from_path

    messages, thinking, model = pi_context_from_path(path)
    ctx = SessionContext(messages=messages, thinking_level=thinking, dialect="pi", model=model)
    if model is not None and isinstance(model.get("provider"), str) and isinstance(model.get("modelId"), str):
        ctx.models["default"] = f"{model['provider']}/{model['modelId']}"
    return ctx


def _omp_context(path: Sequence[Mapping[str, Any]]) -> SessionContext:
    from .context_omp import omp_context_from_path

    omp = omp_context_from_path(path)
    return SessionContext(
        messages=omp.messages,
        thinking_level=omp.thinking_level,
        models=omp.models,
        injected_ttsr_rules=omp.injected_ttsr_rules,
        mode=omp.mode,
        mode_data=None if omp.mode_data is UNDEFINED else omp.mode_data,
        service_tier=omp.service_tier,
        dialect="omp",
        configured_thinking_level=None
        if omp.configured_thinking_level is UNDEFINED
        else omp.configured_thinking_level,
        last_model_role=omp.last_model_role,
    )
