"""Crash consistency: a writer killed at random moments never loses a flushed entry.

A child process appends entries with `flush()` after each and reports every id whose flush
returned on a pipe; the parent SIGKILLs it at a random moment. The file must always load,
and every reported id must be in it.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from sessiontree.core.manager import SessionManager

CHILD = textwrap.dedent(
    """
    import os, sys
    from sessiontree.core.manager import SessionManager
    path, cache = sys.argv[1], sys.argv[2]
    m = SessionManager.open(path, cache_dir=cache) if os.path.exists(path) else None
    if m is None:
        m = SessionManager.open(path, cache_dir=cache)
    out = os.fdopen(int(sys.argv[3]), "w", buffering=1)
    i = 0
    while True:
        i += 1
        role = "assistant" if i % 2 else "user"
        msg = {"role": role, "content": [{"type": "text", "text": "entry %d " % i + "x" * (i % 700)}], "timestamp": i}
        if role == "assistant":
            msg.update(provider="p", model="m", stopReason="stop")
        eid = m.append_message(msg)
        m.flush()
        out.write(eid + "\\n")
    """
)


@pytest.mark.timeout(120)
def test_sigkill_never_loses_flushed_entries(tmp_path: Path) -> None:
    rng = random.Random(1234)
    path = tmp_path / "crash.jsonl"
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    env["PI_CODING_AGENT_DIR"] = str(tmp_path / "agent")
    flushed: list[str] = []
    for _round in range(20):
        r, w = os.pipe()
        proc = subprocess.Popen(
            [sys.executable, str(script), str(path), str(tmp_path / "cache"), str(w)], pass_fds=(w,), env=env
        )
        os.close(w)
        time.sleep(rng.uniform(0.25, 0.6))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        with os.fdopen(r) as f:
            reported = [line.strip() for line in f.read().splitlines() if line.strip()]
        # the last line may be cut by the kill: only whole, known-length ids count
        flushed.extend(x for x in reported if len(x) == 8)
        m = SessionManager.open(str(path), read_only=True, cache_dir=str(tmp_path / "cache"))
        ids = set(m.index.order())
        missing = [x for x in flushed if x not in ids]
        assert not missing, f"round {_round}: flushed entries lost: {missing[:5]}"
        assert m.build_session_context().messages
    assert len(flushed) > 20
