"""The daemon's settings: `initializationOptions` of `initialize`, and the TCP token.

`ServerConfig` is the options as one attrs class; `parse_options` structures the client's
options into it with cattrs, one reader per option, so that each bad option gives its own
warning and keeps its default (the daemon always starts). The token functions are the
rules of `serve --tcp`'s token: its length, the private file it is kept in.
"""

from __future__ import annotations

import os
import secrets
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import cattrs
from cattrs.gen import make_dict_structure_fn, override

from sessiontree.core import paths

STATE_DIR_ENV = "SESSIONTREE_STATE_DIR"
"""Environment variable overriding where the daemon keeps its navigation state."""

LOG_LEVELS = ("debug", "info", "warning", "error")


def default_state_dir() -> Path:
    """`$SESSIONTREE_STATE_DIR`, else `$XDG_STATE_HOME/sessiontree`, else `~/.local/state/sessiontree`."""
    env = os.environ.get(STATE_DIR_ENV)
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_STATE_HOME")
    base = Path(xdg).expanduser() if xdg and os.path.isabs(xdg) else Path.home() / ".local" / "state"
    return base / "sessiontree"


TOKEN_ENV = "SESSIONTREE_TOKEN"
"""Environment variable holding the token `serve --tcp` requires (else one is generated)."""

TOKEN_MIN_LENGTH = 16
"""Shorter tokens are refused: a TCP token must not be guessable by another local user."""


class TokenError(Exception):
    """A token that cannot be used (too short, a token file others can read, ...)."""


def runtime_dir() -> Path:
    """Where `serve --tcp` writes its generated token: `$XDG_RUNTIME_DIR/sessiontree`
    (per user, mode 0700, emptied at logout), else the state directory."""
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / "sessiontree"
    return default_state_dir()


def token_file_for(host: str, port: int, directory: Path | None = None) -> Path:
    """The file a daemon listening on host:port writes its generated token to."""
    safe_host = "".join(c if c.isalnum() or c in ".-" else "_" for c in host)
    return (directory or runtime_dir()) / f"tcp-{safe_host}-{port}.token"


def new_token() -> str:
    """A fresh random token (256 bits)."""
    return secrets.token_urlsafe(32)


def check_token(token: str, where: str) -> str:
    """`token` stripped, or TokenError when it is too short to be a secret."""
    token = token.strip()
    if len(token) < TOKEN_MIN_LENGTH or any(c.isspace() for c in token):
        raise TokenError(
            f"the token from {where} must be at least {TOKEN_MIN_LENGTH} characters without spaces"
        )
    return token


def _private_dir(directory: Path) -> None:
    """Create `directory` (0700) or check that it is ours and that nobody else can write to it."""
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    st = os.lstat(directory)
    if not stat.S_ISDIR(st.st_mode):
        raise TokenError(f"{directory} is not a directory (a symlink?); the token is not written there")
    if st.st_uid != os.geteuid() or st.st_mode & 0o022:
        raise TokenError(
            f"{directory} is not a private directory of this user; the token is not written there"
        )


