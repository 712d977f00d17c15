"""`sessiontree export FILE [--leaf ID | --subtree ID] --format md|html|jsonl [-o OUT]`.

Exports the path to the leaf (or to ``--leaf``), or a node's whole subtree (``--subtree``),
as Markdown or HTML that reads like the conversation, or as a session file of its own (a
new session id, ``parentSession`` set to the source) that the agent opens. Secrets are
redacted before anything is written: by default for Markdown and HTML, with ``--redact``
for JSONL, never with ``--no-redact``; ``--dry-run`` lists what would be redacted and
writes nothing. The counts per pattern go to stderr. Patterns of your own:
``$XDG_CONFIG_HOME/sessiontree/redact.toml`` (docs/graph-export-compare.md).
Exit code 0; 2 for a file that cannot be shown, an unknown id, a bad config, an export that
took longer than its time budget (``SESSIONTREE_EXPORT_BUDGET`` seconds, 300; nothing is
written) or OUT that cannot be written.
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
        "export",
        help="export a branch or a subtree as Markdown, HTML or a session file (redacted)",
        description="Export the path to a node or a node's subtree, with secrets redacted.",
        epilog="exit codes: 0 exported (or listed, --dry-run); 2 the file cannot be shown, an id is "
        "not in it, the redaction config is bad, the export took longer than its budget "
        "(SESSIONTREE_EXPORT_BUDGET seconds, default 300; nothing is written), or OUT cannot be written.",
    )
    p.add_argument("file", metavar="FILE", help="a session file (.jsonl)")
    which = p.add_mutually_exclusive_group()
    which.add_argument(
        "--leaf", metavar="ID", help="the path from the root to this entry (default: the leaf)"
    )
    which.add_argument("--subtree", metavar="ID", help="this entry's whole subtree (and the path to it)")
    p.add_argument("--format", "-f", choices=("md", "html", "jsonl"), default="md", help="default: md")
    p.add_argument("-o", "--output", metavar="OUT", help="write here (default: standard output)")
    red = p.add_mutually_exclusive_group()
    red.add_argument(
        "--redact", dest="redact", action="store_true", default=None, help="redact (default for md, html)"
    )
    red.add_argument("--no-redact", dest="redact", action="store_false", help="do not redact")
    p.add_argument("--dry-run", action="store_true", help="list what would be redacted; write nothing")
    p.add_argument(
        "--redact-config", metavar="TOML", help="patterns file (default: sessiontree's config dir)"
    )
    p.add_argument("--json", action="store_true", help="with --dry-run: print the findings as JSON")


def run(args: argparse.Namespace) -> int:
    from sessiontree.core.errors import EntryNotFoundError
    from sessiontree.core.export import ExportBudgetExceeded, export_session, load_redactor
    from sessiontree.core.export.redact import RedactionConfigError, config_path

    mgr = open_for_viewing("export", args.file)
    if mgr is None:
        return EXIT_UNUSABLE
    try:
        redactor = load_redactor(args.redact_config)
    except RedactionConfigError as exc:
        return fail("export", f"redaction config: {exc}")
    leaf: Any = ... if args.leaf is None else args.leaf
    try:
        result = export_session(
            mgr,
            args.format,
            leaf_id=leaf,
            subtree_id=args.subtree,
            redact=args.redact,
            dry_run=args.dry_run,
            redactor=redactor,
        )
    except EntryNotFoundError as exc:
        return entry_not_found("export", str(exc.entry_id))
    except ExportBudgetExceeded as exc:
        return fail("export", str(exc))
    if args.dry_run:
        if args.json:
            out = {
                "entries": result.entries,
                "counts": result.counts,
                "findings": [f.to_dict() for f in result.findings],
            }
            sys.stdout.write(json.dumps(out, ensure_ascii=False, indent=2) + "\n")
            return EXIT_OK
        print(
            f"{counted(result.entries, 'entry')}; would redact {sum(result.counts.values())} (patterns: built-in + {config_path() if args.redact_config is None else args.redact_config})"
        )
        for f in result.findings:
            print(f"  {f.pattern:<22} entry {f.entry_id or '-':<10} {f.preview}")
        return EXIT_OK
    if args.output is None:
        sys.stdout.write(result.content)
    else:
        try:
            with open(args.output, "w", encoding="utf-8") as fh:
                fh.write(result.content)
        except OSError as exc:
            return fail("export", f"{args.output}: {exc.strerror or exc}")
    if result.redacted:
        counts = ", ".join(f"{k} {v}" for k, v in sorted(result.counts.items())) or "nothing found"
        print(f"sessiontree export: {counted(result.entries, 'entry')}; redacted: {counts}", file=sys.stderr)
    else:
        print(f"sessiontree export: {counted(result.entries, 'entry')}; not redacted", file=sys.stderr)
    return EXIT_OK
