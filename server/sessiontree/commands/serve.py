"""`sessiontree serve`: run the daemon (stdio by default, or --tcp HOST:PORT)."""

from __future__ import annotations

import argparse
import gc
import ipaddress
import logging
import os
import sys
from pathlib import Path
from typing import Any

LEVELS = ("debug", "info", "warning", "error")
#: The cyclic collector's thresholds in the daemon (Python's are 700, 10, 10). A page of rows
#: allocates thousands of containers; with the default first threshold the collections they
#: set off took 5-30 ms of a navigation now and then (docs/benchmarks.md). The older
#: generations keep Python's ratios: a closed session (freed by the collector, its index and
#: readers refer to each other) waits for a full collection, one per 2,000,000 allocations
#: instead of 70,000 (tests/reliability/test_resources.py: +11 MB over 900 open/close cycles).
GC_THRESHOLDS = (20_000, 10, 10)


def register(sub: Any) -> None:
    """Add the `serve` subcommand."""
    p = sub.add_parser(
        "serve",
        help="run the daemon for editors (JSON-RPC with LSP framing over stdio)",
        description="Run the sessiontree daemon. Speaks JSON-RPC 2.0 with LSP framing over stdio, "
        "or over TCP with --tcp. Logs go to the client as window/logMessage, with their level; over stdio, "
        "stderr gets errors and what no client got (before one connected); over TCP, everything.",
    )
    p.add_argument("--stdio", action="store_true", help="serve over stdin/stdout (the default)")
    p.add_argument(
        "--tcp", metavar="HOST:PORT", help="serve over TCP instead (loopback only unless --allow-remote)"
    )
    p.add_argument("--allow-remote", action="store_true", help="allow --tcp to bind a non-loopback address")
    p.add_argument(
        "--token-file",
        metavar="PATH",
        help="with --tcp: the token clients must send (read from PATH, a 0600 file; created when missing). "
        "Default: $SESSIONTREE_TOKEN, else a new token written to a 0600 file in the runtime directory",
    )
    p.add_argument("--log-file", metavar="PATH", help="also write the log to this file")
    p.add_argument("--log-level", choices=LEVELS, default="info", help="log level (default: info)")


class _ClientLogHandler(logging.Handler):
    """Forwards log records to the client as window/logMessage."""

    def __init__(self, server: Any) -> None:
        super().__init__(logging.INFO)
        self.server = server
        self._busy = False

    def emit(self, record: logging.LogRecord) -> None:
        from sessiontree.lsp.server import current_server

        # over TCP, records go to the connection they happened in, never to another one
        server = current_server() or self.server
        if self._busy or getattr(server.protocol, "writer", None) is None:
            return
        from lsprotocol import types as lsp

        kind = {
            logging.ERROR: lsp.MessageType.Error,
            logging.WARNING: lsp.MessageType.Warning,
            logging.INFO: lsp.MessageType.Info,
        }.get(record.levelno, lsp.MessageType.Log)
        self._busy = True
        try:
            server.window_log_message(lsp.LogMessageParams(type=kind, message=self.format(record)))
            record.sent_to_client = True
        except Exception:
            pass
        finally:
            self._busy = False


def _not_sent_to_client(record: logging.LogRecord) -> bool:
    """What stderr still gets over stdio: records no client got as window/logMessage (before
    it connected), and errors. The editor that started the daemon shows its stderr as errors
    (VS Code's language client, Neovim's LSP log), so an INFO line there read as one; the
    client gets every record with its level. (Over TCP, stderr is the daemon's own log and
    keeps everything.)"""
    return record.levelno >= logging.ERROR or not getattr(record, "sent_to_client", False)


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
    if not args.tcp:
        stderr.addFilter(_not_sent_to_client)
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

    from sessiontree.lsp.setup import create_server

    server = create_server()
    gc.set_threshold(*GC_THRESHOLDS)
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
        return _serve_tcp(server, host, port, args.token_file)
    server.start_io()
    return server.exit_code


def _tcp_token(token_file: str | None) -> tuple[str, str, Path | None]:
    """(token, where it comes from, the file this run created) from --token-file,
    $SESSIONTREE_TOKEN, or a new one (where "": written once the port is known)."""
    from sessiontree.lsp import config

    if token_file:
        path = Path(token_file).expanduser()
        if os.path.lexists(path):
            return config.read_token_file(path), str(path), None
        token = config.new_token()
        config.write_token_file(path, token)
        return token, str(path), path
    env = os.environ.get(config.TOKEN_ENV)
    if env:
        return config.check_token(env, f"${config.TOKEN_ENV}"), f"${config.TOKEN_ENV}", None
    return config.new_token(), "", None


def _serve_tcp(server: Any, host: str, port: int, token_file: str | None) -> int:
    """Serve TCP connections that show the token; prints where the token is."""
    from sessiontree.lsp import config

    try:
        token, where, created = _tcp_token(token_file)
    except (config.TokenError, OSError) as exc:
        print(f"sessiontree serve: {exc}", file=sys.stderr)
        return 2
    written = [created] if created is not None else []

    def listening(addresses: list[Any]) -> None:
        bound_host, bound_port = addresses[0][0], addresses[0][1]
        shown = f"[{bound_host}]:{bound_port}" if ":" in bound_host else f"{bound_host}:{bound_port}"
        if where.startswith("$"):
            told = f"token from {where}"
        elif where:
            told = f"token in {where}"
        else:
            path = config.token_file_for(bound_host, bound_port)
            config.write_token_file(path, token)
            written.append(path)
            told = f"token in {path}"
        logging.getLogger("sessiontree.lsp").info("listening on %s; %s", shown, told)
        print(f"sessiontree serve: listening on {shown}; {told}", file=sys.stderr, flush=True)

    def remove_token_files() -> None:
        for path in written:
            config.remove_token_file(path, token)

    try:
        server.start_tcp(host, port, token=token, on_listening=listening, on_forced_exit=remove_token_files)
    except (config.TokenError, OSError) as exc:
        print(f"sessiontree serve: {exc}", file=sys.stderr)
        return 2
    finally:
        remove_token_files()
    return 0
