"""`sessiontree diff FILE A B [--json]`: two nodes side by side.

Prints the common ancestor of entries A and B, then for each side the files its tool calls
wrote or edited (with the hunks the calls carry), the commands it ran and its messages since
the ancestor. The file is opened read-only. Exit code 0; 2 for a file that cannot be shown
or an id that is not in it.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from sessiontree.commands.common import EXIT_OK, EXIT_UNUSABLE, entry_not_found, open_for_viewing
from sessiontree.core.format.words import counted


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "diff",
        help="compare two nodes: common ancestor, messages since, files each side changed",
        description="Compare two entries of a session: their common ancestor and what each side did since.",
        epilog="exit codes: 0 shown; 2 the file cannot be shown or A or B is not in it.",
    )
    p.add_argument("file", metavar="FILE", help="a session file (.jsonl)")
    p.add_argument("a", metavar="A", help="an entry id")
    p.add_argument("b", metavar="B", help="another entry id")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--files", action="store_true", help="only the files each side changed")


def run(args: argparse.Namespace) -> int:
    from sessiontree.core.compare import compare_nodes, side_parts

    mgr = open_for_viewing("diff", args.file)
    if mgr is None:
        return EXIT_UNUSABLE
    for eid in (args.a, args.b):
        if mgr.get_entry(eid) is None:
            return entry_not_found("diff", eid)
    cmp = compare_nodes(mgr, args.a, args.b)
    if args.json:
        sys.stdout.write(json.dumps(cmp.to_dict(), ensure_ascii=False, indent=2) + "\n")
        return EXIT_OK
    from sessiontree.commands.common import terminal_safe

    def out(line: str = "") -> None:
        # The session's texts and paths as a terminal may show them.
        sys.stdout.write(terminal_safe(line, lines=True) + "\n")

    out(f"common ancestor: {cmp.ancestor_id or '(none: different roots)'}  {cmp.ancestor_text}")
    for name, side in (("A", cmp.a), ("B", cmp.b)):
        out(
            f"{name}: {side.node_id}  {counted(len(side.skeletons), 'entry')} since, {counted(len(side.files), 'file')}, "
            f"{counted(len(side.commands), 'command')}"
        )
    paths = list(dict.fromkeys([f.path for f in cmp.a.files] + [f.path for f in cmp.b.files]))
    if paths:
        width = max(len(p) for p in paths)
        a_of = {f.path: f.summary for f in cmp.a.files}
        b_of = {f.path: f.summary for f in cmp.b.files}
        out()
        out(f"{'file':<{width}}  {'A':<20}  B")
        for p in paths:
            out(f"{p:<{width}}  {a_of.get(p, '—'):<20}  {b_of.get(p, '—')}")
    if args.files:
        return EXIT_OK
    for which in ("a", "b"):
        print()
        # each side's document as it is made, a page of entries at a time (whole lines)
        for part in side_parts(cmp, which):
            sys.stdout.write(terminal_safe(part, lines=True))
    return EXIT_OK
