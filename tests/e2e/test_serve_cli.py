"""`sessiontree serve` options: TCP on loopback, refusal of non-loopback addresses."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

from e2e_helpers import World

TOKEN = "serve-cli-test-token-0123456789"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _frame(obj: dict) -> bytes:
    body = json.dumps(obj).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def _read(sock: socket.socket) -> dict:
    buf = b""
    while b"\r\n\r\n" not in buf:
        buf += sock.recv(4096)
    head, _, rest = buf.partition(b"\r\n\r\n")
    length = int(
        next(h for h in head.split(b"\r\n") if h.lower().startswith(b"content-length")).split(b":")[1]
    )
    while len(rest) < length:
        rest += sock.recv(65536)
    return json.loads(rest[:length])


def test_non_loopback_tcp_is_refused(world: World) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "sessiontree", "serve", "--tcp", "0.0.0.0:0"],
        capture_output=True,
        text=True,
        timeout=30,
        env=world.env(),
    )
    assert proc.returncode == 2
    assert "non-loopback" in proc.stderr and "--allow-remote" in proc.stderr


def test_tcp_on_loopback_answers(world: World) -> None:
    port = _free_port()
    log = world.root / "serve-tcp.log"
    proc = subprocess.Popen(
        [sys.executable, "-m", "sessiontree", "serve", "--tcp", f"127.0.0.1:{port}", "--log-file", str(log)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**world.env(), "SESSIONTREE_TOKEN": TOKEN},
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                sock = socket.create_connection(("127.0.0.1", port), timeout=10)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        with sock:
            sock.sendall(
                _frame(
                    {
                        "jsonrpc": "2.0",
                        "id": 1,
                        "method": "initialize",
                        "params": {"capabilities": {}, "initializationOptions": {"token": TOKEN}},
                    }
                )
            )
            msg = _read(sock)
            while msg.get("id") != 1:
                msg = _read(sock)
            assert msg["result"]["serverInfo"]["name"] == "sessiontree"
            assert msg["result"]["capabilities"]["experimental"] == {"sessionTree": {"protocolVersion": 1}}
    finally:
        proc.terminate()
        proc.wait(10)
    assert "allowed roots" in log.read_text()


def test_info_goes_to_the_client_with_its_level_not_to_stderr(world: World, tmp_path: Path) -> None:
    """An editor shows a server's stderr as errors (VS Code's language client, Neovim's LSP
    log): the INFO lines a session makes reach the client as window/logMessage of type Info
    (3) and stay off stderr; an error still goes to both."""
    from sessiontree.client import Client

    agent = tmp_path / "agent"
    (agent / "sessions").mkdir(parents=True)
    err = tmp_path / "stderr.txt"
    with err.open("wb") as stderr:
        c = Client.spawn(init_options={"agentDir": str(agent), "watch": True}, stderr=stderr)
        c.request("session/list", {"all": True})
        c.close()
    logged = [p for m, p in c.notifications if m == "window/logMessage"]
    assert any(p["type"] == 3 and "allowed roots" in p["message"] for p in logged), logged
    lines = err.read_text(encoding="utf-8").splitlines()
    assert [line for line in lines if " INFO " in line] == []
