"""Two-way sync between two "machines" (two agent dirs) and one real PostgreSQL store.

A plain file writer stands in for the agent; the sync's state lives in each machine's
temporary dir. Every test ends with the same check: the same entry set on both sides, no id
twice in a file, both files loading cleanly.
"""

from __future__ import annotations

import json
import random
import threading
from collections import Counter
from pathlib import Path

import psycopg
import pytest
from machines import SESSION_ID, Machine, header, ids_in, loads_cleanly, message
from sessiontree.core.store.pg_schema import SCHEMA
from sessiontree.core.store.postgres import PostgresSessionStorage
from sessiontree.core.sync import SyncOptions


@pytest.fixture
def a(tmp_path: Path, pg_url: str) -> Machine:
    return Machine(tmp_path, "alpha", pg_url)


@pytest.fixture
def b(tmp_path: Path, pg_url: str) -> Machine:
    return Machine(tmp_path, "beta", pg_url)


def start_session(m: Machine, n: int = 3, session_id: str = SESSION_ID) -> Path:
    path = m.sessions / f"2026-01-01T00-00-00-000Z_{session_id}.jsonl"
    values = [header(session_id)]
    parent = None
    for i in range(n):
        values.append(message(f"{m.name[0]}{i:04d}", parent, f"hello {i}"))
        parent = values[-1]["id"]
    m.write(path, *values)
    return path


def fetch(m: Machine, session_id: str = SESSION_ID) -> Path:
    s = m.syncer()
    try:
        return Path(s.fetch(session_id, str(m.sessions)))
    finally:
        s.store.close()


def store_ids(url: str, session_id: str = SESSION_ID) -> list[str]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            f"SELECT e.entry_id FROM {SCHEMA}.entries e JOIN {SCHEMA}.sessions s ON s.pk = e.session_pk"
            " WHERE s.session_id = %s AND e.entry_id IS NOT NULL ORDER BY e.seq",
            (session_id,),
        ).fetchall()
    return [r[0] for r in rows]


def assert_same_and_clean(*paths: Path, url: str | None = None) -> set[str]:
    sets = []
    for p in paths:
        ids = ids_in(p)
        dupes = [i for i, c in Counter(ids).items() if c > 1]
        assert dupes == [], f"{p}: duplicated entries {dupes[:5]}"
        loads_cleanly(p)
        sets.append(set(ids))
    if url is not None:
        in_store = store_ids(url)
        assert len(in_store) == len(set(in_store))
        sets.append(set(in_store))
    assert all(s == sets[0] for s in sets), [sorted(s ^ sets[0])[:5] for s in sets]
    return sets[0]


def test_a_plain_writers_entry_reaches_the_other_machines_file(a: Machine, b: Machine, pg_url: str) -> None:
    pa = start_session(a)
    [r] = a.sync()
    assert (r.pushed, r.pulled, r.conflicts) == (3, 0, [])
    pb = fetch(b)
    assert pb.read_bytes() == pa.read_bytes()  # byte for byte: header and entries
    a.write(pa, message("a0100", "a0002", "from alpha"))
    a.sync()
    [rb] = b.sync()
    assert rb.pulled == 1 and ids_in(pb)[-1] == "a0100"
    b.write(pb, message("b0100", "a0100", "from beta"))
    b.sync()
    [ra] = a.sync()
    assert ra.pulled == 1 and ids_in(pa)[-1] == "b0100"
    assert_same_and_clean(pa, pb, url=pg_url)
    # The session in the store knows where it came from.
    shared = PostgresSessionStorage(pg_url).find_session(SESSION_ID)
    assert shared is not None and shared.machine == "alpha" and shared.cwd == "/work/project"
    assert shared.entries == 5


def test_sync_is_idempotent_and_incremental(a: Machine, b: Machine, pg_url: str) -> None:
    pa = start_session(a, 50)
    a.sync()
    pb = fetch(b)
    for _ in range(3):
        assert [(r.pushed, r.pulled) for r in a.sync()] == [(0, 0)]
        assert [(r.pushed, r.pulled) for r in b.sync()] == [(0, 0)]
    a.write(pa, message("a0100", "a0049", "one more"))
    [r] = a.sync()
    assert r.pushed == 1  # only what changed
    assert [(r.pushed, r.pulled) for r in b.sync()] == [(0, 1)]
    assert_same_and_clean(pa, pb, url=pg_url)


