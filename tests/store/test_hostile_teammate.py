"""A teammate who writes to the shared store by hand (docs/reliability.md, "The shared store:
a hostile teammate").

Carol is on alice's team: row-level security lets her see alice's sessions and add to them,
and she has an account on the store, so she can write any SQL her role may run. The store's
setup here is a careless one (every privilege on every table, as the docs' first setup
gave): what holds must hold by the database's own rules and by what alice's machine
checks, not by privileges. Each test forges rows by direct SQL as carol (or, for rows the
database itself would refuse, as the store's owner with the triggers off, standing for rows
written before migration 4) and checks that alice's files, her store rows and her terminal
come out unharmed.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import psycopg
import pytest
from machines import SESSION_ID, Machine, header, ids_in, loads_cleanly, message
from sessiontree.core.session import SessionManager
from sessiontree.core.store.pg_schema import CURRENT_SCHEMA_VERSION, SCHEMA, migrate
from sessiontree.core.store.postgres import PostgresSessionStorage
from sessiontree.core.sync import SyncOptions

CARELESS_SETUP = """
CREATE ROLE {member} NOLOGIN;
GRANT USAGE ON SCHEMA {schema} TO {member};
GRANT ALL ON ALL TABLES IN SCHEMA {schema} TO {member};
GRANT USAGE ON ALL SEQUENCES IN SCHEMA {schema} TO {member};
"""


def role_url(url: str, role: str) -> str:
    return url.replace("postgresql://postgres@", f"postgresql://{role}@")


def make_roles(url: str, setup: str = CARELESS_SETUP) -> dict[str, str]:
    suffix = uuid.uuid4().hex[:6]
    names = {n: f"{n}_{suffix}" for n in ("alice", "carol")}
    member = f"st_member_{suffix}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(setup.format(member=member, schema=SCHEMA))
        for role in names.values():
            conn.execute(f"CREATE ROLE {role} LOGIN IN ROLE {member}")
        conn.execute(
            f"INSERT INTO {SCHEMA}.team_members (role, team) VALUES (%s, 'red'), (%s, 'red')",
            (names["alice"], names["carol"]),
        )
    out = {n: role_url(url, r) for n, r in names.items()}
    out["member"] = member
    return out


@pytest.fixture
def roles(pg_url: str) -> dict[str, str]:
    return make_roles(pg_url)


@pytest.fixture
def alice(tmp_path: Path, roles: dict[str, str]) -> Machine:
    return Machine(tmp_path, "alice-laptop", roles["alice"])


def line(value: dict[str, Any]) -> bytes:
    return json.dumps(value).encode() + b"\n"


def digest(raw: bytes) -> bytes:
    return hashlib.sha256(raw.rstrip(b"\r\n")).digest()


def share(alice: Machine, n: int = 3) -> Path:
    """Alice's session with entries a1..an, pushed to the store under team red."""
    path = alice.sessions / f"s_{SESSION_ID}.jsonl"
    values = [header()]
    parent = None
    for i in range(1, n + 1):
        values.append(message(f"a{i}", parent, f"alice's own words {i}"))
        parent = f"a{i}"
    alice.write(path, *values)
    [r] = alice.sync(SyncOptions(team="red"))
    assert r.pushed == n
    return path


def session_pk(url: str, session_id: str = SESSION_ID) -> int:
    with psycopg.connect(url) as conn:
        row = conn.execute(
            f"SELECT pk FROM {SCHEMA}.sessions WHERE session_id = %s", (session_id,)
        ).fetchone()
    assert row is not None
    return int(row[0])


def store_rows(url: str, pk: int) -> list[tuple[Any, ...]]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            f"SELECT seq, off, entry_id, line, hash FROM {SCHEMA}.entries WHERE session_pk = %s ORDER BY seq",
            (pk,),
        ).fetchall()
    return [(r[0], r[1], r[2], bytes(r[3]), bytes(r[4]) if r[4] is not None else None) for r in rows]


