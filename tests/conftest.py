"""Every test runs with HOME and the XDG dirs inside a temporary directory (CONVENTIONS 16).

sessiontree keeps its own cache (index, lock files) and state under the XDG dirs; with
these pointed into a per-run temporary directory, no test and no daemon or CLI process a
test starts can write into the real home. Tests that need their own dirs still set them.

And the run checks it: the real home's (the HOME pytest started with) sessiontree cache and
state dirs and code-server data dir are listed when the session starts and again when it
ends; anything created, changed or removed there fails the run (exit code 1) with a list of
the paths (tests/home_guard.py). SESSIONTREE_HOME_CHECK=0 turns the check off, for a machine
where something else writes there at the same time.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator

import pytest
from home_guard import changes, snapshot, watched_dirs

# The environment as the process started, before `_private_home` moves HOME.
_STARTED_WITH = dict(os.environ)
_GUARD = pytest.StashKey[tuple[list[str], dict[str, tuple[int, int, int]]]]()


def pytest_sessionstart(session: pytest.Session) -> None:
    if _STARTED_WITH.get("SESSIONTREE_HOME_CHECK") == "0":
        return
    dirs = watched_dirs(_STARTED_WITH)
    session.stash[_GUARD] = (dirs, snapshot(dirs))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    guard = session.stash.get(_GUARD, None)
    if guard is None:
        return
    dirs, before = guard
    found = changes(before, snapshot(dirs))
    if not found:
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    lines = ["the test run wrote into the real home (tests must keep to their temporary dirs):"]
    lines += [f"  {line}" for line in found[:50]]
    if len(found) > 50:
        lines.append(f"  ... and {len(found) - 50} more")
    if reporter is not None:
        reporter.section("real home written", sep="=", red=True, bold=True)
        for line in lines:
            reporter.write_line(line)
    else:
        print("\n".join(lines))
    session.exitstatus = pytest.ExitCode.TESTS_FAILED


_REDIRECTED = ("HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME")


@pytest.fixture(scope="session", autouse=True)
def _private_home() -> Iterator[str]:
    saved = {name: os.environ.get(name) for name in (*_REDIRECTED, "SESSIONTREE_LOCK_DIR")}
    with tempfile.TemporaryDirectory(prefix="sessiontree-tests-home-") as base:
        home = os.path.join(base, "home")
        os.makedirs(home)
        os.environ["HOME"] = home
        for name, sub in (
            ("XDG_CACHE_HOME", ".cache"),
            ("XDG_STATE_HOME", ".local/state"),
            ("XDG_DATA_HOME", ".local/share"),
            ("XDG_CONFIG_HOME", ".config"),
        ):
            os.environ[name] = os.path.join(home, sub)
        os.environ.pop("SESSIONTREE_LOCK_DIR", None)
        try:
            yield home
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
