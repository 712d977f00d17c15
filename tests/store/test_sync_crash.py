"""A sync process killed (SIGKILL) mid-push and mid-pull, and the store's server stopped and
restarted mid-sync: rerunning the sync loses nothing and duplicates nothing."""

from __future__ import annotations

import signal
import subprocess
from collections import Counter
from pathlib import Path

import pytest
from machines import SESSION_ID, Machine, header, ids_in, loads_cleanly, message
from pg import PgServer
from test_sync import store_ids

N = 6000
BATCH = "200"


@pytest.fixture
def a(tmp_path: Path, pg_url: str) -> Machine:
    return Machine(tmp_path, "alpha", pg_url)


@pytest.fixture
def b(tmp_path: Path, pg_url: str) -> Machine:
    return Machine(tmp_path, "beta", pg_url)


def big_session(m: Machine, n: int = N) -> Path:
    path = m.sessions / f"big_{SESSION_ID}.jsonl"
    values = [header()]
    parent = None
    for i in range(n):
        values.append(message(f"e{i:06d}", parent, "x" * 200))
        parent = values[-1]["id"]
    m.write(path, *values)
    return path


def wait_for_progress(p: subprocess.Popen[str], word: str, count: int) -> None:
    """Read the process's stderr until ``count`` progress lines with ``word`` went by."""
    assert p.stderr is not None
    seen = 0
    lines = []
    while seen < count:
        line = p.stderr.readline()
        if not line:
            raise AssertionError(f"the sync ended before {count} '{word}' lines: {''.join(lines)}")
        lines.append(line)
        if word in line:
            seen += 1


def assert_complete(path: Path, url: str, n: int = N) -> None:
    ids = ids_in(path)
    assert [i for i, c in Counter(ids).items() if c > 1] == []
    in_store = store_ids(url)
    assert len(in_store) == len(set(in_store)) == n
    assert set(ids) == set(in_store)
    loads_cleanly(path)


@pytest.mark.parametrize("after", [1, 7, 20])
def test_sigkill_mid_push_then_rerun(a: Machine, pg_url: str, after: int) -> None:
    pa = big_session(a)
    p = a.cli("--batch", BATCH)
    wait_for_progress(p, "pushed", after)
    p.send_signal(signal.SIGKILL)
    p.wait()
    partial = len(store_ids(pg_url))
    assert 0 < partial <= N
    code, out = a.run_cli("--batch", BATCH)
    assert code == 0, out
    assert_complete(pa, pg_url)
    code, out = a.run_cli("--batch", BATCH)
    assert code == 0 and "pushed 0 entries, pulled 0" in out


@pytest.mark.parametrize("after", [1, 9, 18])
def test_sigkill_mid_pull_then_rerun(a: Machine, b: Machine, pg_url: str, after: int) -> None:
    big_session(a)
    code, out = a.run_cli("--batch", "2000")
    assert code == 0, out
    p = b.cli("--batch", BATCH, "--fetch", SESSION_ID)
    wait_for_progress(p, "pulled", after)
    p.send_signal(signal.SIGKILL)
    p.wait()
    [pb] = list(b.sessions.glob("*.jsonl"))
    assert 0 < len(ids_in(pb)) <= N  # (the kill may land just after the last page)
    code, out = b.run_cli("--batch", BATCH)
    assert code == 0, out
    assert_complete(pb, pg_url)
    assert ids_in(pb) == store_ids(pg_url)  # arrival order kept


def test_server_stopped_mid_sync_then_restarted(a: Machine, pg_url: str, pg_server: PgServer) -> None:
    pa = big_session(a)
    p = a.cli("--batch", BATCH)
    try:
        wait_for_progress(p, "pushed", 3)
        pg_server.stop("immediate")
        _out, err = p.communicate(timeout=60)
        assert p.returncode == 2, err
        assert "unreachable" in err or "lost" in err
    finally:
        if not pg_server.running:
            pg_server.start()
    code, out = a.run_cli("--batch", BATCH)
    assert code == 0, out
    assert_complete(pa, pg_url)


class Crash(Exception):
    pass


@pytest.mark.parametrize("crash_at_save", [1, 2])
def test_a_crash_between_any_step_and_its_mark_doubles_nothing(
    a: Machine, b: Machine, pg_url: str, monkeypatch: pytest.MonkeyPatch, crash_at_save: int
) -> None:
    # Each save of the marks comes right after a step took effect (a push committed, lines
    # appended to the file); dying just before the save is the worst moment for a crash.
    from sessiontree.core.sync.state import SyncState

    pa = big_session(a, 30)
    sa = a.syncer()
    sa.batch = 10
    sa.sync_file(str(pa))
    pb = Path(b.syncer().fetch(SESSION_ID, str(b.sessions)))
    a.write(pa, *[message(f"n{i}", "e000029", "new") for i in range(25)])
    b.write(pb, message("from-b", "e000029", "b's"))
    sa.sync_file(str(pa))
    calls = {"n": 0}
    real = SyncState.set

    def crashing_set(self: SyncState, path: str, mark: object) -> None:
        calls["n"] += 1
        if calls["n"] == crash_at_save:
            raise Crash
        real(self, path, mark)  # type: ignore[arg-type]

    sb = b.syncer()
    sb.batch = 10
    monkeypatch.setattr(SyncState, "set", crashing_set)
    with pytest.raises(Crash):
        sb.sync_file(str(pb))
    monkeypatch.setattr(SyncState, "set", real)
    for m, p in ((b, pb), (a, pa), (b, pb)):
        s = m.syncer()
        s.sync_file(str(p))
    assert_complete(pb, pg_url, 30 + 25 + 1)
    assert set(ids_in(pa)) == set(ids_in(pb))