def tail(url: str, pk: int) -> tuple[int, int]:
    """The next row's seq and offset."""
    with psycopg.connect(url) as conn:
        row = conn.execute(f"SELECT last_seq, size FROM {SCHEMA}.sessions WHERE pk = %s", (pk,)).fetchone()
    assert row is not None
    return int(row[0]) + 1, int(row[1])


def forge(
    url: str, pk: int, rows: list[tuple[str | None, bytes, bytes | None]], *, bypass: bool = False
) -> None:
    """Append ``(entry_id, line, hash)`` rows to session ``pk`` by hand, as the role of ``url``;
    with ``bypass``, as the store's owner with the triggers off (rows the database refuses)."""
    seq, off = tail(url, pk)
    with psycopg.connect(url, autocommit=True) as conn, conn.transaction():
        if bypass:
            conn.execute("SET LOCAL session_replication_role = replica")
        for ident, raw, h in rows:
            conn.execute(
                f"INSERT INTO {SCHEMA}.entries (session_pk, seq, off, entry_id, line, hash, machine)"
                " VALUES (%s, %s, %s, %s, %s, %s, 'carol-box')",
                (pk, seq, off, ident, raw, h),
            )
            seq, off = seq + 1, off + len(raw)
        conn.execute(
            f"UPDATE {SCHEMA}.sessions SET last_seq = %s, size = %s,"
            f" entry_count = entry_count + %s WHERE pk = %s",
            (seq - 1, off, sum(1 for r in rows if r[0] is not None), pk),
        )


def st(
    *args: str, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[bytes]:
    full = dict(os.environ)
    full.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "sessiontree", *args], capture_output=True, env=full, timeout=timeout
    )


