"""`sessiontree serve`: run the daemon (stdio by default, or --tcp HOST:PORT)."""

from __future__ import annotations

import argparse
import ipaddress
import logging
import sys
from typing import Any

LEVELS = ("debug", "info", "warning", "error")


def register(sub: Any) -> None:
    """Add the `serve` subcommand."""
    p = sub.add_parser(
        "serve",
        help="run the daemon for editors (JSON-RPC with LSP framing over stdio)",
        description="Run the sessiontree daemon. Speaks JSON-RPC 2.0 with LSP framing over stdio, "
        "or over TCP with --tcp. Logs go to stderr (and to the client as window/logMessage).",
    )
    p.add_argument("--stdio", action="store_true", help="serve over stdin/stdout (the default)")
    p.add_argument(
        "--tcp", metavar="HOST:PORT", help="serve over TCP instead (loopback only unless --allow-remote)"
    )
    p.add_argument("--allow-remote", action="store_true", help="allow --tcp to bind a non-loopback address")
    p.add_argument("--log-file", metavar="PATH", help="also write the log to this file")
    p.add_argument("--log-level", choices=LEVELS, default="info", help="log level (default: info)")


class _ClientLogHandler(logging.Handler):
    """Forwards log records to the client as window/logMessage."""

    def __init__(self, server: Any) -> None:
        super().__init__(logging.INFO)
        self.server = server
        self._busy = False

    def emit(self, record: logging.LogRecord) -> None:
        if self._busy or getattr(self.server.protocol, "writer", None) is None:
            return
        from lsprotocol import types as lsp

        kind = {
            logging.ERROR: lsp.MessageType.Error,
            logging.WARNING: lsp.MessageType.Warning,
            logging.INFO: lsp.MessageType.Info,
        }.get(record.levelno, lsp.MessageType.Log)
        self._busy = True
        try:
            self.server.window_log_message(lsp.LogMessageParams(type=kind, message=self.format(record)))
        except Exception:
            pass
        finally:
            self._busy = False


def parse_hostport(value: str) -> tuple[str, int]:
    """`HOST:PORT` (IPv6 as `[::1]:PORT`)."""
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"expected HOST:PORT, got {value!r}")
    host = host.strip("[]") or "127.0.0.1"
    return host, int(port)


def is_loopback(host: str) -> bool:
    """True for localhost and loopback addresses."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def run(args: argparse.Namespace) -> int:
    """Start the daemon; returns when the client disconnects or sends exit."""
    level = getattr(logging, args.log_level.upper())
    root = logging.getLogger()
    root.setLevel(logging.WARNING)
    fmt = logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    stderr = logging.StreamHandler(sys.stderr)
    stderr.setFormatter(fmt)
    root.addHandler(stderr)
    if args.log_file:
        fh = logging.FileHandler(args.log_file, encoding="utf-8")
        fh.setFormatter(fmt)
        root.addHandler(fh)
    logging.getLogger("sessiontree").setLevel(level)
    logging.getLogger("pygls").setLevel(logging.DEBUG if level <= logging.DEBUG else logging.WARNING)
    if level > logging.DEBUG:
        # pygls logs a traceback for every error response, including expected ones
        # (unknown handle, bad params); the daemon logs unexpected failures itself.
        logging.getLogger("pygls.protocol.json_rpc").setLevel(logging.CRITICAL)

    from sessiontree.lsp.server import create_server

    server = create_server()
    client_log = _ClientLogHandler(server)
    client_log.setFormatter(logging.Formatter("%(name)s: %(message)s"))
    logging.getLogger("sessiontree").addHandler(client_log)

    if args.tcp:
        try:
            host, port = parse_hostport(args.tcp)
        except ValueError as exc:
            print(f"sessiontree serve: {exc}", file=sys.stderr)
            return 2
        if not is_loopback(host) and not args.allow_remote:
            print(
                f"sessiontree serve: refusing to listen on non-loopback address {host} "
                "(the daemon reads and writes session files; pass --allow-remote to do it anyway)",
                file=sys.stderr,
            )
            return 2
        server.start_tcp(host, port)
        return 0
    server.start_io()
    return server.exit_code
