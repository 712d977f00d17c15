"""Mapping between the core's on-disk dicts and objects and the wire types (CONVENTIONS 4).

Handlers call these so that the file format and the protocol can change independently.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterable
from typing import Any

import sessiontree_protocol.types as t

from sessiontree.core import view as core_view
from sessiontree.core.errors import EntryNotFoundError


def iso(value: Any) -> str:
    """A datetime / epoch seconds / ISO string as `2026-01-01T00:00:00.000Z`."""
    if isinstance(value, str):
        return value
    if isinstance(value, int | float):
        value = dt.datetime.fromtimestamp(value, tz=dt.UTC)
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.UTC)
        value = value.astimezone(dt.UTC)
        return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"
    return str(value)


def _ts(value: Any) -> str:
    return value if isinstance(value, str) else ("" if value is None else str(value))


def summary(manager: Any, entry_id: str) -> t.EntrySummary:
    """The EntrySummary of an entry (raises EntryNotFoundError)."""
    s = core_view.entry_summary(manager, entry_id)
    return t.EntrySummary(
        id=s.id,
        parent_id=s.parent_id,
        type=s.type or "",
        timestamp=_ts(s.timestamp),
        text=s.text,
        role=s.role,
        custom_type=s.custom_type if isinstance(s.custom_type, str) else None,
        label=s.label,
    )


def summary_wire(s: core_view.EntrySummary) -> dict[str, Any]:
    """A core EntrySummary as the wire dict of `t.EntrySummary`, without building the attrs
    object (for bulk replies; equal to `unstructure(summary(...))`)."""
    out: dict[str, Any] = {
        "id": s.id,
        "parentId": s.parent_id,
        "type": s.type or "",
        "timestamp": _ts(s.timestamp),
        "text": s.text,
    }
    if s.role is not None:
        out["role"] = s.role
    if isinstance(s.custom_type, str):
        out["customType"] = s.custom_type
    if s.label is not None:
        out["label"] = s.label
    return out


def summaries(manager: Any, ids: Iterable[str]) -> list[t.EntrySummary]:
    """EntrySummary of each id."""
    return [summary(manager, i) for i in ids]


def row(r: Any) -> t.Row:
    """A core view Row -> wire Row."""
    return t.Row(
        id=r.id,
        parent_id=r.parent_id,
        type=r.type or "",
        depth=r.depth,
        prefix=r.prefix,
        on_active_path=r.on_active_path,
        is_leaf=r.is_leaf,
        text=r.text,
        timestamp=_ts(r.timestamp),
        role=r.role,
        label=r.label,
    )


def session_info(info: Any) -> t.SessionInfo:
    """core SessionInfo -> wire SessionInfo."""
    return t.SessionInfo(
        path=str(info.path),
        id=str(info.id),
        cwd=info.cwd or "",
        first_message=info.first_message,
        message_count=int(info.message_count),
        created=iso(info.created),
        modified=iso(info.modified),
        title=info.title or None,
        parent_session=getattr(info, "parent_session_path", None) or None,
    )


def recent_session(info: Any) -> t.RecentSession:
    """core RecentSessionInfo -> wire RecentSession."""
    return t.RecentSession(path=str(info.path), name=info.name, modified=iso(info.mtime))


def entry_count(manager: Any) -> int:
    """Number of entries without materializing them."""
    index = getattr(manager, "index", None)
    if index is not None:
        try:
            return len(index)
        except TypeError:
            pass
    return len(manager.get_entries())


def last_entry_id(manager: Any) -> str | None:
    """Id of the last entry in file order."""
    index = getattr(manager, "index", None)
    if index is not None and hasattr(index, "last"):
        sk = index.last()
        return sk.id if sk is not None else None
    entries = manager.get_entries()
    return entries[-1]["id"] if entries else None


def has_entry(manager: Any, entry_id: str) -> bool:
    """True when the id exists in the session."""
    index = getattr(manager, "index", None)
    if index is not None:
        return index.skeleton(entry_id) is not None
    return manager.get_entry(entry_id) is not None


def require_entry(manager: Any, entry_id: str) -> None:
    """Raise EntryNotFoundError unless the id exists."""
    if not has_entry(manager, entry_id):
        raise EntryNotFoundError(entry_id)


def open_result(handle: str, manager: Any, restored_leaf_id: str | None = None) -> t.OpenResult:
    """The OpenResult of an open manager."""
    path = manager.get_session_file() if manager.is_persisted() else None
    report = getattr(manager, "load_report", None)
    migrated = getattr(report, "migrated_from", None)
    recovered = None
    if report is not None:
        skipped = int(getattr(report, "skipped_lines", 0) or 0)
        torn = bool(getattr(report, "torn_tail", False))
        if skipped or torn:
            recovered = t.Recovered(
                skipped_lines=skipped,
                torn_tail=torn,
                quarantined_copy=getattr(report, "quarantined_copy", None),
            )
    return t.OpenResult(
        session=handle,
        header=dict(manager.get_header() or {}),
        leaf_id=manager.get_leaf_id(),
        entry_count=entry_count(manager),
        path=os.fspath(path) if path else None,
        migrated_from=migrated if isinstance(migrated, int) else None,
        recovered=recovered,
        restored_leaf_id=restored_leaf_id,
    )


def context_result(ctx: Any, llm_messages: list[dict[str, Any]] | None) -> t.ContextResult:
    """core SessionContext -> wire ContextResult."""
    return t.ContextResult(
        messages=list(ctx.messages),
        thinking_level=ctx.thinking_level if isinstance(ctx.thinking_level, str) else "off",
        models=dict(ctx.models),
        injected_ttsr_rules=list(ctx.injected_ttsr_rules),
        mode=ctx.mode,
        mode_data=ctx.mode_data,
        service_tier=getattr(ctx, "service_tier", None),
        active_context_name=getattr(ctx, "active_context_name", None),
        active_context_tenant=getattr(ctx, "active_context_tenant", None),
        selected_mcp_tool_names=list(getattr(ctx, "selected_mcp_tool_names", []) or []),
        has_persisted_mcp_tool_selection=bool(getattr(ctx, "has_persisted_mcp_tool_selection", False)),
        llm_messages=llm_messages,
    )
