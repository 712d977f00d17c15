"""A big file indexed on two cores: the second half scanned by a forked copy of the process.

The scan of a clean file is Python work per line (`index.scan_clean`), so one process uses
one core. For a file of `PARALLEL_SCAN_MIN` and more, a manager opened with
`parallel_scan=True` (the daemon's) forks: the child scans the second half, from a line
start past the middle, with the same storage and access guard the parent reads through, and
sends its `CleanScan` back through a pipe (msgpack); the parent scans the first half
meanwhile and joins the two (the child's orders follow the parent's). Anything that goes
wrong in the child (an exception, a crash, bytes that are not clean, a reply that does not
decode) only means the parent scans the second half itself: the result is the one-core
scan's in every case.

The child does nothing but read, scan, write to the pipe and `os._exit` (no buffered output
flushed, no exit handler run), so the daemon's stdout, locks and threads are left alone.
`in_forked_child` runs other work of that kind without waiting for it: the daemon's index
cache is encoded and written by a copy of the process, so the session is not held meanwhile.
"""

from __future__ import annotations

import os
import select
import signal
import threading
import time
from collections.abc import Callable

import msgspec

from ..index.scan import CleanScan
from ..tuning import bound

__all__ = [
    "FORK_AVAILABLE",
    "PARALLEL_SCAN_MIN",
    "abandon_scan",
    "collect_scan",
    "fork_child",
    "fork_scan",
    "in_forked_child",
    "join_scans",
    "parallel_scan_min",
]

#: Files at least this big are scanned in two halves (the fork and the reply cost a few ms);
#: ``SESSIONTREE_PARALLEL_SCAN_MIN`` (bytes) sets another bound (`parallel_scan_min`).
PARALLEL_SCAN_MIN = 64 << 20
#: The longest the parent waits for the child's reply after its own half is done.
REPLY_TIMEOUT = 300.0

FORK_AVAILABLE = hasattr(os, "fork")

_ENCODER = msgspec.msgpack.Encoder()
_DECODER = msgspec.msgpack.Decoder(CleanScan)

Helper = tuple[int, int]  # (child pid, read end of its pipe)


def parallel_scan_min() -> int:
    """The size from which a file is scanned in two halves (the environment's, when set)."""
    return bound("SESSIONTREE_PARALLEL_SCAN_MIN", PARALLEL_SCAN_MIN)


def _fork(work: Callable[[], bool]) -> int | None:
    """Fork; the child runs `work` and ends with `os._exit` (0 when it returned True, 1 when it
    returned False or raised). The child's pid in the parent, None when no child started."""
    try:
        pid = os.fork()
    except OSError:
        return None
    if pid == 0:  # the child
        code = 1
        try:
            _quiet_signals()
            code = 0 if work() else 1
        except BaseException:  # whatever happens, the parent does the work instead
            code = 1
        finally:
            os._exit(code)
    return pid


def fork_scan(scan: Callable[[], CleanScan | None]) -> Helper | None:
    """Run `scan` in a forked child; None when no child could be started."""
    try:
        r, w = os.pipe()
    except OSError:
        return None

    def reply() -> bool:
        os.close(r)
        result = scan()
        if result is None:
            return False
        view = memoryview(_ENCODER.encode(result))
        while view:
            view = view[os.write(w, view) :]
        return True

    pid = _fork(reply)
    os.close(w)
    if pid is None:
        os.close(r)
        return None
    return pid, r


def fork_child(work: Callable[[], bool]) -> int | None:
    """Run `work` in a forked copy of the process; the copy's pid (the caller waits for it
    and may kill it), None when no copy could be started. The copy ends with exit status 0
    when `work` returned True, 1 when it returned False or raised."""
    if not FORK_AVAILABLE:
        return None
    return _fork(work)


def in_forked_child(work: Callable[[], object]) -> bool:
    """Run `work` in a forked copy of the process and do not wait for it (a thread reaps
    it); the copy sees the memory as it is now, so the caller may go on changing it. False
    when no child could be started (the caller does the work itself)."""
    if not FORK_AVAILABLE:
        return False

    def run() -> bool:
        work()
        return True

    pid = _fork(run)
    if pid is None:
        return False
    threading.Thread(target=_reap, args=(pid, False), name="sessiontree-reap", daemon=True).start()
    return True


def _quiet_signals() -> None:
    """The child shares the parent's signal wake-up pipe (asyncio's): a signal to the child
    must not wake the parent's loop, nor run its handlers here (a daemon's shutdown writes
    to stdout). The child takes the defaults: a SIGTERM simply ends it."""
    try:
        signal.set_wakeup_fd(-1)
    except (ValueError, OSError):
        pass
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        try:
            signal.signal(sig, signal.SIG_DFL)
        except (ValueError, OSError):
            pass


def collect_scan(helper: Helper) -> CleanScan | None:
    """The child's `CleanScan`, or None when it failed (the caller scans the half itself)."""
    pid, r = helper
    chunks: list[bytes] = []
    deadline = time.monotonic() + REPLY_TIMEOUT
    ok = True
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([r], [], [], left)[0]:
                ok = False
                break
            chunk = os.read(r, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
    except OSError:
        ok = False
    finally:
        os.close(r)
    status = _reap(pid, kill=not ok)
    if not ok or status != 0 or not chunks:
        return None
    try:
        return _DECODER.decode(b"".join(chunks))
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None


def abandon_scan(helper: Helper) -> None:
    """Stop a child whose reply is no longer wanted (the parent's half was not clean)."""
    pid, r = helper
    try:
        os.close(r)
    except OSError:
        pass
    _reap(pid, kill=True)


def _reap(pid: int, kill: bool) -> int | None:
    if kill:
        try:
            os.kill(pid, 9)
        except OSError:
            pass
    try:
        _, status = os.waitpid(pid, 0)
    except ChildProcessError:
        return None
    return os.waitstatus_to_exitcode(status)


def join_scans(first: CleanScan, rest: CleanScan) -> CleanScan:
    """The two halves as one scan: the second half's orders follow the first's.

    The reply decodes every string anew; as `scan_clean` does, the common values are made
    one shared object each on the way (the type, role and stop reason of a message, a parent
    id equal to the previous entry's id): about 100 MB less for a million entries."""
    shift = len(first.skeletons)
    prev_id = first.skeletons[-1].id if shift else None
    for sk in rest.skeletons:
        sk.order += shift
        if sk.type == "message":
            sk.type = "message"
            role = sk.role
            if role == "assistant":
                sk.role = "assistant"
            elif role == "toolResult":
                sk.role = "toolResult"
            elif role == "user":
                sk.role = "user"
            stop = sk.stop_reason
            if stop == "toolUse":
                sk.stop_reason = "toolUse"
            elif stop == "stop":
                sk.stop_reason = "stop"
        pid = sk.parent_id
        if pid == prev_id and pid is not None:
            sk.parent_id = prev_id
        prev_id = sk.id
    first.skeletons.extend(rest.skeletons)
    first.usage.add_totals(rest.usage)
    return CleanScan(first.skeletons, first.usage, rest.end, rest.torn_tail)
