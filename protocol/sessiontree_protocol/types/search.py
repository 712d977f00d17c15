"""`session/search`: the text of every session, through the daemon's full-text index (docs/search.md)."""

from __future__ import annotations

import attrs

from sessiontree_protocol.types.base import _list, _opt, _req


@attrs.define(kw_only=True)
class SearchParams:
    """Params of `session/search`."""

    query: str = _req(
        'What to find: words (all of them), "quoted phrases"; the last word matches as a prefix unless '
        "the query ends with a space. Characters of the FTS5 syntax are only words or separators."
    )
    cwd: str | None = _opt(
        "Only sessions of this project directory and those below it (default: every project)."
    )
    role: str | None = _opt(
        "Only entries of this role: `user`, `assistant`, `tool` (tool results, bash runs), `other`."
    )
    agent: str | None = _opt("Only sessions of this agent (`pi`).")
    since: str | None = _opt("Only entries at or after this time (ISO 8601; a date alone is midnight UTC).")
    until: str | None = _opt("Only entries before this time (ISO 8601).")
    label: str | None = _opt("Only entries carrying this label (case-insensitive).")
    offset: int = _opt("Skip this many hits (paging: the previous page's `nextOffset`).", 0)
    limit: int = _opt("At most this many hits (1 to 200).", 20)
    prefix: bool = _opt(
        "The last word matches as a prefix (a person typing it); false: whole words only.", True
    )
    paths: bool = _opt(
        "Give each hit its place in its tree (ancestors, labels on the way, active branch).", True
    )
    work_done_token: int | str | None = _opt("LSP work-done progress token for the first build of the index.")


@attrs.define(kw_only=True)
class SearchPathLabel:
    """A label on the way from the root to a hit."""

    id: str = _req("The labelled entry.")
    label: str = _req("Its label.")


@attrs.define(kw_only=True)
class SearchHit:
    """One matching entry and its place in its session's tree."""

    path: str = _req("The session file.")
    session_id: str | None = _opt("The session's id (its header's).")
    session_name: str | None = _opt("The session's display name.")
    cwd: str | None = _opt("The session's project directory.")
    agent: str = _req("The agent that wrote the session (`pi`).")
    entry_id: str = _req("The matching entry.")
    parent_id: str | None = _opt("Its parent entry.")
    role: str = _req("`user`, `assistant`, `tool` or `other`.")
    type: str | None = _opt("The entry's type (`message`, `compaction`, ...).")
    timestamp: str | None = _opt("The entry's time as written.")
    score: float = _req("BM25 score (lower is a better match).")
    snippet: str = _req("The matching part of the entry's text, on one line.")
    highlights: list[list[int]] = _list("The matched words in `snippet`: `[start, end)` in code points.")
    label: str | None = _opt("The entry's own label.")
    ancestors: list[str] = _list("Ids from the root to the parent (the nearest 64 when deeper).")
    depth: int = _opt("How many entries are above the hit.", 0)
    path_labels: list[SearchPathLabel] = _list(
        "Labels on the way from the root to the hit (the hit's included)."
    )
    on_active_branch: bool | None = _opt(
        "Whether the hit is on the path from the root to the session's leaf."
    )


@attrs.define(kw_only=True)
class SearchResult:
    """Result of `session/search`: a page of hits, best first."""

    hits: list[SearchHit] = _list("The hits of this page, best first.")
    total: int = _req("How many matches were ranked (at most `capped`'s limit).")
    capped: bool = _req("More entries match than were ranked (the newest 500 are).")
    offset: int = _req("The page's offset.")
    next_offset: int | None = _opt("The next page's offset; absent on the last page.")
    indexed_files: int = _req("Session files in the index.")
    index_bytes: int = _req("The index's size on disk.")
    index_busy: bool | None = _opt(
        "True when another process held the index locked longer than the busy bound (5 s): it was "
        "not brought up to date (nothing was removed or rebuilt) and the hits are what it held; when "
        "it could not even be read, the page is empty and `indexedFiles` is 0. Absent otherwise."
    )
