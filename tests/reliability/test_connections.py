"""Connections: one client per daemon identity.

Over stdio a second `initialize` is refused and widens nothing. Over `--tcp`, where any
local user can connect to the loopback port: a port check (connect and close) never ends
the daemon; a client must show the daemon's token (generated into a 0600 file in the
runtime directory, or `--token-file`, or `$SESSIONTREE_TOKEN`) in its initialize; and each
connection is isolated (its own allowedRoots, session handles, responses, notifications
and log messages). Threat model and guarantees: docs/reliability.md "Connections".
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import re
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from sessiontree.client import Client, RpcError

from .helpers import chain, write_session
from .rawlsp import RawLsp

pytestmark = pytest.mark.timeout(120)


def _env(tmp: Path, **extra: str) -> dict[str, str]:
    env = {
        **os.environ,
        "HOME": str(tmp),
        "PI_CODING_AGENT_DIR": str(tmp / "agent"),
        "SESSIONTREE_STATE_DIR": str(tmp / "state"),
        "XDG_STATE_HOME": str(tmp / "xdg-state"),
        "XDG_CACHE_HOME": str(tmp / "xdg-cache"),
        "XDG_RUNTIME_DIR": str(tmp / "run"),
    }
    env.pop("SESSIONTREE_TOKEN", None)
    env.update(extra)
    return env


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class TcpDaemon:
    """`sessiontree serve --tcp 127.0.0.1:PORT`, with the token location it prints."""

    LISTENING = re.compile(r"listening on 127\.0\.0\.1:(\d+); token (in|from) (.+)$")

    def __init__(self, tmp: Path, *args: str, **env: str) -> None:
        (tmp / "run").mkdir(mode=0o700, exist_ok=True)
        self.port = _free_port()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "sessiontree", "serve", "--tcp", f"127.0.0.1:{self.port}", *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=_env(tmp, **env),
        )
        self.lines: list[str] = []
        self._ready = threading.Event()
        self.token_where = ""
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            line = raw.decode(errors="replace").rstrip("\n")
            self.lines.append(line)
            mo = self.LISTENING.search(line)
            if mo and not self._ready.is_set():
                assert int(mo.group(1)) == self.port
                self.token_where = mo.group(3)
                self._ready.set()
        self._ready.set()

    def wait_listening(self, timeout: float = 30) -> TcpDaemon:
        # A daemon that does not say where it listens (one without tokens) is given a
        # moment; connecting to find out would be a port check, which is what is tested.
        if not self._ready.wait(timeout):
            time.sleep(2)
        assert self.proc.poll() is None, "the daemon ended before listening:\n" + self.stderr()
        return self

    @property
    def token(self) -> str:
        if not self.token_where:
            return "no-token-was-announced"  # a daemon without tokens ignores the option
        return Path(self.token_where).read_text().strip()

    def stderr(self) -> str:
        return "\n".join(self.lines[-60:])

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                return self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        return self.proc.wait(15)


@pytest.fixture
def tcp(tmp_path: Path) -> Any:
    (tmp_path / "agent").mkdir()
    d = TcpDaemon(tmp_path).wait_listening()
    try:
        yield d
    finally:
        d.stop()


class RawTcp:
    """One TCP connection to the daemon, driven with raw frames."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.sock.settimeout(None)
        self.messages: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.received: list[dict[str, Any]] = []
        self.closed_by_peer = threading.Event()
        self._next = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        buf = b""
        try:
            while True:
                while b"\r\n\r\n" not in buf:
                    chunk = self.sock.recv(65536)
                    if not chunk:
                        return
                    buf += chunk
                head, _, buf = buf.partition(b"\r\n\r\n")
                length = int(
                    next(h for h in head.split(b"\r\n") if h.lower().startswith(b"content-length")).split(
                        b":"
                    )[1]
                )
                while len(buf) < length:
                    chunk = self.sock.recv(65536)
                    if not chunk:
                        return
                    buf += chunk
                msg = json.loads(buf[:length])
                buf = buf[length:]
                self.received.append(msg)
                self.messages.put(msg)
        except OSError:
            return
        finally:
            self.closed_by_peer.set()
            self.messages.put(None)

    def write(self, data: bytes) -> None:
        self.sock.sendall(data)

    def send(self, obj: Any) -> None:
        self.write(RawLsp.frame(json.dumps(obj).encode()))

    def response(self, rid: Any, timeout: float = 15) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            try:
                msg = self.messages.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                raise TimeoutError(f"no answer to {rid!r}") from None
            if msg is None:
                raise EOFError(f"the connection closed before the answer to {rid!r}")
            if msg.get("id") == rid and "method" not in msg:
                return msg
            if "method" in msg and "id" in msg:
                self.send({"jsonrpc": "2.0", "id": msg["id"], "result": None})

    def request(self, method: str, params: Any = None, timeout: float = 15) -> dict[str, Any]:
        self._next += 1
        rid = f"r{self._next}"
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        return self.response(rid, timeout)

    def initialize(self, options: dict[str, Any]) -> dict[str, Any]:
        res = self.request(
            "initialize", {"processId": None, "capabilities": {}, "initializationOptions": options}
        )
        if "result" in res:
            self.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        return res

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()


