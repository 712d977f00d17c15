"""Params of the server-to-client notifications."""

from __future__ import annotations

import attrs

from sessiontree_protocol.types.base import ChangeSource, ViewFilter, _list, _opt, _req
from sessiontree_protocol.types.shared import EntrySummary

# ---------------------------------------------------------------------------------------
# Notifications


@attrs.define(kw_only=True)
class DidChangeParams:
    """`session/didChange`: entries were appended."""

    session: str = _req("The session handle.")
    appended: list[EntrySummary] = _list("The new entries.")
    leaf_id: str | None = _req("The leaf after the change.", nullable=True)
    old_leaf_id: str | None = _req("The leaf before the change.", nullable=True)
    source: ChangeSource = _req('"local" (this daemon) or "external" (another process).')


@attrs.define(kw_only=True)
class DidNavigateParams:
    """`session/didNavigate`: the leaf moved."""

    session: str = _req("The session handle.")
    new_leaf_id: str | None = _req("The new leaf.", nullable=True)
    old_leaf_id: str | None = _req("The previous leaf.", nullable=True)
    summary_entry: EntrySummary | None = _opt("The branch summary written by the move, if any.")
    from_extension: bool | None = _opt("The summary came from an extension.")


@attrs.define(kw_only=True)
class DidChangeLabelParams:
    """`session/didChangeLabel`: a label was set or cleared."""

    session: str = _req("The session handle.")
    target_id: str = _req("The labelled entry.")
    label: str | None = _opt("The new label (absent: cleared).")


@attrs.define(kw_only=True)
class DidReloadParams:
    """`session/didReload`: the file was replaced or rewritten underneath."""

    session: str = _req("The session handle.")
    reason: str = _req("Why the session was reloaded.")


@attrs.define(kw_only=True)
class DidCompleteSearchParams:
    """`session/didCompleteSearch`: a search answered in part (`partial`) has every row now."""

    session: str = _req("The session handle.")
    search: str = _req("The query, its tokens joined by single spaces (lowercased).")
    filter: ViewFilter = _req("The filter mode it was matched in.")
    leaf_id: str | None = _req("The leaf the view was rendered for.", nullable=True)
    total: int = _req("Number of rows that match.")


@attrs.define(kw_only=True)
class DidChangeListParams:
    """`session/didChangeList`: session files appeared or vanished."""

    cwd: str | None = _opt("The project whose list changed (absent: unknown or several).")
