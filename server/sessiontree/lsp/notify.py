"""Notifications after changes, in one place (docs/protocol.md "Notifications").

Each helper sends the notification and emits the matching registry event, so that other
parts (the live follower, tests) can hook into changes through `Registry.subscribe`.
Changes other processes made go out through the same helpers (features/watch.py):
`did_change(..., source="external")`, `did_reload` and `did_change_list`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

import sessiontree_protocol.methods as m
import sessiontree_protocol.types as t

from sessiontree.lsp.registry import OpenSession

if TYPE_CHECKING:
    from sessiontree.lsp.server import SessionTreeServer


def did_change(
    ls: SessionTreeServer,
    session: OpenSession,
    appended: list[t.EntrySummary],
    leaf_id: str | None,
    old_leaf_id: str | None,
    source: Literal["local", "external"] = "local",
) -> None:
    """`session/didChange`: entries were appended."""
    ls.notify(
        m.SESSION_DID_CHANGE,
        t.DidChangeParams(
            session=session.handle, appended=appended, leaf_id=leaf_id, old_leaf_id=old_leaf_id, source=source
        ),  # type: ignore[arg-type]
    )
    ls.registry.emit(
        "changed", session, appended=appended, leaf_id=leaf_id, old_leaf_id=old_leaf_id, source=source
    )


def did_navigate(
    ls: SessionTreeServer,
    session: OpenSession,
    new_leaf_id: str | None,
    old_leaf_id: str | None,
    summary_entry: t.EntrySummary | None = None,
    from_extension: bool | None = None,
) -> None:
    """`session/didNavigate`: the leaf moved."""
    ls.notify(
        m.SESSION_DID_NAVIGATE,
        t.DidNavigateParams(
            session=session.handle,
            new_leaf_id=new_leaf_id,
            old_leaf_id=old_leaf_id,
            summary_entry=summary_entry,
            from_extension=from_extension,
        ),
    )
    ls.registry.emit("navigated", session, new_leaf_id=new_leaf_id, old_leaf_id=old_leaf_id)


def did_change_label(ls: SessionTreeServer, session: OpenSession, target_id: str, label: str | None) -> None:
    """`session/didChangeLabel`: a label was set or cleared."""
    ls.notify(
        m.SESSION_DID_CHANGE_LABEL,
        t.DidChangeLabelParams(session=session.handle, target_id=target_id, label=label or None),
    )
    ls.registry.emit("labelled", session, target_id=target_id, label=label)


def did_reload(ls: SessionTreeServer, session: OpenSession, reason: str) -> None:
    """`session/didReload`: the file was replaced or rewritten underneath."""
    ls.notify(m.SESSION_DID_RELOAD, t.DidReloadParams(session=session.handle, reason=reason))
    ls.registry.emit("reloaded", session, reason=reason)


def did_complete_search(ls: SessionTreeServer, session: OpenSession, done: dict[str, object]) -> None:
    """`session/didCompleteSearch`: a search answered in part has every row now."""
    params = t.DidCompleteSearchParams(
        session=session.handle,
        search=str(done["search"]),
        filter=done["filter"],  # type: ignore[arg-type]
        leaf_id=done["leafId"],  # type: ignore[arg-type]
        total=int(done["total"]),  # type: ignore[call-overload]
    )
    ls.notify(m.SESSION_DID_COMPLETE_SEARCH, params)
    ls.registry.emit("searched", session, **done)


def did_change_list(ls: SessionTreeServer, cwd: str | None = None) -> None:
    """`session/didChangeList`: session files appeared or vanished."""
    ls.notify(m.SESSION_DID_CHANGE_LIST, t.DidChangeListParams(cwd=cwd))
