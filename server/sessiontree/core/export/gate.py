"""The redaction gate of an export looked at ahead, on the other core (the command line).

Looking for every pattern's triggers in an export's entries is most of a big export's time
(about 1.7 s of a 95,000-entry branch, 113 MB). `GateAhead` forks a child that reads the
selection's lines a page at a time, as the export will, and tells for each entry whether it
may hold a trigger (`Redactor.raw_maybe`: its line holds none, nor an escape or a blob
reference): the export then serializes and looks at those alone, while the child looks at
the next pages. The child reads only the session file and writes one byte per entry to a
pipe; if it fails or is slow to start, the export looks at the entries itself. Only where a
fork is cheap and nothing else runs (the command line), never in the daemon.
"""

from __future__ import annotations

import contextlib
import os
import signal
from typing import Any

from .redact import Redactor
from .select import Selection

__all__ = ["GateAhead"]


class GateAhead:
    """A forked child that tells, page by page, which entries of a selection may hold a
    trigger (`next`); `close` ends it. Pages are the selection's (`Selection.pages`)."""

    def __init__(
        self, manager: Any, selection: Selection, redactor: Redactor, size: int | None = None
    ) -> None:
        self.pid = 0
        self.fd = -1
        raw_loader = getattr(manager.index, "raw_loader", None)
        if raw_loader is None or not hasattr(os, "fork") or not selection.skeletons:
            return
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            code = 1
            try:
                os.close(r)
                for sks in selection.pages(size):
                    lines: dict[int, bytes] = {}
                    backed = sorted((sk for sk in sks if sk.offset >= 0), key=lambda sk: sk.offset)
                    for sk, mv in raw_loader(backed):
                        lines[id(sk)] = bytes(mv)
                    marks = redactor.raw_maybe([lines.get(id(sk)) for sk in sks])
                    view = memoryview(bytes(marks))
                    while view:
                        view = view[os.write(w, view) :]
                code = 0
            finally:
                os._exit(code)
        os.close(w)
        self.pid, self.fd = pid, r

    def next(self, n: int) -> list[bool] | None:
        """Whether each of the next page's ``n`` entries may hold a trigger; None when the
        child gave up (the caller looks at them itself from then on)."""
        if self.fd < 0:
            return None
        got = b""
        while len(got) < n:
            chunk = os.read(self.fd, n - len(got))
            if not chunk:
                self.close()
                return None
            got += chunk
        return [b != 0 for b in got]

    def close(self) -> None:
        """End the child (done or not) and reap it."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        if self.pid:
            with contextlib.suppress(OSError):
                os.kill(self.pid, signal.SIGKILL)
            with contextlib.suppress(OSError):
                os.waitpid(self.pid, 0)
            self.pid = 0
