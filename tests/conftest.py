"""Every test runs with HOME and the XDG dirs inside a temporary directory (CONVENTIONS 16).

sessiontree keeps its own cache (index, lock files) and state under the XDG dirs; with
these pointed into a per-run temporary directory, no test and no daemon or CLI process a
test starts can write into the real home. Tests that need their own dirs still set them.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator

import pytest

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
