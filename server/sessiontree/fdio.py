"""Writing whole buffers to a file descriptor.

`write_all` is the one way this package writes bytes that must arrive whole: appends to a
session file and the JSON-RPC messages of a stdio connection. A buffered stream's write
to a pipe (``sys.stdout.buffer``) lost bytes of large messages when the writing process
was stopped and continued (SIGSTOP/SIGTSTP, then SIGCONT: a suspended editor, a
debugger, a profiler), which cut the framing and left every later answer unread; a loop of
``os.write`` calls that goes on from the count each call returns does not.
"""

from __future__ import annotations

import errno
import os
import select


def write_all(fd: int, data: bytes | bytearray | memoryview) -> None:
    """Write every byte of `data` to `fd` (retrying short writes; waiting on a non-blocking fd)."""
    view = memoryview(data)
    while view:
        try:
            written = os.write(fd, view)
        except BlockingIOError:
            select.select([], [fd], [])
            continue
        if written <= 0:
            raise OSError(errno.EIO, "write returned 0 bytes")
        view = view[written:]
