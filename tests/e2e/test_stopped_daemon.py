"""A daemon stopped and continued (SIGSTOP, SIGCONT) mid-answer still delivers every answer whole.

A suspended editor (Ctrl-Z on Neovim stops its jobs too), a debugger or a profiler stops
the daemon while it writes a large answer to the pipe. Its stdout was a buffered stream
that lost bytes there: the framing broke and no later answer was read (the client waited
forever). `FdWriter` writes each message with `os.write` calls to the end.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

from e2e_helpers import World, generate
from sessiontree.client import Client


def test_answers_arrive_whole_while_the_daemon_is_stopped_and_continued(world: World) -> None:
    path = generate(world.sessions / "stopped.jsonl", 1500, "--seed", "11")
    with Client.spawn(
        [sys.executable, "-m", "sessiontree", "serve"], env=world.env(), init_options=world.init_options()
    ) as c:
        assert c.process is not None
        pid = c.process.pid
        handle = c.request("session/open", {"path": str(path)})["session"]
        expected = c.request("session/view", {"session": handle, "offset": 0, "limit": 500})["rows"]
        assert len(expected) == 500
        done = threading.Event()
        stops = 0

        def stop_and_continue() -> None:
            nonlocal stops
            while not done.is_set():
                os.kill(pid, signal.SIGSTOP)
                time.sleep(0.002)
                os.kill(pid, signal.SIGCONT)
                stops += 1
                time.sleep(0.008)

        kicker = threading.Thread(target=stop_and_continue, daemon=True)
        kicker.start()
        try:
            for _ in range(150):
                page = c.request("session/view", {"session": handle, "offset": 0, "limit": 500}, timeout=20)
                assert page["rows"] == expected
        finally:
            done.set()
            kicker.join()
            os.kill(pid, signal.SIGCONT)
        assert stops > 20
        assert c.request("session/view", {"session": handle, "limit": 0}, timeout=20)["total"] > 500
