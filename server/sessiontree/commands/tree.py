"""`sessiontree tree [FILE]`: draw a session tree the way the agent's ``/tree`` shows it.

Full lines (connectors, the ``•`` active-path marker, ``[label]``, the display text) in
the selector's order, then a footer with the filter mode's suffix. Without FILE, the
most recent session of the current directory under the agent dir is shown; when there
is none, the bundled demo session (with a note on stderr). The file is opened read-only:
nothing is migrated or written. Exit code 0; 2 for a file that cannot be shown (missing,
unreadable, empty, no session header, not a pi session) or an unknown ``--leaf``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Iterator
from typing import Any

from sessiontree.commands.common import (
    EXIT_OK,
    EXIT_UNUSABLE,
    entry_not_found,
    open_for_viewing,
)

FILTERS = ("default", "no-tools", "user-only", "labeled-only", "all")


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "tree",
        help="draw a session's tree like the agent's /tree selector",
        description="Draw a session tree (active branch first, labels, filters, search).",
        epilog="exit codes: 0 drawn; 2 the file cannot be shown (missing, unreadable, empty, "
        "no session header, not a pi session) or --leaf is not in it.",
    )
    p.add_argument(
        "file", metavar="FILE", nargs="?", help="a session file (default: the newest of this directory)"
    )
    p.add_argument("--filter", choices=FILTERS, default="default", help="filter mode (default: default)")
    p.add_argument("--search", metavar="TEXT", help="only rows matching every word of TEXT")
    p.add_argument("--leaf", metavar="ID", help="draw as if this entry were the leaf")
    p.add_argument("--demo", action="store_true", help="show the bundled demo session")
    p.add_argument("--json", action="store_true", help="print the rows as JSON")
    p.add_argument("--agent-dir", help="agent dir (default: $PI_CODING_AGENT_DIR or ~/.xcsh/agent)")


@contextlib.contextmanager
def demo_session_path() -> Iterator[str]:
    """The bundled demo session as a real file path (for as long as the context lasts)."""
    from importlib import resources

    with resources.as_file(resources.files("sessiontree") / "data" / "demo-session.jsonl") as p:
        yield str(p)


def newest_session_for_cwd(cwd: str, agent_dir: str | None) -> str | None:
    """The most recent session file of ``cwd`` under the agent dir, or None.

    Every directory encoding the agents use is looked at; nothing is created or moved.
    """
    from sessiontree.core import paths
    from sessiontree.core.discovery import find_most_recent_session_of_dirs

    found = find_most_recent_session_of_dirs(paths.session_dirs_of(cwd, agent_dir))
    return found[0] if found else None


def render(page: Any, *, total_entries: int) -> list[str]:
    """The lines `tree` prints for a view page: the rows, then the footer."""
    out = [row.line() for row in page.rows]
    shown = (
        f"{page.total} of {total_entries} entries" if page.total != total_entries else f"{page.total} entries"
    )
    leaf = page.leaf_id if page.leaf_id is not None else "(none)"
    out.append(f"({shown}, leaf {leaf}){page.footer_suffix()}")
    return out


def run(args: argparse.Namespace) -> int:
    with contextlib.ExitStack() as stack:
        path = args.file
        if args.demo:
            path = stack.enter_context(demo_session_path())
        elif path is None:
            cwd = os.getcwd()
            path = newest_session_for_cwd(cwd, args.agent_dir)
            if path is None:
                from sessiontree.commands.common import missing_agent_dir
                from sessiontree.core import paths

                where = missing_agent_dir(args.agent_dir) or (
                    "looked in "
                    + ", ".join(paths.session_dir_names(cwd))
                    + f" under {paths.sessions_root(args.agent_dir)}"
                )
                print(
                    f"sessiontree tree: no session found for {cwd} ({where}); showing the bundled demo session",
                    file=sys.stderr,
                )
                path = stack.enter_context(demo_session_path())
        mgr = open_for_viewing("tree", path)
        if mgr is None:
            return EXIT_UNUSABLE
        return _print(mgr, path, args)
    return EXIT_UNUSABLE  # pragma: no cover


def _print(mgr: Any, path: str, args: argparse.Namespace) -> int:
    from sessiontree.core.view import build_view

    leaf: Any = mgr.get_leaf_id()
    if args.leaf is not None:
        if mgr.get_entry(args.leaf) is None:
            return entry_not_found("tree", args.leaf)
        leaf = args.leaf
    page = build_view(mgr, filter=args.filter, search=args.search, leaf_id=leaf)
    if args.json:
        out = {
            "path": os.path.abspath(path),
            "filter": args.filter,
            "leafId": page.leaf_id,
            "total": page.total,
            "selectedIndex": page.selected_index,
            "rows": [r.to_dict() for r in page.rows],
        }
        sys.stdout.write(json.dumps(out, ensure_ascii=False, indent=2) + "\n")
        return EXIT_OK
    sys.stdout.write("\n".join(render(page, total_entries=len(mgr.index))) + "\n")
    return EXIT_OK