def read_token_file(path: Path) -> str:
    """The token kept in `path`: a regular file of this user that nobody else can read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        raise TokenError(f"cannot read the token file {path}: {exc.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise TokenError(f"the token file {path} is not a regular file")
        if st.st_uid != os.geteuid() or st.st_mode & 0o077:
            raise TokenError(
                f"the token file {path} can be read by other users (mode {st.st_mode & 0o777:o}); chmod 600 it"
            )
        data = os.read(fd, 4096)
    finally:
        os.close(fd)
    return check_token(data.decode("utf-8", "replace"), str(path))


def write_token_file(path: Path, token: str) -> None:
    """Write `token` to `path` (mode 0600, in a private directory), replacing a stale one."""
    _private_dir(path.parent)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, token.encode("utf-8") + b"\n")
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)


def remove_token_file(path: Path, token: str) -> None:
    """Remove `path` if it still holds `token` (another daemon may have taken the name since)."""
    try:
        if path.read_text(encoding="utf-8").strip() == token:
            path.unlink()
    except OSError:
        pass


class Unfit(ValueError):
    """An option value of the wrong kind (the warning says what was expected)."""


class BadOption(ValueError):
    """An option value the daemon does not take; the text is the reason, for the warning."""


def _path(value: Any) -> str:
    if isinstance(value, str) and "\x00" in value:
        raise BadOption("a path cannot contain a NUL byte")
    if not isinstance(value, str) or not value:
        raise Unfit
    return os.path.expanduser(value)


def _paths(value: Any) -> list[str]:
    items = [value] if isinstance(value, str) else value
    if isinstance(items, list) and any(isinstance(v, str) and "\x00" in v for v in items):
        raise BadOption("a path cannot contain a NUL byte")
    if not isinstance(items, list) or not items or not all(isinstance(v, str) and v for v in items):
        raise Unfit
    return [os.path.expanduser(v) for v in items]


def _bool(value: Any) -> bool:
    if not isinstance(value, bool):
        raise Unfit
    return value


def _log_level(value: Any) -> str:
    if not isinstance(value, str) or value.lower() not in LOG_LEVELS:
        raise Unfit
    return value.lower()


def _command(value: Any) -> list[str]:
    if isinstance(value, str) and value.strip():
        return ["/bin/sh", "-c", value]
    if isinstance(value, list) and value and all(isinstance(c, str) for c in value):
        return list(value)
    raise Unfit


def _seconds(value: Any) -> float:
    if not isinstance(value, int | float) or isinstance(value, bool) or value <= 0:
        raise Unfit
    return float(value)


def _request_bytes(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1024:
        raise Unfit
    return value


def _count(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= 20:
        raise Unfit
    return value


def _store_url(value: Any) -> str:
    # A URL or a conninfo ("host=... dbname=..."); psycopg reports the rest when connecting.
    if not isinstance(value, str) or not value.strip():
        raise Unfit
    text = value.strip()
    if "://" in text and not text.startswith(("postgresql://", "postgres://")):
        raise Unfit
    if "://" not in text and "=" not in text:
        raise Unfit
    return text


def _option(
    key: str, expected: str, read: Callable[[Any], Any], doc: str, *, shown: str | None = None
) -> dict[str, Any]:
    """Field metadata: the option's key, what a value must be, its reader and its doc."""
    return {"doc": doc, "key": key, "shown": shown or key, "expected": expected, "read": read}


@attrs.define(kw_only=True)
class ServerConfig:
    """The daemon's settings: the client's `initializationOptions` as `parse_options` read them.

    Each field is read from its option (`metadata["key"]`, camelCase) by its reader; a
    value the reader refuses gives a warning and the field keeps its default.
    """

    agent_dir: str | None = attrs.field(
        default=None,
        metadata=_option(
            "agentDir", "a directory path", _path, "Agent directory (None: the core's default)."
        ),
    )
    allowed_roots: list[str] | None = attrs.field(
        default=None,
        metadata=_option(
            "allowedRoots",
            "a non-empty list of directory paths",
            _paths,
            "Directories session files may live in (None: the defaults).",
        ),
    )
    watch: bool = attrs.field(
        default=True,
        metadata=_option("watch", "true or false", _bool, "Follow files other processes append to."),
    )
    log_level: str = attrs.field(
        default="info",
        metadata=_option("logLevel", " or ".join(LOG_LEVELS), _log_level, "debug, info, warning or error."),
    )
    summarizer_command: list[str] | None = attrs.field(
        default=None,
        metadata=_option(
            "summarizerCommand",
            "a shell command string or a non-empty argv list",
            _command,
            "Command run for summaries: gets the abandoned entries as JSON on stdin, prints the summary.",
        ),
    )
    summarizer_timeout: float = attrs.field(
        default=120.0,
        metadata=_option(
            "summarizerTimeout",
            "a positive number of seconds",
            _seconds,
            "Seconds before the summarizer is killed.",
        ),
    )
    max_request_bytes: int = attrs.field(
        default=64 * 1024 * 1024,
        metadata=_option(
            "maxRequestBytes",
            "an integer >= 1024",
            _request_bytes,
            "Largest request body accepted (bytes); from `limits.maxRequestBytes`, else `maxRequestBytes`.",
            shown="limits.maxRequestBytes",
        ),
    )
    state_dir: str | None = attrs.field(
        default=None,
        metadata=_option(
            "stateDir",
            "a directory path",
            _path,
            "Where navigation state lives (None: default_state_dir()); never inside the agent directory.",
        ),
    )

    preindex: int = attrs.field(
        default=3,
        metadata=_option(
            "preindex",
            "an integer from 0 to 20",
            _count,
            "How many of the newest big sessions a listing shows are indexed in idle time, ahead of"
            " a click (docs/preindex.md); 0: none.",
        ),
    )

    store: str | None = attrs.field(
        default=None,
        metadata=_option(
            "store",
            "a postgresql:// URL or a libpq conninfo string",
            _store_url,
            "The shared session store (docs/shared-store.md); None: $SESSIONTREE_STORE, else no store.",
        ),
    )

    def resolved_store(self) -> str | None:
        """The store in effect: the `store` option, else `$SESSIONTREE_STORE`, else None."""
        return self.store or os.environ.get("SESSIONTREE_STORE") or None

    def resolved_state_dir(self) -> Path:
        """The directory of the navigation state file."""
        return Path(self.state_dir).expanduser() if self.state_dir else default_state_dir()