def _opts(token: str, *roots: Path) -> dict[str, Any]:
    return {"allowedRoots": [str(r) for r in roots], "watch": False, "token": token}


# ------------------------------------------------------------------ stdio


def test_a_second_initialize_over_stdio_is_refused_and_widens_nothing(tmp_path: Path) -> None:
    alpha, beta = tmp_path / "alpha-root", tmp_path / "beta-root"
    alpha.mkdir()
    beta.mkdir()
    write_session(beta / "s.jsonl", chain(2))
    d = RawLsp(env=_env(tmp_path))
    try:
        assert "result" in d.initialize({"allowedRoots": [str(alpha)], "watch": False})
        second = d.request(
            "initialize",
            {"processId": None, "capabilities": {}, "initializationOptions": {"allowedRoots": ["/"]}},
        )
        assert second["error"]["code"] == -32600, second
        res = d.request("session/open", {"path": str(beta / "s.jsonl")})
        assert res["error"]["code"] == -32005, res
    finally:
        d.close()


# ------------------------------------------------------------------ TCP


def test_port_checks_do_not_end_the_daemon(tcp: TcpDaemon, tmp_path: Path) -> None:
    tried = 0
    for i in range(30):
        s = socket.create_connection(("127.0.0.1", tcp.port), timeout=10)
        if i % 3 == 1:
            s.sendall(b'Content-Length: 40\r\n\r\n{"jsonrpc"')  # half a message, then gone
        elif i % 3 == 2:
            s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        s.close()
        tried += 1
    time.sleep(0.3)
    assert tcp.proc.poll() is None, f"a port check ended the daemon:\n{tcp.stderr()}"
    c = RawTcp(tcp.port)
    try:
        assert "result" in c.initialize(_opts(tcp.token, tmp_path))
        assert "result" in c.request("session/list", {"cwd": str(tmp_path)})
    finally:
        c.close()
    assert tcp.proc.poll() is None
    assert tried == 30


def test_the_token_is_private_and_required(tcp: TcpDaemon, tmp_path: Path) -> None:
    token_file = Path(tcp.token_where)
    assert token_file.parent == tmp_path / "run" / "sessiontree"
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    assert stat.S_IMODE(token_file.parent.stat().st_mode) == 0o700
    token = tcp.token
    assert len(token) >= 32

    # no token, a wrong one, an empty one: refused, and the connection is closed
    for options in ({"allowedRoots": ["/"]}, {"token": token[:-1] + "x"}, {"token": ""}, {"token": 5}):
        c = RawTcp(tcp.port)
        try:
            res = c.initialize(options)
            assert res["error"]["code"] == -32005, res
            assert c.closed_by_peer.wait(10), "the refused connection stayed open"
        finally:
            c.close()

    # before initialize: every request is refused, big bodies are not even read
    c = RawTcp(tcp.port)
    try:
        res = c.request("session/list", {"cwd": str(tmp_path)})
        assert res["error"]["code"] == -32005, res
        body = json.dumps(
            {"jsonrpc": "2.0", "id": "big", "method": "session/list", "params": {"q": "x" * (2 << 20)}}
        ).encode()
        c.write(RawLsp.frame(body))
        res = c.response("big")
        assert res["error"]["code"] == -32600 and res["error"]["data"]["limit"] == 1 << 20, res
        c.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})  # ignored
        assert "result" in c.initialize(_opts(token, tmp_path))
        assert "result" in c.request("session/list", {"cwd": str(tmp_path)})
        # the token is neither kept nor logged
        assert token not in json.dumps(c.received)
    finally:
        c.close()
    assert tcp.stop() == 0
    assert token not in tcp.stderr()
    assert not token_file.exists(), "the generated token file outlived the daemon"


