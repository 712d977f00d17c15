"""Two machines live: daemons over stdio (the real `sessiontree serve`), `sessiontree sync
--watch` processes and one real store.

Machine alpha owns the session file (a plain writer stands in for its agent, its sync runs
with --watch); machine beta's daemon has the store configured, lists the session as
alpha's, opens it from the store and is told of alpha's appends by `session/didChange`
through LISTEN/NOTIFY; beta's writes reach alpha's file, and alpha's own daemon, watching
that file, announces them too.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from machines import SESSION_ID, Machine, header, ids_in, loads_cleanly, message
from sessiontree.client import Client, RpcError


@pytest.fixture
def alpha(tmp_path: Path, pg_url: str) -> Machine:
    return Machine(tmp_path, "alpha", pg_url)


def daemon(tmp_path: Path, machine: str, agent_dir: Path, store: str | None) -> Client:
    opts: dict[str, Any] = {"agentDir": str(agent_dir), "allowedRoots": [str(tmp_path)]}
    if store is not None:
        opts["store"] = store
    return Client.spawn(init_options=opts, env={"SESSIONTREE_MACHINE": machine, "SESSIONTREE_STORE": ""})


@pytest.fixture
def watcher(alpha: Machine) -> Iterator[subprocess.Popen[str]]:
    p = alpha.cli("--watch", "--quiet")
    time.sleep(0.3)
    yield p
    p.send_signal(signal.SIGTERM)
    try:
        p.wait(timeout=10)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()


def wait_until(pred: Any, timeout: float = 15.0) -> float:
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if pred():
            return time.monotonic() - start
        time.sleep(0.02)
    raise AssertionError("timed out")


def test_two_machines_live(
    tmp_path: Path, alpha: Machine, pg_url: str, watcher: subprocess.Popen[str]
) -> None:
    pa = alpha.sessions / f"s_{SESSION_ID}.jsonl"
    alpha.write(pa, header(), message("m1", None, "hello from alpha"))
    wait_until(lambda: alpha.syncer().store.find_session(SESSION_ID) is not None)
    beta_agent = tmp_path / "beta" / "agent"
    beta_agent.mkdir(parents=True)
    with (
        daemon(tmp_path, "beta", beta_agent, pg_url) as b,
        daemon(tmp_path, "alpha", alpha.agent_dir, pg_url) as a,
    ):
        listed = b.request("session/list", {"all": True})
        assert listed["store"] == {"reachable": True, "machine": "beta"}
        [info] = listed["sessions"]
        assert (info["id"], info["machine"], info["local"]) == (SESSION_ID, "alpha", False)
        assert info["displayName"] == "hello from alpha"
        # Alpha's own daemon lists its file as local, with who and where.
        [mine] = a.request("session/list", {"all": True})["sessions"]
        assert (mine["machine"], mine["local"]) == ("alpha", True)

        opened = b.request("session/openShared", {"sessionId": SESSION_ID})
        hb = opened["session"]
        assert opened["leafId"] == "m1"
        ha = a.request("session/open", {"path": str(pa)})["session"]

        # Alpha's agent appends; beta's daemon hears of it through the store.
        b.notifications.clear()
        t0 = time.monotonic()
        alpha.write(pa, message("m2", "m1", "alpha again"))
        note = b.wait_for_notification(
            "session/didChange", lambda p: p["session"] == hb and p["source"] == "external", timeout=15
        )
        latency = time.monotonic() - t0
        assert [e["id"] for e in note["appended"]] == ["m2"] and note["leafId"] == "m2"
        print(f"alpha file append -> beta daemon didChange: {latency * 1000:.0f} ms")

        # Beta writes with the same guards as for a file.
        with pytest.raises(RpcError) as stale:
            b.request(
                "session/append",
                {
                    "session": hb,
                    "expectedLeafId": "m1",
                    "entry": {"type": "message", "message": {"role": "user", "content": "x", "timestamp": 1}},
                },
            )
        assert stale.value.code == -32004
        a.notifications.clear()
        res = b.request(
            "session/append",
            {
                "session": hb,
                "expectedLeafId": "m2",
                "entry": {
                    "type": "message",
                    "message": {
                        "role": "user",
                        "content": [{"type": "text", "text": "from beta"}],
                        "timestamp": 2,
                    },
                },
            },
        )
        b.request("session/setLabel", {"session": hb, "targetId": "m1", "label": "start"})
        # ... and they reach alpha's file through alpha's sync, and alpha's daemon.
        wait_until(lambda: res["id"] in ids_in(pa))
        note = a.wait_for_notification(
            "session/didChange",
            lambda p: p["session"] == ha and res["id"] in [e["id"] for e in p["appended"]],
            timeout=15,
        )
        a.wait_for_notification("session/didChangeLabel", lambda p: p["session"] == ha, timeout=15)
        wait_until(lambda: len(ids_in(pa)) == 4)
        # Navigating back with a summary on beta: the summary reaches alpha's file and daemon.
        a.notifications.clear()
        nav = b.request(
            "session/navigate", {"session": hb, "targetId": "m1", "summarize": True, "summary": "tried m2"}
        )
        summary_id = nav["summaryEntry"]["id"]
        assert summary_id, nav
        wait_until(lambda: summary_id in ids_in(pa))
        note = a.wait_for_notification(
            "session/didChange",
            lambda p: p["session"] == ha and summary_id in [e["id"] for e in p["appended"]],
            timeout=15,
        )
        assert note["appended"][-1]["type"] == "branch_summary"
        loads_cleanly(pa)
        assert len(ids_in(pa)) == len(set(ids_in(pa))) == 5


def test_an_unreachable_store_leaves_local_sessions_working(tmp_path: Path, alpha: Machine) -> None:
    pa = alpha.sessions / f"s_{SESSION_ID}.jsonl"
    alpha.write(pa, header(), message("m1", None, "hi"))
    url = "postgresql://nobody@/nodb?host=/nonexistent-socket-dir&connect_timeout=2"
    with daemon(tmp_path, "alpha", alpha.agent_dir, url) as a:
        listed = a.request("session/list", {"all": True})
        assert listed["store"]["reachable"] is False and listed["store"]["error"]
        assert [s["id"] for s in listed["sessions"]] == [SESSION_ID]
        assert a.request("session/open", {"path": str(pa)})["leafId"] == "m1"
        with pytest.raises(RpcError) as err:
            a.request("session/openShared", {"sessionId": SESSION_ID})
        assert err.value.code == -32003


def test_without_a_store_nothing_changes(tmp_path: Path, alpha: Machine) -> None:
    pa = alpha.sessions / f"s_{SESSION_ID}.jsonl"
    alpha.write(pa, header(), message("m1", None, "hi"))
    with daemon(tmp_path, "alpha", alpha.agent_dir, None) as a:
        listed = a.request("session/list", {"all": True})
        assert "store" not in listed and "machine" not in listed["sessions"][0]
        with pytest.raises(RpcError) as err:
            a.request("session/openShared", {"sessionId": SESSION_ID})
        assert err.value.code == -32602
    assert json.loads(pa.read_text().splitlines()[0])["id"] == SESSION_ID


def test_sync_watch_on_both_machines_carries_appends_both_ways(tmp_path: Path, pg_url: str) -> None:
    alpha, beta = Machine(tmp_path, "alpha", pg_url), Machine(tmp_path, "beta", pg_url)
    pa = alpha.sessions / f"s_{SESSION_ID}.jsonl"
    alpha.write(pa, header(), message("m1", None, "hi"))
    alpha.sync()
    pb = Path(beta.syncer().fetch(SESSION_ID, str(beta.sessions)))
    procs = [alpha.cli("--watch", "--quiet"), beta.cli("--watch", "--quiet")]
    # Beta's daemon follows beta's own copy, as a file (no store needed for that).
    bd = daemon(tmp_path, "beta", beta.agent_dir, None)
    try:
        hb = bd.request("session/open", {"path": str(pb)})["session"]
        time.sleep(0.5)
        t0 = time.monotonic()
        alpha.write(pa, message("a1", "m1", "from alpha"))
        wait_until(lambda: "a1" in ids_in(pb))
        print(f"alpha file -> beta file through two sync --watch: {(time.monotonic() - t0) * 1000:.0f} ms")
        bd.wait_for_notification(
            "session/didChange",
            lambda p: p["session"] == hb and "a1" in [e["id"] for e in p["appended"]],
            timeout=15,
        )
        beta.write(pb, message("b1", "a1", "from beta"))
        wait_until(lambda: "b1" in ids_in(pa))
        for i in range(10):
            alpha.write(pa, message(f"a-{i}", "b1", "x"))
            beta.write(pb, message(f"b-{i}", "b1", "y"))
        wait_until(lambda: len(ids_in(pa)) == len(ids_in(pb)) == 23)
    finally:
        bd.close()
        for p in procs:
            p.send_signal(signal.SIGTERM)
        for p in procs:
            p.wait(timeout=10)
    assert set(ids_in(pa)) == set(ids_in(pb))
    for p in (pa, pb):
        loads_cleanly(p)
        assert len(ids_in(p)) == len(set(ids_in(p)))


def test_a_session_new_in_the_store_refreshes_the_lists(tmp_path: Path, pg_url: str) -> None:
    alpha = Machine(tmp_path, "alpha", pg_url)
    beta_agent = tmp_path / "beta" / "agent"
    beta_agent.mkdir(parents=True)
    with daemon(tmp_path, "beta", beta_agent, pg_url) as b:
        assert b.request("session/list", {"all": True})["sessions"] == []
        time.sleep(0.5)  # the listener connects
        b.notifications.clear()
        pa = alpha.sessions / f"s_{SESSION_ID}.jsonl"
        alpha.write(pa, header(), message("m1", None, "brand new"))
        alpha.sync()
        b.wait_for_notification("session/didChangeList", timeout=10)
        [info] = b.request("session/list", {"all": True})["sessions"]
        assert info["machine"] == "alpha"


def test_the_daemon_rides_out_a_store_restart(
    tmp_path: Path, alpha: Machine, pg_url: str, pg_server: Any
) -> None:
    pa = alpha.sessions / f"s_{SESSION_ID}.jsonl"
    alpha.write(pa, header(), message("m1", None, "hi"))
    alpha.sync()
    beta_agent = tmp_path / "beta" / "agent"
    beta_agent.mkdir(parents=True)
    with daemon(tmp_path, "beta", beta_agent, pg_url) as b:
        hb = b.request("session/openShared", {"sessionId": SESSION_ID})["session"]
        pg_server.stop("immediate")
        try:
            listed = b.request("session/list", {"all": True})
            assert listed["store"]["reachable"] is False
            # The open session keeps what it holds.
            assert b.request("session/entries", {"session": hb})["total"] == 1
        finally:
            pg_server.start()
        wait_until(lambda: b.request("session/list", {"all": True})["store"]["reachable"], timeout=40)
        b.notifications.clear()
        alpha.write(pa, message("m2", "m1", "after the restart"))
        alpha.sync()
        b.wait_for_notification(
            "session/didChange",
            lambda p: p["session"] == hb and [e["id"] for e in p["appended"]] == ["m2"],
            timeout=20,
        )
