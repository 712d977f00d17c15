"""Mapping between the core's on-disk dicts and objects and the wire types (CONVENTIONS 4).

Handlers call these so that the file format and the protocol can change independently.

Everything that leaves here is valid UTF-8 JSON: a lone surrogate (a JSON ``\\udxxx``
escape without the other half of its pair, which a JavaScript agent writes when it cuts
a string inside an emoji) is kept in the core's values, so that rewrites keep it, but is
sent as U+FFFD (docs/storage-format.md). Strings of entries go through `_s`, whole values
through `wire_safe`, pre-serialized JSON through `dumps_wire`.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from collections.abc import Iterable
from typing import Any

import orjson
import sessiontree_protocol.types as t

from sessiontree.core import view as core_view
from sessiontree.core.discovery import display_name_of_manager
from sessiontree.core.errors import EntryNotFoundError
from sessiontree.core.format.jsonl import scrub_surrogates, scrub_text
from sessiontree.core.view.tree_art import SHORT_ART_WIDTH


def _s(value: Any) -> Any:
    """A string as it is sent (lone surrogates as U+FFFD); anything else unchanged."""
    return scrub_text(value) if type(value) is str else value


def wire_safe(value: Any) -> Any:
    """A JSON-like value as it is sent: itself when every string has a UTF-8 form, else a
    copy with lone surrogates as U+FFFD."""
    return scrub_surrogates(value)


def dumps_wire(value: Any) -> bytes:
    """`orjson.dumps(value)`, with lone surrogates as U+FFFD when there are any (and the
    stdlib encoder for what orjson cannot write, such as integers beyond 64 bits)."""
    try:
        return orjson.dumps(value)
    except TypeError:  # orjson.JSONEncodeError included
        pass
    clean = scrub_surrogates(value)
    try:
        return orjson.dumps(clean)
    except TypeError:
        return json.dumps(clean, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


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
        id=_s(s.id),
        parent_id=_s(s.parent_id),
        type=_s(s.type) or "",
        timestamp=_s(_ts(s.timestamp)),
        text=s.text,
        role=_s(s.role),
        custom_type=_s(s.custom_type) if isinstance(s.custom_type, str) else None,
        label=s.label,
    )


def summary_wire(s: core_view.EntrySummary) -> dict[str, Any]:
    """A core EntrySummary as the wire dict of `t.EntrySummary`, without building the attrs
    object (for bulk replies; equal to `unstructure(summary(...))` once serialized with
    `dumps_wire`, which replaces lone surrogates only when there are any)."""
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
        id=_s(r.id),
        parent_id=_s(r.parent_id),
        type=_s(r.type) or "",
        depth=r.depth,
        prefix=r.prefix,
        on_active_path=r.on_active_path,
        is_leaf=r.is_leaf,
        text=r.text,
        timestamp=_s(_ts(r.timestamp)),
        role=_s(r.role),
        label=r.label,
        short_prefix=r.short_prefix if len(r.prefix) > SHORT_ART_WIDTH else None,
        marks_leaf=True if r.marks_leaf else None,
        hidden_leaf=r.hidden_leaf,
        head_depth=r.head_depth,
    )


def view_result(page: Any) -> t.ViewResult:
    """A core ViewPage -> wire ViewResult."""
    return t.ViewResult(
        rows=[row(r) for r in page.rows],
        total=page.total,
        selected_index=page.selected_index,
        leaf_id=_s(page.leaf_id),
        complete=None if page.complete else False,
    )


def preview_result(found: Any) -> t.PreviewResult:
    """A core `view.preview.Preview` -> wire PreviewResult."""
    return t.PreviewResult(
        rows=[row(r) for r in found.rows],
        selected_index=found.selected_index,
        leaf_id=_s(found.leaf_id),
        above=found.above,
        bytes=found.bytes_read,
        indexed=True if found.reason == "indexed" else None,
    )


def view_result_wire(page: Any) -> dict[str, Any]:
    """A core ViewPage as the wire dict of `t.ViewResult`, without building the attrs objects
    (a page is sent after every click, search, move and change: 500 rows cost about 2 ms
    that way); equal to `unstructure(view_result(page))`."""
    out: dict[str, Any] = {
        "rows": rows_wire(page.rows),
        "total": page.total,
        "selectedIndex": page.selected_index,
        "leafId": _s(page.leaf_id),
    }
    if not page.complete:
        out["complete"] = False
    return out


def preview_result_wire(found: Any) -> dict[str, Any]:
    """A core `view.preview.Preview` as the wire dict of `t.PreviewResult`, made as
    `view_result_wire` makes a page's (equal to `unstructure(preview_result(found))`)."""
    out: dict[str, Any] = {
        "rows": rows_wire(found.rows),
        "selectedIndex": found.selected_index,
        "leafId": _s(found.leaf_id),
        "above": found.above,
        "bytes": found.bytes_read,
    }
    if found.reason == "indexed":
        out["indexed"] = True
    return out


