"""Running `summarizerCommand` with bounded output and time.

The command is configured by the user but its output is not trusted to be small or to
end: a summarizer that prints without end (``yes``) would grow the daemon's memory until
the timeout, and one whose children keep its stdout open would outlive the timeout. So
the child runs in its own process group, its stdout is read up to `MAX_SUMMARY_BYTES`,
stderr only keeps its last `_STDERR_TAIL` bytes, and at the deadline or when the output
is too long the whole group is killed and the request fails with -32006.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import time
from typing import Final

from sessiontree.lsp import errors

__all__ = ["MAX_SUMMARY_BYTES", "run_summarizer"]

MAX_SUMMARY_BYTES: Final = 1024 * 1024
"""The most bytes of summary read from the command's stdout (1 MiB). A longer output fails
the request: a branch summary is a few paragraphs, and the persistence transform would cut
any string above 500,000 characters anyway."""

_STDERR_TAIL: Final = 64 * 1024
_CHUNK: Final = 64 * 1024


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(OSError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(OSError):
        proc.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=5)


def run_summarizer(cmd: list[str], payload: bytes, timeout: float, max_bytes: int = MAX_SUMMARY_BYTES) -> str:
    """Run `cmd` with `payload` on stdin; its stdout (stripped) is the summary.

    Raises `errors.SummaryUnavailable` (-32006) when the command cannot start, exits
    non-zero (with the end of its stderr), prints nothing, prints more than `max_bytes`,
    or does not finish within `timeout` seconds (it and its children are killed then).
    """
    deadline = time.monotonic() + timeout
    try:
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            close_fds=True,
        )
    except (OSError, ValueError) as exc:
        raise errors.SummaryUnavailable(f"summarizerCommand failed: {exc}") from exc
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    out = bytearray()
    err = bytearray()
    sent = 0
    view = memoryview(payload)
    sel = selectors.DefaultSelector()
    try:
        for f in (proc.stdin, proc.stdout, proc.stderr):
            os.set_blocking(f.fileno(), False)
        if payload:
            sel.register(proc.stdin, selectors.EVENT_WRITE)
        else:
            proc.stdin.close()
        sel.register(proc.stdout, selectors.EVENT_READ)
        sel.register(proc.stderr, selectors.EVENT_READ)
        while sel.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                _kill_group(proc)
                raise errors.SummaryUnavailable(
                    f"summarizerCommand did not finish within {timeout:g} s (summarizerTimeout); it was stopped"
                )
            for key, _events in sel.select(left):
                src = key.fileobj
                if src is proc.stdin:
                    try:
                        sent += os.write(key.fd, view[sent : sent + _CHUNK])
                    except BlockingIOError:
                        continue
                    except OSError:  # BrokenPipeError: the command stopped reading
                        sent = len(view)
                    if sent >= len(view):
                        sel.unregister(proc.stdin)
                        with contextlib.suppress(OSError):
                            proc.stdin.close()
                    continue
                try:
                    chunk = os.read(key.fd, _CHUNK)
                except BlockingIOError:
                    continue
                if not chunk:
                    sel.unregister(src)
                    continue
                if src is proc.stdout:
                    out += chunk
                    if len(out) > max_bytes:
                        _kill_group(proc)
                        raise errors.SummaryUnavailable(
                            f"summarizerCommand printed more than {max_bytes} bytes (the limit of a summary);"
                            " it was stopped"
                        )
                else:
                    err += chunk
                    if len(err) > 2 * _STDERR_TAIL:
                        del err[:-_STDERR_TAIL]
        try:
            code = proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            raise errors.SummaryUnavailable(
                f"summarizerCommand did not finish within {timeout:g} s (summarizerTimeout); it was stopped"
            ) from None
    finally:
        sel.close()
        for f in (proc.stdin, proc.stdout, proc.stderr):
            with contextlib.suppress(OSError):
                f.close()
        if proc.returncode is None:
            _kill_group(proc)
    if code != 0:
        tail = err.decode("utf-8", "replace").strip()[-500:]
        raise errors.SummaryUnavailable(f"summarizerCommand exited with {code}: {tail}")
    text = out.decode("utf-8", "replace").strip()
    if not text:
        raise errors.SummaryUnavailable("summarizerCommand printed no summary")
    return text
