"""session/append: entries from editor-embedded agents, with compare-and-append."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sessiontree_protocol import methods as m
from sessiontree_protocol import types as t

from sessiontree.core.errors import ConflictError
from sessiontree.lsp import errors, mapping, notify
from sessiontree.lsp.features._common import call_write
from sessiontree.lsp.features.watch import announce_pending
from sessiontree.lsp.handlers import register
from sessiontree.lsp.server import SessionTreeServer

_MISSING = object()


def _field(entry: dict[str, Any], name: str, kinds: tuple[type, ...] | None, required: bool = True) -> Any:
    if name not in entry:
        if required:
            raise errors.InvalidParams(
                f"Invalid params for session/append: entry.{name}: missing required field",
                {"field": f"entry.{name}", "reason": "missing required field"},
            )
        return None
    value = entry[name]
    if kinds is not None and value is not None and not isinstance(value, kinds):
        raise errors.InvalidParams(
            f"Invalid params for session/append: entry.{name}: wrong type {type(value).__name__}",
            {"field": f"entry.{name}", "reason": "wrong type"},
        )
    if kinds is not None and value is None and required:
        raise errors.InvalidParams(
            f"Invalid params for session/append: entry.{name}: must not be null",
            {"field": f"entry.{name}", "reason": "must not be null"},
        )
    return value


def appender(entry: dict[str, Any]) -> Callable[[Any], str]:
    """Map `{type, ...payload}` onto the manager's append_* method (validating the payload)."""
    etype = entry.get("type")
    if etype == "message":
        msg = _field(entry, "message", (dict,))
        _field(msg, "role", (str,)) if isinstance(msg, dict) and "role" in msg else None
        if "role" not in msg:
            raise errors.InvalidParams(
                "Invalid params for session/append: entry.message.role: missing required field",
                {"field": "entry.message.role", "reason": "missing required field"},
            )
        return lambda mgr: mgr.append_message(msg)
    if etype == "thinking_level_change":
        level = _field(entry, "thinkingLevel", (str,), required=False)
        return lambda mgr: mgr.append_thinking_level_change(level)
    if etype == "model_change":
        model = _field(entry, "model", (str,))
        role = _field(entry, "role", (str,), required=False)
        return lambda mgr: mgr.append_model_change(model, role)
    if etype == "compaction":
        summary = _field(entry, "summary", (str,))
        short = _field(entry, "shortSummary", (str,), required=False)
        first = _field(entry, "firstKeptEntryId", (str,))
        tokens = _field(entry, "tokensBefore", (int, float))
        return lambda mgr: mgr.append_compaction(
            summary,
            short,
            first,
            tokens,
            entry.get("details"),
            entry.get("fromExtension"),
            entry.get("preserveData"),
        )
    if etype == "custom":
        ctype = _field(entry, "customType", (str,))
        return lambda mgr: mgr.append_custom_entry(ctype, entry.get("data"))
    if etype == "custom_message":
        ctype = _field(entry, "customType", (str,))
        content = _field(entry, "content", (str, list))
        display = _field(entry, "display", (bool,))
        return lambda mgr: mgr.append_custom_message_entry(
            ctype, content, display, entry.get("details"), entry.get("attribution")
        )
    if etype == "ttsr_injection":
        rules = entry.get("injectedRules", entry.get("ruleNames", _MISSING))
        if rules is _MISSING or not isinstance(rules, list) or not all(isinstance(r, str) for r in rules):
            raise errors.InvalidParams(
                "Invalid params for session/append: entry.injectedRules: expected an array of strings",
                {"field": "entry.injectedRules", "reason": "expected array of strings"},
            )
        return lambda mgr: mgr.append_ttsr_injection(rules)
    if etype == "session_init":
        init = {k: v for k, v in entry.items() if k not in ("type", "id", "parentId", "timestamp")}
        if isinstance(entry.get("init"), dict):
            init = entry["init"]
        return lambda mgr: mgr.append_session_init(init)
    if etype == "mode_change":
        mode = _field(entry, "mode", (str,))
        data = _field(entry, "data", (dict,), required=False)
        return lambda mgr: mgr.append_mode_change(mode, data)
    allowed = ", ".join(t.AppendEntryType.__args__)  # type: ignore[attr-defined]
    raise errors.InvalidParams(
        f"Invalid params for session/append: entry.type must be one of {allowed}, got {etype!r}",
        {"field": "entry.type", "reason": f"expected one of {allowed}"},
    )


async def append(ls: SessionTreeServer, p: t.AppendParams) -> t.AppendResult:
    session = ls.registry.get(p.session)
    do = appender(p.entry)

    def work() -> tuple[str, str | None, t.EntrySummary]:
        manager = session.manager
        # External appends first, so expectedLeafId is checked against the file's state.
        manager.sync_before_write()
        old = manager.get_leaf_id()
        if p.expected_leaf_id is not t.ABSENT and p.expected_leaf_id != old:
            raise ConflictError(
                f"Leaf is {old!r}, expected {p.expected_leaf_id!r}; nothing was appended",
                session.path,
            )
        eid = do(manager)
        return eid, old, mapping.summary(manager, eid)

    try:
        eid, old, summ = await call_write(ls, session, work)
    except ConflictError as exc:
        raise errors.Conflict(
            str(exc), {"path": session.path, "leafId": session.manager.get_leaf_id()}
        ) from exc
    announce_pending(ls, session)  # external entries folded in first are announced first
    notify.did_change(ls, session, [summ], eid, old)
    return t.AppendResult(id=eid, leaf_id=eid)


def setup(server: SessionTreeServer) -> None:
    """Register session/append."""
    register(server, m.SESSION_APPEND, append)
