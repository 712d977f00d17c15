"""session/append: entries from editor-embedded agents, with compare-and-append.

The params are typed: `entry` is one of the entry kinds of `sessiontree_protocol.types`
(`AppendEntry`, told apart by `type`), structured and checked before the handler runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, assert_never

from sessiontree_protocol import methods as m
from sessiontree_protocol import types as t

from sessiontree.core.errors import ConflictError
from sessiontree.lsp import errors, mapping, notify
from sessiontree.lsp.features._common import call_write
from sessiontree.lsp.features.watch import announce_pending
from sessiontree.lsp.handlers import register
from sessiontree.lsp.server import SessionTreeServer

if TYPE_CHECKING:
    from sessiontree.core.session import SessionManager


def append_entry(manager: SessionManager, entry: t.AppendEntry) -> str:
    """Append `entry` through the manager's constructor of its kind; the new entry's id."""
    if isinstance(entry, t.MessageEntry):
        return manager.append_message(entry.message.as_sent)
    if isinstance(entry, t.ThinkingLevelChangeEntry):
        return manager.append_thinking_level_change(entry.thinking_level)
    if isinstance(entry, t.ModelChangeEntry):
        return manager.append_model_change(entry.model, entry.role)
    if isinstance(entry, t.CompactionEntry):
        return manager.append_compaction(
            entry.summary,
            entry.short_summary,
            entry.first_kept_entry_id,
            entry.tokens_before,  # type: ignore[arg-type]  # an integer, or a number as sent
            entry.details,
            entry.from_extension,
            entry.preserve_data,
        )
    if isinstance(entry, t.CustomEntry):
        return manager.append_custom_entry(entry.custom_type, entry.data)
    if isinstance(entry, t.CustomMessageEntry):
        return manager.append_custom_message_entry(
            entry.custom_type, entry.content, entry.display, entry.details, entry.attribution
        )
    if isinstance(entry, t.TtsrInjectionEntry):
        return manager.append_ttsr_injection(entry.injected_rules)
    if isinstance(entry, t.SessionInitEntry):
        return manager.append_session_init(entry.init if isinstance(entry.init, dict) else entry.as_sent)
    if isinstance(entry, t.ModeChangeEntry):
        return manager.append_mode_change(entry.mode, entry.data)
    assert_never(entry)


async def append(ls: SessionTreeServer, p: t.AppendParams) -> t.AppendResult:
    """Append one entry, after the file's external appends, if the leaf is the expected one."""
    session = ls.registry.get(p.session)

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
        eid = append_entry(manager, p.entry)
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
