"""The daemon's server object and how it is served: stdio, or TCP with one object per connection.

A `SessionTreeServer` holds one client's state: its configuration, open sessions, access
policy and navigation state. Over stdio it serves one client (`start_io`); over `--tcp`
each connection gets its own server object, made like the listening one (the same
`setup`), with its own initialize (and allowedRoots), session handles, navigation state
and responses, once it has shown the token (`start_tcp`). Reading a stream is
`serve_stream`: the framing of `transport.py`, each body handed to the protocol of
`dispatch.py`. `setup.create_server()` makes one with every feature registered.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import os
import signal
import sys
import threading
from collections.abc import Awaitable, Callable
from threading import Event
from typing import TYPE_CHECKING, Any

from lsprotocol import types as lsp
from pygls.exceptions import FeatureRequestError
from pygls.lsp.server import LanguageServer

from sessiontree import __version__
from sessiontree.core import paths
from sessiontree.core.tuning import bound
from sessiontree.lsp.access import AccessPolicy
from sessiontree.lsp.config import ServerConfig
from sessiontree.lsp.dispatch import SessionTreeProtocol, make_converter
from sessiontree.lsp.registry import Registry
from sessiontree.lsp.state import NavigationState
from sessiontree.lsp.transport import FdWriter, Framing, LoopWriter, StdinReader, StreamReader, drop

if TYPE_CHECKING:
    from sessiontree.lsp.follower import LiveFollower

log = logging.getLogger("sessiontree.lsp")

PREAUTH_MAX_BYTES = 1 << 20
"""Largest message a TCP connection may send before its initialize showed the token."""

AUTH_TIMEOUT = 30.0
"""Seconds a TCP connection has to send an initialize with the token before it is closed."""

TCP_IN_FLIGHT = 16
"""Requests of one TCP connection handled at a time: its next request is read once one of
them is answered (`SESSIONTREE_TCP_IN_FLIGHT`)."""

TCP_OUTPUT_HIGH = 1 << 20
"""Bytes of answers waiting to be sent on one TCP connection above which its next request
is not read until the client has read them (`SESSIONTREE_TCP_OUTPUT_HIGH`)."""

TCP_OUTPUT_MAX = 256 << 20
"""Bytes waiting to be sent on one TCP connection (answers already being made, notifications)
above which the connection is dropped (`SESSIONTREE_TCP_OUTPUT_MAX`)."""

STOP_GRACE = 5.0
"""Seconds the daemon has after SIGTERM or SIGINT to close its connections and sessions; then
it exits whatever still runs (a worker in a long call, a connection that does not close)."""

CURRENT_SERVER: contextvars.ContextVar[SessionTreeServer | None] = contextvars.ContextVar(
    "sessiontree_current_server", default=None
)
"""The server object of the connection whose task is running (for per-connection logs)."""


def current_server() -> SessionTreeServer | None:
    """The server of the connection being served in this context, if any."""
    return CURRENT_SERVER.get()


async def _close(writer: asyncio.StreamWriter) -> None:
    """Close a TCP connection; one whose unread answers keep it from closing within a second
    (the client does not read) is aborted, its answers dropped."""
    writer.close()
    try:
        await asyncio.wait_for(writer.wait_closed(), 1)
    except TimeoutError:
        drop(writer.transport)
    except Exception:
        pass


def _exit_after(seconds: float, before: Callable[[], None] | None) -> None:
    """End the process ``seconds`` from now unless it ended by itself (a daemon thread: it
    does not keep the process alive). ``before`` runs first."""

    def force() -> None:
        # Nothing that can block: no logging (a handler's lock may be held by a thread
        # stuck writing to a full stderr pipe), only the token file's removal.
        if before is not None:
            with contextlib.suppress(Exception):
                before()
        os._exit(0)

    timer = threading.Timer(seconds, force)
    timer.daemon = True
    timer.start()


class SessionTreeServer(LanguageServer):
    """The daemon: configuration, open sessions, access policy, navigation state."""

    protocol: SessionTreeProtocol

    def __init__(self, setup: Callable[[SessionTreeServer], None] | None = None) -> None:
        super().__init__(
            "sessiontree",
            __version__,
            protocol_cls=SessionTreeProtocol,
            converter_factory=make_converter,
            text_document_sync_kind=lsp.TextDocumentSyncKind.None_,
            max_workers=8,
        )
        self.config = ServerConfig()
        self.registry = Registry()
        self.access = AccessPolicy([])
        self.workspace_roots: list[str] = []
        self.state: NavigationState | None = None
        """The navigation state store, set at initialize."""
        self.live_follower: LiveFollower | None = None
        """Follows the open sessions' files once initialized (features/watch.py starts it)."""
        self.cwd = os.getcwd()
        self.requests_in_flight = 0
        """Requests being handled now (features/preindex.py waits for none)."""
        self.last_request = 0.0
        """`time.monotonic()` when the last request ended (or began)."""
        self.preindex: Any = None
        """Big listed sessions indexed ahead of a click (features/preindex.py)."""
        self._setup = setup
        if setup is not None:
            setup(self)

    @property
    def exit_code(self) -> int:
        """The process exit code once serving ended: 1 after `exit` without `shutdown`."""
        return self.protocol.exit_code or 0

    # -- transport ---------------------------------------------------------------------
    async def serve_stream(self, reader: Any, room: Callable[[], Awaitable[bool]] | None = None) -> None:
        """Read, frame and handle messages until the input ends or `exit` arrives. With
        ``room``, it is awaited before each message is read (a TCP connection's
        backpressure: False ends the connection)."""
        if self._stop_event is None:
            self._stop_event = Event()
        context_token = CURRENT_SERVER.set(self)
        framing = Framing()
        try:
            while not self._stop_event.is_set():
                if room is not None and framing.length == 0 and not await room():
                    break
                line = await reader.readline()
                if not line:
                    break
                n = framing.feed(line)
                if n is None:
                    continue
                item = await reader.readexactly(n)
                if not item:
                    break
                try:
                    keep = await self.protocol.receive(item)
                except Exception:
                    log.exception("could not handle a message")
                    keep = True
                if not keep:
                    break
        finally:
            CURRENT_SERVER.reset(context_token)

    def end_connection(self) -> None:
        """Stop following files and close this connection's sessions (locks, descriptors)."""
        follower, self.live_follower = self.live_follower, None
        if follower is not None:
            try:
                follower.stop()
            except Exception:
                log.exception("stopping the live follower failed")
        self.registry.shutdown()
        for session in self.registry.sessions():
            # a worker may still hold the lock for a long call; it is not waited for long
            if session.lock.acquire(timeout=2):
                try:
                    self.registry.emit("closing", session)
                    session.manager.close_quietly()
                except Exception:
                    log.exception("closing %s failed", session.handle)
                finally:
                    session.lock.release()
            self.registry.remove(session)

    def start_io(self, stdin: Any = None, stdout: Any = None) -> None:
        """Serve one client over stdio with the request size limit."""
        self._stop_event = Event()
        reader = StdinReader(
            stdin or sys.stdin.buffer, self.thread_pool, lambda: self.config.max_request_bytes
        )
        self.protocol.set_writer(FdWriter(stdout or sys.stdout.buffer))
        try:
            asyncio.run(self.serve_stream(reader))
        except BrokenPipeError:
            log.error("Connection to the client is lost; shutting down")
        except KeyboardInterrupt:
            pass
        finally:
            self.end_connection()
            self.shutdown()

    def request_limit(self) -> int:
        """The largest body this connection may send now."""
        if not self.protocol.authenticated:
            return min(PREAUTH_MAX_BYTES, self.config.max_request_bytes)
        return self.config.max_request_bytes

    def start_tcp(
        self,
        host: str,
        port: int,
        token: str | None = None,
        on_listening: Callable[[list[Any]], None] | None = None,
        on_forced_exit: Callable[[], None] | None = None,
    ) -> None:
        """Serve over TCP until SIGTERM or SIGINT.

        Each connection has backpressure: while more than `TCP_OUTPUT_HIGH` bytes of its
        answers wait to be sent, or `TCP_IN_FLIGHT` of its requests are being handled, its
        next request is not read (the kernel's buffers then stop the client's writes); a
        connection with more than `TCP_OUTPUT_MAX` bytes waiting is dropped. After SIGTERM
        or SIGINT the answers nobody read are dropped and the connections closed; a daemon
        that has not ended `STOP_GRACE` seconds later exits anyway (``on_forced_exit``
        runs first: the token file is removed).

        Each connection gets its own server object, set up like this one: its own
        initialize (and allowedRoots), session handles, navigation state and responses.
        With `token`, a connection must send it in `initializationOptions.token` of its
        initialize within AUTH_TIMEOUT seconds, or it is refused and closed. A connection
        that ends (a port check, `exit`, a client that went away) never stops the daemon.
        """
        self._stop_event = Event()
        writers: set[asyncio.StreamWriter] = set()
        tasks: set[asyncio.Task[Any]] = set()
        in_flight = bound("SESSIONTREE_TCP_IN_FLIGHT", TCP_IN_FLIGHT) or 1
        high = bound("SESSIONTREE_TCP_OUTPUT_HIGH", TCP_OUTPUT_HIGH)
        most = bound("SESSIONTREE_TCP_OUTPUT_MAX", TCP_OUTPUT_MAX)

        async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            loop = asyncio.get_running_loop()
            writers.add(writer)
            task = asyncio.current_task()
            if task is not None:
                tasks.add(task)
            conn = SessionTreeServer(self._setup)
            if token is not None:
                conn.protocol.require_token(token)
            # Answers wait in the transport's buffer while the client does not read them:
            # above `high` the next request is not read (`room`), above `most` the client
            # is dropped (the answers already being made, notifications).
            writer.transport.set_write_buffer_limits(high=high)
            conn.protocol.set_writer(LoopWriter(writer, loop, most))  # type: ignore[arg-type]
            watchdog = loop.call_later(
                AUTH_TIMEOUT, lambda: None if conn.protocol.authenticated else writer.close()
            )

            async def room() -> bool:
                """Backpressure: wait until the client read its answers and fewer than
                `in_flight` of its requests are being handled; False once it is gone."""
                try:
                    await writer.drain()
                    while conn.protocol.in_flight() >= in_flight:
                        if writer.is_closing():
                            return False
                        await asyncio.sleep(0.005)
                        await writer.drain()
                except (ConnectionError, OSError):
                    return False
                return not writer.is_closing()

            try:
                await conn.serve_stream(StreamReader(reader, conn.request_limit), room)
            except Exception:
                log.exception("a TCP connection failed")
            finally:
                watchdog.cancel()
                writers.discard(writer)
                conn.end_connection()
                conn._stop_event.set()  # type: ignore[union-attr]
                await _close(writer)
                if task is not None:
                    tasks.discard(task)

        async def serve() -> None:
            loop = asyncio.get_running_loop()
            self._server = srv = await asyncio.start_server(connection, host, port)
            stop: asyncio.Future[None] = loop.create_future()

            def request_stop() -> None:
                if not stop.done():
                    stop.set_result(None)
                    _exit_after(STOP_GRACE, on_forced_exit)

            for sig in (signal.SIGTERM, signal.SIGINT):
                with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                    loop.add_signal_handler(sig, request_stop)
            addresses = [s.getsockname() for s in srv.sockets]
            log.info("serving on %s", ", ".join(str(a) for a in addresses))
            if on_listening is not None:
                on_listening(addresses)
            try:
                await stop
            finally:
                srv.close()
                # Answers a client did not read are dropped (a plain close would wait for
                # them to be sent, for ever when the client never reads).
                for w in list(writers):
                    drop(w.transport)
                if tasks:
                    # each connection closes its sessions (end_connection)
                    await asyncio.wait(list(tasks), timeout=STOP_GRACE / 2)
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(srv.wait_closed(), 1)

        try:
            asyncio.run(serve())
        except (asyncio.CancelledError, KeyboardInterrupt):
            pass
        finally:
            self._server = None
            self.registry.shutdown()

    def report_server_error(self, error: Exception, source: Any) -> None:
        """Log out-of-band errors; request errors already went back in the response."""
        if source is FeatureRequestError:
            return
        log.error("server error: %s", error)
        try:
            self.window_log_message(
                lsp.LogMessageParams(type=lsp.MessageType.Error, message=f"sessiontree: {error}")
            )
        except Exception:
            pass

    # -- helpers for features ----------------------------------------------------------
    def notify(self, method: str, params: Any) -> None:
        """Send a notification (params: a protocol attrs instance or a dict)."""
        self.protocol.notify(method, params)

    def show_warning(self, message: str) -> None:
        """A `window/showMessage` warning."""
        self.window_show_message(lsp.ShowMessageParams(type=lsp.MessageType.Warning, message=message))

    def agent_homes(self) -> list[Any]:
        """The agent dirs sessions are listed from: `agentDir`, else `$PI_CODING_AGENT_DIR`,
        else every agent dir of pi's family that exists (`core.discovery.agent_homes`)."""
        from sessiontree.core.discovery import agent_homes

        return agent_homes(self.config.agent_dir)

    def default_roots(self) -> list[str]:
        """The allowed roots without `allowedRoots`: the agent dir (where new sessions go), the
        agent dirs listed and their sessions roots, the workspace folders."""
        agent = self.config.agent_dir or paths.get_agent_dir()
        roots = [str(agent), str(paths.sessions_root(agent))]
        for home in self.agent_homes():
            roots.extend([home.data_dir, home.sessions_root])
        roots.extend(self.workspace_roots)
        # Claude Code's and Codex's transcripts, read-only (features/sessions.py refuses
        # anything else under them).
        from sessiontree.core.sources.foreign import claude_root, codex_root

        return [*roots, claude_root(), codex_root()]
