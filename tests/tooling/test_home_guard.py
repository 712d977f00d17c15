"""The run fails when a test writes into the real home (tests/conftest.py, tests/home_guard.py).

Each case runs a small pytest session in a subprocess with the project's conftest, a made-up
"real home" as its HOME, and one test that writes (or does not) where a leaking test would.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]


def run_suite(tmp_path: Path, body: str, **env: str) -> subprocess.CompletedProcess[str]:
    suite = tmp_path / "suite"
    suite.mkdir()
    shutil.copy(TESTS / "conftest.py", suite / "conftest.py")
    shutil.copy(TESTS / "home_guard.py", suite / "home_guard.py")
    (suite / "test_inner.py").write_text(
        "import os\nfrom pathlib import Path\n\n\ndef test_inner():\n"
        "    real = Path(os.environ['REAL_HOME'])\n" + "".join(f"    {line}\n" for line in body.splitlines())
    )
    real = tmp_path / "real-home"
    (real / ".local" / "share" / "code-server").mkdir(parents=True, exist_ok=True)
    (real / ".local" / "share" / "code-server" / "settings.json").write_text("{}")
    full = {k: v for k, v in os.environ.items() if not k.startswith("XDG_") and k != "SESSIONTREE_HOME_CHECK"}
    full.update(HOME=str(real), REAL_HOME=str(real), **env)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(suite), str(suite)],
        capture_output=True,
        text=True,
        env=full,
        cwd=suite,
        timeout=120,
    )


@pytest.mark.parametrize(
    ("body", "expect"),
    [
        (
            "(real / '.cache/sessiontree/index').mkdir(parents=True)\n(real / '.cache/sessiontree/index/x').write_text('1')",
            "created {real}/.cache/sessiontree/index/x",
        ),
        (
            "(real / '.local/state/sessiontree').mkdir(parents=True)\n"
            "(real / '.local/state/sessiontree/state.json').write_text('{}')",
            "created {real}/.local/state/sessiontree/state.json",
        ),
        (
            "os.utime(real / '.local/share/code-server/settings.json', (1, 1))",
            "changed {real}/.local/share/code-server/settings.json",
        ),
        (
            "(real / '.local/share/code-server/settings.json').unlink()",
            "removed {real}/.local/share/code-server/settings.json",
        ),
    ],
)
def test_a_write_into_the_real_home_fails_the_run(tmp_path: Path, body: str, expect: str) -> None:
    res = run_suite(tmp_path, body)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "1 passed" in res.stdout  # the test itself passed: the run failed on the check
    assert "real home written" in res.stdout
    assert expect.format(real=tmp_path / "real-home") in res.stdout


def test_writes_into_the_redirected_home_pass(tmp_path: Path) -> None:
    body = (
        "home = Path(os.environ['HOME'])\n"
        "assert home != real\n"
        "(home / '.cache/sessiontree').mkdir(parents=True)\n"
        "(home / '.cache/sessiontree/x').write_text('1')\n"
        "xdg = Path(os.environ['XDG_STATE_HOME']) / 'sessiontree'\n"
        "xdg.mkdir(parents=True)\n"
        "(xdg / 'state.json').write_text('{}')"
    )
    res = run_suite(tmp_path, body)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "real home written" not in res.stdout


def test_the_check_can_be_turned_off(tmp_path: Path) -> None:
    res = run_suite(tmp_path, "(real / '.cache/sessiontree').mkdir(parents=True)", SESSIONTREE_HOME_CHECK="0")
    assert res.returncode == 0, res.stdout + res.stderr
