"""The `sessiontree` command line.

Each subcommand lives in its own module under `sessiontree.commands` with two functions,
`register(subparsers)` and `run(args) -> int`, so that commands stay independent and the
start-up of one does not import the others' dependencies (the daemon's pygls, for example).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

# Subcommand name -> module under sessiontree.commands. Order is the order of `--help`.
COMMANDS: dict[str, str] = {
    "ls": "ls",
    "show": "show",
    "tree": "tree",
    "context": "context",
    "doctor": "doctor",
    "serve": "serve",
    "graph": "graph",
    "export": "export",
    "diff": "diff",
    "store": "store",
    "sync": "sync",
    "search": "search",
    "restore": "restore",
}


def build_parser() -> argparse.ArgumentParser:
    from sessiontree import __version__
    from sessiontree.commands.common import EXIT_CODES_HELP

    parser = argparse.ArgumentParser(
        prog="sessiontree",
        description="Browse and steer coding-agent session trees (pi, oh-my-pi, xcsh).",
        epilog=EXIT_CODES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"sessiontree {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in COMMANDS.values():
        try:
            mod = importlib.import_module(f"sessiontree.commands.{module}")
        except ModuleNotFoundError as exc:
            if exc.name != f"sessiontree.commands.{module}":
                raise
            continue
        mod.register(sub)
    return parser


def _show_lone_surrogates_as_replacement_chars() -> None:
    """Print a lone surrogate (a JavaScript writer cut a string inside an emoji) as U+FFFD.

    Session text may hold them (docs/storage-format.md); the terminal gets the rule every
    output follows instead of a UnicodeEncodeError. `serve` writes bytes, so it is unaffected.
    """
    import codecs

    def fffd(exc: UnicodeError) -> tuple[bytes, int]:
        if not isinstance(exc, UnicodeEncodeError):
            raise exc
        # Bytes, not str: the UTF-8 encoder takes only ASCII text from an error handler.
        try:
            mark = "\ufffd".encode(exc.encoding)
        except (UnicodeError, LookupError):
            mark = b"?"
        return mark * (exc.end - exc.start), exc.end

    try:
        codecs.lookup_error("sessiontree.fffd")
    except LookupError:
        codecs.register_error("sessiontree.fffd", fffd)
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            try:
                reconfigure(errors="sessiontree.fffd")
            except (ValueError, OSError):
                pass


def main(argv: list[str] | None = None) -> int:
    from sessiontree.commands.common import EXIT_UNUSABLE

    _show_lone_surrogates_as_replacement_chars()
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help(sys.stderr)
        return EXIT_UNUSABLE
    mod = importlib.import_module(f"sessiontree.commands.{COMMANDS[args.command]}")
    try:
        return int(mod.run(args) or 0)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # `sessiontree tree | head` closes the pipe early; that is not an error.
        try:
            sys.stdout.close()
        except Exception:
            pass
        return 0
    except Exception as exc:
        # A person gets one line, not a traceback; SESSIONTREE_DEBUG=1 shows it for a bug report.
        if args.command == "serve" or os.environ.get("SESSIONTREE_DEBUG"):
            raise
        print(f"sessiontree {args.command}: unexpected error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_UNUSABLE
