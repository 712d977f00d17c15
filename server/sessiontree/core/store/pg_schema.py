"""The shared store's schema, created and upgraded by numbered single-step migrations
(CONVENTIONS 5): `MIGRATIONS[n - 1]` takes the schema from version ``n - 1`` to ``n``;
`migrate` runs the missing ones in order, each in its own transaction, under an advisory
lock so two machines upgrading at once take turns. docs/shared-store.md describes the tables.
"""

from __future__ import annotations

from typing import Any

__all__ = ["CURRENT_SCHEMA_VERSION", "MIGRATIONS", "NOTIFY_CHANNEL", "SCHEMA", "migrate", "schema_version"]

#: The PostgreSQL schema (namespace) every table lives in.
SCHEMA = "sessiontree"

#: The LISTEN/NOTIFY channel: one notification per statement that added entries, with the
#: session's key and its new arrival high-water mark (``"<pk> <seq>"``).
NOTIFY_CHANNEL = "sessiontree_entries"

# An arbitrary, fixed key for pg_advisory_xact_lock: migrations run one machine at a time.
_MIGRATION_LOCK_KEY = 0x5E55_1011

_V1 = f"""
CREATE SCHEMA IF NOT EXISTS {SCHEMA};
CREATE TABLE {SCHEMA}.schema_version (
    version integer PRIMARY KEY,
    applied_at timestamptz NOT NULL DEFAULT now()
);
-- Directories of the storage seam (SessionStorage); a session file needs none to exist.
CREATE TABLE {SCHEMA}.dirs (
    path text PRIMARY KEY
);
-- One row per file; a session file carries its session id (its header's) and where it
-- lives: machine, user, agent dir, cwd, file name.
CREATE SEQUENCE {SCHEMA}.generation;
CREATE TABLE {SCHEMA}.sessions (
    pk bigserial PRIMARY KEY,
    path text NOT NULL UNIQUE,
    dir text NOT NULL,
    session_id text UNIQUE,
    generation bigint NOT NULL DEFAULT nextval('{SCHEMA}.generation'),
    machine text,
    os_user text,
    agent_dir text,
    cwd text,
    file_name text,
    team text,
    owner name NOT NULL DEFAULT current_user,
    size bigint NOT NULL DEFAULT 0,
    last_seq bigint NOT NULL DEFAULT 0,
    damaged_lines integer NOT NULL DEFAULT 0,
    mtime_ns bigint NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX sessions_dir ON {SCHEMA}.sessions (dir);
CREATE INDEX sessions_machine ON {SCHEMA}.sessions (machine, updated_at DESC);
-- The lines of a file in arrival order (seq, per session, assigned under the session
-- row's lock so commit order is seq order); a line that is an entry has its id, unique
-- in its session. ``off`` is the byte offset of the line in the file.
CREATE TABLE {SCHEMA}.entries (
    session_pk bigint NOT NULL REFERENCES {SCHEMA}.sessions (pk) ON DELETE CASCADE,
    seq bigint NOT NULL,
    off bigint NOT NULL,
    entry_id text,
    line bytea NOT NULL,
    hash bytea,
    machine text,
    PRIMARY KEY (session_pk, seq)
);
CREATE UNIQUE INDEX entries_id ON {SCHEMA}.entries (session_pk, entry_id) WHERE entry_id IS NOT NULL;
CREATE INDEX entries_off ON {SCHEMA}.entries (session_pk, off);
-- Content-addressed blobs (the agents' externalized images and large outputs).
CREATE TABLE {SCHEMA}.blobs (
    hash text PRIMARY KEY,
    data bytea NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
-- Same entry id, different content: kept here, reported, never resolved by the store.
CREATE TABLE {SCHEMA}.conflicts (
    session_pk bigint NOT NULL REFERENCES {SCHEMA}.sessions (pk) ON DELETE CASCADE,
    entry_id text NOT NULL,
    machine text NOT NULL,
    hash bytea NOT NULL,
    line bytea NOT NULL,
    detected_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (session_pk, entry_id, machine, hash)
);
-- Row-level security: which roles belong to which team (docs/shared-store.md).
CREATE TABLE {SCHEMA}.team_members (
    role name NOT NULL,
    team text NOT NULL,
    PRIMARY KEY (role, team)
);
CREATE FUNCTION {SCHEMA}.notify_entries() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE r record;
BEGIN
    FOR r IN SELECT session_pk, max(seq) AS seq FROM new_rows GROUP BY session_pk LOOP
        PERFORM pg_notify('{NOTIFY_CHANNEL}', r.session_pk || ' ' || r.seq);
    END LOOP;
    RETURN NULL;
END $$;
CREATE TRIGGER entries_notify AFTER INSERT ON {SCHEMA}.entries
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION {SCHEMA}.notify_entries();
"""