def test_connections_are_isolated(tcp: TcpDaemon, tmp_path: Path) -> None:
    alpha, beta = tmp_path / "alpha-root", tmp_path / "beta-root"
    alpha.mkdir()
    beta.mkdir()
    a_entries = write_session(alpha / "a.jsonl", chain(5, seed=1, prefix="a"))
    write_session(beta / "b.jsonl", chain(4, seed=2, prefix="b"))
    assert a_entries
    a, b = RawTcp(tcp.port), RawTcp(tcp.port)
    try:
        assert "result" in b.initialize(_opts(tcp.token, beta))
        assert "result" in a.initialize(_opts(tcp.token, alpha))
        ha = a.request("session/open", {"path": str(alpha / "a.jsonl")})["result"]["session"]

        # B cannot use A's handle, nor A's roots; B's roots did not widen A's
        assert b.request("session/entries", {"session": ha})["error"]["code"] == -32001
        assert b.request("session/open", {"path": str(alpha / "a.jsonl")})["error"]["code"] == -32005
        assert a.request("session/open", {"path": str(beta / "b.jsonl")})["error"]["code"] == -32005
        # a second initialize on A is refused and widens nothing
        again = a.request(
            "initialize", {"capabilities": {}, "initializationOptions": _opts(tcp.token, tmp_path)}
        )
        assert again["error"]["code"] == -32600
        assert a.request("session/open", {"path": str(beta / "b.jsonl")})["error"]["code"] == -32005

        # the same handle string on B names B's own session
        hb = b.request("session/open", {"path": str(beta / "b.jsonl")})["result"]["session"]
        a_ids = [e["id"] for e in a.request("session/entries", {"session": ha})["result"]["entries"]]
        b_ids = [e["id"] for e in b.request("session/entries", {"session": hb})["result"]["entries"]]
        assert all(i.startswith("a") for i in a_ids) and all(i.startswith("b") for i in b_ids)

        # the same ids in flight on both: each answer goes to the connection that asked
        a_before, b_before = len(a.received), len(b.received)
        for i in range(40):
            a.send({"jsonrpc": "2.0", "id": i, "method": "session/entries", "params": {"session": ha}})
            b.send({"jsonrpc": "2.0", "id": i, "method": "session/nope", "params": {}})
        for i in range(40):
            assert [e["id"] for e in a.response(i)["result"]["entries"]] == a_ids
            assert b.response(i)["error"]["code"] == -32601
        time.sleep(0.3)
        assert len(a.received) - a_before == 40 and len(b.received) - b_before == 40

        # a change on A is announced to A only
        entry = {"type": "custom", "customType": "iso", "data": {"n": 1}}
        assert "result" in a.request("session/append", {"session": ha, "entry": entry})
        time.sleep(0.3)
        assert any(m.get("method") == "session/didChange" for m in a.received)
        assert not any(m.get("method") == "session/didChange" for m in b.received)
        # log messages too: A's roots reach A, never B
        assert any(str(alpha) in json.dumps(m) for m in a.received if m.get("method") == "window/logMessage")
        assert not any(str(alpha) in json.dumps(m) for m in b.received if "method" in m), "B saw A's logs"

        # A leaves (shutdown + exit): only A's connection ends
        assert a.request("shutdown")["result"] is None
        a.send({"jsonrpc": "2.0", "method": "exit"})
        assert a.closed_by_peer.wait(10)
        assert "result" in b.request("session/entries", {"session": hb})
        assert tcp.proc.poll() is None
    finally:
        a.close()
        b.close()


def test_token_file_option_and_environment(tmp_path: Path) -> None:
    (tmp_path / "agent").mkdir()
    keep = tmp_path / "keys"
    keep.mkdir(mode=0o700)

    # --token-file that does not exist: created 0600, used, removed at the end
    f = keep / "serve.token"
    d = TcpDaemon(tmp_path, "--token-file", str(f)).wait_listening()
    try:
        assert d.token_where == str(f)
        assert stat.S_IMODE(f.stat().st_mode) == 0o600
        with Client.connect_tcp("127.0.0.1", d.port, token_file=f, init_options={"watch": False}) as c:
            assert c.request("session/list", {"all": True})["sessions"] == []
        with pytest.raises(RpcError) as refused:
            Client.connect_tcp("127.0.0.1", d.port, token="not-the-token-at-all-0000")
        assert refused.value.code == -32005
    finally:
        assert d.stop() == 0
    assert not f.exists()

    # an existing token file that others can read is refused
    f.write_text("a-token-that-others-can-read-123\n")
    f.chmod(0o644)
    d = TcpDaemon(tmp_path, "--token-file", str(f))
    assert d.proc.wait(30) == 2
    d._ready.wait(5)
    assert "chmod 600" in d.stderr()
    # ... and one of this user only is used as it is, and kept
    f.chmod(0o600)
    d = TcpDaemon(tmp_path, "--token-file", str(f)).wait_listening()
    try:
        with Client.connect_tcp("127.0.0.1", d.port, token="a-token-that-others-can-read-123") as c:
            assert "sessions" in c.request("session/list", {"all": True})
    finally:
        d.stop()
    assert f.exists()

    # $SESSIONTREE_TOKEN: too short is refused; a good one is used (and written nowhere)
    d = TcpDaemon(tmp_path, SESSIONTREE_TOKEN="short")
    assert d.proc.wait(30) == 2
    secret = "environment-token-0123456789abcdef"
    d = TcpDaemon(tmp_path, SESSIONTREE_TOKEN=secret).wait_listening()
    try:
        assert d.token_where == "$SESSIONTREE_TOKEN"
        old = os.environ.get("SESSIONTREE_TOKEN")
        os.environ["SESSIONTREE_TOKEN"] = secret
        try:
            with Client.connect_tcp("127.0.0.1", d.port) as c:
                assert "sessions" in c.request("session/list", {"all": True})
        finally:
            if old is None:
                os.environ.pop("SESSIONTREE_TOKEN")
            else:
                os.environ["SESSIONTREE_TOKEN"] = old
    finally:
        d.stop()
    run = tmp_path / "run" / "sessiontree"
    assert not run.exists() or not any(secret in p.read_text() for p in run.iterdir() if p.is_file())
