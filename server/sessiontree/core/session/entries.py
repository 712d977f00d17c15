"""The entry constructors of a session (`Entries`, a part of `SessionManager`).

One `append_*` per entry type of the file format (docs/storage-format.md, "Lines, header
and entries"): each builds the entry dict with its keys in the reference's order, makes it the
leaf, and hands it to the persistence pipeline (`writing`). Every constructor folds in
other writers' lines first, so the new entry's parent is the leaf as it is on disk.
"""

from __future__ import annotations

from typing import Any

from ..errors import EntryNotFoundError
from ..format.dialects import Dialect
from ..format.jscompat import date_ms
from ..tree.context import context_from_path
from ..tree.context_pi import current_system_message
from .context_walk import materialize_context_path
from .writing import Writing

__all__ = ["Entries"]


class Entries(Writing):
    """`append_message` and the other constructors; `branch_with_summary`."""

    def _new_id(self) -> str:
        self._live_before_write()
        return self._ids.new_entry_id(self._index.ids())

    def _base(self, etype: str) -> dict[str, Any]:
        return {
            "type": etype,
            "id": self._new_id(),
            "parentId": self._leaf_id,
            "timestamp": self._clock.now_iso(),
        }

    def _append(self, entry: dict[str, Any]) -> str:
        self._index.add_held(entry)
        self._leaf_id = entry["id"]
        self._persist_entry(entry)
        return entry["id"]  # type: ignore[no-any-return]

    def append_message(self, message: dict[str, Any]) -> str:
        """Append a `message` entry; returns its id."""
        e = self._base("message")
        e["message"] = message
        return self._append(e)

    def append_thinking_level_change(self, level: str | None = None) -> str:
        """Append a thinking level change. No level is ``"off"`` to every agent: pi, which
        keeps a written null as null, gets ``"off"``; oh-my-pi writes its ``configured``
        level beside it, as omp does."""
        dialect = self.dialect
        e = self._base("thinking_level_change")
        if dialect is Dialect.PI:
            e["thinkingLevel"] = level if level is not None else "off"
        else:
            e["thinkingLevel"] = level
            if dialect is Dialect.OMP:
                e["configured"] = level
        return self._append(e)

    def append_model_change(self, model: str, role: str | None = None) -> str:
        """Append a model change, ``model`` being ``"provider/modelId"``, in the words of the
        file's agent: pi's ``{provider, modelId}`` (pi has no roles), else ``{model, role?}``
        (oh-my-pi adds ``resolvedModelIsFallback``)."""
        dialect = self.dialect
        e = self._base("model_change")
        if dialect is Dialect.PI:
            provider, sep, model_id = model.partition("/")
            e["provider"] = provider if sep else ""
            e["modelId"] = model_id if sep else model
            return self._append(e)
        e["model"] = model
        if role is not None:
            e["role"] = role
        if dialect is Dialect.OMP:
            e["resolvedModelIsFallback"] = False
        return self._append(e)

    def append_mode_change(self, mode: str, data: dict[str, Any] | None = None) -> str:
        e = self._base("mode_change")
        e["mode"] = mode
        if data is not None:
            e["data"] = data
        return self._append(e)

    def append_compaction(
        self,
        summary: str,
        short_summary: str | None,
        first_kept_entry_id: str | None,
        tokens_before: int,
        details: Any = None,
        from_extension: bool | None = None,
        preserve_data: Any = None,
    ) -> str:
        if self.dialect is Dialect.PI:
            return self._append_pi_compaction(
                summary, first_kept_entry_id, tokens_before, details, from_extension
            )
        e = self._base("compaction")
        e["summary"] = summary
        if short_summary is not None:
            e["shortSummary"] = short_summary
        if first_kept_entry_id is not None:
            e["firstKeptEntryId"] = first_kept_entry_id
        e["tokensBefore"] = tokens_before
        if details is not None:
            e["details"] = details
        if from_extension is not None:
            e["fromExtension"] = from_extension
        if preserve_data is not None:
            e["preserveData"] = preserve_data
        return self._append(e)

    def _append_pi_compaction(
        self,
        summary: str,
        first_kept_entry_id: str | None,
        tokens_before: int,
        details: Any,
        from_hook: bool | None,
    ) -> str:
        """pi 1.6's compaction: ``firstKeptEntryId`` always (its own id keeps nothing),
        ``fromHook``, and the system checkpoint (``systemMessage``: every system message of
        the context so far replayed into one) that its context puts back before the summary.
        pi has no short summary and no provider payload."""
        leaf = self._leaf_id
        before = (
            context_from_path(materialize_context_path(self._index, leaf), "pi").messages
            if leaf is not None
            else []
        )
        system = current_system_message(before)
        e = self._base("compaction")
        e["summary"] = summary
        e["firstKeptEntryId"] = first_kept_entry_id if first_kept_entry_id is not None else e["id"]
        e["tokensBefore"] = tokens_before
        if details is not None:
            e["details"] = details
        if from_hook is not None:
            e["fromHook"] = from_hook
        if system is not None:
            ms = date_ms(e["timestamp"])
            e["systemMessage"] = {**system, "timestamp": ms if ms is not None else 0}
        return self._append(e)

    def append_custom_entry(self, custom_type: str, data: Any = None) -> str:
        self._live_before_write()
        e: dict[str, Any] = {"type": "custom", "customType": custom_type}
        if data is not None:
            e["data"] = data
        e["id"] = self._new_id()
        e["parentId"] = self._leaf_id
        e["timestamp"] = self._clock.now_iso()
        return self._append(e)

    def append_custom_message_entry(
        self,
        custom_type: str,
        content: Any,
        display: bool,
        details: Any = None,
        attribution: str | None = "agent",
    ) -> str:
        self._live_before_write()
        e: dict[str, Any] = {
            "type": "custom_message",
            "customType": custom_type,
            "content": content,
            "display": display,
        }
        if details is not None:
            e["details"] = details
        if self.dialect is not Dialect.PI:  # (pi's custom messages have no attribution)
            e["attribution"] = attribution if attribution is not None else "agent"
        e["id"] = self._new_id()
        e["parentId"] = self._leaf_id
        e["timestamp"] = self._clock.now_iso()
        return self._append(e)

    def append_label_change(self, target_id: str, label: str | None) -> str:
        """Set (or, with a falsy label, clear) a label; the label entry becomes the leaf."""
        self._live_before_write()
        if target_id not in self._index:
            raise EntryNotFoundError(target_id)
        e = self._base("label")
        e["targetId"] = target_id
        if label is not None:
            e["label"] = label
        return self._append(e)

    def append_ttsr_injection(self, rule_names: list[str]) -> str:
        e = self._base("ttsr_injection")
        e["injectedRules"] = list(rule_names)
        return self._append(e)

    def append_session_init(self, init: dict[str, Any]) -> str:
        e = self._base("session_init")
        e.update(init)
        return self._append(e)

    def append_context_change(self, context_name: str, tenant: str | None, namespace: str | None) -> str:
        e = self._base("context_change")
        e["contextName"] = context_name
        if tenant is not None:
            e["tenant"] = tenant
        if namespace is not None:
            e["namespace"] = namespace
        return self._append(e)

    def append_service_tier_change(self, service_tier: str | None) -> str:
        e = self._base("service_tier_change")
        e["serviceTier"] = service_tier
        return self._append(e)

    def append_mcp_tool_selection(self, names: list[str]) -> str:
        e = self._base("mcp_tool_selection")
        e["selectedToolNames"] = list(names)
        return self._append(e)

    def branch_with_summary(
        self,
        branch_from_id: str | None,
        summary: str,
        details: Any = None,
        from_extension: bool | None = None,
    ) -> str:
        """Move the leaf to `branch_from_id` and append a `branch_summary` there.

        ``fromId`` is what the file's agent writes: pi's is the leaf left behind (the tip of
        the summarized path), xcsh's and oh-my-pi's the entry branched from (``"root"`` for
        none); pi calls ``from_extension`` ``fromHook``."""
        self._live_before_write()  # external appends first, so they cannot move the leaf below
        if branch_from_id is not None and branch_from_id not in self._index:
            raise EntryNotFoundError(branch_from_id)
        pi = self.dialect is Dialect.PI
        old_leaf = self._leaf_id
        self._leaf_id = branch_from_id
        e = self._base("branch_summary")
        origin = old_leaf if pi else branch_from_id
        e["fromId"] = origin if origin is not None else "root"
        e["summary"] = summary
        if details is not None:
            e["details"] = details
        if from_extension is not None:
            e["fromHook" if pi else "fromExtension"] = from_extension
        return self._append(e)
