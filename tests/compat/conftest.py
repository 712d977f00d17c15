"""Fixtures of the compatibility suite (issue 31): the agents, and a place to write sessions.

The agents come from tests/compat/setup.sh's install in the compat cache
(``$SESSIONTREE_COMPAT_CACHE``, else the repository's ``.cache/compat``). The suite skips
only when that install cannot be used, and loudly: each test's reason and a section at the
end of the run say why and how to install. ``.cache/compat/UNREACHABLE`` (written by the
setup when the npm registry cannot be reached) and a missing runtime, package or harness are
the only reasons; any other failure of an agent fails its tests.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from compat.state import OMP, PI, Agent, compat_cache

_NOT_RUN: dict[str, str] = {}


def unavailable(agent: Agent) -> str | None:
    """Why `agent`'s tests cannot run here (None when they can)."""
    cache = compat_cache()
    marker = cache / "UNREACHABLE"
    if marker.exists():
        return f"{marker}: {marker.read_text(errors='replace').strip()} (run tests/compat/setup.sh again)"
    missing = agent.missing()
    if missing is not None:
        return (
            f"{missing} is missing: install the agents with `bash tests/compat/setup.sh` "
            "(SESSIONTREE_COMPAT_CACHE=<dir> shares one install between checkouts)"
        )
    return None


def require(agent: Agent) -> Agent:
    """`agent`, or a loud skip of the calling test when its install cannot be used."""
    reason = unavailable(agent)
    if reason is not None:
        _NOT_RUN[agent.label] = reason
        pytest.skip(f"COMPATIBILITY SUITE NOT RUN for {agent.label}: {reason}")
    return agent


@pytest.fixture(scope="session")
def pi() -> Agent:
    """pi 1.6.0 (its harness under the pinned Node 22)."""
    return require(PI)


@pytest.fixture(scope="session")
def omp() -> Agent:
    """oh-my-pi 18.2.3 (its harness under the pinned Bun)."""
    return require(OMP)


@dataclass(frozen=True)
class Work:
    """A test's directories: the project the sessions belong to and their sessions directory."""

    #: the session's cwd (exists, empty)
    cwd: Path
    #: where session files are written
    sessions: Path

    def file(self, name: str) -> Path:
        """A session file path in `sessions` (not created)."""
        return self.sessions / name


#: The agent directory each agent keeps its sessions in, below the test's home.
_AGENT_DIRS = {"pi": (".pi", "agent"), "omp": (".omp", "agent")}


@pytest.fixture
def work(tmp_path: Path, request: pytest.FixtureRequest) -> Work:
    """The test's project and sessions directory: inside the agent directory of the agent
    the test module is about (``test_pi_*``, ``test_omp_*``), as a real session file lives,
    so that a session sessiontree starts there speaks that agent's dialect (a fresh file
    takes the dialect of the agent directory it lives in; docs/storage-format.md)."""
    module = request.module.__name__.rsplit(".", 1)[-1]
    agent = "omp" if module.startswith("test_omp") else "pi"
    cwd = tmp_path / "proj"
    sessions = tmp_path.joinpath(*_AGENT_DIRS[agent], "sessions", "--proj--")
    cwd.mkdir()
    sessions.mkdir(parents=True)
    return Work(cwd=cwd, sessions=sessions)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    for label, reason in _NOT_RUN.items():
        terminalreporter.section(f"compatibility suite NOT RUN for {label}", sep="!", red=True, bold=True)
        terminalreporter.write_line(reason)
