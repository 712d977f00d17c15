"""`sessiontree tree [FILE]`: draw a session tree the way the agent's ``/tree`` shows it.

Lines (connector art, the ``•`` active-path marker, ``[label]``, the display text) in the
selector's order, then a footer with the filter mode's suffix. Where this differs from the
agent's selector, so that deep trees stay readable in a terminal (docs/tree-view.md):

- the art is the short form of `core.tree_art` (art deeper than 8 levels is cut to its last
  4 cells behind a depth marker ``‹N›``), so the text of every row starts within a bounded
  column; ``--full-art`` draws the agent's full art;
- the row that marks the leaf has ``●`` where other active-path rows have ``•`` (right after
  the art, before label and text, so it is never cut off): the leaf's row, or when the
  filter hides the leaf its nearest visible ancestor's, which then names the leaf after its
  text, ``(leaf: [model: …])`` (the core's rule, `core.view.marks`);
- ``--ids`` puts each row's entry id in a column at the line start;
- on a terminal, colour: dim art and ids, the active path's marker and text in cyan, the
  leaf in bold green, labels in yellow (``--color auto|always|never``; auto is off when
  stdout is not a terminal, ``NO_COLOR`` is set or ``TERM=dumb``).

Without FILE, the most recent session of the current directory is shown, the first one
`ls` lists (pi's family in the agent dir, or without one in every agent dir of the family
that exists, and Claude Code's and Codex's transcripts); when there is none, the bundled
demo session (with a note on stderr naming the directories searched). The file is opened read-only: nothing is migrated or written. Exit
code 0; 2 for a file that cannot be shown (missing, unreadable, empty, no session header,
not a pi session) or an unknown ``--leaf``.
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
    terminal_safe,
)

FILTERS = ("default", "no-tools", "user-only", "labeled-only", "all")

LEAF_MARKER = "● "
"""What stands for the active-path marker ``• `` on the leaf row."""
ACTIVE_MARKER = "• "

# SGR codes (ECMA-48): the look of each part of a line on a terminal.
_DIM = "2"
_ACTIVE = "36"  # cyan
_LEAF = "1;32"  # bold green
_LABEL = "33"  # yellow
_RESET = "\x1b[0m"


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "tree",
        help="draw a session's tree like the agent's /tree selector",
        description="Draw a session tree (active branch first, labels, filters, search).",
    )
    p.add_argument(
        "file", metavar="FILE", nargs="?", help="a session file (default: the newest of this directory)"
    )
    p.add_argument("--filter", choices=FILTERS, default="default", help="filter mode (default: default)")
    p.add_argument("--search", metavar="TEXT", help="only rows matching every word of TEXT")
    p.add_argument("--leaf", metavar="ID", help="draw as if this entry were the leaf")
    p.add_argument("--demo", action="store_true", help="show the bundled demo session")
    p.add_argument("--json", action="store_true", help="print the rows as JSON")
    p.add_argument(
        "--full-art",
        action="store_true",
        help="draw the agent's full connector art (default: art deeper than 8 levels is cut to its "
        "last 4 cells behind a depth marker ‹N›, so every row's text starts within 20 columns)",
    )
    p.add_argument("--ids", action="store_true", help="show each row's entry id at the line start")
    p.add_argument(
        "--color",
        choices=("auto", "always", "never"),
        default="auto",
        help="colour the lines (auto: only on a terminal and without NO_COLOR)",
    )
    p.add_argument(
        "--agent-dir",
        help="agent dir (default: $PI_CODING_AGENT_DIR, else every agent dir of pi's family that exists)",
    )
    p.epilog = (
        "lines: [ID] ART MARKER [LABEL] TEXT. MARKER is ● on the leaf row and • on the other\n"
        "rows of the active path (the leaf and its ancestors), so the leaf is marked before its\n"
        "text; when the filter hides the leaf, its nearest shown ancestor has the ● and names\n"
        "it: (leaf: TEXT). The footer gives the rows shown, the leaf id and the filter.\n\n"
        "exit codes: 0 drawn; 2 the file cannot be shown (missing, unreadable, empty, no session\n"
        "header, not a pi session) or --leaf is not in it."
    )
    p.formatter_class = argparse.RawDescriptionHelpFormatter


@contextlib.contextmanager
def demo_session_path() -> Iterator[str]:
    """The bundled demo session as a real file path (for as long as the context lasts)."""
    from importlib import resources

    with resources.as_file(resources.files("sessiontree") / "data" / "demo-session.jsonl") as p:
        yield str(p)


def newest_session_for_cwd(cwd: str, agent_dir: str | None) -> str | None:
    """The most recent session of ``cwd``: the first that `ls` lists for it (pi's family in
    the agent dir given, else in every agent dir of the family that exists, and Claude
    Code's and Codex's transcripts of the project), or None.

    Every directory encoding the agents use is looked at; nothing is created or moved.
    """
    from sessiontree.commands.ls_agents import other_agents_sessions
    from sessiontree.core.discovery import (
        agent_homes,
        find_most_recent_session_of_dirs,
        session_dirs_of_homes,
    )

    found = find_most_recent_session_of_dirs(session_dirs_of_homes(cwd, agent_homes(agent_dir)))
    best: tuple[float, str] | None = None
    if found is not None:
        with contextlib.suppress(OSError):
            best = (os.stat(found[0]).st_mtime, found[0])
    for other in other_agents_sessions("all", cwd):
        when = other.modified.timestamp()
        if best is None or when > best[0]:
            best = (when, other.path)
    return best[1] if best is not None else (found[0] if found else None)


def use_color(choice: str, stream: Any = None) -> bool:
    """Whether to colour: ``always``/``never``, or ``auto``: a terminal, no ``NO_COLOR``
    (set and not empty, no-color.org), not ``TERM=dumb``."""
    if choice != "auto":
        return choice == "always"
    stream = sys.stdout if stream is None else stream
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def _sgr(code: str, text: str, color: bool) -> str:
    return f"\x1b[{code}m{text}{_RESET}" if color and text else text


def row_line(row: Any, *, full_art: bool = False, color: bool = False, id_width: int | None = None) -> str:
    """One row as `tree` prints it: ``[ID] ART MARKER [LABEL] TEXT`` (see the module doc).

    Without colour and ids it is `Row.line` (with ``full_art``) with the leaf's marker ``●``
    on the row that marks the leaf, and the note naming a leaf the filter hides.
    """
    from sessiontree.core.view.marks import LEAF_NOTE

    art = row.prefix if full_art else row.short_prefix
    marker = LEAF_MARKER if row.marks_leaf else ACTIVE_MARKER if row.on_active_path else ""
    look = _LEAF if row.marks_leaf else _ACTIVE if row.on_active_path else ""
    parts = []
    if id_width is not None:
        parts.append(_sgr(_DIM, f"[{row.id}]".ljust(id_width + 2) + " ", color))
    parts.append(_sgr(_DIM, art, color))
    parts.append(_sgr(look, marker, color))
    # The session's own text, made terminal-safe before the colours are put around it.
    if row.label:
        parts.append(_sgr(_LABEL, f"[{terminal_safe(row.label)}]", color) + " ")
    shown = terminal_safe(row.text)
    parts.append(_sgr(look, shown, color) if look else shown)
    if row.hidden_leaf is not None:
        parts.append("  " + _sgr(_DIM, f"({LEAF_NOTE}{terminal_safe(row.hidden_leaf)})", color))
    return "".join(parts)


def footer_line(page: Any, *, total_entries: int, color: bool = False) -> str:
    """The footer: rows shown, the leaf, the filter mode's suffix."""
    from sessiontree.core.format.words import counted

    shown = (
        f"{page.total} of {counted(total_entries, 'entry')}"
        if page.total != total_entries
        else counted(page.total, "entry")
    )
    leaf = page.leaf_id if page.leaf_id is not None else "(none)"
    return _sgr(_DIM, f"({shown}, leaf {leaf}){page.footer_suffix()}", color)


