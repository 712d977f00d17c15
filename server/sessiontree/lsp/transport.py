"""The byte streams of a connection: LSP base framing, body size limits, a thread-safe writer.

- `Framing` finds each body's length in the header lines. A header glued behind junk, a
  lower-case name or a bare `\\n` is normalized first (`normalize_header_line`), so the
  stream resynchronizes after garbage instead of losing every later message.
- The readers (`StdinReader` for stdio, `StreamReader` for a TCP connection) hand bodies
  over as bytes; a body over the connection's limit is skipped without being held in
  memory and handed over as `TooLarge`, with the id found in its first bytes so that the
  refusal can answer it.
- `LoopWriter` lets worker threads write to an asyncio stream (notifications are sent
  from workers); writes after the connection closed are dropped.
- `FdWriter` writes stdio messages whole with `os.write` calls under a lock: a buffered
  stdout lost bytes of large answers when the daemon was stopped and continued.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import socket
import struct
import threading
from collections.abc import Callable
from typing import Any

import attrs
from pygls.io_ import StdinAsyncReader

from sessiontree.fdio import write_all

log = logging.getLogger("sessiontree.lsp")

HEAD_BYTES = 4096
"""How much of a skipped body is kept to find its id."""


@attrs.frozen
class TooLarge:
    """A body over the request size limit, skipped without being held in memory."""

    size: int
    limit: int
    msg_id: Any


_ID_IN_HEAD = re.compile(rb'"id"\s*:\s*("(?:[^"\\]|\\.)*"|-?\d{1,20})(?=\s*[,}])')


def too_large(n: int, limit: int, head: bytes) -> TooLarge:
    """The refusal of a body over the limit, with the id found in its first bytes."""
    match = _ID_IN_HEAD.search(head)
    msg_id: Any = None
    if match:
        try:
            msg_id = json.loads(match.group(1))
        except ValueError:
            msg_id = None
    return TooLarge(n, limit, msg_id)


_HEADER = re.compile(rb"content-length[ \t]*:[ \t]*(\d+)[ \t]*\r?\n?$", re.IGNORECASE)
_CONTENT_LENGTH = re.compile(rb"Content-Length: (\d+)\r\n")


def normalize_header_line(line: bytes) -> bytes:
    """Only exactly "Content-Length: N\\r\\n" is a header to the framing. Garbage glued in
    front of a header (a body that was shorter than announced, junk without a newline), a
    lower-case name or a bare \\n would make it skip the header and lose every later
    message; such lines are normalized so that the stream resynchronizes."""
    if not line or (line.startswith(b"Content-Length: ") and line.endswith(b"\r\n")):
        return line
    i = line.lower().rfind(b"content-length")
    if i >= 0:
        mo = _HEADER.match(line, i)
        if mo:
            return b"Content-Length: " + mo.group(1) + b"\r\n"
    return line


class Framing:
    """The header state of one stream: LSP base framing, as pygls reads it."""

    def __init__(self) -> None:
        self.length = 0

    def feed(self, line: bytes) -> int | None:
        """One header line; the body length once a blank line ends the headers, else None."""
        line = normalize_header_line(line)
        if not self.length:
            mo = _CONTENT_LENGTH.fullmatch(line)
            if mo:
                self.length = int(mo.group(1))
        if self.length and not line.strip():
            n, self.length = self.length, 0
            return n
        return None


class StreamReader:
    """Header lines and bodies of a TCP connection; bodies over the limit are skipped."""

    def __init__(self, reader: asyncio.StreamReader, limit: Callable[[], int]) -> None:
        self._reader = reader
        self._limit = limit

    async def readline(self) -> bytes:
        """One header line (b"" once the connection is gone)."""
        try:
            return await self._reader.readuntil(b"\n")
        except asyncio.IncompleteReadError as exc:
            return exc.partial
        except asyncio.LimitOverrunError as exc:
            return await self._reader.readexactly(exc.consumed)
        except (ConnectionError, OSError):
            return b""

    async def readexactly(self, n: int) -> bytes | TooLarge:
        """A body of `n` bytes, `TooLarge` over the limit, b"" once the connection is gone."""
        limit = self._limit()
        try:
            if n <= limit:
                return await self._reader.readexactly(n)
            head = await self._reader.readexactly(min(n, HEAD_BYTES))
            left = n - len(head)
            while left > 0:
                chunk = await self._reader.read(min(left, 1 << 20))
                if not chunk:
                    return b""
                left -= len(chunk)
        except (asyncio.IncompleteReadError, ConnectionError, OSError):
            return b""  # the client went away: the read loop stops
        return too_large(n, limit, head)


class StdinReader(StdinAsyncReader):
    """Header lines and bodies of stdin, read in a worker; bodies over the limit are skipped."""

    def __init__(self, stdin: Any, executor: Any, limit: Callable[[], int]) -> None:
        super().__init__(stdin, executor)
        self._limit = limit

    def _read_header_line(self) -> bytes:
        return self.stdin.readline(65536)  # type: ignore[no-any-return]

    def readline(self) -> Any:
        """One header line (b"" at the end of input)."""
        return self.loop.run_in_executor(self.executor, self._read_header_line)

    def _read_body(self, n: int) -> bytes | TooLarge:
        limit = self._limit()
        if n <= limit:
            data: bytes = self.stdin.read(n)
            return data  # short at the end of input: answered, then the read loop stops
        head = self.stdin.read(min(n, HEAD_BYTES))
        left = n - len(head)
        while left > 0:
            chunk = self.stdin.read(min(left, 1 << 20))
            if not chunk:
                break
            left -= len(chunk)
        return too_large(n, limit, head)

    def readexactly(self, n: int) -> Any:
        """A body of `n` bytes, or `TooLarge` over the limit."""
        return self.loop.run_in_executor(self.executor, self._read_body, n)


class FdWriter:
    """The stdout of a stdio connection: each message written whole, one at a time.

    Responses are written from the event loop and notifications from worker threads; the
    lock keeps two messages from interleaving and `write_all` goes on after short writes
    (a stopped and continued daemon: a buffered stream lost bytes there)."""

    def __init__(self, stream: Any) -> None:
        stream.flush()
        self._stream = stream
        self._fd: int = stream.fileno()
        self._lock = threading.Lock()

    def write(self, data: bytes) -> None:
        with self._lock:
            write_all(self._fd, data)

    def close(self) -> None:
        self._stream.close()


def drop(transport: asyncio.BaseTransport) -> None:
    """Close a TCP connection now, with what it had not sent: the socket is reset (linger 0),
    so the kernel's send queue goes too instead of waiting for a client that does not read."""
    sock = transport.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    transport.abort()  # type: ignore[attr-defined]


