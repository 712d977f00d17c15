"""`sessiontree search QUERY [--cwd DIR|--all] [--role R] [--since D] [--json]`: search every session.

Brings the search index (sessiontree's cache dir, docs/search.md) up to date with the
sessions under the agent dir, then prints the best matches: time, role, session name and
entry id, the snippet with the matched words marked, and the entry's place in its tree.
Exit code 0 (also when nothing matched, and when the index was busy: the matches it held,
with a warning), 2 when the agent dir cannot be read or the index stayed locked even for
reading.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import datetime
from typing import Any

ROLES = ("user", "assistant", "tool", "other")


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "search",
        help="search every session's text (a full-text index in sessiontree's cache)",
        description=(
            'Search the text of every entry of every session: words, "quoted phrases", the last word as '
            "a prefix; ranked by BM25. Each hit names the session, the entry id, its role and time and "
            "its path from the root."
        ),
    )
    p.add_argument(
        "query", nargs="+", help='words to find (all of them), "a phrase" in quotes, pref* for a prefix'
    )
    scope = p.add_mutually_exclusive_group()
    scope.add_argument(
        "--cwd", help="only sessions of this project directory (default: the current directory)"
    )
    scope.add_argument("--all", action="store_true", help="every project's sessions")
    p.add_argument("--role", choices=ROLES, help="only entries of this role (tool: tool results, bash runs)")
    p.add_argument("--agent", help="only sessions of this agent (pi)")
    p.add_argument("--since", help="entries at or after: 2026-01-31, an ISO time, or 7d / 12h / 30m ago")
    p.add_argument("--until", help="entries before (same forms as --since)")
    p.add_argument("--label", help="only entries carrying this label")
    p.add_argument("--limit", type=int, default=20, help="how many hits (default 20)")
    p.add_argument("--offset", type=int, default=0, help="skip this many hits (paging)")
    p.add_argument(
        "--agent-dir",
        help="agent dir (default: $PI_CODING_AGENT_DIR, else every agent dir of pi's family that exists)",
    )
    p.add_argument("--index", help="the index file (default: <cache>/sessiontree/search/sessions.db)")
    p.add_argument("--json", action="store_true", help="print JSON")


def parse_when(value: str, now: float | None = None) -> int:
    """Epoch milliseconds of ``--since``/``--until`` (`core.fts.parse_time`)."""
    from sessiontree.core.fts import parse_time

    return parse_time(value, now)


def _mark(snippet: str, ranges: list[list[int]], tty: bool) -> str:
    from sessiontree.commands.common import terminal_safe as safe

    on, off = ("\x1b[1m", "\x1b[0m") if tty else ("«", "»")
    out, pos = [], 0
    for a, b in ranges:
        out += [safe(snippet[pos:a]), on, safe(snippet[a:b]), off]
        pos = b
    out.append(safe(snippet[pos:]))
    return "".join(out)


def run(args: argparse.Namespace) -> int:
    from sessiontree.commands.common import missing_agent_dir
    from sessiontree.core.fts import IndexBusy, SearchIndex, SearchQuery, UpdateReport, fts5_available
    from sessiontree.core.fts.sources import foreign_roots

    if not fts5_available():
        print("sessiontree search: this Python's SQLite has no FTS5", file=sys.stderr)
        return 2
    problem = missing_agent_dir(args.agent_dir)
    if problem is not None:
        print(f"sessiontree search: {problem}", file=sys.stderr)
        return 2
    try:
        since = parse_when(args.since) if args.since else None
        until = parse_when(args.until) if args.until else None
    except ValueError as exc:
        print(f"sessiontree search: bad date: {exc}", file=sys.stderr)
        return 2
    from sessiontree.core.discovery import agent_homes

    # pi's family's sessions (every agent dir listed) and the other agents' transcripts
    # (read-only) that exist
    roots = [h.sessions_root for h in agent_homes(args.agent_dir)]
    index = SearchIndex([*roots, *foreign_roots()], path=os.path.abspath(args.index) if args.index else None)
    busy = False
    try:
        try:
            report = index.update()
        except IndexBusy:
            # another process holds the index (a daemon indexing, a sqlite3 shell): it is
            # not rebuilt; the search answers from what it holds
            busy, report = True, UpdateReport()
            print(
                "sessiontree search: the search index is busy (another process is writing it); "
                "these are the matches it held",
                file=sys.stderr,
            )
        cwd = None if args.all else os.path.abspath(args.cwd or os.getcwd())
        text = " ".join(args.query)
        page = index.search(
            SearchQuery(
                text,
                # whole words; a last word ending in * is a prefix (as the editors match while typing)
                prefix=text.rstrip().endswith("*"),
                cwd=cwd,
                agent=args.agent,
                role=args.role,
                since=since,
                until=until,
                label=args.label,
                offset=max(0, args.offset),
                limit=max(0, args.limit),
            )
        )
    except IndexBusy:
        print(
            "sessiontree search: the search index is busy (another process holds it locked "
            "even for reading); nothing was changed, try again",
            file=sys.stderr,
        )
        return 2
    finally:
        index.close()
    if args.json:
        out = {
            "query": " ".join(args.query),
            "total": page.total,
            "capped": page.capped,
            "offset": page.offset,
            "nextOffset": page.next_offset,
            "index": {
                "path": index.path,
                "bytes": index.size_bytes(),
                "updatedFiles": report.full + report.appended,
                "busy": busy,
            },
            "hits": [h.to_dict() for h in page.hits],
        }
        sys.stdout.write(json.dumps(out, ensure_ascii=False, indent=2) + "\n")
        return 0
    if not page.hits:
        where = "any project" if cwd is None else cwd
        print(f"no matches in {where}" + ("" if cwd is None else " (--all: every project)"))
        return 0
    from sessiontree.commands.common import terminal_safe as safe

    tty = sys.stdout.isatty()
    for h in page.hits:
        when = h.timestamp or ""
        if when:
            try:
                when = (
                    datetime.fromisoformat(when.replace("Z", "+00:00"))
                    .astimezone()
                    .strftime("%Y-%m-%d %H:%M")
                )
            except ValueError:
                pass
        branch = (
            ""
            if h.on_active_branch is None
            else (" (active branch)" if h.on_active_branch else " (other branch)")
        )
        labels = safe(" ".join(f"[{pl['label']}]" for pl in h.path_labels))
        name = safe(h.session_name or os.path.basename(h.session_path))
        print(f"{when}  {safe(h.role):9}  {name}  {safe(h.entry_id)}")
        print(f"    {_mark(h.snippet, h.highlights, tty)}")
        print(f"    depth {h.depth}{branch}{'  ' + labels if labels else ''}  {safe(h.session_path)}")
    more = f"; --offset {page.next_offset} for more" if page.next_offset is not None else ""
    print(
        f"{len(page.hits)} of {page.total}{'+' if page.capped else ''} {'match' if page.total == 1 and not page.capped else 'matches'}{more}"
    )
    return 0
