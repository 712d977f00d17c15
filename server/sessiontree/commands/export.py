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
import contextlib
import json
import os
import shutil
import stat
import sys
import tempfile
from typing import Any

from sessiontree.commands.common import EXIT_OK, EXIT_UNUSABLE, entry_not_found, fail, open_for_viewing
from sessiontree.core.format.words import counted


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


#: The mode of an OUT the export creates: what ``open(OUT, "w")`` gives (0666 less the umask).
NEW_FILE_MODE = 0o666 & ~_umask()


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


class Output:
    """Where an export goes, written as it is made and given out only once it is whole.

    ``-o OUT`` (absent, or a regular file, through symlinks): a temporary file beside it
    (``.OUT.sessiontree-*.tmp``), renamed over it at the end with OUT's mode, so that OUT is
    never a part of an export nor truncated by one that fails. Standard output, or an OUT
    that is no regular file (a pipe, a device) or whose directory takes no new file: a
    spool (memory up to `SPOOL_MEMORY`, then an unnamed temporary file) copied out at the
    end. An export that fails (its time budget, a bad id) leaves nothing anywhere.
    """

    SPOOL_MEMORY = 8 << 20

    def __init__(self, path: str | None) -> None:
        self.path = path
        self.real: str | None = None
        self.tmp: str | None = None
        self.mode = NEW_FILE_MODE
        self.fh: Any = None
        if path is not None:
            real = os.path.realpath(path)
            try:
                st = os.stat(real)
            except FileNotFoundError:
                st = None
            if st is None or stat.S_ISREG(st.st_mode):
                d = os.path.dirname(real) or "."
                tmp = os.path.join(
                    d, f".{os.path.basename(real)}.sessiontree-{os.getpid()}-{os.urandom(4).hex()}.tmp"
                )
                try:
                    fd = os.open(
                        tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600
                    )
                except OSError:
                    if st is None:
                        raise
                else:
                    self.real, self.tmp = real, tmp
                    if st is not None:
                        self.mode = stat.S_IMODE(st.st_mode)
                    self.fh = open(fd, "w", encoding="utf-8")  # noqa: SIM115 (closed by commit/discard)
        if self.fh is None:
            self.fh = tempfile.SpooledTemporaryFile(  # noqa: SIM115
                self.SPOOL_MEMORY, mode="w+", encoding="utf-8", errors="surrogatepass"
            )

    def write(self, text: str) -> None:
        """Append a part of the export."""
        if text:
            self.fh.write(text)

    def commit(self) -> None:
        """Give the whole export out: rename it over OUT, or copy the spool out."""
        if self.tmp is not None and self.real is not None:
            self.fh.flush()
            os.fchmod(self.fh.fileno(), self.mode)
            self.fh.close()
            os.replace(self.tmp, self.real)
            self.tmp = None
            return
        self.fh.seek(0)
        if self.path is None:
            shutil.copyfileobj(self.fh, sys.stdout, 1 << 20)
            sys.stdout.flush()
        else:
            with open(self.path, "w", encoding="utf-8") as out:
                shutil.copyfileobj(self.fh, out, 1 << 20)
        self.fh.close()

    def discard(self) -> None:
        """Leave nothing of an export that failed."""
        with contextlib.suppress(OSError):
            self.fh.close()
        if self.tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(self.tmp)
            self.tmp = None


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
    out: Output | None = None
    try:
        if not args.dry_run:
            out = Output(args.output)
        result = export_session(
            mgr,
            args.format,
            leaf_id=leaf,
            subtree_id=args.subtree,
            redact=args.redact,
            dry_run=args.dry_run,
            redactor=redactor,
            write=out.write if out is not None else None,
            # the patterns' triggers looked for in the lines ahead, on the other core
            gate_ahead=True,
        )
        if out is not None:
            out.commit()
    except EntryNotFoundError as exc:
        return entry_not_found("export", str(exc.entry_id))
    except ExportBudgetExceeded as exc:
        return fail("export", str(exc))
    except OSError as exc:
        return fail("export", f"{args.output or 'standard output'}: {exc.strerror or exc}")
    finally:
        if out is not None:
            out.discard()
    if args.dry_run:
        if args.json:
            summary = {
                "entries": result.entries,
                "counts": result.counts,
                "findings": [f.to_dict() for f in result.findings],
            }
            sys.stdout.write(json.dumps(summary, ensure_ascii=False, indent=2) + "\n")
            return EXIT_OK
        print(
            f"{counted(result.entries, 'entry')}; would redact {sum(result.counts.values())} (patterns: built-in + {config_path() if args.redact_config is None else args.redact_config})"
        )
        for f in result.findings:
            print(f"  {f.pattern:<22} entry {f.entry_id or '-':<10} {f.preview}")
        return EXIT_OK
    if result.redacted:
        counts = ", ".join(f"{k} {v}" for k, v in sorted(result.counts.items())) or "nothing found"
        print(f"sessiontree export: {counted(result.entries, 'entry')}; redacted: {counts}", file=sys.stderr)
    else:
        print(f"sessiontree export: {counted(result.entries, 'entry')}; not redacted", file=sys.stderr)
    return EXIT_OK
