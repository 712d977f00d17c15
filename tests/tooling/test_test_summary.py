"""`make run` installs the runtime only; `make test` ends with a line per suite and a total.

scripts/test-summary.sh runs the suites; here each suite's command is replaced
(``TEST_SUMMARY_CMD_<SUITE>``) by one that prints what the real suite prints, and pytest also
runs for real on a small test file.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "test-summary.sh"


def summary(*suites: str, **cmds: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    for suite, cmd in cmds.items():
        env[f"TEST_SUMMARY_CMD_{suite}"] = cmd
    return subprocess.run(
        ["bash", str(SCRIPT), *suites], capture_output=True, text=True, env=env, timeout=300, cwd=ROOT
    )


def tail(res: subprocess.CompletedProcess[str], n: int) -> list[str]:
    return res.stdout.splitlines()[-n:]


FAKES = {
    "lint": "true",
    "typecheck": "true",
    "pytest": (
        "echo '....'; echo 'SKIPPED [2] tests/realcorpus/test_x.py:12: ../shared is absent'; "
        "echo '5 passed, 2 skipped in 0.12s'"
    ),
    "compat": "echo '..'; echo '2 passed in 3.10s'",
    "nvim": "printf 'ok 1\\n\\n7 passed, 0 failed\\n'",
    "vscode": "echo '=== vscode summary'; echo 'vscode: 3 passed, 0 failed'",
}


def test_one_line_per_suite_the_skips_named_and_a_total() -> None:
    res = summary(**FAKES)
    assert res.returncode == 0, res.stdout + res.stderr
    assert tail(res, 8) == [
        "lint: 1 passed, 0 failed, 0 skipped",
        "typecheck: 1 passed, 0 failed, 0 skipped",
        "pytest: 5 passed, 0 failed, 2 skipped",
        "compat: 2 passed, 0 failed, 0 skipped",
        "nvim: 7 passed, 0 failed, 0 skipped",
        "vscode: 3 passed, 0 failed, 0 skipped",
        "skipped: 2 (pytest: 2 ../shared is absent)",
        "19 passed, 0 failed",  # the last line stays the total alone: CI reads it
    ]


def test_skips_of_every_suite_are_named_with_their_reasons() -> None:
    res = summary(
        **{
            **FAKES,
            "pytest": (
                "printf 'SKIPPED [300] tests/realcorpus/a.py:9: ../shared is absent\\n"
                "SKIPPED [1] tests/protocol/test_typescript.py:75: no TypeScript compiler\\n"
                "SKIPPED [90] tests/realcorpus/b.py: ../shared is absent\\n"
                "10 passed, 391 skipped in 2.0s\\n'"
            ),
            "compat": "echo '1 failed, 2 passed, 1 skipped in 3s'; echo 'SKIPPED [1] tests/compat/x.py:4: no omp'; exit 1",
            "nvim": "printf '\\n7 passed, 0 failed (2 pending)\\n'",
            "vscode": "echo 'vscode: 3 passed, 0 failed, 4 skipped'",
        }
    )
    assert res.returncode == 1
    assert tail(res, 8) == [
        "lint: 1 passed, 0 failed, 0 skipped",
        "typecheck: 1 passed, 0 failed, 0 skipped",
        "pytest: 10 passed, 0 failed, 391 skipped",
        "compat: 2 passed, 1 failed, 1 skipped",
        "nvim: 7 passed, 0 failed, 2 skipped",
        "vscode: 3 passed, 0 failed, 4 skipped",
        "skipped: 398 (pytest: 390 ../shared is absent; 1 no TypeScript compiler | compat: 1 no omp"
        " | nvim: 2 pending | vscode: 4 skipped)",
        "24 passed, 1 failed",
    ]


def test_vscode_skips_are_named_by_node_tests_reasons() -> None:
    """node --test marks a skipped test "﹣ name (time) # reason" (VS Code's unit and
    integration levels); skips it does not name (mocha's, in the e2e level) are counted apart."""
    res = summary(
        **{
            **FAKES,
            "vscode": (
                "printf '  ﹣ serves a session on Python 3.14 (0.2ms) # no Python 3.14 on this machine\n"
                "﹣ another (1ms) # no Python 3.14 on this machine\n"
                "﹣ runs on 3.10 (1ms) # no Python 3.10\n"
                "vscode: 3 passed, 0 failed, 4 skipped\n'"
            ),
        }
    )
    assert res.returncode == 0, res.stdout + res.stderr
    assert tail(res, 3)[:2] == [
        "vscode: 3 passed, 0 failed, 4 skipped",
        "skipped: 6 (pytest: 2 ../shared is absent | vscode: 2 no Python 3.14 on this machine;"
        " 1 no Python 3.10; 1 skipped (no reason given))",
    ]


def test_every_suite_runs_when_one_fails_and_the_exit_code_says_so() -> None:
    res = summary(
        **{
            **FAKES,
            "lint": "exit 1",
            "pytest": "echo 'FAILED tests/x.py::t - 9 passed in 1s'; echo '2 failed, 5 passed, 1 error in 1.5s'; exit 1",
            "nvim": "echo 'nvim crashed'; exit 3",  # no counts: one failure
        }
    )
    assert res.returncode == 1
    assert tail(res, 8) == [
        "lint: 0 passed, 1 failed, 0 skipped",
        "typecheck: 1 passed, 0 failed, 0 skipped",
        "pytest: 5 passed, 3 failed, 0 skipped",
        "compat: 2 passed, 0 failed, 0 skipped",
        "nvim: 0 passed, 1 failed, 0 skipped",
        "vscode: 3 passed, 0 failed, 0 skipped",
        "skipped: none",
        "11 passed, 5 failed",
    ]
    assert "vscode: 3 passed, 0 failed" in res.stdout.split("=== summary")[0]  # it ran


def test_the_real_pytest_counts(tmp_path: Path) -> None:
    (tmp_path / "test_some.py").write_text(
        "import pytest\n\n"
        "def test_ok():\n    pass\n\n"
        "def test_ok_too():\n    pass\n\n"
        "def test_bad():\n    assert False\n\n"
        "@pytest.mark.skip\ndef test_skipped():\n    pass\n"
    )
    pytest_bin = ROOT / ".venv" / "bin" / "pytest"
    if not pytest_bin.exists():
        pytest.skip("no .venv/bin/pytest")
    env_args = f"-q -p no:cacheprovider --rootdir {tmp_path} {tmp_path}"
    res = subprocess.run(
        ["bash", str(SCRIPT), "pytest"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTEST_ARGS": env_args},
        timeout=300,
        cwd=ROOT,
    )
    assert res.returncode == 1
    assert tail(res, 3) == [
        "pytest: 2 passed, 1 failed, 1 skipped",
        "skipped: 1 (pytest: 1 unconditional skip)",
        "2 passed, 1 failed",
    ]


@pytest.mark.skipif(shutil.which("make") is None, reason="no make")
def test_make_run_installs_the_runtime_only_and_make_test_runs_the_summary() -> None:
    # Run as a top-level make (this test may itself run under `make test`, whose MAKELEVEL
    # and MAKEFLAGS would add "Entering directory" lines).
    env = {k: v for k, v in os.environ.items() if k not in ("MAKELEVEL", "MAKEFLAGS", "MFLAGS")}
    make = ["make", "--no-print-directory", "-n", "-B"]
    run = subprocess.run([*make, "run"], capture_output=True, text=True, cwd=ROOT, check=True, env=env)
    installs = [line for line in run.stdout.splitlines() if "pip install" in line]
    assert installs == [".venv/bin/pip install -q -e ."], run.stdout
    assert run.stdout.splitlines()[-1] == ".venv/bin/sessiontree tree"
    test = subprocess.run([*make, "test"], capture_output=True, text=True, cwd=ROOT, check=True, env=env)
    assert ".venv/bin/pip install -q -e '.[dev]'" in test.stdout
    assert test.stdout.splitlines()[-1] == "VENV=.venv bash scripts/test-summary.sh"
    assert "make test" in (ROOT / ".ci" / "run").read_text()