def rows_wire(page_rows: Iterable[Any]) -> list[dict[str, Any]]:
    """Core `Row`s as the wire dicts of `t.Row`."""
    rows: list[dict[str, Any]] = []
    append = rows.append
    for r in page_rows:
        d: dict[str, Any] = {
            "id": _s(r.id),
            "parentId": _s(r.parent_id),
            "type": _s(r.type) or "",
            "depth": r.depth,
            "prefix": r.prefix,
            "onActivePath": r.on_active_path,
            "isLeaf": r.is_leaf,
            "text": r.text,
            "timestamp": _s(_ts(r.timestamp)),
        }
        role = r.role
        if role is not None:
            d["role"] = _s(role)
        if r.label is not None:
            d["label"] = r.label
        if len(r.prefix) > SHORT_ART_WIDTH:
            d["shortPrefix"] = r.short_prefix
        if r.marks_leaf:
            d["marksLeaf"] = True
        if r.hidden_leaf is not None:
            d["hiddenLeaf"] = r.hidden_leaf
        if r.head_depth is not None:
            d["headDepth"] = r.head_depth
        append(d)
    return rows


def labels_result(items: Iterable[tuple[str, str]]) -> t.LabelsResult:
    """(target id, label) pairs -> wire LabelsResult."""
    return t.LabelsResult(labels=[t.LabelInfo(target_id=_s(k), label=_s(v)) for k, v in items])


def session_info(info: Any) -> t.SessionInfo:
    """core SessionInfo -> wire SessionInfo."""
    return t.SessionInfo(
        path=_s(str(info.path)),
        id=_s(str(info.id)),
        cwd=_s(info.cwd) or "",
        first_message=_s(info.first_message),
        message_count=int(info.message_count),
        created=_s(iso(info.created)),
        modified=_s(iso(info.modified)),
        title=_s(info.title) or None,
        parent_session=_s(info.parent_session_path) or None,
        display_name=_s(info.display_name),
        agent=getattr(info, "agent", "pi"),
        resume_command=getattr(info, "resume", None),
        dialect=getattr(info, "dialect", None) or None,
        parent_id=getattr(info, "parent_id", None),
        parent_kind=getattr(info, "parent_kind", None),
    )


def recent_session(info: Any) -> t.RecentSession:
    """core RecentSessionInfo -> wire RecentSession."""
    return t.RecentSession(path=_s(str(info.path)), name=_s(info.name), modified=_s(iso(info.mtime)))


def entry_count(manager: Any) -> int:
    """Number of entries, from the index (nothing materialized)."""
    return len(manager.index)


def last_entry_id(manager: Any) -> str | None:
    """Id of the last entry in file order."""
    sk = manager.index.last()
    return sk.id if sk is not None else None


def has_entry(manager: Any, entry_id: str) -> bool:
    """True when the id exists in the session."""
    return entry_id in manager.index


def require_entry(manager: Any, entry_id: str) -> None:
    """Raise EntryNotFoundError unless the id exists."""
    if not has_entry(manager, entry_id):
        raise EntryNotFoundError(entry_id)


def open_result(handle: str, manager: Any, restored_leaf_id: str | None = None) -> t.OpenResult:
    """The OpenResult of an open manager."""
    path = manager.get_session_file() if manager.is_persisted() else None
    report = manager.load_report
    migrated = report.migrated_from
    recovered = None
    if report.skipped_lines or report.torn_tail:
        recovered = t.Recovered(
            skipped_lines=report.skipped_lines,
            torn_tail=report.torn_tail,
            quarantined_copy=report.quarantined_copy,
        )
    return t.OpenResult(
        session=handle,
        header=wire_safe(dict(manager.get_header() or {})),
        leaf_id=_s(manager.get_leaf_id()),
        entry_count=entry_count(manager),
        path=os.fspath(path) if path else None,
        migrated_from=migrated if isinstance(migrated, int) else None,
        recovered=recovered,
        restored_leaf_id=restored_leaf_id,
        display_name=_s(display_name_of_manager(manager)),
        agent=getattr(manager, "agent", None),
        resume_command=manager.get_resume_command() if hasattr(manager, "get_resume_command") else None,
    )


