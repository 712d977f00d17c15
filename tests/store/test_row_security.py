"""Row-level security (docs/shared-store.md, "Who may see what"): each person reaches the
store with their own role; a role sees the sessions it owns and those of its teams."""

from __future__ import annotations

import uuid
from pathlib import Path

import psycopg
import pytest
from machines import SESSION_ID, Machine, header, ids_in, message
from sessiontree.core.store.pg_schema import SCHEMA
from sessiontree.core.store.postgres import PostgresSessionStorage
from sessiontree.core.sync import SyncOptions

# The setup docs/shared-store.md gives, run by the store's owner.
SETUP = """
CREATE ROLE {member} NOLOGIN;
GRANT USAGE ON SCHEMA {schema} TO {member};
GRANT SELECT, INSERT, UPDATE, DELETE ON {schema}.sessions, {schema}.dirs TO {member};
GRANT SELECT, INSERT ON {schema}.entries, {schema}.conflicts TO {member};
GRANT SELECT ON {schema}.team_members, {schema}.schema_version TO {member};
GRANT USAGE ON ALL SEQUENCES IN SCHEMA {schema} TO {member};
"""


def role_url(url: str, role: str) -> str:
    return url.replace("postgresql://postgres@", f"postgresql://{role}@")


@pytest.fixture
def roles(pg_url: str) -> dict[str, str]:
    suffix = uuid.uuid4().hex[:6]
    names = {n: f"{n}_{suffix}" for n in ("alice", "bob", "carol")}
    member = f"st_member_{suffix}"
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(SETUP.format(member=member, schema=SCHEMA))
        for role in names.values():
            conn.execute(f"CREATE ROLE {role} LOGIN IN ROLE {member}")
        conn.execute(
            f"INSERT INTO {SCHEMA}.team_members (role, team) VALUES (%s, 'red'), (%s, 'red'), (%s, 'blue')",
            (names["alice"], names["carol"], names["bob"]),
        )
    return {n: role_url(pg_url, r) for n, r in names.items()}


def start(m: Machine, session_id: str = SESSION_ID) -> Path:
    path = m.sessions / f"s_{session_id}.jsonl"
    m.write(path, header(session_id), message(f"{m.name}-1", None, "hi"))
    return path


def test_a_role_sees_only_its_teams_sessions(tmp_path: Path, roles: dict[str, str]) -> None:
    alice = Machine(tmp_path, "alice-laptop", roles["alice"])
    bob = Machine(tmp_path, "bob-laptop", roles["bob"])
    carol = Machine(tmp_path, "carol-box", roles["carol"])
    start(alice)
    [r] = alice.sync(SyncOptions(team="red"))
    assert r.pushed == 1

    bob_store = PostgresSessionStorage(roles["bob"])
    assert bob_store.list_sessions() == []
    assert bob_store.find_session(SESSION_ID) is None
    with psycopg.connect(roles["bob"]) as conn:
        assert conn.execute(f"SELECT count(*) FROM {SCHEMA}.entries").fetchone() == (0,)
    with pytest.raises(FileNotFoundError):
        bob.syncer().fetch(SESSION_ID, str(bob.sessions))
    # A copy of the same session on bob's machine is refused, not merged into alice's.
    start(bob)
    [rb] = bob.sync(SyncOptions(team="blue"))
    assert rb.pushed == 0 and rb.skipped and "not visible" in rb.skipped
    bob_store.close()

    # carol is on alice's team: she sees the session, copies it and adds to it.
    carol_store = PostgresSessionStorage(roles["carol"])
    assert [s.session_id for s in carol_store.list_sessions()] == [SESSION_ID]
    pc = Path(carol.syncer().fetch(SESSION_ID, str(carol.sessions)))
    carol.write(pc, message("carol-1", "alice-laptop-1", "from carol"))
    carol.sync()
    pa = alice.sessions / f"s_{SESSION_ID}.jsonl"
    alice.sync()
    assert ids_in(pa) == ["alice-laptop-1", "carol-1"]
    carol_store.close()


def test_a_role_cannot_file_a_session_under_another_team(tmp_path: Path, roles: dict[str, str]) -> None:
    alice = Machine(tmp_path, "alice-laptop", roles["alice"])
    start(alice)
    s = alice.syncer(SyncOptions(team="blue"))
    r = s.sync_file(str(alice.sessions / f"s_{SESSION_ID}.jsonl"))
    assert r.pushed == 0 and r.skipped and "refused" in r.skipped
    # Nor join a team by writing the membership table.
    with psycopg.connect(roles["alice"]) as conn, pytest.raises(psycopg.errors.InsufficientPrivilege):
        conn.execute(f"INSERT INTO {SCHEMA}.team_members VALUES (current_user, 'blue')")
