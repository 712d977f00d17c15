"""One exit-code scheme for every verb but `serve`, run as real processes on bad inputs.

0 fine, 1 problems found (only doctor), 2 unusable input or usage; errors are one line on
stderr, never a traceback, never Python's `None`.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from shared_data import real_corpus_file

VERBS = ("show", "tree", "context", "doctor")
HEADERLESS = (
    b'{"type":"message","id":"a","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z",'
    b'"message":{"role":"user","content":"hi"}}\n'
)


def run(tmp_path: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    env.pop("SESSIONTREE_DEBUG", None)
    env.update(
        {
            "HOME": str(tmp_path / "home"),
            "XDG_CACHE_HOME": str(tmp_path / "xdg-cache"),
            "XDG_STATE_HOME": str(tmp_path / "xdg-state"),
            "XDG_DATA_HOME": str(tmp_path / "xdg-data"),
            "XDG_CONFIG_HOME": str(tmp_path / "xdg-config"),
            "PI_CODING_AGENT_DIR": str(tmp_path / "agent"),
        }
    )
    return subprocess.run(
        [sys.executable, "-m", "sessiontree", *argv], capture_output=True, text=True, env=env, timeout=60
    )


def assert_one_error_line(res: subprocess.CompletedProcess[str], verb: str, *needles: str) -> None:
    assert res.stdout == "", res.stdout
    lines = res.stderr.splitlines()
    assert len(lines) == 1, res.stderr
    assert lines[0].startswith(f"sessiontree {verb}: ")
    assert "Traceback" not in res.stderr and "None" not in res.stderr
    for n in needles:
        assert n in lines[0]


def make_input(tmp_path: Path, kind: str) -> Path:
    p = tmp_path / f"{kind}.jsonl"
    if kind == "empty":
        p.write_bytes(b"")
    elif kind == "binary":
        p.write_bytes(random.Random(3).randbytes(20000))
    elif kind == "text":
        p.write_bytes(b"hello\nworld\n")
    elif kind == "headerless":
        p.write_bytes(HEADERLESS)
    elif kind == "directory":
        p.mkdir()
    return p  # "missing": never created


@pytest.mark.parametrize("verb", VERBS)
@pytest.mark.parametrize(
    ("kind", "needle"),
    [
        ("empty", "empty file: no session header"),
        ("binary", "not a session file: binary data"),
        ("text", "not a session file: no line is a JSON object"),
        ("missing", "o such file"),
        ("directory", "directory"),
    ],
)
def test_unusable_files_exit_2_with_one_line(tmp_path: Path, verb: str, kind: str, needle: str) -> None:
    path = make_input(tmp_path, kind)
    before = path.read_bytes() if path.is_file() else None
    res = run(tmp_path, verb, str(path))
    assert res.returncode == 2, (res.stdout, res.stderr)
    assert_one_error_line(res, verb, str(path), needle)
    assert (path.read_bytes() if path.is_file() else None) == before


@pytest.mark.parametrize("verb", VERBS)
def test_headerless_file(tmp_path: Path, verb: str) -> None:
    path = make_input(tmp_path, "headerless")
    res = run(tmp_path, verb, str(path))
    if verb == "doctor":
        # pi entries without their header: a damaged session, which is what doctor finds
        assert res.returncode == 1 and "missing-header" in res.stdout and res.stderr == ""
    else:
        assert res.returncode == 2
        assert_one_error_line(res, verb, "no valid session header")
    assert path.read_bytes() == HEADERLESS


@pytest.mark.parametrize("verb", VERBS)
@pytest.mark.parametrize(
    ("name", "agent"),
    [
        ("claudecode-apanloco-random.jsonl", "Claude Code"),
        ("codex-feipi-rollout-019ede26-child.jsonl", "Codex"),
    ],
)
def test_other_agents_files_are_read_read_only(tmp_path: Path, verb: str, name: str, agent: str) -> None:
    # Claude Code and Codex transcripts are read through their readers (docs/other-agents.md).
    src = real_corpus_file(name)
    before = src.read_bytes()
    res = run(tmp_path, verb, str(src))
    assert res.returncode == 0, (res.stdout, res.stderr)
    assert res.stderr == "" and "not a pi session" not in res.stdout
    if verb == "show":
        assert f"{agent} transcript (read-only)" in res.stdout
    assert src.read_bytes() == before


@pytest.mark.parametrize("verb", (*VERBS, "ls"))
def test_bad_flags_are_usage_errors(tmp_path: Path, verb: str) -> None:
    res = run(tmp_path, verb, "--no-such-flag", str(tmp_path / "x.jsonl"))
    assert res.returncode == 2 and res.stdout == ""
    assert "unrecognized arguments: --no-such-flag" in res.stderr and "Traceback" not in res.stderr


def test_bad_argument_values_are_usage_errors(tmp_path: Path) -> None:
    res = run(tmp_path, "tree", "--demo", "--filter", "bogus")
    assert res.returncode == 2 and res.stdout == "" and "invalid choice: 'bogus'" in res.stderr


def test_doctor_usage_errors_go_to_stderr(tmp_path: Path) -> None:
    res = run(tmp_path, "doctor")
    assert res.returncode == 2
    assert_one_error_line(res, "doctor", "give FILE... or --all")
    res = run(tmp_path, "doctor", "x.jsonl", "--migrate")
    assert res.returncode == 2
    assert_one_error_line(res, "doctor", "--migrate needs --repair")


def test_no_command_prints_help_to_stderr_and_help_documents_exit_codes(tmp_path: Path) -> None:
    res = run(tmp_path)
    assert res.returncode == 2 and res.stdout == "" and "usage: sessiontree" in res.stderr
    res = run(tmp_path, "--help")
    assert res.returncode == 0
    assert "exit codes (every command but serve):" in res.stdout
    for code in ("  0  ", "  1  ", "  2  "):
        assert code in res.stdout
    for verb in VERBS:
        assert "exit codes: 0 " in run(tmp_path, verb, "--help").stdout.replace("\n", " ")