class LoopWriter:
    """An asyncio stream writer that any thread may write to (worker threads send
    notifications); writes after the connection closed are dropped. With ``max_buffered``,
    a connection whose unsent output grows beyond it (a client that does not read) is
    dropped: its memory stays bounded."""

    def __init__(
        self, writer: asyncio.StreamWriter, loop: asyncio.AbstractEventLoop, max_buffered: int | None = None
    ) -> None:
        self._writer = writer
        self._loop = loop
        self._max = max_buffered

    def _write(self, data: bytes) -> None:
        if self._writer.is_closing():
            return
        self._writer.write(data)
        transport = self._writer.transport
        unsent = transport.get_write_buffer_size()
        if self._max is not None and unsent > self._max:
            drop(transport)  # first: the warning below is also sent to this client
            log.warning("dropped a TCP connection: %d bytes of answers unread (limit %d)", unsent, self._max)

    def write(self, data: bytes) -> None:
        """Write `data` from the loop's thread at once, from any other thread soon."""
        try:
            running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self._loop:
            self._write(data)
        else:
            with contextlib.suppress(RuntimeError):  # the loop is gone: nobody is listening
                self._loop.call_soon_threadsafe(self._write, data)

    def close(self) -> None:
        """Close the stream (from any thread)."""
        with contextlib.suppress(RuntimeError):
            self._loop.call_soon_threadsafe(self._writer.close)