def render(
    page: Any,
    *,
    total_entries: int,
    full_art: bool = False,
    color: bool = False,
    ids: bool = False,
) -> list[str]:
    """The lines `tree` prints for a view page: the rows, then the footer."""
    id_width = max((len(r.id) for r in page.rows), default=0) if ids else None
    out = [row_line(r, full_art=full_art, color=color, id_width=id_width) for r in page.rows]
    out.append(footer_line(page, total_entries=total_entries, color=color))
    return out


#: Rows drawn at a time: what `tree` holds of a big session is a page of rows, not all.
TREE_PAGE = 2000


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
                from sessiontree.core.discovery import agent_homes

                roots = [h.sessions_root for h in agent_homes(args.agent_dir)]
                where = missing_agent_dir(args.agent_dir) or (
                    "looked in " + ", ".join(paths.session_dir_names(cwd)) + f" under {', '.join(roots)}"
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

    def page_at(offset: int) -> Any:
        return build_view(
            mgr, filter=args.filter, search=args.search, leaf_id=leaf, offset=offset, limit=TREE_PAGE
        )

    first = page_at(0)

    def pages() -> Iterator[Any]:
        # the rows a page at a time, each written before the next is made
        yield first
        for offset in range(TREE_PAGE, first.total, TREE_PAGE):
            yield page_at(offset)

    write = sys.stdout.write
    if args.json:
        head = {
            "path": os.path.abspath(path),
            "filter": args.filter,
            "leafId": first.leaf_id,
            "total": first.total,
            "selectedIndex": first.selected_index,
        }
        # `json.dumps({... "rows": [...]}, indent=2)`, its rows written as they come
        text = json.dumps(head, ensure_ascii=False, indent=2)
        write(text[:-2] + ',\n  "rows": [')
        started = False
        for page in pages():
            parts = []
            for r in page.rows:
                row = json.dumps(r.to_dict(), ensure_ascii=False, indent=2).replace("\n", "\n    ")
                parts.append(("," if started else "") + "\n    " + row)
                started = True
            write("".join(parts))
        write("\n  ]\n}\n" if started else "]\n}\n")
        return EXIT_OK
    color = use_color(args.color)
    id_width: int | None = None
    if args.ids:
        lengths = {len(i) for i in mgr.index.ids() if isinstance(i, str)}
        # every id as long as the others (an agent's ids are): no pass over the rows first
        id_width = (
            lengths.pop()
            if len(lengths) == 1
            else max((len(r.id) for page in pages() for r in page.rows), default=0)
        )
    for page in pages():
        if page.rows:
            lines = [row_line(r, full_art=args.full_art, color=color, id_width=id_width) for r in page.rows]
            write("\n".join(lines) + "\n")
    write(footer_line(first, total_entries=len(mgr.index), color=color) + "\n")
    return EXIT_OK
