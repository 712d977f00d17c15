"""A shared store for the editor suites: starts the tests' own PostgreSQL (tests/pg.py),
puts one session of machine "alpha" in it, prints ``{"url": ..., "file": ..., "id": ...}``
as one JSON line, then follows commands on stdin until it closes (and stops the server):

- ``append ID TEXT``: alpha's agent appends a user message, alpha's sync pushes it;
- ``stop`` / ``start``: stop or start the server (the store becomes unreachable / comes back).

Usage: python tests/store/pg_for_editors.py DIR
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from machines import SESSION_ID, Machine, header, ids_in, message
from pg import PgServer


def main() -> int:
    base = Path(sys.argv[1])
    base.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("XDG_STATE_HOME", str(base / "state"))
    server = PgServer()
    try:
        server.init()
        url = server.new_database()
        import psycopg
        from sessiontree.core.store.pg_schema import migrate

        with psycopg.connect(url, autocommit=True) as conn:
            migrate(conn)
        alpha = Machine(base, "alpha", url)
        path = alpha.sessions / f"s_{SESSION_ID}.jsonl"
        alpha.write(path, header(), message("m1", None, "Shared hello from alpha"))
        alpha.sync()
        print(json.dumps({"url": url, "file": str(path), "id": SESSION_ID}), flush=True)
        for line in sys.stdin:
            words = line.split(maxsplit=2)
            if not words:
                continue
            if words[0] == "append":
                parent = ids_in(path)[-1]
                alpha.write(path, message(words[1], parent, words[2].strip() if len(words) > 2 else "x"))
                alpha.sync()
            elif words[0] == "stop":
                server.stop("immediate")
            elif words[0] == "start":
                server.start()
            print("ok", flush=True)
    finally:
        server.destroy()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
