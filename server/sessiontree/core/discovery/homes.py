"""Which agent directories a listing looks in (docs/storage-format.md, "Which agent dirs are listed").

An agent dir named by the caller (``--agent-dir``, the editors' setting, ``agentDir``) or by
``$PI_CODING_AGENT_DIR`` is the only one. Without one, sessiontree lists the sessions of
every agent of pi's family that has its directory on this machine, so that a pi or oh-my-pi
user sees their sessions without a setting:

- xcsh: ``~/.xcsh/agent``, or ``$XDG_DATA_HOME/xcsh`` when it exists (sessiontree's default);
- pi: ``~/.pi/agent``;
- oh-my-pi: ``$XDG_DATA_HOME/omp`` when it exists (``omp config init-xdg`` moved it there),
  else ``~/<$PI_CONFIG_DIR or .omp>/agent``; and each profile's, ``~/.omp/profiles/<name>/agent``
  or ``$XDG_DATA_HOME/omp/profiles/<name>`` when that exists (oh-my-pi's own rules,
  ``pi-utils/src/dirs.ts``).

When none of them exists, xcsh's default alone is returned, so that the error about a missing
agent dir names it. New sessions still go into the default agent dir (`paths.get_agent_dir`).
Looking creates nothing: only ``os.path.isdir`` and ``os.listdir`` are called.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from .. import paths
from ..format.dialects import home_dialect

__all__ = ["AgentHome", "agent_homes", "missing_agent_dir", "session_dirs_of_homes"]


@dataclass(frozen=True)
class AgentHome:
    """An agent directory a listing looks in: the agent of pi's family that keeps it
    (``"xcsh"``, ``"pi"`` or ``"omp"``), the directory that holds its ``sessions/`` (what the
    path functions take as ``agent_dir``), and an oh-my-pi profile's name."""

    agent: str
    data_dir: str
    profile: str | None = None

    @property
    def sessions_root(self) -> str:
        """``<data dir>/sessions``."""
        return os.path.join(self.data_dir, "sessions")


def _omp_homes(p: paths.PathEnv) -> list[AgentHome]:
    config_root = os.path.join(p.home, p.env.get("PI_CONFIG_DIR") or ".omp")
    xdg = p.env.get("XDG_DATA_HOME") if (p.platform.startswith("linux") or p.platform == "darwin") else None
    xdg_root = os.path.join(xdg, "omp") if xdg else None
    homes = [
        AgentHome(
            "omp", xdg_root if xdg_root and os.path.isdir(xdg_root) else os.path.join(config_root, "agent")
        )
    ]
    try:
        profiles = sorted(os.listdir(os.path.join(config_root, "profiles")))
    except OSError:
        profiles = []
    if xdg_root is not None:
        try:
            profiles = sorted({*profiles, *os.listdir(os.path.join(xdg_root, "profiles"))})
        except OSError:
            pass
    for name in profiles:
        xdg_profile = os.path.join(xdg_root, "profiles", name) if xdg_root else None
        data = (
            xdg_profile
            if xdg_profile and os.path.isdir(xdg_profile)
            else os.path.join(config_root, "profiles", name, "agent")
        )
        homes.append(AgentHome("omp", data, name))
    return homes


def agent_homes(agent_dir: str | None = None, penv: paths.PathEnv | None = None) -> list[AgentHome]:
    """The agent directories to list sessions from (the module doc): ``agent_dir`` or
    ``$PI_CODING_AGENT_DIR`` alone, else every one of pi's family that exists, xcsh's first."""
    p = penv if penv is not None else paths.current_env()
    if agent_dir is not None or p.env.get(paths.AGENT_DIR_ENV):
        data = paths.get_data_dir(os.path.expanduser(agent_dir) if agent_dir is not None else None, p)
        dialect = home_dialect(data)
        return [AgentHome(str(dialect) if dialect is not None else "xcsh", data)]
    default = AgentHome("xcsh", paths.get_data_dir(None, p))
    found: list[AgentHome] = []
    seen: set[str] = set()
    for home in [default, AgentHome("pi", os.path.join(p.home, ".pi", "agent")), *_omp_homes(p)]:
        key = os.path.realpath(home.data_dir)
        if key not in seen and os.path.isdir(home.data_dir):
            seen.add(key)
            found.append(home)
    return found or [default]


def session_dirs_of_homes(cwd: str, homes: list[AgentHome], penv: paths.PathEnv | None = None) -> list[str]:
    """The directories of ``cwd``'s sessions under every home, each encoding the agents use."""
    return [d for h in homes for d in paths.session_dirs_of(cwd, h.data_dir, penv)]


def missing_agent_dir(
    agent_dir: str | None = None, penv: paths.PathEnv | None = None, given_by: str = "--agent-dir"
) -> str | None:
    """A one-line note when no agent dir to list exists, else ``None``.

    It names the directory and what chose it (``given_by`` for an ``agent_dir`` passed in),
    so that a typo in ``$PI_CODING_AGENT_DIR`` is not mistaken for "no sessions"; without a
    setting, it says that no agent of pi's family has its directory here. Nothing is created
    to look.
    """
    p = penv if penv is not None else paths.current_env()
    homes = agent_homes(agent_dir, p)
    if any(os.path.isdir(h.data_dir) for h in homes):
        return None
    data_dir = homes[0].data_dir
    if agent_dir is not None:
        source = f"given by {given_by}"
    elif p.env.get(paths.AGENT_DIR_ENV):
        source = f"set by ${paths.AGENT_DIR_ENV}"
    else:
        others = [os.path.join(p.home, ".pi", "agent"), os.path.join(p.home, ".omp", "agent")]
        source = (
            f"the default, and no {' or '.join(others)} either; set ${paths.AGENT_DIR_ENV} to use another"
        )
    return f"no agent directory at {data_dir} ({source})"
