"""Where sessions live: the agent dir, the sessions root, per-cwd directory names, the blob
dir and terminal breadcrumbs (docs/storage-format.md "Layout on disk").

Everything that depends on the machine (environment variables, the home and temp dirs,
the terminal) comes from a :class:`PathEnv`, which tests build by hand; the default is
:func:`current_env`.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = [
    "AGENT_DIR_ENV",
    "PathEnv",
    "agent_dir_of",
    "blobs_dir",
    "breadcrumb_path",
    "current_env",
    "encode_cwd",
    "encode_cwd_legacy",
    "file_kind",
    "get_agent_dir",
    "get_data_dir",
    "get_default_session_dir",
    "get_sessions_root",
    "get_state_dir",
    "get_terminal_id",
    "read_breadcrumb",
    "session_dir_names",
    "session_dirs_of",
    "sessions_root",
    "terminal_sessions_dir",
    "write_breadcrumb",
]

AGENT_DIR_ENV = "PI_CODING_AGENT_DIR"
_APP = "xcsh"


def _node_tmpdir(env: Mapping[str, str]) -> str:
    # Node's os.tmpdir(): TMPDIR, TMP, TEMP, else /tmp; a trailing slash is removed.
    for name in ("TMPDIR", "TMP", "TEMP"):
        value = env.get(name)
        if value:
            return value.rstrip("/") or "/"
    return "/tmp"


def _stdin_tty() -> str | None:
    try:
        if os.isatty(0):
            return os.ttyname(0)
    except OSError:
        pass
    return None


@dataclass(frozen=True)
class PathEnv:
    """The machine facts the path rules depend on (injectable for tests).

    ``env`` is the environment, ``home`` the home dir, ``tmp`` the OS temp dir,
    ``platform`` a ``sys.platform`` value and ``tty`` the device path of stdin when it is a
    terminal (``/dev/pts/3``) or ``None``.
    """

    env: Mapping[str, str] = field(default_factory=dict)
    home: str = "/nonexistent-home"
    tmp: str = "/tmp"
    platform: str = "linux"
    tty: str | None = None


def current_env() -> PathEnv:
    """The real environment of this process."""
    env = dict(os.environ)
    return PathEnv(
        env=env,
        home=env.get("HOME") or os.path.expanduser("~"),
        tmp=_node_tmpdir(env),
        platform=sys.platform,
        tty=_stdin_tty(),
    )


def _penv(penv: PathEnv | None) -> PathEnv:
    return penv if penv is not None else current_env()


# --------------------------------------------------------------------------- dirs


def get_agent_dir(penv: PathEnv | None = None) -> str:
    """``$PI_CODING_AGENT_DIR`` made absolute, else ``~/.xcsh/agent``."""
    p = _penv(penv)
    override = p.env.get(AGENT_DIR_ENV)
    if override:
        return os.path.abspath(override)
    return os.path.join(p.home, f".{_APP}", "agent")


def _xdg_dir(p: PathEnv, variable: str) -> str | None:
    """``$<variable>/xcsh`` when it applies: default agent dir, Linux/macOS, dir exists."""
    if p.env.get(AGENT_DIR_ENV) or not (p.platform.startswith("linux") or p.platform == "darwin"):
        return None
    base = p.env.get(variable)
    if not base:
        return None
    candidate = os.path.join(base, _APP)
    return candidate if os.path.isdir(candidate) else None


def get_data_dir(agent_dir: str | None = None, penv: PathEnv | None = None) -> str:
    """Where sessions and blobs live: ``agent_dir`` when given, else ``$XDG_DATA_HOME/xcsh``
    when it exists (default agent dir only), else the agent dir."""
    if agent_dir is not None:
        return os.path.abspath(agent_dir)
    p = _penv(penv)
    return _xdg_dir(p, "XDG_DATA_HOME") or get_agent_dir(p)


def get_state_dir(agent_dir: str | None = None, penv: PathEnv | None = None) -> str:
    """Where terminal breadcrumbs live: like :func:`get_data_dir` with ``$XDG_STATE_HOME``."""
    if agent_dir is not None:
        return os.path.abspath(agent_dir)
    p = _penv(penv)
    return _xdg_dir(p, "XDG_STATE_HOME") or get_agent_dir(p)


def agent_dir_of(agent_dir: str | None = None, penv: PathEnv | None = None) -> str:
    """The agent dir in effect (``agent_dir`` made absolute, else :func:`get_agent_dir`)."""
    return os.path.abspath(agent_dir) if agent_dir is not None else get_agent_dir(penv)


def sessions_root(agent_dir: str | None = None, penv: PathEnv | None = None) -> str:
    """``<data dir>/sessions``."""
    return os.path.join(get_data_dir(agent_dir, penv), "sessions")


get_sessions_root = sessions_root


def blobs_dir(agent_dir: str | None = None, penv: PathEnv | None = None) -> str:
    """``<data dir>/blobs`` (the global content-addressed blob store)."""
    return os.path.join(get_data_dir(agent_dir, penv), "blobs")


def terminal_sessions_dir(agent_dir: str | None = None, penv: PathEnv | None = None) -> str:
    """``<state dir>/terminal-sessions``."""
    return os.path.join(get_state_dir(agent_dir, penv), "terminal-sessions")


# --------------------------------------------------------------------------- cwd encoding


def _canonical(path: str) -> str:
    """realpath (symlinks resolved), falling back to an absolute normalized path."""
    try:
        return os.path.realpath(path, strict=False)
    except (OSError, ValueError):
        return os.path.abspath(path)


def _within(path: str, base: str) -> str | None:
    """``path`` relative to ``base`` if it is ``base`` or inside it, else ``None``."""
    if path == base:
        return ""
    prefix = base if base.endswith("/") else base + "/"
    if path.startswith(prefix):
        return path[len(prefix) :]
    return None


def _dashes(text: str) -> str:
    return text.replace("/", "-").replace("\\", "-").replace(":", "-")


def _legacy_name(absolute: str) -> str:
    return "--" + _dashes(absolute.lstrip("/\\")) + "--"


def encode_cwd(cwd: str, home: str | None = None, tmp: str | None = None, penv: PathEnv | None = None) -> str:
    """The per-cwd directory name, computed on canonical (realpath) paths.

    Inside home: ``-`` + relative path with ``/ \\ :`` → ``-`` (home itself: ``-``); inside
    the temp dir: ``-tmp-<relative>`` (the temp dir itself: ``-tmp``); otherwise the legacy
    form ``--<absolute path without the leading slash>--``.
    """
    if home is None or tmp is None:
        p = _penv(penv)
        home = p.home if home is None else home
        tmp = p.tmp if tmp is None else tmp
    path = _canonical(cwd)
    rel = _within(path, _canonical(home)) if home else None
    if rel is not None:
        return "-" + _dashes(rel) if rel else "-"
    rel = _within(path, _canonical(tmp)) if tmp else None
    if rel is not None:
        return "-tmp-" + _dashes(rel) if rel else "-tmp"
    return _legacy_name(path)


def encode_cwd_legacy(cwd: str) -> str:
    """The legacy directory name ``--<absolute path>--`` of ``cwd`` (canonical path)."""
    return _legacy_name(_canonical(cwd))


def session_dir_names(
    cwd: str, home: str | None = None, tmp: str | None = None, penv: PathEnv | None = None
) -> list[str]:
    """Every directory name the agents use for ``cwd``, the current encoding first.

    The current encoding (:func:`encode_cwd`), then the ``--<absolute path>--`` form of the
    canonical path and of the path as given: pi-mono writes and reads that form on the raw
    cwd, older versions of the reference wrote it before moving to the home-relative names.
    """
    names = [encode_cwd(cwd, home, tmp, penv)]
    for legacy in (_legacy_name(_canonical(cwd)), _legacy_name(os.path.abspath(cwd))):
        if legacy not in names:
            names.append(legacy)
    return names


def session_dirs_of(cwd: str, agent_dir: str | None = None, penv: PathEnv | None = None) -> list[str]:
    """The existing sessions directories of ``cwd`` under every encoding, current first.

    Looks only: nothing is created, renamed or moved (DIVERGENCES 11; the reference renames
    legacy directories, which hides them from pi-mono, which still uses that form).
    """
    p = _penv(penv)
    root = sessions_root(agent_dir, p)
    out: list[str] = []
    for name in session_dir_names(cwd, p.home, p.tmp):
        directory = os.path.join(root, name)
        if os.path.isdir(directory) and directory not in out:
            out.append(directory)
    return out


def get_default_session_dir(
    cwd: str, agent_dir: str | None = None, penv: PathEnv | None = None, create: bool = False
) -> str:
    """The sessions directory new sessions of ``cwd`` go to.

    An existing directory of ``cwd`` under any encoding (the current one first), so that a
    session made here lands beside the agent's own; else ``<sessions root>/<encode_cwd(cwd)>``.
    Nothing is renamed; the directory is created only with ``create=True`` (writers create it
    when they first write a file there, so that computing a path never touches the disk).
    """
    p = _penv(penv)
    existing = session_dirs_of(cwd, agent_dir, p)
    directory = (
        existing[0] if existing else os.path.join(sessions_root(agent_dir, p), encode_cwd(cwd, p.home, p.tmp))
    )
    if create:
        os.makedirs(directory, exist_ok=True)
    return directory


# --------------------------------------------------------------------------- breadcrumbs


def get_terminal_id(penv: PathEnv | None = None) -> str | None:
    """The terminal's id: the stdin tty (``pts-3``), else ``kitty-``/``tmux-``/``apple-``/``wt-``
    + the first of ``KITTY_WINDOW_ID``, ``TMUX_PANE``, ``TERM_SESSION_ID``, ``WT_SESSION``.

    Path separators in the id become ``-`` so that it is always a plain file name.
    """
    p = _penv(penv)
    terminal: str | None = None
    if p.tty:
        tty = p.tty[len("/dev/") :] if p.tty.startswith("/dev/") else p.tty
        terminal = tty.replace("/", "-")
    else:
        for prefix, variable in (
            ("kitty", "KITTY_WINDOW_ID"),
            ("tmux", "TMUX_PANE"),
            ("apple", "TERM_SESSION_ID"),
            ("wt", "WT_SESSION"),
        ):
            value = p.env.get(variable)
            if value:
                terminal = f"{prefix}-{value}"
                break
    return sanitize_terminal_id(terminal)


def sanitize_terminal_id(terminal: str | None) -> str | None:
    """A terminal id as a plain file name (separators become ``-``), or ``None`` if empty."""
    if not terminal:
        return None
    terminal = terminal.replace("/", "-").replace("\\", "-").replace("\0", "")
    return terminal if terminal not in ("", ".", "..") else None


def breadcrumb_path(
    agent_dir: str | None = None, penv: PathEnv | None = None, terminal_id: str | None = None
) -> str | None:
    """``<state dir>/terminal-sessions/<terminal id>``, or ``None`` without a terminal.

    ``terminal_id`` names another terminal than this process's (a daemon serving an editor
    has none of its own; the editor tells it which terminal the agent runs in).
    """
    p = _penv(penv)
    terminal = sanitize_terminal_id(terminal_id) if terminal_id is not None else get_terminal_id(p)
    if terminal is None:
        return None
    return os.path.join(terminal_sessions_dir(agent_dir, p), terminal)


def write_breadcrumb(
    cwd: str, session_file: str, agent_dir: str | None = None, penv: PathEnv | None = None
) -> None:
    """Record ``<cwd>\\n<session file>\\n`` for this terminal. Fire and forget: never raises."""
    try:
        path = breadcrumb_path(agent_dir, penv)
        if path is None:
            return
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(f"{cwd}\n{os.path.abspath(session_file)}\n")
        os.replace(tmp, path)
    except Exception:
        pass


def read_breadcrumb(
    cwd: str, agent_dir: str | None = None, penv: PathEnv | None = None, terminal_id: str | None = None
) -> str | None:
    """The session file this terminal last used in ``cwd``, or ``None``.

    ``None`` when there is no terminal, no breadcrumb, the breadcrumb's cwd does not
    resolve to ``cwd``, or the file it names does not exist. Never raises.
    """
    try:
        path = breadcrumb_path(agent_dir, penv, terminal_id)
        if path is None:
            return None
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read().split("\n")
        if len(lines) < 2 or not lines[1]:
            return None
        if os.path.abspath(lines[0]) != os.path.abspath(cwd):
            return None
        session_file = lines[1]
        return session_file if os.path.isfile(session_file) else None
    except Exception:
        return None


def file_kind(mode: int) -> str:
    """What a file that is not a regular file is, for messages: "a directory", "a FIFO",
    "a device", "a socket", else "not a regular file"."""
    import stat

    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"
