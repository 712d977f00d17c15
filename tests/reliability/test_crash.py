"""Crash consistency: SIGKILL a writing library process at random moments.

Each round starts a child (`crash_child.py`) that writes a session and reports every step
whose write returned; the parent kills it after a random delay and checks that the file
still loads, that a rewrite left either the old or the new version, and that every
acknowledged entry is on disk.

A kill rarely tears a line (only inside a write that crosses a page boundary); to see that
case often, run the appends with long lines and many rounds, e.g.
``CRASH_APPEND_ROUNDS=80 CRASH_PAD=300000`` (a few tears in 80 rounds here).
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sessiontree.core import SessionManager
from sessiontree.core.format.jsonl import parse_jsonl_lenient
from sessiontree.core.store.torn import separator_after

from .helpers import chain, real_v1_fixture, write_session

CHILD = str(Path(__file__).with_name("crash_child.py"))
ROUNDS = {
    "append": int(os.environ.get("CRASH_APPEND_ROUNDS", "10")),
    "cached": 10,
    "first": 6,
    "migrate": 8,
    "setname": 6,
    "fork": 5,
    "branched": 5,
}
RNG = random.Random(int(os.environ.get("CRASH_SEED", "20261129")))


def run_and_kill(mode: str, path: Path, *extra: str, max_delay: float = 0.15) -> list[list[str]]:
    """Start the child, wait for `ready`, kill it after a random delay; return its reports."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen(
        [sys.executable, CHILD, mode, str(path), *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert proc.stdout is not None
    first = proc.stdout.readline()
    assert first == b"ready\n", first + (proc.stderr.read() if proc.stderr else b"")
    time.sleep(RNG.uniform(0, max_delay))
    proc.send_signal(signal.SIGKILL)
    # read through the same buffered object as the first line (communicate() would skip
    # whatever readline() already buffered)
    out = proc.stdout.read()
    err = proc.stderr.read() if proc.stderr else b""
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL, (
        f"child ended by itself: {proc.returncode} {err.decode()[-2000:]}"
    )
    return [ln.split(" ", 1) for ln in out.decode().splitlines()]


def values_of(path: Path) -> list:
    return parse_jsonl_lenient(path.read_bytes()).values


def ids_of(path: Path) -> list[str]:
    return [v.get("id") for v in values_of(path)[1:] if isinstance(v, dict)]


def loads(path: Path) -> SessionManager:
    sm = SessionManager.open(str(path))
    assert sm.get_header() is not None
    return sm


def test_kill_during_appends(tmp_path: Path) -> None:
    survived = tears = 0
    for r in range(ROUNDS["append"]):
        f = tmp_path / f"append{r}.jsonl"
        write_session(f, chain(30, seed=r))
        before = ids_of(f)
        reports = run_and_kill("append", f, max_delay=0.25)
        acked = [w[1] for w in reports if w[0] == "ack"]
        on_disk = ids_of(f)
        assert on_disk[: len(before)] == before
        assert set(acked) <= set(on_disk), f"round {r}: lost {set(acked) - set(on_disk)}"
        # A kill can stop a write partway: the kernel checks for a fatal signal between the
        # pages it copies, so a line crossing a page boundary may be left torn there. That
        # line was never acknowledged (its flush did not return).
        crashed = f.read_bytes()
        torn = crashed[crashed.rfind(b"\n") + 1 :]
        if torn:
            tears += 1
            # at a page boundary: the writer writes a line in one call, never in pieces
            assert len(crashed) % 4096 == 0, f"round {r}: torn at {len(crashed)}"
        sm = loads(f)
        assert {e["id"] for e in sm.get_entries()} >= set(before) | set(acked)
        # the next writer never glues onto a torn last line: the fragment (and the breaker
        # line that keeps it from swallowing the next) are the only unreadable lines
        eid = sm.append_message({"role": "user", "content": "after the crash", "timestamp": 1})
        sm.flush()
        sm.close()
        assert eid in ids_of(f)
        after = f.read_bytes()
        assert after.startswith(crashed + separator_after(torn))
        unreadable = [after[d.offset : d.offset + d.length] for d in parse_jsonl_lenient(after).dropped]
        breaker = [ln for ln in separator_after(torn).split(b"\n") if ln]
        assert unreadable == ([torn, *breaker] if torn else []), f"round {r}"
        survived += 1
    assert survived == ROUNDS["append"]
    print(f"[crash] append rounds {survived}, torn by the kill {tears}")


def test_kill_during_appends_to_a_file_reopened_through_the_index_cache(tmp_path: Path) -> None:
    # One file grows over the rounds; every round opens it warm from the sidecar cache,
    # and what any earlier round acknowledged must still be there (and in the context).
    f = tmp_path / "cached.jsonl"
    cache = tmp_path / "cache"
    write_session(f, chain(30, seed=7))
    acked: list[str] = []
    for r in range(ROUNDS["cached"]):
        reports = run_and_kill("cached", f, str(cache), max_delay=0.25)
        acked += [w[1] for w in reports if w[0] == "ack"]
        sm = SessionManager.open(str(f), read_only=True, cache_dir=str(cache))
        ids = set(sm.index.order())
        assert not [a for a in acked if a not in ids], f"round {r}: acknowledged entries lost"
        assert sm.build_session_context().messages
    assert acked


def test_kill_during_first_write(tmp_path: Path) -> None:
    cwd = tmp_path / "proj"
    cwd.mkdir()
    for r in range(ROUNDS["first"]):
        d = tmp_path / f"first{r}"
        d.mkdir()
        reports = run_and_kill("first", d / "x.jsonl", str(cwd), max_delay=0.2)
        files = {w[1] for w in reports if w[0] == "file"}
        acked = [w[1] for w in reports if w[0] == "ack"]
        sessions = list(d.glob("*.jsonl"))
        assert len(sessions) <= 1, sessions
        if acked:
            assert sessions and str(sessions[0]) in files
        for f in sessions:
            sm = loads(f)
            assert set(acked) <= {e["id"] for e in sm.get_entries()}


def test_kill_during_migration_rewrite(tmp_path: Path) -> None:
    src = real_v1_fixture()
    original = src.read_bytes()
    n_entries = len(parse_jsonl_lenient(original).values)
    for r in range(ROUNDS["migrate"]):
        f = tmp_path / f"v1-{r}.jsonl"
        data = original
        if r % 2:
            data = original + b"garbage that the loader drops\n"
        f.write_bytes(data)
        reports = run_and_kill("migrate", f, max_delay=0.12)
        now = f.read_bytes()
        quarantine = [p for p in tmp_path.iterdir() if p.name.startswith(f".{f.name}.quarantine")]
        if any(w[0] == "opened" for w in reports):
            assert now != data
        if now == data:
            continue  # killed before the rename: the old version, intact
        values = parse_jsonl_lenient(now).values
        assert values[0]["version"] == 3
        assert len(values) == n_entries
        assert not parse_jsonl_lenient(now).dropped
        if r % 2:
            assert quarantine and quarantine[0].read_bytes() == data
        loads(f)


def test_kill_during_set_session_name(tmp_path: Path) -> None:
    for r in range(ROUNDS["setname"]):
        f = tmp_path / f"name{r}.jsonl"
        write_session(f, chain(40, seed=r))
        before = values_of(f)[1:]
        reports = run_and_kill("setname", f, max_delay=0.3)
        names = [w[1] for w in reports if w[0] == "name"]
        values = values_of(f)
        assert values[1:] == before  # the entries are untouched
        title = values[0].get("title")
        if names:
            last = int(names[-1].split("-")[1])
            assert title in (f"name-{last}", f"name-{last + 1}")
        else:
            assert title in (None, "name-0")
        loads(f)
        assert not [p for p in tmp_path.iterdir() if p.name.endswith(".jsonl") and p.name.startswith(".")]


@pytest.mark.parametrize("mode", ["fork", "branched"])
def test_kill_during_fork_and_branched_session(tmp_path: Path, mode: str) -> None:
    for r in range(ROUNDS[mode]):
        d = tmp_path / f"{mode}{r}"
        d.mkdir()
        f = d / "source.jsonl"
        data = write_session(f, chain(30, seed=r))
        sm = SessionManager.open(str(f))
        path_ids = [e["id"] for e in sm.get_branch()]
        reports = run_and_kill(mode, f, max_delay=0.4)
        assert f.read_bytes() == data, "the source is never written"
        made = {w[1] for w in reports if w[0] in ("fork", "branched")}
        for g in d.glob("*.jsonl"):
            if g == f:
                continue
            ids = [e["id"] for e in loads(g).get_entries() if e.get("type") != "label"]
            # a new file is complete or absent: never a partial copy
            assert ids == path_ids if mode == "branched" else set(ids) == set(ids_of(f)), g
            made.discard(str(g))
        assert not made, f"acknowledged files missing: {made}"


def test_rounds_total() -> None:
    assert sum(ROUNDS.values()) == 50
