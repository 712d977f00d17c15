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

# Shared sessions are append-only by the database's own rules, whoever writes the SQL
# (docs/shared-store.md, "A hostile teammate"): a teammate may add rows to a session of
# their team, never change or remove one, and the rows they add must be what their columns
# say (docs/reliability.md, "The shared store"). Only the store's owner (the role that ran
# `store init`, or a superuser) may delete a shared session that is not its own, or clear
# conflicts; nobody rewrites an entry row.
_V4 = f"""
-- true: the database parsed the line and it agrees with its columns; false: it could not
-- parse it (a lone surrogate escape), so every reader checks it (core/store/rows.py);
-- NULL: written before this migration, or a row of a file that is no shared session.
ALTER TABLE {SCHEMA}.entries ADD COLUMN checked boolean;
CREATE INDEX entries_unchecked ON {SCHEMA}.entries (session_pk, seq) WHERE checked IS NOT TRUE;

-- The store's owner (a member of the role owning the tables, or a superuser).
CREATE FUNCTION {SCHEMA}.is_admin() RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT pg_has_role(current_user,
        (SELECT relowner FROM pg_class WHERE oid = '{SCHEMA}.sessions'::regclass), 'MEMBER')
$$;

CREATE FUNCTION {SCHEMA}.entries_insert() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    is_shared boolean;
    prev_end bigint;
    body bytea;
    v jsonb;
BEGIN
    IF length(NEW.line) > 1
        AND position(decode('0a', 'hex') IN substring(NEW.line FROM 1 FOR length(NEW.line) - 1)) > 0 THEN
        RAISE EXCEPTION 'sessiontree: a row holds one line (seq %)', NEW.seq USING ERRCODE = 'check_violation';
    END IF;
    SELECT s.shared INTO is_shared FROM {SCHEMA}.sessions s WHERE s.pk = NEW.session_pk;
    IF NOT coalesce(is_shared, false) THEN
        NEW.checked := NULL;
        RETURN NEW;
    END IF;
    -- Rows follow each other: seq is the next one and off the bytes before it.
    IF NEW.seq = 1 THEN
        prev_end := 0;
    ELSE
        SELECT e.off + length(e.line) INTO prev_end FROM {SCHEMA}.entries e
            WHERE e.session_pk = NEW.session_pk AND e.seq = NEW.seq - 1;
    END IF;
    IF prev_end IS DISTINCT FROM NEW.off THEN
        RAISE EXCEPTION 'sessiontree: row % of a shared session does not follow the rows before it', NEW.seq
            USING ERRCODE = 'check_violation';
    END IF;
    IF right(encode(NEW.line, 'hex'), 2) <> '0a' THEN
        RAISE EXCEPTION 'sessiontree: row % of a shared session is no whole line', NEW.seq
            USING ERRCODE = 'check_violation';
    END IF;
    IF NEW.seq > 1 THEN
        IF NEW.entry_id IS NULL THEN
            RAISE EXCEPTION 'sessiontree: row % of a shared session carries no entry id', NEW.seq
                USING ERRCODE = 'check_violation';
        END IF;
        body := NEW.line;
        WHILE length(body) > 0 AND get_byte(body, length(body) - 1) IN (10, 13) LOOP
            body := substring(body FROM 1 FOR length(body) - 1);
        END LOOP;
        IF NEW.hash IS DISTINCT FROM sha256(body) THEN
            RAISE EXCEPTION 'sessiontree: the hash of row % is not the hash of its line', NEW.seq
                USING ERRCODE = 'check_violation';
        END IF;
    END IF;
    BEGIN
        v := convert_from(NEW.line, 'UTF8')::jsonb;
    EXCEPTION WHEN others THEN
        v := NULL;
    END;
    IF v IS NULL THEN
        -- PostgreSQL takes no lone surrogate escape (agents write them) nor a NUL escape: with
        -- those made U+FFFD the line must be JSON; its id is then the readers' to check.
        BEGIN
            PERFORM regexp_replace(convert_from(NEW.line, 'UTF8'),
                '\\\\u([dD][89a-fA-F][0-9a-fA-F]{{2}}|0000)', '\\\\ufffd', 'g')::jsonb;
        EXCEPTION WHEN others THEN
            RAISE EXCEPTION 'sessiontree: row % of a shared session is not one JSON value', NEW.seq
                USING ERRCODE = 'check_violation';
        END;
        NEW.checked := false;
        RETURN NEW;
    END IF;
    IF jsonb_typeof(v) IS DISTINCT FROM 'object' THEN
        RAISE EXCEPTION 'sessiontree: row % of a shared session is no JSON object', NEW.seq
            USING ERRCODE = 'check_violation';
    END IF;
    IF NEW.seq = 1 THEN
        IF v->>'type' IS DISTINCT FROM 'session' OR jsonb_typeof(v->'id') IS DISTINCT FROM 'string'
            OR NEW.entry_id IS NOT NULL THEN
            RAISE EXCEPTION 'sessiontree: the first row of a shared session is its header'
                USING ERRCODE = 'check_violation';
        END IF;
    ELSIF v->>'type' = 'session' THEN
        RAISE EXCEPTION 'sessiontree: row % would be a second session header', NEW.seq
            USING ERRCODE = 'check_violation';
    ELSIF jsonb_typeof(v->'id') IS DISTINCT FROM 'string' OR v->>'id' <> NEW.entry_id THEN
        RAISE EXCEPTION 'sessiontree: the line of row % carries id %, its entry_id column %',
            NEW.seq, v->>'id', NEW.entry_id USING ERRCODE = 'check_violation';
    END IF;
    NEW.checked := true;
    RETURN NEW;
END $$;
CREATE TRIGGER entries_insert BEFORE INSERT ON {SCHEMA}.entries
    FOR EACH ROW EXECUTE FUNCTION {SCHEMA}.entries_insert();

-- Entry rows are never changed; they go only with their session (a cascade: the session
-- row is gone by then) or with a file of the storage seam that is no shared session.
-- Conflicts are kept the same way; the store's owner may clear them.
CREATE FUNCTION {SCHEMA}.rows_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    is_shared boolean;
BEGIN
    IF TG_OP = 'UPDATE' THEN
        RAISE EXCEPTION 'sessiontree: % rows are append-only: they are never changed', TG_TABLE_NAME
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    SELECT s.shared INTO is_shared FROM {SCHEMA}.sessions s WHERE s.pk = OLD.session_pk;
    IF NOT coalesce(is_shared, false) OR (TG_TABLE_NAME = 'conflicts' AND {SCHEMA}.is_admin()) THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'sessiontree: % rows of a shared session are append-only: they go only with their session',
        TG_TABLE_NAME USING ERRCODE = 'insufficient_privilege';
END $$;
CREATE TRIGGER entries_append_only BEFORE UPDATE OR DELETE ON {SCHEMA}.entries
    FOR EACH ROW EXECUTE FUNCTION {SCHEMA}.rows_append_only();
CREATE TRIGGER conflicts_append_only BEFORE UPDATE OR DELETE ON {SCHEMA}.conflicts
    FOR EACH ROW EXECUTE FUNCTION {SCHEMA}.rows_append_only();

CREATE FUNCTION {SCHEMA}.no_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT {SCHEMA}.is_admin() THEN
        RAISE EXCEPTION 'sessiontree: only the store''s owner may empty %', TG_TABLE_NAME
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER sessions_no_truncate BEFORE TRUNCATE ON {SCHEMA}.sessions
    FOR EACH STATEMENT EXECUTE FUNCTION {SCHEMA}.no_truncate();
CREATE TRIGGER entries_no_truncate BEFORE TRUNCATE ON {SCHEMA}.entries
    FOR EACH STATEMENT EXECUTE FUNCTION {SCHEMA}.no_truncate();
CREATE TRIGGER conflicts_no_truncate BEFORE TRUNCATE ON {SCHEMA}.conflicts
    FOR EACH STATEMENT EXECUTE FUNCTION {SCHEMA}.no_truncate();

-- A shared session's row: where it comes from never changes; its size, last seq and entry
-- count are those of its rows; only its owner or the store's owner deletes it.
CREATE FUNCTION {SCHEMA}.sessions_guard() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    last_seq_v bigint;
    size_v bigint;
    added bigint;
BEGIN
    IF NOT OLD.shared OR {SCHEMA}.is_admin() THEN
        IF TG_OP = 'DELETE' THEN
            RETURN OLD;
        END IF;
        RETURN NEW;
    END IF;
    IF TG_OP = 'DELETE' THEN
        IF OLD.owner = current_user THEN
            RETURN OLD;
        END IF;
        RAISE EXCEPTION 'sessiontree: shared session % is append-only: only its owner (%) or the store''s owner deletes it',
            OLD.session_id, OLD.owner USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF (NEW.pk, NEW.path, NEW.dir, NEW.session_id, NEW.generation, NEW.machine, NEW.os_user,
        NEW.agent_dir, NEW.cwd, NEW.file_name, NEW.team, NEW.owner, NEW.shared, NEW.created_at)
        IS DISTINCT FROM (OLD.pk, OLD.path, OLD.dir, OLD.session_id, OLD.generation, OLD.machine,
        OLD.os_user, OLD.agent_dir, OLD.cwd, OLD.file_name, OLD.team, OLD.owner, OLD.shared, OLD.created_at) THEN
        RAISE EXCEPTION 'sessiontree: where shared session % comes from is never changed', OLD.session_id
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF NEW.last_seq IS DISTINCT FROM OLD.last_seq OR NEW.size IS DISTINCT FROM OLD.size
        OR NEW.entry_count IS DISTINCT FROM OLD.entry_count THEN
        SELECT e.seq, e.off + length(e.line) INTO last_seq_v, size_v FROM {SCHEMA}.entries e
            WHERE e.session_pk = NEW.pk ORDER BY e.seq DESC LIMIT 1;
        SELECT count(*) INTO added FROM {SCHEMA}.entries e
            WHERE e.session_pk = NEW.pk AND e.seq > OLD.last_seq AND e.entry_id IS NOT NULL;
        IF NEW.last_seq IS DISTINCT FROM coalesce(last_seq_v, 0) OR NEW.size IS DISTINCT FROM coalesce(size_v, 0)
            OR NEW.entry_count IS DISTINCT FROM OLD.entry_count + added THEN
            RAISE EXCEPTION 'sessiontree: the size, last seq and entry count of shared session % are those of its rows',
                OLD.session_id USING ERRCODE = 'check_violation';
        END IF;
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER sessions_guard BEFORE UPDATE OR DELETE ON {SCHEMA}.sessions
    FOR EACH ROW EXECUTE FUNCTION {SCHEMA}.sessions_guard();

-- And by privileges, where the owner granted more: members need only to read and add
-- entries and conflicts (cascades run as the tables' owner).
DO $$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT DISTINCT g.grantee FROM information_schema.role_table_grants g
        WHERE g.table_schema = '{SCHEMA}' AND g.table_name IN ('entries', 'conflicts')
          AND g.privilege_type IN ('UPDATE', 'DELETE', 'TRUNCATE')
          AND g.grantee <> (SELECT pg_get_userbyid(c.relowner) FROM pg_class c
                            WHERE c.oid = '{SCHEMA}.entries'::regclass)
    LOOP
        EXECUTE format('REVOKE UPDATE, DELETE, TRUNCATE ON {SCHEMA}.entries, {SCHEMA}.conflicts FROM %s',
            CASE WHEN r.grantee = 'PUBLIC' THEN 'PUBLIC' ELSE quote_ident(r.grantee) END);
    END LOOP;
END $$;
"""

#: The migrations, in order; version n is reached by ``MIGRATIONS[n - 1]``.
MIGRATIONS: tuple[str, ...] = (_V1, _V2, _V3, _V4)

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