# Row-level security: a role sees the sessions it owns and those of its teams; entries,
# conflicts follow their session. The table owner (who ran `store init`) is exempt, as
# PostgreSQL exempts owners unless FORCE is set.
_V2 = f"""
CREATE FUNCTION {SCHEMA}.my_teams() RETURNS SETOF text LANGUAGE sql STABLE AS
    'SELECT team FROM {SCHEMA}.team_members WHERE role = current_user';
ALTER TABLE {SCHEMA}.sessions ENABLE ROW LEVEL SECURITY;
ALTER TABLE {SCHEMA}.entries ENABLE ROW LEVEL SECURITY;
ALTER TABLE {SCHEMA}.conflicts ENABLE ROW LEVEL SECURITY;
CREATE POLICY sessions_team ON {SCHEMA}.sessions
    USING (owner = current_user OR team IN (SELECT {SCHEMA}.my_teams()))
    WITH CHECK (owner = current_user AND (team IS NULL OR team IN (SELECT {SCHEMA}.my_teams())));
CREATE POLICY sessions_team_write ON {SCHEMA}.sessions AS PERMISSIVE FOR UPDATE
    USING (team IN (SELECT {SCHEMA}.my_teams()))
    WITH CHECK (team IN (SELECT {SCHEMA}.my_teams()));
CREATE POLICY entries_session ON {SCHEMA}.entries
    USING (EXISTS (SELECT 1 FROM {SCHEMA}.sessions s WHERE s.pk = session_pk));
CREATE POLICY conflicts_session ON {SCHEMA}.conflicts
    USING (EXISTS (SELECT 1 FROM {SCHEMA}.sessions s WHERE s.pk = session_pk));
"""

# Sessions the sync shares are append-only in the store: the union of entries is the
# merge, so a rewrite (a migration, a new header) is made on the owning machine only. And
# each session's entry count, kept as entries arrive, for listings.
_V3 = f"""
ALTER TABLE {SCHEMA}.sessions ADD COLUMN shared boolean NOT NULL DEFAULT false;
UPDATE {SCHEMA}.sessions SET shared = true WHERE session_id IS NOT NULL AND agent_dir IS NOT NULL;
-- Listings show each session's entry count without counting its rows.
ALTER TABLE {SCHEMA}.sessions ADD COLUMN entry_count bigint NOT NULL DEFAULT 0;
UPDATE {SCHEMA}.sessions s SET entry_count =
    (SELECT count(*) FROM {SCHEMA}.entries e WHERE e.session_pk = s.pk AND e.entry_id IS NOT NULL);
"""

#: The migrations, in order; version n is reached by ``MIGRATIONS[n - 1]``.
MIGRATIONS: tuple[str, ...] = (_V1, _V2, _V3)

#: The version `migrate` brings a store to (the one place it lives).
CURRENT_SCHEMA_VERSION = len(MIGRATIONS)


def schema_version(conn: Any) -> int:
    """The store's schema version (0 for a database without one)."""
    row = conn.execute("SELECT to_regclass(%s)", (f"{SCHEMA}.schema_version",)).fetchone()
    if row is None or row[0] is None:
        return 0
    got = conn.execute(f"SELECT coalesce(max(version), 0) FROM {SCHEMA}.schema_version").fetchone()
    return int(got[0]) if got else 0


def migrate(conn: Any, target: int = CURRENT_SCHEMA_VERSION) -> list[int]:
    """Apply the missing migrations up to ``target``; the versions applied (``[]`` when current).

    ``conn`` is a psycopg connection; each step commits on its own, so a failure leaves the
    store at the last completed version."""
    if target > CURRENT_SCHEMA_VERSION:
        raise ValueError(f"schema version {target} is newer than this sessiontree ({CURRENT_SCHEMA_VERSION})")
    applied: list[int] = []
    while True:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK_KEY,))
            version = schema_version(conn)
            if version > CURRENT_SCHEMA_VERSION:
                raise ValueError(
                    f"the store's schema is version {version}, newer than this sessiontree "
                    f"({CURRENT_SCHEMA_VERSION}): upgrade sessiontree"
                )
            if version >= target:
                return applied
            step = version + 1
            conn.execute(MIGRATIONS[step - 1])
            conn.execute(f"INSERT INTO {SCHEMA}.schema_version (version) VALUES (%s)", (step,))
            applied.append(step)
