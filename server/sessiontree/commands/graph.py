"""`sessiontree graph FILE [-o OUT] [--collapse N] [--svg | --json]`: a picture of the whole tree.

Writes one self-contained HTML page (no network) with the session drawn like a git graph:
a lane per branch, branch points, labels, compactions and branch summaries marked, the path
to the leaf and the leaf highlighted, long linear runs folded with their counts. The file is
opened read-only. Exit code 0; 2 for a file that cannot be shown or a bad option.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from sessiontree.commands.common import EXIT_OK, EXIT_UNUSABLE, entry_not_found, fail, open_for_viewing
from sessiontree.core.format.words import counted


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "graph",
        help="draw the whole session tree as a graph (self-contained HTML/SVG)",
        description="Draw the session tree like a git graph: lanes per branch, marked nodes, folded runs.",
        epilog="exit codes: 0 written; 2 the file cannot be shown, --leaf is not in it, or OUT cannot be written.",
    )
    p.add_argument("file", metavar="FILE", help="a session file (.jsonl)")
    p.add_argument("-o", "--output", metavar="OUT", help="write here (default: standard output)")
    p.add_argument(
        "--collapse",
        metavar="N",
        type=int,
        help="fold runs of N or more linear entries (0: never; default: 2 above 400 entries, else never)",
    )
    p.add_argument("--leaf", metavar="ID", help="highlight the path to this entry instead of the leaf")
    p.add_argument(
        "--fan",
        metavar="N",
        type=int,
        help="children of one entry drawn at once; the rest are folded into 'more' nodes (default 24)",
    )
    p.add_argument(
        "--page",
        metavar="ID:OFFSET",
        action="append",
        default=[],
        help="draw ID's children from index OFFSET (a 'more' node names it); repeatable",
    )
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--svg", action="store_true", help="write only the SVG")
    fmt.add_argument("--json", action="store_true", help="write the laid-out graph as JSON")


def run(args: argparse.Namespace) -> int:
    from sessiontree.core.discovery import display_name_of_manager
    from sessiontree.core.graph import build_graph, render_html, render_svg

    if args.collapse is not None and args.collapse < 0:
        return fail("graph", "--collapse must be 0 or more")
    if args.fan is not None and args.fan < 1:
        return fail("graph", "--fan must be 1 or more")
    pages: dict[str, int] = {}
    for spec in args.page:
        pid, sep, off = spec.rpartition(":")
        if not sep or not off.isdigit():
            return fail("graph", f"--page {spec!r}: expected ID:OFFSET")
        pages[pid] = int(off)
    mgr = open_for_viewing("graph", args.file)
    if mgr is None:
        return EXIT_UNUSABLE
    leaf: Any = ...
    if args.leaf is not None:
        if mgr.get_entry(args.leaf) is None:
            return entry_not_found("graph", args.leaf)
        leaf = args.leaf
    graph = build_graph(mgr, collapse=args.collapse, leaf_id=leaf, pages=pages, fan=args.fan)
    # the name the sidebars and `ls` show the session under
    graph.title = display_name_of_manager(mgr)
    if args.json:
        out = json.dumps(graph.to_dict(), ensure_ascii=False) + "\n"
    elif args.svg:
        out = render_svg(graph) + "\n"
    else:
        out = render_html(graph)
    if args.output is None:
        sys.stdout.write(out)
        return EXIT_OK
    try:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(out)
    except OSError as exc:
        return fail("graph", f"{args.output}: {exc.strerror or exc}")
    print(
        f"{args.output}: {counted(graph.entries, 'entry')}, {counted(len(graph.nodes), 'node')}, "
        f"{counted(graph.lanes, 'lane')}",
        file=sys.stderr,
    )
    return EXIT_OK
