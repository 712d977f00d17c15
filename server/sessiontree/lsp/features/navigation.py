"""Navigation: branch, resetLeaf, branchWithSummary, prepareNavigation, navigate,
branchToNewSession, createBranchedSession, and the additions history / back.

Every leaf move is remembered in the navigation state (outside the session directories)
so that it survives a daemon restart, and recorded as a jump for `session/back`.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from sessiontree_protocol import methods as m
from sessiontree_protocol import types as t

from sessiontree.core.errors import EntryNotFoundError
from sessiontree.core.tree import navigation as core_nav
from sessiontree.lsp import errors, mapping, notify
from sessiontree.lsp.features._common import call_write, record_jump, remember_leaf, state_for
from sessiontree.lsp.handlers import register
from sessiontree.lsp.registry import OpenSession
from sessiontree.lsp.server import SessionTreeServer
from sessiontree.lsp.summarizer import run_summarizer


def _move_leaf(manager: Any, leaf: str | None) -> None:
    if leaf is None:
        manager.reset_leaf()
    else:
        manager.branch(leaf)


def _run_summarizer(ls: SessionTreeServer, entries: list[dict[str, Any]], instructions: str | None) -> str:
    cmd = ls.config.summarizer_command
    if not cmd:
        raise errors.SummaryUnavailable(
            "A summary was requested but none was given and no summarizerCommand is configured"
        )
    payload = mapping.dumps_wire({"entries": entries, "customInstructions": instructions})
    return run_summarizer(cmd, payload, ls.config.summarizer_timeout)


async def _moved(
    ls: SessionTreeServer,
    session: OpenSession,
    old: str | None,
    new: str | None,
    summary: t.EntrySummary | None = None,
    from_extension: bool | None = None,
) -> None:
    if old != new or summary is not None:
        notify.did_navigate(ls, session, new, old, summary, from_extension)


async def branch(ls: SessionTreeServer, p: t.BranchParams) -> t.LeafResult:
    session = ls.registry.get(p.session)

    def work() -> tuple[str | None, str | None]:
        manager = session.manager
        mapping.require_entry(manager, p.entry_id)
        old = manager.get_leaf_id()
        manager.branch(p.entry_id)
        if old != p.entry_id:
            record_jump(ls, session, old)
        return old, manager.get_leaf_id()

    old, new = await call_write(ls, session, work)
    await _moved(ls, session, old, new)
    return t.LeafResult(leaf_id=new)


async def reset_leaf(ls: SessionTreeServer, p: t.SessionParams) -> t.LeafResult:
    session = ls.registry.get(p.session)

    def work() -> str | None:
        old = session.manager.get_leaf_id()
        session.manager.reset_leaf()
        if old is not None:
            record_jump(ls, session, old)
        return old  # type: ignore[no-any-return]

    old = await call_write(ls, session, work)
    await _moved(ls, session, old, None)
    return t.LeafResult(leaf_id=None)


async def branch_with_summary(ls: SessionTreeServer, p: t.BranchWithSummaryParams) -> t.EntryIdResult:
    session = ls.registry.get(p.session)

    def work() -> tuple[str, str | None, t.EntrySummary]:
        manager = session.manager
        if p.branch_from_id is not None:
            mapping.require_entry(manager, p.branch_from_id)
        old = manager.get_leaf_id()
        eid = manager.branch_with_summary(p.branch_from_id, p.summary, p.details, p.from_extension)
        record_jump(ls, session, old, eid)
        return eid, old, mapping.summary(manager, eid)

    eid, old, summ = await call_write(ls, session, work)
    notify.did_change(ls, session, [summ], eid, old)
    notify.did_navigate(ls, session, eid, old, summ, p.from_extension)
    return t.EntryIdResult(entry_id=eid)


async def prepare_navigation(
    ls: SessionTreeServer, p: t.PrepareNavigationParams
) -> t.PrepareNavigationResult:
    session = ls.registry.get(p.session)

    def work() -> t.PrepareNavigationResult:
        manager = session.manager
        mapping.require_entry(manager, p.target_id)
        prep = core_nav.prepare_navigation(manager, p.target_id)
        ids = [e["id"] for e in prep.entries_to_summarize]
        return t.PrepareNavigationResult(
            target_id=p.target_id,
            old_leaf_id=prep.old_leaf_id,
            common_ancestor_id=prep.common_ancestor_id,
            entries_to_summarize=mapping.summaries(manager, ids),
        )

    return await ls.registry.call(session, work)


async def navigate(ls: SessionTreeServer, p: t.NavigateParams) -> t.NavigateResult:
    session = ls.registry.get(p.session)
    summary = p.summary
    if p.summarize and summary is None:
        # Collect what would be summarized, then run the summarizer off the session lock.
        def collect() -> list[dict[str, Any]]:
            mapping.require_entry(session.manager, p.target_id)
            return core_nav.prepare_navigation(session.manager, p.target_id).entries_to_summarize

        abandoned = await ls.registry.call(session, collect)
        if abandoned:
            summary = await asyncio.to_thread(_run_summarizer, ls, abandoned, p.custom_instructions)

    def work() -> tuple[core_nav.NavigationResult, str | None, t.EntrySummary | None]:
        manager = session.manager
        mapping.require_entry(manager, p.target_id)
        old = manager.get_leaf_id()
        res = core_nav.navigate_tree(
            manager,
            p.target_id,
            summarize=p.summarize,
            summary=summary,
            summary_details=p.summary_details,
        )
        sid = res.summary_entry["id"] if res.summary_entry is not None else None
        summ = mapping.summary(manager, sid) if sid is not None else None
        if (not res.cancelled and manager.get_leaf_id() != old) or summ is not None:
            record_jump(ls, session, old, sid)
        return res, old, summ

    res, old, summ = await call_write(ls, session, work)
    new = session.manager.get_leaf_id()
    if summ is not None:
        notify.did_change(ls, session, [summ], new, old)
    if not res.cancelled:
        await _moved(ls, session, old, new, summ)
    return t.NavigateResult(
        cancelled=res.cancelled,
        new_leaf_id=new,
        old_leaf_id=old,
        editor_text=res.editor_text,
        summary_entry=summ,
    )


async def branch_to_new_session(
    ls: SessionTreeServer, p: t.BranchToNewSessionParams
) -> t.BranchToNewSessionResult:
    session = ls.registry.get(p.session)

    def work() -> core_nav.BranchResult:
        mapping.require_entry(session.manager, p.entry_id)
        return core_nav.branch_to_new_session(session.manager, p.entry_id)

    res = await call_write(ls, session, work)
    path = session.manager.get_session_file() if session.manager.is_persisted() else None
    ls.registry.rekey(session, os.path.realpath(path) if path else None)
    await ls.registry.call(session, lambda: remember_leaf(ls, session) if path else None)
    return t.BranchToNewSessionResult(
        selected_text=res.selected_text,
        session=session.handle,
        path=path,
    )


async def create_branched_session(
    ls: SessionTreeServer, p: t.CreateBranchedSessionParams
) -> t.CreateBranchedSessionResult:
    session = ls.registry.get(p.session)

    def work() -> str | None:
        mapping.require_entry(session.manager, p.leaf_id)
        return session.manager.create_branched_session(p.leaf_id)  # type: ignore[no-any-return]

    path = await call_write(ls, session, work)
    if path:
        ls.registry.rekey(session, os.path.realpath(path))
        await ls.registry.call(session, lambda: remember_leaf(ls, session))
    return t.CreateBranchedSessionResult(path=path)


async def history(ls: SessionTreeServer, p: t.SessionParams) -> t.HistoryResult:
    session = ls.registry.get(p.session)
    store, key = state_for(ls, session)
    items, index = store.history(key)
    return t.HistoryResult(
        entries=[
            t.HistoryEntry(
                leaf_id=i.get("leafId"),
                previous_leaf_id=i.get("previousLeafId"),
                at=str(i.get("at", "")),
                summary_entry_id=i.get("summaryEntryId"),
            )
            for i in items
        ],
        index=index,
    )


async def back(ls: SessionTreeServer, p: t.SessionParams) -> t.NavigateResult:
    session = ls.registry.get(p.session)

    def work() -> tuple[bool, str | None, str | None]:
        manager = session.manager
        store, key = state_for(ls, session)
        items, index = store.history(key)
        old = manager.get_leaf_id()
        if index <= 0 or index > len(items):
            return True, old, old
        target = items[index - 1].get("previousLeafId")
        if target is not None and not mapping.has_entry(manager, target):
            raise EntryNotFoundError(target)
        _move_leaf(manager, target)
        store.step_back(key, manager.get_leaf_id(), mapping.last_entry_id(manager))
        return False, old, manager.get_leaf_id()

    cancelled, old, new = await call_write(ls, session, work)
    if not cancelled:
        await _moved(ls, session, old, new)
    return t.NavigateResult(cancelled=cancelled, new_leaf_id=new, old_leaf_id=old)


def setup(server: SessionTreeServer) -> None:
    """Register the navigation methods."""
    register(server, m.SESSION_BRANCH, branch)
    register(server, m.SESSION_RESET_LEAF, reset_leaf)
    register(server, m.SESSION_BRANCH_WITH_SUMMARY, branch_with_summary)
    register(server, m.SESSION_PREPARE_NAVIGATION, prepare_navigation)
    register(server, m.SESSION_NAVIGATE, navigate)
    register(server, m.SESSION_BRANCH_TO_NEW_SESSION, branch_to_new_session)
    register(server, m.SESSION_CREATE_BRANCHED_SESSION, create_branched_session)
    register(server, m.SESSION_HISTORY, history)
    register(server, m.SESSION_BACK, back)