def context_result(
    ctx: Any, llm_messages: list[dict[str, Any]] | None, messages: list[Any] | None = None
) -> t.ContextResult:
    """core SessionContext -> wire ContextResult (``messages``: a page of them, else all)."""
    return t.ContextResult(
        messages=wire_safe(list(ctx.messages) if messages is None else messages),
        thinking_level=_s(ctx.thinking_level) if isinstance(ctx.thinking_level, str) else "off",
        models=wire_safe(dict(ctx.models)),
        injected_ttsr_rules=wire_safe(list(ctx.injected_ttsr_rules)),
        mode=_s(ctx.mode),
        mode_data=wire_safe(ctx.mode_data),
        service_tier=_s(ctx.service_tier),
        active_context_name=_s(ctx.active_context_name),
        active_context_tenant=_s(ctx.active_context_tenant),
        selected_mcp_tool_names=wire_safe(list(ctx.selected_mcp_tool_names)),
        has_persisted_mcp_tool_selection=bool(ctx.has_persisted_mcp_tool_selection),
        llm_messages=wire_safe(llm_messages),
    )


def search_result(page: Any, indexed_files: int, index_bytes: int, busy: bool = False) -> t.SearchResult:
    """A `core.fts.SearchPage` as the result of `session/search`."""
    hits = [
        t.SearchHit(
            path=h.session_path,
            session_id=h.session_id,
            session_name=wire_safe(h.session_name) if h.session_name is not None else None,
            cwd=h.cwd,
            agent=h.agent,
            entry_id=h.entry_id,
            parent_id=h.parent_id,
            role=h.role,
            type=h.type,
            timestamp=h.timestamp,
            score=h.score,
            snippet=wire_safe(h.snippet),
            highlights=h.highlights,
            label=h.label,
            ancestors=list(h.ancestors),
            depth=h.depth,
            path_labels=[
                t.SearchPathLabel(id=pl["id"], label=wire_safe(pl["label"])) for pl in h.path_labels
            ],
            on_active_branch=h.on_active_branch,
        )
        for h in page.hits
    ]
    return t.SearchResult(
        hits=hits,
        total=page.total,
        capped=page.capped,
        offset=page.offset,
        next_offset=page.next_offset,
        indexed_files=indexed_files,
        index_bytes=index_bytes,
        index_busy=True if busy else None,
    )


def restore_file(f: Any, contents: bool = False) -> t.RestoreFile:
    """A `core.checkpoints.FilePlan` on the wire (the paths and diffs of the user's files:
    text decoded by the core, lone surrogates shown as U+FFFD); with ``contents``, the text
    its diff leads to as well."""
    return t.RestoreFile(
        path=scrub_text(f.path),
        display_path=scrub_text(f.display),
        status=f.status,
        diff=scrub_text(f.diff),
        hash_before=f.hash_before,
        hash_after=f.hash_after,
        reason=scrub_text(f.reason),
        conflicts=f.conflicts,
        base=scrub_text(f.base),
        target=scrub_text(f.target),
        after=scrub_text(f.shown) if contents and f.shown is not None else None,
    )


def restore_preview_result(
    plan: Any, conversation: bool, files: bool, contents: bool = False
) -> t.RestorePreviewResult:
    """A `core.checkpoints.RestorePlan` as the answer of `session/restorePreview`."""
    return t.RestorePreviewResult(
        target_id=plan.target_id,
        base_id=plan.base_id,
        common_ancestor_id=plan.ancestor_id,
        leaf_id=plan.leaf_id,
        files=[restore_file(f, contents) for f in plan.files] if files else [],
        commands=[t.RestoreCommand(entry_id=eid, command=scrub_text(cmd)) for eid, cmd in plan.commands]
        if files
        else [],
        conversation=conversation,
        preview_token=plan.token,
    )
