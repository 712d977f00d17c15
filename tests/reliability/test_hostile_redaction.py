"""Issue 32, items 3 and 5: redaction covers every string of everything exported, in time
linear in what it reads, within a budget, without holding up the daemon.

- A session whose title (an auto-title is the first prompt), labels, custom types, model
  names, tool call ids, dict keys and values at any depth (under `id` and `signature` too),
  double-encoded JSON, unquoted `.env` lines and a token wrapped over two lines hold secrets
  (`tests/hostile.py`) is exported as Markdown, HTML and `jsonl --redact`, by the command
  line and by the daemon: no secret survives. Before: the title's 14 kinds, the `id` and
  `signature` values, the double-encoded password, the `.env` lines and the wrapped token
  all survived.
- Each built-in pattern's worst case, 120 KB and more of it, costs at most 3 characters of
  work per character of text (`Redactor.work` counts what the anchors scanned and what the
  candidates covered); the structure that makes it so is checked on every built-in: every
  unbounded repetition is possessive. Before: `openai-key` over 108 KB of `sk-` took 26 s.
- A 1 MB adversarial string is exported within a budget of 60 s (it is bounded by
  construction: about a second); a budget that runs out is a clear error and nothing is
  written; in the daemon, a request on another session is answered while a big export runs.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hostile import write_secret_session
from sessiontree.client import Client, RpcError
from sessiontree.core.export.redact import BUILTIN_PATTERNS, Redactor

pytestmark = pytest.mark.timeout(300)

N = 120_000


def _rep(s: str) -> str:
    return (s * (N // len(s) + 1))[:N]


# Each pattern's worst cases: its anchor over and over, runs that almost make a candidate,
# candidates that fail at their last character, wrapped lines.
ADVERSARIAL: dict[str, list[str]] = {
    "pem-private-key": [
        _rep("-----BEGIN "),
        _rep("-----BEGIN RSA PRIVATE KEY-----"),
        _rep("-----BEGIN RSA PRIVATE KEY-----\n-----END "),
    ],
    "anthropic-key": [_rep("sk-ant-"), _rep("sk-ant-api03-a")],
    "openai-key": [_rep("sk-"), _rep("sk-a"), _rep("-sk-A1"), "sk-" + _rep("A1b2-"), _rep("sk-A1\n")],
    "github-token": [_rep("ghp_"), _rep("ghp_a1_")],
    "github-pat": [_rep("github_pat_"), "github_pat_" + _rep("a_")],
    "aws-access-key-id": [_rep("AKIA"), _rep("AKIA1234 ")],
    "aws-secret-access-key": [_rep("aws_secret_access_key="), _rep("aws_secret_access_key ")],
    "slack-token": [_rep("xoxb-"), _rep("xoxb-a ")],
    "google-api-key": [_rep("AIza"), _rep("AIza-")],
    "stripe-key": [_rep("sk_live_"), _rep("sk_test_a ")],
    "jwt": [_rep("eyJ."), _rep("eyJ"), _rep("eyJa.eyJb."), _rep("eyJ\n")],
    "url-password": [_rep("a://"), _rep("a://b:"), "http://" + _rep("a:"), _rep("a.") + "://"],
    "bearer-token": [_rep("bearer "), _rep("Bearer\n"), "bearer " + _rep("a/")],
    "secret-assignment": [
        _rep("password"),
        _rep('password="'),
        'password="' + _rep("a"),
        _rep("password = "),
    ],
    "env-secret": [_rep("TOKEN="), _rep("A_TOKEN"), _rep("_TOKEN ="), _rep('X_TOKEN="')],
}


def test_every_builtin_pattern_has_its_worst_cases() -> None:
    assert set(ADVERSARIAL) == {p.name for p in BUILTIN_PATTERNS}


@pytest.mark.parametrize("name", sorted(ADVERSARIAL))
def test_each_pattern_is_linear_on_its_worst_cases(name: str) -> None:
    pat = next(p for p in BUILTIN_PATTERNS if p.name == name)
    for text in ADVERSARIAL[name]:
        alone = Redactor(patterns=[pat])
        alone.text(text)
        assert alone.work <= 3 * len(text), (name, text[:20], alone.work / len(text))
        every = Redactor()
        every.string(text)
        assert every.work <= 3 * len(BUILTIN_PATTERNS) * len(text)


def _repeats(tree: Any) -> list[tuple[Any, Any]]:
    """Every repetition in a parsed regex (`re._parser`), with the opcode that makes it."""
    from re import _constants as c

    found: list[tuple[Any, Any]] = []
    todo = [tree]
    while todo:
        item = todo.pop()
        if isinstance(item, (list, tuple)) or type(item).__name__ == "SubPattern":
            for x in item:
                if (
                    isinstance(x, tuple)
                    and len(x) == 2
                    and x[0]
                    in (
                        c.MAX_REPEAT,
                        c.MIN_REPEAT,
                        c.POSSESSIVE_REPEAT,
                    )
                ):
                    found.append((x[0], x[1][1]))
                todo.append(x)
    return found


def test_every_unbounded_repetition_of_a_builtin_is_possessive() -> None:
    """The structure behind the figures: a run is taken whole or not at all, so no candidate
    is ever tried again from inside it (the anchors are literals; `find` moves on)."""
    from re import _constants as c
    from re import _parser

    for pat in BUILTIN_PATTERNS:
        for rx in (pat.regex, pat.anchor):
            assert rx is not None, pat.name
            for op, hi in _repeats(_parser.parse(rx.pattern, rx.flags)):
                if hi is c.MAXREPEAT or hi > 64:
                    assert op is c.POSSESSIVE_REPEAT, (pat.name, rx.pattern)


def _env(tmp: Path, **extra: str) -> dict[str, str]:
    return dict(
        os.environ,
        HOME=str(tmp),
        XDG_CONFIG_HOME=str(tmp / "cfg"),
        PI_CODING_AGENT_DIR=str(tmp / "agent"),
        **extra,
    )


def _cli(tmp: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sessiontree", *args],
        capture_output=True,
        text=True,
        env=_env(tmp, **env),
        timeout=240,
    )


def _survivors(text: str, leaks: list[str]) -> list[str]:
    return [s for s in leaks if s in text]


@pytest.mark.parametrize("fmt", ["md", "html", "jsonl"])
def test_cli_export_leaves_no_secret_anywhere(tmp_path: Path, fmt: str) -> None:
    path = tmp_path / "s.jsonl"
    leaks = write_secret_session(path)
    before = path.read_bytes()
    r = _cli(tmp_path, "export", str(path), "-f", fmt, *(["--redact"] if fmt == "jsonl" else []))
    assert r.returncode == 0, r.stderr
    assert _survivors(r.stdout, leaks) == []
    assert "[REDACTED:" in r.stdout
    assert path.read_bytes() == before
    if fmt == "jsonl":  # still a session file the agent opens, every entry in place
        out = tmp_path / "back.jsonl"
        out.write_text(r.stdout, encoding="utf-8")
        from sessiontree.core.session import SessionManager

        back = SessionManager.open(str(out), read_only=True)
        assert len(back.index) == 7


def _daemon(tmp: Path, **env: str) -> Client:
    opts = {"agentDir": str(tmp / "agent"), "allowedRoots": [str(tmp)], "watch": False}
    return Client.spawn(init_options=opts, env=_env(tmp, **env))


def test_daemon_export_leaves_no_secret_anywhere(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    leaks = write_secret_session(path)
    with _daemon(tmp_path) as c:
        s = c.request("session/open", {"path": str(path)})["session"]
        for fmt, redact in (("md", None), ("html", None), ("jsonl", True)):
            params: dict[str, Any] = {"session": s, "format": fmt}
            if redact is not None:
                params["redact"] = redact
            r = c.request("session/export", params, timeout=120)
            assert _survivors(r["content"], leaks) == [], fmt
            assert r["redacted"] and r["redactions"]
        dry = c.request("session/export", {"session": s, "format": "md", "dryRun": True})
        assert {f["pattern"] for f in dry["findings"]} >= {
            "openai-key",
            "env-secret",
            "secret-assignment",
            "github-token",
        }


def _adversarial_session(path: Path, size: int, bulk: int = 0) -> None:
    """A session whose first message is `size` characters of `sk-` (the quadratic case of
    the pattern before), then `bulk` ordinary entries of about 1 KB each."""
    import json

    lines = [
        json.dumps(
            {"type": "session", "version": 3, "id": "adv", "timestamp": "2026-01-01T00:00:00Z", "cwd": "/"}
        ),
        json.dumps(
            {
                "type": "message",
                "id": "e0",
                "parentId": None,
                "timestamp": "2026-01-01T00:00:00Z",
                "message": {"role": "user", "content": ("sk-" * (size // 3 + 1))[:size]},
            }
        ),
    ]
    prev = "e0"
    for i in range(1, bulk + 1):
        role = "user" if i % 2 else "assistant"
        text = f"step {i}: " + ("the token is sk-not-a-key and password: see vault " * 20)
        msg: dict[str, Any] = {"role": role, "content": [{"type": "text", "text": text}]}
        if role == "assistant":
            msg.update(provider="p", model="m", stopReason="stop")
        lines.append(
            json.dumps(
                {
                    "type": "message",
                    "id": f"e{i}",
                    "parentId": prev,
                    "timestamp": "2026-01-01T00:00:01Z",
                    "message": msg,
                }
            )
        )
        prev = f"e{i}"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_a_megabyte_of_the_worst_case_is_exported_within_the_budget(tmp_path: Path) -> None:
    # Bounded by construction (the test above): about a second here; the code before needed
    # hours (26 s for 108 KB, growing with the square of the size).
    path = tmp_path / "adv.jsonl"
    _adversarial_session(path, 1_000_000)
    r = _cli(
        tmp_path,
        "export",
        str(path),
        "-f",
        "md",
        "-o",
        str(tmp_path / "out.md"),
        SESSIONTREE_EXPORT_BUDGET="60",
    )
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "out.md").stat().st_size > 1_000_000


def test_a_budget_that_runs_out_is_a_clear_error_and_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "adv.jsonl"
    _adversarial_session(path, 200_000, bulk=50)
    out = tmp_path / "out.md"
    r = _cli(tmp_path, "export", str(path), "-o", str(out), SESSIONTREE_EXPORT_BUDGET="0.000001")
    assert r.returncode == 2
    assert "longer than its budget" in r.stderr and "nothing was exported" in r.stderr
    assert not out.exists()
    with _daemon(tmp_path, SESSIONTREE_EXPORT_BUDGET="0.000001") as c:
        s = c.request("session/open", {"path": str(path)})["session"]
        with pytest.raises(RpcError) as err:
            c.request("session/export", {"session": s, "format": "html"}, timeout=60)
        assert err.value.code == -32009 and "budget" in err.value.message
        assert c.request("session/labels", {"session": s}) is not None  # still serving


def test_a_request_on_another_session_answers_while_a_big_export_runs(tmp_path: Path) -> None:
    big, small = tmp_path / "big.jsonl", tmp_path / "small.jsonl"
    # The adversarial string first (the code before held the interpreter for hours on it),
    # then enough ordinary entries that the export takes seconds.
    _adversarial_session(big, 1_000_000, bulk=20_000)
    _adversarial_session(small, 30, bulk=4)
    with _daemon(tmp_path) as c:
        a = c.request("session/open", {"path": str(big)}, timeout=120)["session"]
        b = c.request("session/open", {"path": str(small)})["session"]
        export = c.request_future("session/export", {"session": a, "format": "md"})
        answered = 0
        for _ in range(5):
            c.request("session/labels", {"session": b}, timeout=240)
            c.request("session/view", {"session": b, "offset": 0, "limit": 10}, timeout=240)
            answered += 1
        assert not export.done(), "the export ended before the other session's requests"
        assert answered == 5
        result = export.result(timeout=240)
        assert "[REDACTED" not in result["content"][:100]  # `sk-` runs are no key
        assert re.search(r"sk-sk-sk-", result["content"])
