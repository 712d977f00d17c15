"""Initialization options of the daemon (`initializationOptions` of `initialize`)."""

from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path
from typing import Any

import attrs

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


@attrs.define(kw_only=True)
class ServerConfig:
    """The daemon's settings after validating the client's initialization options."""

    agent_dir: str | None = attrs.field(
        default=None, metadata={"doc": "Agent directory (None: the core's default)."}
    )
    allowed_roots: list[str] | None = attrs.field(
        default=None, metadata={"doc": "Directories session files may live in (None: the defaults)."}
    )
    watch: bool = attrs.field(default=True, metadata={"doc": "Follow files other processes append to."})
    log_level: str = attrs.field(default="info", metadata={"doc": "debug, info, warning or error."})
    summarizer_command: list[str] | None = attrs.field(
        default=None,
        metadata={
            "doc": "Command run for summaries: gets the abandoned entries as JSON on stdin, prints the summary."
        },
    )
    summarizer_timeout: float = attrs.field(
        default=120.0, metadata={"doc": "Seconds before the summarizer is killed."}
    )
    max_request_bytes: int = attrs.field(
        default=64 * 1024 * 1024, metadata={"doc": "Largest request body accepted (bytes)."}
    )
    state_dir: str | None = attrs.field(
        default=None, metadata={"doc": "Where navigation state lives (None: default_state_dir())."}
    )

    def resolved_state_dir(self) -> Path:
        """The directory of the navigation state file."""
        return Path(self.state_dir).expanduser() if self.state_dir else default_state_dir()


def _str_list(value: Any) -> list[str] | None:
    if isinstance(value, str) and value:
        return [value]
    if isinstance(value, list) and value and all(isinstance(v, str) and v for v in value):
        return list(value)
    return None


def parse_options(raw: Any) -> tuple[ServerConfig, list[str]]:
    """Validate initialization options: each bad option gives a warning and keeps its default."""
    cfg = ServerConfig()
    warnings: list[str] = []
    if raw is None:
        return cfg, warnings
    if not isinstance(raw, dict):
        return cfg, [f"initializationOptions must be an object, got {type(raw).__name__}; using defaults"]

    def bad(name: str, expected: str) -> None:
        warnings.append(
            f"initializationOptions.{name}: expected {expected}, got {raw[name]!r}; using the default"
        )

    if "agentDir" in raw and raw["agentDir"] is not None:
        if isinstance(raw["agentDir"], str) and raw["agentDir"]:
            cfg.agent_dir = os.path.expanduser(raw["agentDir"])
        else:
            bad("agentDir", "a directory path")
    if "allowedRoots" in raw and raw["allowedRoots"] is not None:
        roots = _str_list(raw["allowedRoots"])
        if roots is None:
            bad("allowedRoots", "a non-empty list of directory paths")
        else:
            cfg.allowed_roots = [os.path.expanduser(r) for r in roots]
    if "watch" in raw and raw["watch"] is not None:
        if isinstance(raw["watch"], bool):
            cfg.watch = raw["watch"]
        else:
            bad("watch", "true or false")
    if "logLevel" in raw and raw["logLevel"] is not None:
        level = raw["logLevel"]
        if isinstance(level, str) and level.lower() in LOG_LEVELS:
            cfg.log_level = level.lower()
        else:
            bad("logLevel", " or ".join(LOG_LEVELS))
    if "summarizerCommand" in raw and raw["summarizerCommand"] is not None:
        cmd = raw["summarizerCommand"]
        if isinstance(cmd, str) and cmd.strip():
            cfg.summarizer_command = ["/bin/sh", "-c", cmd]
        elif isinstance(cmd, list) and cmd and all(isinstance(c, str) for c in cmd):
            cfg.summarizer_command = list(cmd)
        else:
            bad("summarizerCommand", "a shell command string or a non-empty argv list")
    if "summarizerTimeout" in raw and raw["summarizerTimeout"] is not None:
        t = raw["summarizerTimeout"]
        if isinstance(t, int | float) and not isinstance(t, bool) and t > 0:
            cfg.summarizer_timeout = float(t)
        else:
            bad("summarizerTimeout", "a positive number of seconds")
    limits = raw.get("limits")
    max_bytes = raw.get("maxRequestBytes")
    if isinstance(limits, dict) and "maxRequestBytes" in limits:
        max_bytes = limits["maxRequestBytes"]
    elif limits is not None and not isinstance(limits, dict):
        warnings.append(
            f"initializationOptions.limits: expected an object, got {limits!r}; using the defaults"
        )
    if max_bytes is not None:
        if isinstance(max_bytes, int) and not isinstance(max_bytes, bool) and max_bytes >= 1024:
            cfg.max_request_bytes = max_bytes
        else:
            warnings.append(
                f"initializationOptions.limits.maxRequestBytes: expected an integer >= 1024, got {max_bytes!r}; using the default"
            )
    if "stateDir" in raw and raw["stateDir"] is not None:
        if isinstance(raw["stateDir"], str) and raw["stateDir"]:
            state_dir = os.path.expanduser(raw["stateDir"])
            agent_home = _inside_agent_dir(state_dir, cfg.agent_dir)
            if agent_home is not None:
                # Looking never writes into the agent's folders (DIVERGENCES 11): the state
                # file would sit among the sessions and be written on every navigation.
                warnings.append(
                    f"initializationOptions.stateDir: {state_dir} is inside the agent directory "
                    f"{agent_home}; sessiontree keeps its state out of the agent's folders, using the default"
                )
            else:
                cfg.state_dir = state_dir
        else:
            bad("stateDir", "a directory path")
    return cfg, warnings


def _inside_agent_dir(path: str, agent_dir: str | None) -> str | None:
    """The agent dir (or its XDG data/state dir) that ``path`` lies in, else None."""
    from sessiontree.core import paths

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
