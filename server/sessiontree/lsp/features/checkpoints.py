"""Checkpoints: `session/restorePreview`, `session/restore`, `session/restoreUndo`
(docs/checkpoints.md), and the recovery of a restore a crash left half done.

Files and conversation are independent: the files go through `core.checkpoints` (a plan
made under the session's lock, re-checked against the disk when applied), the conversation
is `session/navigate` to the target (no summary). Files are written only inside the
workspace folders and `allowedRoots`, never in the agents' directories or sessiontree's
own (`core.checkpoints.never_written`).
"""

from __future__ import annotations

import logging
import os
from typing import Any

from sessiontree_protocol import methods as m
from sessiontree_protocol import types as t

from sessiontree.core import checkpoints as ck
from sessiontree.core.errors import AccessDeniedError
from sessiontree.core.sources.foreign import claude_root
from sessiontree.core.tuning import bound
from sessiontree.lsp import errors, mapping
from sessiontree.lsp.features import navigation
from sessiontree.lsp.handlers import register
from sessiontree.lsp.registry import OpenSession
from sessiontree.lsp.server import SessionTreeServer

log = logging.getLogger(__name__)


def store(ls: SessionTreeServer) -> ck.SnapshotStore:
    """The connection's checkpoint store (sessiontree's data dir), made on first use."""
    found = getattr(ls, "checkpoint_store", None)
    if found is None:
        found = ck.SnapshotStore()
        ls.checkpoint_store = found  # type: ignore[attr-defined]
    return found  # type: ignore[no-any-return]


def roots(ls: SessionTreeServer) -> list[str]:
    """Where a restore may write: the workspace folders and the configured `allowedRoots`."""
    return [*ls.workspace_roots, *(ls.config.allowed_roots or [])]


def excluded(ls: SessionTreeServer) -> list[str]:
    """Where it never writes."""
    return [*ck.never_written(ls.config.agent_dir), str(ls.config.resolved_state_dir())]


def _claude_history() -> str:
    return os.path.join(os.path.dirname(claude_root()), "file-history")


def _plan(
    ls: SessionTreeServer, session: OpenSession, target_id: str, include_unknown: bool
) -> ck.RestorePlan:
    manager = session.manager
    mapping.require_entry(manager, target_id)
    st = store(ls)
    base = ck.files_at(st, manager.get_session_file(), manager.get_leaf_id())
    return ck.plan_restore(
        manager,
        target_id,
        roots(ls),
        base_id=base,
        include_unknown=include_unknown,
        excluded=excluded(ls),
        store=st,
        claude_history=_claude_history(),
    )


async def restore_preview(ls: SessionTreeServer, p: t.RestorePreviewParams) -> t.RestorePreviewResult:
    session = ls.registry.get(p.session)

    def work() -> t.RestorePreviewResult:
        plan = _plan(ls, session, p.target_id, p.include_unknown)
        return mapping.restore_preview_result(plan, p.conversation, p.files, p.contents)

    result: t.RestorePreviewResult = await ls.registry.call(session, work)
    return result


async def restore(ls: SessionTreeServer, p: t.RestoreParams) -> t.RestoreResult:
    session = ls.registry.get(p.session)
    if p.files and p.preview_token is None and p.hashes is None:
        raise errors.InvalidParams(
            "session/restore of files needs the preview's previewToken or hashes",
            {"field": "previewToken", "reason": "missing"},
        )
    result = t.RestoreResult(backup_id=None)
    if p.files:
        where, never = roots(ls), excluded(ls)
        for h in p.hashes or []:
            if ck.inside_roots(h.path, where, never) is None:
                raise AccessDeniedError(
                    f"Access denied: {h.path} is outside the workspace folders",
                    h.path,
                    "is outside the workspace folders",
                )

        def work() -> ck.Applied:
            plan = _plan(ls, session, p.target_id, p.include_unknown)
            expected: dict[str, Any] | None = (
                {h.path: h.hash_before for h in p.hashes} if p.hashes is not None else None
            )
            return ck.apply_plan(
                plan, store(ls), where, expected=expected, token=p.preview_token, excluded=never
            )

        applied: ck.Applied = await ls.registry.call(session, work)
        result.written = [mapping.restore_file(f) for f in applied.written]
        result.skipped = [mapping.restore_file(f) for f in applied.skipped]
        result.backup_id = applied.record.id if applied.written else None
    if p.conversation:
        nav = await navigation.navigate(ls, t.NavigateParams(session=p.session, target_id=p.target_id))
        result.old_leaf_id, result.new_leaf_id = nav.old_leaf_id, nav.new_leaf_id
    return result


async def restore_undo(ls: SessionTreeServer, p: t.RestoreUndoParams) -> t.RestoreUndoResult:
    session = ls.registry.get(p.session)

    def work() -> ck.Applied | None:
        return ck.undo_last(
            store(ls), session.manager.get_session_file(), roots(ls), excluded=excluded(ls), dry_run=p.dry_run
        )

    done: ck.Applied | None = await ls.registry.call(session, work)
    if done is None:
        return t.RestoreUndoResult(undone=False, backup_id=None)
    return t.RestoreUndoResult(
        undone=not p.dry_run,
        backup_id=done.record.undoes,
        written=[mapping.restore_file(f) for f in done.written],
        skipped=[mapping.restore_file(f) for f in done.skipped],
    )


def capture(ls: SessionTreeServer, manager: Any, entry_ids: list[str]) -> None:
    """Snapshot the files of the write and edit results another process just appended
    (the live follower calls it under the session's lock)."""
    if roots(ls):
        ck.capture_appended(store(ls), manager, entry_ids, roots(ls), excluded(ls))


#: Sessions up to this many entries have the calls a restore preview reads read in idle time
#: (`SESSIONTREE_CHECKPOINT_WARM_MAX`): what they keep grows with the session.
CHECKPOINT_WARM_MAX = 300_000


def worth_warming(ls: SessionTreeServer, manager: Any) -> bool:
    """Whether the warm-up reads ahead what a first restore preview of ``manager`` reads:
    a session of a workspace folder (its cwd inside one), not too big."""
    cwd = manager.get_cwd() if hasattr(manager, "get_cwd") else None
    where = ls.workspace_roots
    if (
        not cwd
        or not where
        or len(manager.index) > bound("SESSIONTREE_CHECKPOINT_WARM_MAX", CHECKPOINT_WARM_MAX)
    ):
        return False
    real = os.path.realpath(cwd)
    return any(
        real == os.path.realpath(r) or real.startswith(os.path.realpath(r).rstrip(os.sep) + os.sep)
        for r in where
    )


def recover_at_start(ls: SessionTreeServer) -> None:
    """A restore a crash left half done is rolled back before anything else (at `initialize`)."""
    try:
        left = ck.recover(store(ls))
    except OSError as exc:
        log.warning("checkpoint recovery failed: %s", exc)
        return
    if left:
        ls.show_warning(
            f"sessiontree: a restore was interrupted; these files were changed since and left: {left}"
        )


def setup(server: SessionTreeServer) -> None:
    """Register the checkpoint methods."""
    register(server, m.SESSION_RESTORE_PREVIEW, restore_preview)
    register(server, m.SESSION_RESTORE, restore)
    register(server, m.SESSION_RESTORE_UNDO, restore_undo)