def test_both_append_at_once_for_30_seeded_rounds(a: Machine, b: Machine, pg_url: str) -> None:
    rng = random.Random(1616)
    pa = start_session(a, 2)
    a.sync()
    pb = fetch(b)
    counters = {"alpha": 0, "beta": 0}

    def act(m: Machine, path: Path) -> None:
        for _ in range(rng_for[m.name].randint(0, 3)):
            counters[m.name] += 1
            ids = ids_in(path)
            m.write(path, message(f"{m.name}-{counters[m.name]}", ids[-1] if ids else None, "x"))
            if rng_for[m.name].random() < 0.5:
                m.sync()
        m.sync()

    rng_for = {"alpha": random.Random(rng.random()), "beta": random.Random(rng.random())}
    for _ in range(30):
        threads = [threading.Thread(target=act, args=(a, pa)), threading.Thread(target=act, args=(b, pb))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    for _ in range(2):
        a.sync()
        b.sync()
    got = assert_same_and_clean(pa, pb, url=pg_url)
    assert len(got) == 2 + counters["alpha"] + counters["beta"]


def test_same_id_other_content_is_a_reported_conflict(a: Machine, b: Machine, pg_url: str) -> None:
    pa = start_session(a)
    a.sync()
    pb = fetch(b)
    a.write(pa, message("same", "a0002", "alpha's version"))
    b.write(pb, message("same", "a0002", "beta's version"))
    a.sync()
    [rb] = b.sync()
    assert rb.conflicts == ["same"] and rb.pulled == 0
    # Neither side is overwritten; the store keeps the first and records the other.
    assert "alpha's version" in pa.read_text() and "beta's version" not in pa.read_text()
    assert "beta's version" in pb.read_text() and "alpha's version" not in pb.read_text()
    with psycopg.connect(pg_url) as conn:
        rows = conn.execute(f"SELECT entry_id, machine FROM {SCHEMA}.conflicts").fetchall()
    assert rows == [("same", "beta")]
    [rb] = b.sync()  # still reported, still not resolved
    assert rb.conflicts == [] or rb.conflicts == ["same"]
    assert Counter(ids_in(pb))["same"] == 1


def test_damaged_lines_and_files_are_never_pushed_as_whole(a: Machine, pg_url: str) -> None:
    pa = start_session(a, 2)
    with open(pa, "ab") as f:
        f.write(b'{"type":"message","id":"torn-in-the-mid\n')
        f.write(json.dumps(message("after", "a0001", "after the damage")).encode() + b"\n")
        f.write(b'{"type":"message","id":"still-being-written"')  # no newline yet
    [r] = a.sync()
    assert r.damaged == 1 and r.pushed == 3
    assert store_ids(pg_url) == ["a0000", "a0001", "after"]
    shared = PostgresSessionStorage(pg_url).find_session(SESSION_ID)
    assert shared is not None and shared.damaged_lines == 1
    # A file without a session header is not a session: nothing of it is pushed.
    (a.sessions / "junk.jsonl").write_bytes(b'{"type":"message","id":"x"}\n')
    results = {Path(r.path).name: r for r in a.sync()}
    assert results["junk.jsonl"].skipped and results["junk.jsonl"].pushed == 0


def test_excluded_dirs_and_redacted_patterns(a: Machine, b: Machine, pg_url: str) -> None:
    pa = start_session(a, 1)
    a.write(pa, message("secret", "a0000", "my key is sk-abc123 do not share"))
    other = a.agent_dir / "sessions" / "--private--"
    other.mkdir()
    a.write(
        other / "p.jsonl",
        header("0193c0de-0000-7000-8000-0000000000ff", "/private"),
        message("p1", None, "x"),
    )
    opts = SyncOptions(exclude=["/private"], redact=[r"sk-[a-z0-9]+"])
    a.sync(opts)
    with psycopg.connect(pg_url) as conn:
        lines = [bytes(r[0]) for r in conn.execute(f"SELECT line FROM {SCHEMA}.entries").fetchall()]
        sessions = [r[0] for r in conn.execute(f"SELECT session_id FROM {SCHEMA}.sessions").fetchall()]
    assert sessions == [SESSION_ID]
    assert not any(b"sk-abc123" in line for line in lines)
    assert any(b"my key is [redacted] do not share" in line for line in lines)
    assert "sk-abc123" in pa.read_text()  # the local file is untouched
    # Redacted once, stable afterwards: no conflict with the machine's own copy.
    assert sorted((r.pushed, r.conflicts, r.skipped or "") for r in a.sync(opts)) == [
        (0, [], ""),
        (0, [], "excluded"),
    ]
    pb = fetch(b)
    assert "sk-abc123" not in pb.read_text()


def test_nothing_is_pushed_without_a_store(a: Machine) -> None:
    start_session(a)
    code, out = a.run_cli(env={"SESSIONTREE_STORE": ""})
    assert code == 2 and "no store configured" in out


def test_the_cli_syncs_and_reports(a: Machine, b: Machine, pg_url: str) -> None:
    pa = start_session(a)
    code, out = a.run_cli()
    assert code == 0, out
    assert "pushed 3 entries" in out
    code, out = b.run_cli("--fetch", SESSION_ID)
    assert code == 0, out
    pb = Path(out.strip().splitlines()[0])
    assert pb.parent.parent == b.agent_dir / "sessions"
    assert_same_and_clean(pa, pb, url=pg_url)


def test_blobs_travel_with_the_entries_that_reference_them(a: Machine, b: Machine, pg_url: str) -> None:
    import hashlib

    from sessiontree.core.session import SessionManager
    from sessiontree.core.store.postgres import PgBlobs

    image = b"\x89PNG fake image bytes" * 100
    digest = hashlib.sha256(image).hexdigest()
    (a.agent_dir / "blobs").mkdir()
    (a.agent_dir / "blobs" / digest).write_bytes(image)
    pa = a.sessions / f"s_{SESSION_ID}.jsonl"
    entry = message("img", None, "look")
    entry["message"]["content"].append(
        {"type": "image", "data": f"blob:sha256:{digest}", "mimeType": "image/png"}
    )
    a.write(pa, header(), entry)
    a.sync()
    assert PgBlobs(PostgresSessionStorage(pg_url)).get(digest) == image
    fetch(b)
    assert (b.agent_dir / "blobs" / digest).read_bytes() == image
    # Opened from the store, the reference resolves from the store's blobs.
    storage = PostgresSessionStorage(pg_url)
    info = storage.find_session(SESSION_ID)
    assert info is not None
    sm = SessionManager.open(info.path, storage=storage, blobs=PgBlobs(storage))
    [e] = sm.get_entries()
    assert e["message"]["content"][1]["data"] != f"blob:sha256:{digest}"


def test_a_session_deleted_from_the_store_is_shared_again(a: Machine, pg_url: str) -> None:
    pa = start_session(a, 3)
    a.sync()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f"DELETE FROM {SCHEMA}.sessions")
    a.write(pa, message("a0100", "a0002", "after the delete"))
    [r] = a.sync()
    assert r.pushed == 4
    assert store_ids(pg_url) == ids_in(pa)


def test_a_file_that_is_no_regular_file_is_skipped_and_the_others_sync(a: Machine, pg_url: str) -> None:
    import os

    pa = start_session(a, 2)
    os.mkfifo(a.sessions / "fifo.jsonl")  # would block a reader forever
    results = {Path(r.path).name: r for r in a.sync()}
    assert results[pa.name].pushed == 2
    assert results["fifo.jsonl"].skipped == "not a regular file"


def test_two_syncs_on_one_machine_at_once_double_nothing(a: Machine, b: Machine, pg_url: str) -> None:
    # A `sync --watch` and a `sync` by hand on the same machine: rounds on one file take turns.
    pa = start_session(a, 2)
    a.sync()
    pb = fetch(b)
    for i in range(40):
        a.write(pa, message(f"x{i}", "a0001", "x"))
    a.sync()
    threads = [threading.Thread(target=b.sync) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert_same_and_clean(pa, pb, url=pg_url)
