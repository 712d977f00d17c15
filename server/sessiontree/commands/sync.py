"""`sessiontree sync [--store URL] [--watch] [--all | --cwd DIR]`: two-way sync of this
machine's session files with the shared store.

Pushes the sessions' new entries and appends to the local files the entries other machines
added (docs/shared-store.md). Nothing is pushed unless a store is given (``--store`` or
``$SESSIONTREE_STORE``). ``--exclude DIR`` (repeatable, or ``$SESSIONTREE_SYNC_EXCLUDE``,
``:``-separated) leaves directories out; ``--redact REGEX`` (repeatable, or
``$SESSIONTREE_SYNC_REDACT``, one pattern per line) hides matches before pushing. Exit code
0, 1 when conflicts or damaged lines were found, 2 when the store cannot be reached.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from typing import Any

from sessiontree.core.format.words import counted


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "sync",
        help="two-way sync of local sessions with the shared store",
        description="Push local sessions' new entries to the shared store and pull other machines' entries.",
    )
    p.add_argument("--store", help="postgresql:// URL or conninfo (default: $SESSIONTREE_STORE)")
    p.add_argument(
        "--watch", action="store_true", help="keep following the files and the store until stopped"
    )
    g = p.add_mutually_exclusive_group()
    g.add_argument("--all", action="store_true", help="every project's sessions (the default with --watch)")
    g.add_argument("--cwd", help="the sessions of this project directory (default: the current directory)")
    p.add_argument("--agent-dir", help="agent dir (default: $PI_CODING_AGENT_DIR or ~/.xcsh/agent)")
    p.add_argument(
        "--exclude", action="append", default=[], metavar="DIR", help="never share sessions of DIR"
    )
    p.add_argument(
        "--redact", action="append", default=[], metavar="REGEX", help="replace matches before pushing"
    )
    p.add_argument("--team", help="the team new sessions belong to (row-level security)")
    p.add_argument(
        "--machine", help="this machine's name in the store (default: $SESSIONTREE_MACHINE or host name)"
    )
    p.add_argument(
        "--fetch",
        metavar="SESSION_ID",
        help="make a local copy of a shared session (in its cwd's sessions dir), then sync",
    )
    p.add_argument("--state", help=argparse.SUPPRESS)
    p.add_argument("--batch", type=int, default=2000, help="entries per push transaction and pull page")
    p.add_argument("--quiet", action="store_true", help="print only problems")


def run(args: argparse.Namespace) -> int:
    from sessiontree.commands.common import terminal_safe
    from sessiontree.commands.store import store_url

    url = store_url(args.store)
    if not url:
        print(
            "sessiontree sync: no store configured (--store URL or $SESSIONTREE_STORE); nothing pushed",
            file=sys.stderr,
        )
        return 2
    try:
        import psycopg  # noqa: F401
    except ImportError:
        print("sessiontree sync: psycopg is not installed (pip install 'psycopg[binary]')", file=sys.stderr)
        return 2
    from sessiontree.core import paths
    from sessiontree.core.store.postgres import PostgresSessionStorage, StoreUnreachable
    from sessiontree.core.sync import RefusedRow, Syncer, SyncOptions

    exclude = list(args.exclude)
    exclude += [d for d in os.environ.get("SESSIONTREE_SYNC_EXCLUDE", "").split(os.pathsep) if d]
    redact = list(args.redact)
    redact += [r for r in os.environ.get("SESSIONTREE_SYNC_REDACT", "").splitlines() if r]
    options = SyncOptions(
        exclude=exclude, redact=redact, team=args.team or os.environ.get("SESSIONTREE_TEAM")
    )
    agent_dir = paths.agent_dir_of(args.agent_dir)
    if args.all or (args.watch and not args.cwd):
        roots = [paths.sessions_root(args.agent_dir)]
    else:
        roots = paths.session_dirs_of(os.path.abspath(args.cwd or os.getcwd()), args.agent_dir)

    def say(text: str) -> None:
        if not args.quiet:
            print(f"sessiontree sync: {terminal_safe(text)}", file=sys.stderr, flush=True)

    def fail(text: object) -> int:
        print(f"sessiontree sync: {terminal_safe(text)}", file=sys.stderr)
        return 2

    storage = PostgresSessionStorage(url, machine=args.machine)
    syncer = Syncer(
        storage, agent_dir=agent_dir, options=options, state_path=args.state, progress=say, batch=args.batch
    )
    problems = False

    def report(results: list[Any]) -> None:
        nonlocal problems
        for r in results:
            if r.conflicts or r.damaged or r.refused or r.changed_under:
                problems = True
            if r.pushed or r.pulled or r.conflicts or r.refused:
                conflicts = len(r.conflicts) + len(r.refused)
                say(f"{r.path}: pushed {r.pushed}, pulled {r.pulled}, conflicts {conflicts}")
            elif r.skipped and r.skipped not in ("excluded", "missing", "empty"):
                say(f"{r.path}: skipped: {r.skipped}")

    try:
        storage.check()
    except ValueError as exc:
        storage.close()
        return fail(exc)
    except StoreUnreachable as exc:
        if not args.watch:
            storage.close()
            return fail(exc)
        say(f"{exc}; local sessions keep working, retrying")
    try:
        if args.fetch:
            # The copy goes where the session's row says only if that is a plain name in the
            # agent's sessions dir (core/sync/placement.py).
            try:
                path = syncer.fetch(args.fetch)
            except FileNotFoundError:
                return fail(f"no shared session {args.fetch} (or not visible to this role)")
            except (RefusedRow, FileExistsError) as exc:
                return fail(f"refused: {exc}")
            print(terminal_safe(path))
            return 0
        if args.watch:
            from sessiontree.core.sync.watch import watch

            stop = threading.Event()
            for sig in (signal.SIGINT, signal.SIGTERM):
                signal.signal(sig, lambda *_: stop.set())
            say(f"watching {', '.join(roots)} as {storage.machine}")
            watch(syncer, roots, stop=stop, on_round=report, say=say)
            return 1 if problems else 0
        files = syncer.sessions_of(roots)
        results = []
        for i, f in enumerate(files, 1):
            results.extend(syncer.sync_files([f]))
            if len(files) > 20 and i % 20 == 0:
                say(f"{i}/{counted(len(files), 'session')}")
        report(results)
        pushed = sum(r.pushed for r in results)
        pulled = sum(r.pulled for r in results)
        say(f"{counted(len(files), 'session')}: pushed {counted(pushed, 'entry')}, pulled {pulled}")
        return 1 if problems else 0
    except StoreUnreachable as exc:
        return fail(f"{exc}; rerun to resume (nothing is lost)")
    finally:
        storage.close()
