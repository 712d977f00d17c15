"""A TCP client that never reads: the daemon's memory stays bounded and SIGTERM ends it.

The real daemon over `--tcp`. A client pipelines hundreds of large `session/view` requests
(about 1.7 MB of answer each) and never reads an answer. The daemon stops reading that
connection's requests while its unsent answers are over the bound or too many of its
requests are being handled, so its memory stays bounded; other connections are served
meanwhile; a client that pipelines many requests gets every answer; a connection whose unsent
output passes the hard limit is dropped; and SIGTERM ends the daemon promptly whatever its
clients do. docs/reliability.md "TCP backpressure".
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from .helpers import chain, write_session
from .rawlsp import RawLsp
from .test_connections import RawTcp, TcpDaemon

pytestmark = pytest.mark.timeout(300)

VIEWS = 400
#: RSS growth allowed while a client never reads (the code before grew by 1 GB and more).
RSS_BOUND_MB = 250


def _rss_mb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for row in f:
            if row.startswith("VmRSS:"):
                return int(row.split()[1]) // 1024
    raise AssertionError("no VmRSS")


def _cpu_ticks(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def _big_session(tmp: Path) -> Path:
    sessions = tmp / "agent" / "sessions" / "--proj--"
    sessions.mkdir(parents=True)
    entries = chain(3000, seed=5)
    for e in entries[1:]:
        e["message"]["content"][0]["text"] += " " + "y" * 400
    path = sessions / "big.jsonl"
    write_session(path, entries)
    return path


def _frame(obj: Any) -> bytes:
    return RawLsp.frame(json.dumps(obj).encode())


def _view(rid: int, handle: str) -> bytes:
    params = {"session": handle, "filter": "all", "limit": 5000}
    return _frame({"jsonrpc": "2.0", "id": rid, "method": "session/view", "params": params})


def _opened(d: TcpDaemon, tmp: Path, path: Path) -> tuple[RawTcp, str]:
    """A connection that initialized and opened ``path`` (its reader thread stops reading
    once `RawTcp.sock` is handed over: callers use a plain socket for the flood)."""
    c = RawTcp(d.port)
    assert "result" in c.initialize(
        {"token": d.token, "agentDir": str(tmp / "agent"), "allowedRoots": [str(tmp)], "watch": False}
    )
    res = c.request("session/open", {"path": str(path)}, timeout=60)
    return c, res["result"]["session"]


def _silent_client(d: TcpDaemon, tmp: Path, path: Path) -> tuple[socket.socket, str]:
    """A raw connection that initializes, opens the session, then never reads again."""
    sock = socket.create_connection(("127.0.0.1", d.port), timeout=30)
    f = sock.makefile("rb")

    def answer(rid: int) -> dict[str, Any]:
        while True:
            n = 0
            while True:
                h = f.readline()
                if h in (b"\r\n", b"\n", b""):
                    break
                if h.lower().startswith(b"content-length"):
                    n = int(h.split(b":")[1])
            msg = json.loads(f.read(n))
            if msg.get("id") == rid:
                return msg  # type: ignore[no-any-return]

    init = {"token": d.token, "agentDir": str(tmp / "agent"), "allowedRoots": [str(tmp)], "watch": False}
    params = {"processId": None, "capabilities": {}, "initializationOptions": init}
    sock.sendall(_frame({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}))
    assert "result" in answer(1)
    sock.sendall(_frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
    sock.sendall(_frame({"jsonrpc": "2.0", "id": 2, "method": "session/open", "params": {"path": str(path)}}))
    handle: str = answer(2)["result"]["session"]
    sock.sendall(_view(3, handle))
    size = len(json.dumps(answer(3)))
    print(f"\n[tcp] one view answer: {size / 1e6:.1f} MB")
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    return sock, handle


def _flood(sock: socket.socket, handle: str, n: int, first: int = 100) -> None:
    sock.settimeout(0.5)
    data = b"".join(_view(first + i, handle) for i in range(n))
    sent = 0
    deadline = time.monotonic() + 30
    while sent < len(data) and time.monotonic() < deadline:
        try:
            sent += sock.send(data[sent : sent + 65536])
        except TimeoutError:
            continue  # the daemon stopped reading: that is the point
        except (ConnectionResetError, BrokenPipeError):
            return  # the daemon dropped the connection


def _settle(pid: int, base: int) -> tuple[int, float]:
    """Watch the daemon until it stops working (its CPU time flat for 2 s) or its RSS passes
    the bound; returns (peak RSS, seconds watched)."""
    start = time.monotonic()
    peak = base
    last, flat_since = _cpu_ticks(pid), time.monotonic()
    while time.monotonic() - start < 120:
        time.sleep(0.2)
        peak = max(peak, _rss_mb(pid))
        if peak - base > RSS_BOUND_MB:
            break
        ticks = _cpu_ticks(pid)
        if ticks != last:
            last, flat_since = ticks, time.monotonic()
        elif time.monotonic() - flat_since >= 2:
            break
    return peak, time.monotonic() - start


def test_a_client_that_never_reads_keeps_the_daemon_bounded_and_sigterm_ends_it(tmp_path: Path) -> None:
    path = _big_session(tmp_path)
    d = TcpDaemon(tmp_path).wait_listening()
    try:
        sock, handle = _silent_client(d, tmp_path, path)
        base = _rss_mb(d.proc.pid)
        _flood(sock, handle, VIEWS)
        peak, watched = _settle(d.proc.pid, base)
        print(f"[tcp] {VIEWS} pipelined views never read: RSS {base} -> {peak} MB (watched {watched:.1f} s)")
        assert peak - base <= RSS_BOUND_MB, (base, peak)
        # another client is served meanwhile
        other, _ = _opened(d, tmp_path, path)
        assert "result" in other.request("session/list", {"all": True}, timeout=60)
        other.close()
        started = time.monotonic()
        d.proc.send_signal(signal.SIGTERM)
        try:
            rc = d.proc.wait(30)
        except subprocess.TimeoutExpired:
            pytest.fail("SIGTERM did not end the daemon within 30 s")
        took = time.monotonic() - started
        print(f"[tcp] SIGTERM ended the daemon in {took:.2f} s (exit {rc})")
        assert rc == 0
        assert not list((tmp_path / "run").rglob("*token*")), "the token file was left behind"
        sock.close()
    finally:
        d.stop()


def test_a_pipelining_client_gets_every_answer(tmp_path: Path) -> None:
    path = _big_session(tmp_path)
    d = TcpDaemon(tmp_path).wait_listening()
    try:
        c, handle = _opened(d, tmp_path, path)
        n = 60
        c.write(b"".join(_view(1000 + i, handle) for i in range(n)))
        answered = {c.response(1000 + i, timeout=120)["id"] for i in range(n)}
        assert answered == {1000 + i for i in range(n)}
        c.close()
    finally:
        d.stop()


def test_a_connection_over_the_output_limit_is_dropped_and_the_daemon_serves_on(tmp_path: Path) -> None:
    path = _big_session(tmp_path)
    d = TcpDaemon(tmp_path, SESSIONTREE_TCP_OUTPUT_MAX=str(8 << 20)).wait_listening()
    try:
        sock, handle = _silent_client(d, tmp_path, path)
        _flood(sock, handle, 40)
        # the daemon drops it: what is left to read ends (EOF or reset) instead of 40 answers
        sock.settimeout(60)
        got = 0
        try:
            while chunk := sock.recv(1 << 20):
                got += len(chunk)
        except ConnectionResetError:
            pass
        assert got < 40 * 1_500_000, got
        deadline = time.monotonic() + 30  # the daemon's stderr is read by a thread
        while not any("dropped a TCP connection" in line for line in d.lines):
            assert time.monotonic() < deadline, d.stderr()
            time.sleep(0.05)
        other, _ = _opened(d, tmp_path, path)
        assert "result" in other.request("session/list", {"all": True}, timeout=60)
        other.close()
    finally:
        d.stop()