def _make_options_converter() -> cattrs.Converter:
    conv = cattrs.Converter(detailed_validation=True, forbid_extra_keys=False)

    def reader(f: Any) -> Callable[[Any, Any], Any]:
        read, expected = f.metadata["read"], f.metadata["expected"]

        def hook(value: Any, _tp: Any) -> Any:
            try:
                return read(value)
            except Unfit:
                raise BadOption(f"expected {expected}, got {value!r}") from None

        return hook

    overrides = {
        f.name: override(rename=f.metadata["key"], struct_hook=reader(f)) for f in attrs.fields(ServerConfig)
    }
    # the overrides are per field; mypy takes **overrides for the bool options too
    hook = make_dict_structure_fn(ServerConfig, conv, **overrides)  # type: ignore[arg-type]
    conv.register_structure_hook(ServerConfig, hook)
    return conv


_options = _make_options_converter()


def _structure(options: dict[str, Any]) -> tuple[ServerConfig, dict[str, str]]:
    """The config from flat options, and why each refused field was refused (by field name)."""
    refused: dict[str, str] = {}
    keys = {f.name: f.metadata["key"] for f in attrs.fields(ServerConfig)}
    while True:
        try:
            return _options.structure(options, ServerConfig), refused
        except cattrs.ClassValidationError as exc:
            with_notes, others = exc.group_exceptions()
            if others or not with_notes:
                raise
            for error, note in with_notes:
                refused[note.name] = str(error)
                options.pop(keys[note.name], None)


def parse_options(raw: Any) -> tuple[ServerConfig, list[str]]:
    """Read initialization options: each bad option gives a warning and keeps its default.

    An option sent as null is the default. `limits.maxRequestBytes`, when present, wins
    over the older top-level `maxRequestBytes`. A stateDir inside the agent directory is
    refused: looking never writes into the agent's folders (the state file would sit
    among the sessions and be written on every navigation).
    """
    if raw is None:
        return ServerConfig(), []
    if not isinstance(raw, dict):
        return ServerConfig(), [
            f"initializationOptions must be an object, got {type(raw).__name__}; using defaults"
        ]
    options = dict(raw)
    limits = options.pop("limits", None)
    limits_warning = None
    if isinstance(limits, dict):
        if "maxRequestBytes" in limits:
            options["maxRequestBytes"] = limits["maxRequestBytes"]
    elif limits is not None:
        limits_warning = (
            f"initializationOptions.limits: expected an object, got {limits!r}; using the defaults"
        )
    cfg, refused = _structure({k: v for k, v in options.items() if v is not None})
    warnings: list[str] = []
    for f in attrs.fields(ServerConfig):
        if f.name == "max_request_bytes" and limits_warning is not None:
            warnings.append(limits_warning)
        if f.name in refused:
            warnings.append(
                f"initializationOptions.{f.metadata['shown']}: {refused[f.name]}; using the default"
            )
    if cfg.state_dir is not None:
        agent_home = _inside_agent_dir(cfg.state_dir, cfg.agent_dir)
        if agent_home is not None:
            warnings.append(
                f"initializationOptions.stateDir: {cfg.state_dir} is inside the agent directory "
                f"{agent_home}; sessiontree keeps its state out of the agent's folders, using the default"
            )
            cfg.state_dir = None
    return cfg, warnings


def _inside_agent_dir(path: str, agent_dir: str | None) -> str | None:
    """The agent dir (or its XDG data/state dir) that ``path`` lies in, else None."""
    target = os.path.realpath(os.path.abspath(path))
    for base in {
        paths.agent_dir_of(agent_dir),
        paths.get_data_dir(agent_dir),
        paths.get_state_dir(agent_dir),
    }:
        root = os.path.realpath(base)
        if target == root or target.startswith(root.rstrip("/") + "/"):
            return base
    return None
