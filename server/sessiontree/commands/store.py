"""`sessiontree store init|migrate|ls|conflicts [URL]`: the shared session store.

``init`` creates the schema in an empty database and ``migrate`` upgrades it (both run the
numbered migrations of `core.store.pg_schema`; ``init`` refuses a database that already has
one, ``migrate`` one that has none). ``ls`` lists the shared sessions this role may see,
grouped by machine; ``conflicts`` the entries that differ between machines. The URL is a
``postgresql://`` URL or a libpq conninfo string; without one, ``$SESSIONTREE_STORE``.
Exit code 0, 1 for conflicts found, 2 when the store cannot be used.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

ENV = "SESSIONTREE_STORE"

#: Seconds `store init` and `store migrate` may take (other calls: `pg_timeouts`).
MIGRATION_TIMEOUT = 3600.0


def store_url(given: str | None) -> str | None:
    """The store in effect: ``--store``/``URL``, else ``$SESSIONTREE_STORE``; ``None`` for none."""
    return given or os.environ.get(ENV) or None


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "store",
        help="create, upgrade and inspect the shared session store (PostgreSQL)",
        description="The shared session store on PostgreSQL (docs/shared-store.md).",
    )
    sub = p.add_subparsers(dest="store_command", metavar="ACTION", required=True)
    for name, text in (
        ("init", "create the schema in an empty database"),
        ("migrate", "upgrade the schema to this version of sessiontree"),
        ("ls", "list the shared sessions, by machine"),
        ("conflicts", "list entries whose content differs between machines"),
    ):
        q = sub.add_parser(name, help=text, description=text)
        q.add_argument("url", nargs="?", help=f"postgresql:// URL or conninfo (default: ${ENV})")
        if name == "ls":
            q.add_argument("--json", action="store_true", help="print JSON")


def run(args: argparse.Namespace) -> int:
    url = store_url(args.url)
    verb = f"store {args.store_command}"
    if not url:
        print(f"sessiontree {verb}: no store: pass URL or set ${ENV}", file=sys.stderr)
        return 2
    try:
        import psycopg
    except ImportError:
        print(
            f"sessiontree {verb}: psycopg is not installed (pip install 'psycopg[binary]')", file=sys.stderr
        )
        return 2
    from sessiontree.commands.common import terminal_safe
    from sessiontree.core.store.pg_schema import CURRENT_SCHEMA_VERSION, migrate, schema_version
    from sessiontree.core.store.postgres import PgPool, StoreUnreachable

    try:
        if args.store_command in ("init", "migrate"):
            # A migration may rewrite a big table: an hour, not the minute of a sync's call.
            pool = PgPool(url, timeout=MIGRATION_TIMEOUT)
            with pool.connection() as conn:
                have = schema_version(conn)
                if args.store_command == "init" and have:
                    print(
                        f"sessiontree {verb}: the store is already set up (schema version {have})",
                        file=sys.stderr,
                    )
                    print("run `sessiontree store migrate` to upgrade it", file=sys.stderr)
                    return 2
                if args.store_command == "migrate" and not have:
                    print(
                        f"sessiontree {verb}: no sessiontree schema here; run `sessiontree store init`",
                        file=sys.stderr,
                    )
                    return 2
                applied = migrate(conn)
            pool.close()
            if applied:
                print(f"schema version {applied[-1]} (applied {', '.join(map(str, applied))})")
            else:
                print(f"schema version {CURRENT_SCHEMA_VERSION}, up to date")
            return 0
        if args.store_command == "ls":
            return _ls(url, args.json)
        return _conflicts(url)
    except (psycopg.Error, OSError, ValueError, StoreUnreachable) as exc:
        print(f"sessiontree {verb}: {terminal_safe(str(exc).strip())}", file=sys.stderr)
        return 2


def _ls(url: str, as_json: bool) -> int:
    import json

    from sessiontree.commands.common import terminal_safe as safe
    from sessiontree.core.store.postgres import PostgresSessionStorage

    storage = PostgresSessionStorage(url)
    try:
        sessions = storage.list_sessions()
    finally:
        storage.close()
    if as_json:
        print(json.dumps([s.__dict__ if hasattr(s, "__dict__") else _asdict(s) for s in sessions], indent=1))
        return 0
    by_machine: dict[str, list[Any]] = {}
    for s in sessions:
        by_machine.setdefault(s.machine or "?", []).append(s)
    # Every field but the counts is what a teammate's machine (or the teammate) wrote.
    for machine in sorted(by_machine):
        print(f"{safe(machine)}:")
        for s in by_machine[machine]:
            damaged = f"  ({s.damaged_lines} damaged line(s) not shared)" if s.damaged_lines else ""
            print(
                f"  {safe(s.session_id)}  {s.entries:>6} entries  {safe(s.os_user or '?')}"
                f"  {safe(s.cwd or '?')}{damaged}"
            )
    return 0


def _asdict(obj: Any) -> dict[str, Any]:
    from dataclasses import asdict

    return asdict(obj)


def _conflicts(url: str) -> int:
    from sessiontree.commands.common import terminal_safe as safe
    from sessiontree.core.store.pg_schema import SCHEMA
    from sessiontree.core.store.postgres import PgPool

    pool = PgPool(url)
    with pool.connection() as conn:
        rows = conn.execute(
            f"SELECT s.session_id, c.entry_id, c.machine, c.detected_at FROM {SCHEMA}.conflicts c"
            f" JOIN {SCHEMA}.sessions s ON s.pk = c.session_pk ORDER BY c.detected_at"
        ).fetchall()
    pool.close()
    for session_id, entry_id, machine, when in rows:
        print(
            f"{safe(session_id)}  entry {safe(entry_id)}: {safe(machine)}'s copy differs"
            f" ({when:%Y-%m-%d %H:%M:%S})"
        )
    return 1 if rows else 0