def tree_of(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` with its bytes (links as their target's name)."""
    out: dict[str, bytes] = {}
    for dirpath, dirs, files in os.walk(root):
        for name in files + [d for d in dirs if os.path.islink(os.path.join(dirpath, d))]:
            p = os.path.join(dirpath, name)
            out[os.path.relpath(p, root)] = (
                b"-> " + os.readlink(p).encode() if os.path.islink(p) else Path(p).read_bytes()
            )
    return out


# --- 1. a store row never becomes a path outside the agent's sessions dir ------------------


EVIL_NAMES = [
    "../../../../outside/x.sh",
    "{outside}/abs.jsonl",
    "sub/dir.jsonl",
    "x.sh",
    "\x1b]0;owned\x07.jsonl",
    "..jsonl",
    ".hidden.jsonl",
    "a\\b.jsonl",
]


@pytest.mark.parametrize("evil", EVIL_NAMES)
def test_fetch_refuses_a_file_name_that_is_no_plain_name(
    tmp_path: Path, alice: Machine, roles: dict[str, str], evil: str
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    name = evil.format(outside=outside)
    session_id = f"evil-{uuid.uuid4().hex[:8]}"
    head = line(header(session_id))
    # Carol files a session of her own under her team, its file name chosen by her.
    with psycopg.connect(roles["carol"], autocommit=True) as conn, conn.transaction():
        pk = conn.execute(
            f"INSERT INTO {SCHEMA}.sessions (path, dir, session_id, machine, os_user, cwd, file_name, team,"
            " mtime_ns, shared) VALUES (%s, '/carol-box', %s, 'carol-box', 'carol', '/work/project', %s,"
            " 'red', 1, true) RETURNING pk",
            (f"/carol-box/{session_id}", session_id, name),
        ).fetchone()[0]
        conn.execute(
            f"INSERT INTO {SCHEMA}.entries (session_pk, seq, off, line) VALUES (%s, 1, 0, %s)", (pk, head)
        )
        conn.execute(f"UPDATE {SCHEMA}.sessions SET last_seq = 1, size = %s WHERE pk = %s", (len(head), pk))
    forge(
        roles["carol"],
        pk,
        [("c1", line(message("c1", None, "echo pwned")), digest(line(message("c1", None, "echo pwned"))))],
    )
    before = tree_of(alice.agent_dir)
    code, out = alice.run_cli("--fetch", session_id)
    assert code == 2 and "refused" in out, out
    assert list(outside.iterdir()) == []
    assert tree_of(alice.agent_dir) == before
    assert "\x1b" not in out and "\x07" not in out


def test_fetch_refuses_a_sessions_dir_linked_out_and_a_header_of_another_session(
    tmp_path: Path, alice: Machine, roles: dict[str, str]
) -> None:
    share(alice)
    bob = Machine(tmp_path, "bob-box", roles["carol"])
    outside = tmp_path / "outside"
    outside.mkdir()
    # Bob's sessions dir for the project is a link to a directory elsewhere.
    bob.sessions.rmdir()
    bob.sessions.symlink_to(outside, target_is_directory=True)
    code, out = bob.run_cli("--fetch", SESSION_ID)
    assert code == 2 and "refused" in out, out
    assert list(outside.iterdir()) == []
    # A session whose first row is another session's header (forged with the triggers off).
    other = f"other-{uuid.uuid4().hex[:8]}"
    with psycopg.connect(roles["carol"], autocommit=True) as conn, conn.transaction():
        pk = conn.execute(
            f"INSERT INTO {SCHEMA}.sessions (path, dir, session_id, machine, cwd, file_name, team, mtime_ns)"
            " VALUES (%s, '/carol-box', %s, 'carol-box', '/work/project', 'x.jsonl', 'red', 1) RETURNING pk",
            (f"/carol-box/{other}", other),
        ).fetchone()[0]
        conn.execute(
            f"INSERT INTO {SCHEMA}.entries (session_pk, seq, off, line) VALUES (%s, 1, 0, %s)",
            (pk, line(header(SESSION_ID))),
        )
    dave = Machine(tmp_path, "dave-box", roles["alice"])
    code, out = dave.run_cli("--fetch", other)
    assert code == 2 and "header of another session" in out, out
    assert list(dave.sessions.iterdir()) == []


# --- 7. store rows are checked line = id = column ------------------------------------------


def test_the_database_refuses_rows_that_are_not_what_their_columns_say(
    alice: Machine, roles: dict[str, str], pg_url: str
) -> None:
    pa = share(alice)
    pk = session_pk(pg_url)
    before = store_rows(pg_url, pk)
    shadow = line(message("a1", None, "carol's words in alice's a1"))
    two = line(message("c2", "a3", "first")) + line(header("hijack"))
    forgeries: list[tuple[str, list[tuple[str | None, bytes, bytes | None]]]] = [
        ("entry_id column is not the line's id", [("c9", shadow, digest(shadow))]),
        ("a row holding newlines and a second header", [("c2", two, digest(two))]),
        ("a second session header", [(None, line(header("hijack")), None)]),
        (
            "a header carried as an entry",
            [("hijack", line(header("hijack")), digest(line(header("hijack"))))],
        ),
        ("a hash that is not the line's", [("c3", line(message("c3", "a3", "x")), digest(b"other"))]),
        ("a row that is not JSON", [("c4", b"echo pwned\n", digest(b"echo pwned\n"))]),
    ]
    for what, rows in forgeries:
        with pytest.raises(psycopg.errors.CheckViolation):
            forge(roles["carol"], pk, rows)
        assert store_rows(pg_url, pk) == before, what
    # A row that does not follow the rows before it (a hole, an offset of its own).
    seq, off = tail(pg_url, pk)
    ok = line(message("c5", "a3", "fine"))
    with psycopg.connect(roles["carol"], autocommit=True) as conn:
        for bad_seq, bad_off in ((seq + 5, off), (seq, off + 7), (seq, 0)):
            with pytest.raises(psycopg.errors.CheckViolation):
                conn.execute(
                    f"INSERT INTO {SCHEMA}.entries (session_pk, seq, off, entry_id, line, hash)"
                    " VALUES (%s, %s, %s, 'c5', %s, %s)",
                    (pk, bad_seq, bad_off, ok, digest(ok)),
                )
    assert store_rows(pg_url, pk) == before
    # What she may do: add an entry of her own that is what it says.
    forge(roles["carol"], pk, [("c5", ok, digest(ok))])
    [r] = alice.sync()
    assert r.pulled == 1 and not r.refused and ids_in(pa) == ["a1", "a2", "a3", "c5"]
    loads_cleanly(pa)


def test_a_forged_row_is_a_conflict_and_nothing_of_it_is_written(
    alice: Machine, roles: dict[str, str], pg_url: str
) -> None:
    pa = share(alice)
    pk = session_pk(pg_url)
    original = pa.read_bytes()
    shadow = line(message("a1", None, "carol's words in alice's a1"))
    two = line(message("c2", "a3", "first")) + line(header("hijack")) + line(message("c3", "c2", "x"))
    # The database cannot parse a lone surrogate escape: it takes the row unchecked, and
    # every reader checks it.
    lone = b'{"type":"message","id":"a2","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z",' + (
        b'"message":{"role":"user","content":"\\ud800 carol","timestamp":1}}\n'
    )
    forge(roles["carol"], pk, [("c8", lone, digest(lone))])
    # Rows the database refuses, written with its triggers off (rows from before migration 4).
    forge(pg_url, pk, [("c9", shadow, digest(shadow)), ("c2", two, digest(two))], bypass=True)
    code, out = alice.run_cli()
    assert code == 1, out
    assert out.count("conflict: the store's row") == 3 and "nothing of it was written" in out
    assert pa.read_bytes() == original
    # A next round reports nothing new and writes nothing.
    [r] = alice.sync()
    assert r.pulled == 0 and pa.read_bytes() == original
    # Opened from the store (as a daemon opens a shared session), a1 is alice's and the
    # forged rows are dropped lines, not entries.
    viewer = PostgresSessionStorage(pg_url, machine="viewer", mirror=True)
    reports: list[str] = []
    viewer.report = reports.append
    info = viewer.find_session(SESSION_ID)
    assert info is not None
    sm = SessionManager.open(info.path, storage=viewer)
    entries = {e["id"]: e for e in sm.get_entries()}
    assert sorted(entries) == ["a1", "a2", "a3"]
    assert entries["a1"]["message"]["content"][0]["text"] == "alice's own words 1"
    assert entries["a2"]["message"]["content"][0]["text"] == "alice's own words 2"
    assert len(sm.load_report.dropped) == 3 and len(reports) == 3
    viewer.close()
    # The database vouched for none of them: the one it could not parse it marked, the
    # others it never saw.
    with psycopg.connect(pg_url) as conn:
        checked = conn.execute(
            f"SELECT entry_id, checked FROM {SCHEMA}.entries WHERE session_pk = %s AND entry_id LIKE 'c%%'",
            (pk,),
        ).fetchall()
    assert sorted(checked) == [("c2", None), ("c8", False), ("c9", None)]


# --- 8. sync never follows a link out of the agent dir --------------------------------------


def test_sync_never_follows_a_link_out_of_the_agent_dir(
    tmp_path: Path, roles: dict[str, str], pg_url: str
) -> None:
    alice = Machine(tmp_path, "alice-laptop", roles["alice"])
    pa = share(alice)
    outside = tmp_path / "outside"
    outside.mkdir()
    secret_ids = [f"secret-{i}" for i in range(3)]
    for i, sid in enumerate(secret_ids):
        (outside / f"{sid}.jsonl").write_bytes(
            line(header(sid)) + line(message(f"s{i}", None, "outside words"))
        )
    # A symlink to a session outside, a hard link of one, a project's session dir linked outside.
    (alice.sessions / "link.jsonl").symlink_to(outside / f"{secret_ids[0]}.jsonl")
    os.link(outside / f"{secret_ids[1]}.jsonl", alice.sessions / "hard.jsonl")
    (alice.sessions.parent / "--linked--").symlink_to(outside, target_is_directory=True)
    code, out = alice.run_cli()
    assert code == 0, out
    assert "link.jsonl: skipped: refused" in out and "hard.jsonl: skipped: refused" in out
    env = {"PI_CODING_AGENT_DIR": str(alice.agent_dir), "SESSIONTREE_STORE": roles["alice"]}
    done = st("sync", "--cwd", "/linked", "--machine", alice.name, "--state", alice.state, env=env)
    assert done.returncode == 0 and b"skipped: refused" in done.stderr, done.stderr
    store = PostgresSessionStorage(pg_url)
    assert [s.session_id for s in store.list_sessions()] == [SESSION_ID]
    assert all(store.find_session(sid) is None for sid in secret_ids)

    # Later, alice's file is swapped for a link to a copy outside; carol adds to the session.
    copy = outside / "copy.jsonl"
    copy.write_bytes(pa.read_bytes())
    pa.unlink()
    pa.symlink_to(copy)
    outside_before = tree_of(outside)
    pk = session_pk(pg_url)
    added = line(message("c1", "a3", "carol's"))
    forge(roles["carol"], pk, [("c1", added, digest(added))])
    code, out = alice.run_cli()
    assert f"{pa.name}: skipped: refused" in out, out
    assert tree_of(outside) == outside_before
    store.close()


# --- 12. shared sessions are append-only in the store; peer text is terminal-safe ----------


def test_a_teammate_cannot_rewrite_or_delete_anothers_rows(
    alice: Machine, roles: dict[str, str], pg_url: str
) -> None:
    pa = share(alice, 5)
    pk = session_pk(pg_url)
    before = store_rows(pg_url, pk)
    forged = line(message("a1", None, "rewritten by carol"))
    attempts = [
        (
            f"UPDATE {SCHEMA}.entries SET line = %s, hash = %s WHERE session_pk = %s AND entry_id = 'a1'",
            (forged, digest(forged), pk),
        ),
        (f"UPDATE {SCHEMA}.entries SET entry_id = 'gone' WHERE session_pk = %s AND entry_id = 'a2'", (pk,)),
        (f"DELETE FROM {SCHEMA}.entries WHERE session_pk = %s AND entry_id IN ('a4', 'a5')", (pk,)),
        (f"UPDATE {SCHEMA}.sessions SET file_name = '../../../../outside/x.sh' WHERE pk = %s", (pk,)),
        (f"UPDATE {SCHEMA}.sessions SET cwd = '/elsewhere', machine = 'carol-box' WHERE pk = %s", (pk,)),
        (f"UPDATE {SCHEMA}.sessions SET last_seq = 1, size = 10 WHERE pk = %s", (pk,)),
        (f"UPDATE {SCHEMA}.sessions SET shared = false WHERE pk = %s", (pk,)),
        (f"DELETE FROM {SCHEMA}.sessions WHERE pk = %s", (pk,)),
        (f"TRUNCATE {SCHEMA}.entries", ()),
    ]
    for sql, params in attempts:
        with psycopg.connect(roles["carol"], autocommit=True) as conn, pytest.raises(psycopg.Error):
            conn.execute(sql, params)
        assert store_rows(pg_url, pk) == before, sql
    # Not alice either: an entry row, once in the store, is never changed.
    with psycopg.connect(roles["alice"], autocommit=True) as conn, pytest.raises(psycopg.Error):
        conn.execute(f"UPDATE {SCHEMA}.entries SET line = %s WHERE session_pk = %s AND seq = 2", (forged, pk))
    # Conflicts are evidence: kept.
    with psycopg.connect(roles["carol"], autocommit=True) as conn:
        conn.execute(
            f"INSERT INTO {SCHEMA}.conflicts (session_pk, entry_id, machine, hash, line) VALUES (%s, 'a1', 'x', %s, %s)",
            (pk, digest(forged), forged),
        )
        with pytest.raises(psycopg.Error):
            conn.execute(f"DELETE FROM {SCHEMA}.conflicts WHERE session_pk = %s", (pk,))
    # Alice deletes her own session; the store's owner may delete any.
    with psycopg.connect(pg_url, autocommit=True) as conn:
        assert conn.execute(f"DELETE FROM {SCHEMA}.sessions WHERE pk = %s RETURNING pk", (pk,)).fetchone()
    assert store_rows(pg_url, pk) == []
    [r] = alice.sync()  # shared again from scratch
    assert r.pushed == 5 and ids_in(pa) == [f"a{i}" for i in range(1, 6)]


def test_migration_4_takes_update_and_delete_of_entries_from_members(pg_empty_url: str) -> None:
    with psycopg.connect(pg_empty_url, autocommit=True) as conn:
        migrate(conn, target=3)
    r = make_roles(pg_empty_url)
    with psycopg.connect(pg_empty_url, autocommit=True) as conn:
        privilege = "SELECT has_table_privilege(%s, %s, %s)"
        assert conn.execute(privilege, (r["member"], f"{SCHEMA}.entries", "UPDATE")).fetchone() == (True,)
        assert migrate(conn) == list(range(4, CURRENT_SCHEMA_VERSION + 1))
        for table in ("entries", "conflicts"):
            for what in ("UPDATE", "DELETE", "TRUNCATE"):
                assert conn.execute(privilege, (r["member"], f"{SCHEMA}.{table}", what)).fetchone() == (
                    False,
                )
            assert conn.execute(privilege, (r["member"], f"{SCHEMA}.{table}", "INSERT")).fetchone() == (True,)


def test_rows_changed_under_a_machine_are_noticed(
    tmp_path: Path, alice: Machine, roles: dict[str, str], pg_url: str
) -> None:
    pa = share(alice)
    carol = Machine(tmp_path, "carol-box", roles["carol"])
    pc = Path(carol.syncer().fetch(SESSION_ID, str(carol.sessions)))
    carol.write(pc, message("c1", "a3", "carol's"))
    carol.sync()
    [r] = alice.sync()
    assert r.pulled == 1
    pk = session_pk(pg_url)
    # Changed by someone the triggers do not stop (a superuser): a2 deleted, the row alice
    # pulled last rewritten.
    rewritten = line(message("c1", "a3", "rewritten"))
    with psycopg.connect(pg_url, autocommit=True) as conn, conn.transaction():
        conn.execute("SET LOCAL session_replication_role = replica")
        conn.execute(f"DELETE FROM {SCHEMA}.entries WHERE session_pk = %s AND entry_id = 'a2'", (pk,))
        conn.execute(
            f"UPDATE {SCHEMA}.entries SET line = %s, hash = %s WHERE session_pk = %s AND entry_id = 'c1'",
            (rewritten, digest(rewritten), pk),
        )
    [r] = alice.sync()
    in_store = [row[2] for row in store_rows(pg_url, pk) if row[2]]
    assert sorted(in_store) == ["a1", "a2", "a3", "c1"]  # a2 pushed back
    assert r.changed_under and r.conflicts == ["c1"]
    assert ids_in(pa) == ["a1", "a2", "a3", "c1"]
    viewer = PostgresSessionStorage(pg_url, machine="viewer", mirror=True)
    # A reader that keeps the session's bytes (the daemon) notices too, and reads it again.
    info = viewer.find_session(SESSION_ID)
    assert info is not None
    sm = SessionManager.open(info.path, storage=viewer)
    first = viewer.stat(info.path)
    with psycopg.connect(pg_url, autocommit=True) as conn, conn.transaction():
        conn.execute("SET LOCAL session_replication_role = replica")
        conn.execute(
            f"UPDATE {SCHEMA}.entries SET line = %s WHERE session_pk = %s"
            f" AND seq = (SELECT max(seq) FROM {SCHEMA}.entries WHERE session_pk = %s)",
            (rewritten, pk, pk),
        )
    assert viewer.refresh(info.path) is True
    assert viewer.stat(info.path).inode != first.inode
    res = sm.sync_with_file()
    assert res.kind.needs_reload
    viewer.close()


def test_peer_text_reaches_the_terminal_escaped(alice: Machine, roles: dict[str, str], pg_url: str) -> None:
    share(alice)
    nasty = "\x1b]0;owned\x07\x1b[2J\x9b31m\u202e"
    session_id = f"noisy-{uuid.uuid4().hex[:8]}"
    head = line(header(session_id, cwd="/work/" + nasty))
    with psycopg.connect(roles["carol"], autocommit=True) as conn, conn.transaction():
        pk = conn.execute(
            f"INSERT INTO {SCHEMA}.sessions (path, dir, session_id, machine, os_user, cwd, file_name, team,"
            " mtime_ns, shared) VALUES (%s, '/x', %s, %s, %s, %s, 'n.jsonl', 'red', 1, true) RETURNING pk",
            (f"/x/{session_id}", session_id, "box" + nasty, "carol" + nasty, "/work/" + nasty),
        ).fetchone()[0]
        conn.execute(
            f"INSERT INTO {SCHEMA}.entries (session_pk, seq, off, line) VALUES (%s, 1, 0, %s)", (pk, head)
        )
        conn.execute(
            f"INSERT INTO {SCHEMA}.conflicts (session_pk, entry_id, machine, hash, line) VALUES (%s, %s, %s, %s, %s)",
            (pk, "e" + nasty, "box" + nasty, b"h", b"x"),
        )
    for args in (("store", "ls", roles["alice"]), ("store", "conflicts", roles["alice"])):
        out = st(*args)
        text = out.stdout + out.stderr
        assert out.returncode in (0, 1), text
        assert b"box" in text
        assert not [b for b in text if (b < 0x20 and b != 0x0A) or b == 0x7F], text
        shown = text.decode()
        assert not [c for c in shown if 0x80 <= ord(c) <= 0x9F or c == "\u202e"], shown
        assert "\\x1b]0;owned\\x07" in shown
    # The sync's own messages: a refused row whose id is the noise.
    raw = line(message("a1", None, "shadow"))
    forge(pg_url, session_pk(pg_url), [("z" + nasty, raw, digest(raw))], bypass=True)
    code, out_text = alice.run_cli()
    assert code == 1 and "conflict: the store's row" in out_text
    assert raw_controls(out_text) == []


def raw_controls(shown: str) -> list[str]:
    """The characters a terminal would act on (newlines and tabs apart)."""
    return [
        c for c in shown if (ord(c) < 0x20 and c not in "\n\t") or 0x7F <= ord(c) <= 0x9F or c == "\u202e"
    ]


def test_a_teammates_text_pulled_into_a_file_reaches_the_terminal_escaped(
    tmp_path: Path, alice: Machine, roles: dict[str, str], pg_url: str
) -> None:
    pa = share(alice)
    nasty = "\x1b]0;owned\x07\x1b[2J\x9b31m\u202e"
    # An honest row as far as the store goes: carol's entry is what its columns say.
    mine = message("c1", "a3", "carol says " + nasty)
    mine["message"]["content"].append(
        {"type": "toolCall", "id": "t" + nasty, "name": "x", "arguments": {"k": nasty}}
    )
    label = {
        "type": "label",
        "id": "c2",
        "parentId": "c1",
        "timestamp": "2026-01-01T00:00:02.000Z",
        "targetId": "a1",
        "label": "L" + nasty,
    }
    rows = [(v["id"], line(v), digest(line(v))) for v in (mine, label)]
    forge(roles["carol"], session_pk(pg_url), rows)
    [r] = alice.sync()
    assert r.pulled == 2 and ids_in(pa) == ["a1", "a2", "a3", "c1", "c2"]
    env = {"PI_CODING_AGENT_DIR": str(alice.agent_dir)}
    for args in (
        ("tree", str(pa)),
        ("context", str(pa)),
        ("show", str(pa)),
        ("diff", str(pa), "a1", "c1"),
        ("search", "--all", "--agent-dir", str(alice.agent_dir), "carol"),
    ):
        out = st(*args, env=env)
        shown = (out.stdout + out.stderr).decode()
        assert out.returncode == 0, (args, shown)
        assert "says" in shown or args[0] == "show", (args, shown)
        assert raw_controls(shown) == [], (args, shown)
        assert "\\x1b]0;owned\\x07" in shown, (args, shown)
