"""How long any call to the shared store may take: the one place the store's timeouts live.

A store that stops answering must never hold a caller for ever (docs/reliability.md, "The
shared store"). A server that is down refuses the connection at once; the hard cases are
the ones where nothing answers at all: a server stopped (SIGSTOP, a frozen VM), a network
path that drops packets without a reset. So every connection gets:

* ``connect_timeout`` (libpq): the whole connection set-up, authentication included;
* TCP keepalives and ``tcp_user_timeout`` (libpq; TCP only): a dead peer is noticed by the
  kernel instead of after the system's two hours;
* server-side ``statement_timeout``, ``lock_timeout`` and
  ``idle_in_transaction_session_timeout`` (as startup options, before any value the URL's
  own ``options`` gives, which win): a slow statement or a row lock held by another
  machine ends with an error instead of a wait;
* a client-side deadline on every use (`Deadlines`): when a statement, a transaction or a
  lock wait runs past its timeout and a short grace, the connection's socket is shut down
  from a watchdog thread, so the blocked call returns with an error however the server
  behaves (on a Unix socket no keepalive or TCP timeout exists, and a stopped server
  enforces no ``statement_timeout``).

Settings the URL gives itself (``connect_timeout=...``, ``keepalives_idle=...``) are kept.
Behind PgBouncer, ``options`` must be allowed (``ignore_startup_parameters = options``);
the client-side deadline holds either way.
"""

from __future__ import annotations

import heapq
import itertools
import os
import socket
import threading
import time
from typing import Any

__all__ = ["DEFAULT_TIMEOUT", "Deadlines", "connect_params", "default_timeout"]

#: Seconds one use of the store (a statement, a transaction, a lock wait) may take by
#: default; ``$SESSIONTREE_STORE_TIMEOUT`` changes it.
DEFAULT_TIMEOUT = 60.0

#: What the client waits beyond a timeout before it shuts the socket: the server's own
#: ``statement_timeout`` answers first when the server is alive.
GRACE = 2.0


def default_timeout() -> float:
    """``$SESSIONTREE_STORE_TIMEOUT`` (seconds, at least 1), else `DEFAULT_TIMEOUT`."""
    raw = os.environ.get("SESSIONTREE_STORE_TIMEOUT")
    if raw:
        try:
            return max(1.0, float(raw))
        except ValueError:
            pass
    return DEFAULT_TIMEOUT


def connect_params(url: str, *, connect_timeout: float, timeout: float) -> dict[str, Any]:
    """The connection parameters of ``url`` with the timeouts added where it sets none."""
    from psycopg import pq
    from psycopg.conninfo import conninfo_to_dict

    params: dict[str, Any] = dict(conninfo_to_dict(url))
    ms = max(1, int(timeout * 1000))
    params.setdefault("connect_timeout", str(max(1, int(connect_timeout))))
    params.setdefault("keepalives", "1")
    params.setdefault("keepalives_idle", "10")
    params.setdefault("keepalives_interval", "5")
    params.setdefault("keepalives_count", "3")
    if pq.version() >= 120000:  # libpq knows tcp_user_timeout from version 12
        params.setdefault("tcp_user_timeout", str(ms))
    ours = f"-c statement_timeout={ms} -c lock_timeout={ms} -c idle_in_transaction_session_timeout={ms * 2}"
    given = params.get("options")
    params["options"] = f"{ours} {given}" if given else ours
    return params


class Deadlines:
    """A watchdog thread that shuts the socket of a connection whose use outlived its deadline.

    `arm` before a use and `disarm` after it (`disarm` says whether the deadline fired, so
    the caller can say "did not answer within N s" instead of "connection lost"). One thread
    serves every pool of the process; it sleeps until the nearest deadline."""

    _instance: Deadlines | None = None
    _instance_lock = threading.Lock()

    def __init__(self) -> None:
        self._lock = threading.Condition()
        self._heap: list[tuple[float, int]] = []
        self._armed: dict[int, Any] = {}
        self._fired: set[int] = set()
        self._ids = itertools.count(1)
        self._thread: threading.Thread | None = None

    @classmethod
    def shared(cls) -> Deadlines:
        """The process's watchdog (started on first use)."""
        with cls._instance_lock:
            if cls._instance is None:
                cls._instance = cls()
            return cls._instance

    def arm(self, conn: Any, seconds: float) -> int:
        """Watch ``conn`` for ``seconds``; a token for `disarm`."""
        token = next(self._ids)
        with self._lock:
            self._armed[token] = conn
            heapq.heappush(self._heap, (time.monotonic() + seconds, token))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="store-deadlines", daemon=True)
                self._thread.start()
            self._lock.notify()
        return token

    def disarm(self, token: int) -> bool:
        """Stop watching; True when the deadline had fired (the socket was shut)."""
        with self._lock:
            self._armed.pop(token, None)
            if token in self._fired:
                self._fired.discard(token)
                return True
            return False

    def _run(self) -> None:
        while True:
            with self._lock:
                while True:
                    while self._heap and self._heap[0][1] not in self._armed:
                        heapq.heappop(self._heap)
                    now = time.monotonic()
                    if self._heap and self._heap[0][0] <= now:
                        _at, token = heapq.heappop(self._heap)
                        conn = self._armed.pop(token)
                        self._fired.add(token)
                        break
                    self._lock.wait(None if not self._heap else self._heap[0][0] - now)
                # Shut under the lock: a disarmed connection may go back to a pool and be
                # used again, and must not be shut then.
                _shut(conn)


def _shut(conn: Any) -> None:
    """Shut the connection's socket down for both directions: a call blocked on it returns."""
    try:
        fd = conn.pgconn.socket
    except Exception:
        return
    try:
        s = socket.socket(fileno=os.dup(fd))
    except OSError:
        return
    try:
        s.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    finally:
        s.close()
