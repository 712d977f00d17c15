"""The `tree` and `context` commands on the bundled demo and on a real v1 session."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from golden import GOLDEN as GOLDEN_ROOT
from sessiontree.cli import main
from shared_data import real_v1_session

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "server" / "sessiontree" / "data" / "demo-session.jsonl"
GOLDEN = GOLDEN_ROOT / "view"


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def golden_rows(name: str) -> list[str]:
    return (GOLDEN / f"{name}.txt").read_text(encoding="utf-8").splitlines()[:-1]


def as_core_lines(lines: list[str]) -> list[str]:
    """`tree`'s rows as the core's `Row.line()`: the CLI marks the leaf row with `●` where
    the core has the active-path `•` (at most one row, right after the art)."""
    art = "│├└─ ‹›0123456789"
    out = []
    marked = 0
    for line in lines:
        rest = line.lstrip(art)
        if rest.startswith("● "):
            marked += 1
            line = line[: len(line) - len(rest)] + "• " + rest[2:]
        out.append(line)
    assert marked <= 1, lines
    return out


def test_tree_demo_draws_the_whole_tree(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", "/home/tester")
    rc, out, err = run_cli(capsys, "tree", "--demo")
    assert rc == 0 and err == ""
    lines = out.splitlines()
    assert as_core_lines(lines[:-1]) == golden_rows("demo-default")
    assert sum(line.lstrip("│├└─ ").startswith("● ") for line in lines) == 1
    assert lines[-1].startswith("(35 of 56 entries, leaf ")
    assert any(line.startswith("├─ • [branch summary]") for line in lines)
    rc, out, _ = run_cli(capsys, "tree", "--demo", "--filter", "no-tools")
    assert as_core_lines(out.splitlines()[:-1]) == golden_rows("demo-no-tools")
    assert out.splitlines()[-1].endswith(") [no-tools]")


def test_tree_json_search_and_leaf(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run_cli(capsys, "tree", str(DEMO), "--json", "--search", "fixture", "--filter", "all")
    assert rc == 0
    data = json.loads(out)
    assert data["filter"] == "all" and data["total"] == len(data["rows"]) > 0
    assert all(
        "fixture" in (r["text"] + r.get("label", "")).lower() or r["role"] == "toolResult"
        for r in data["rows"]
    )
    assert set(data["rows"][0]) >= {
        "id",
        "parentId",
        "type",
        "depth",
        "prefix",
        "onActivePath",
        "isLeaf",
        "text",
        "timestamp",
    }
    # from another leaf: the abandoned branch comes first under its branch point
    target = next(r["id"] for r in data["rows"] if "keep coming back" in r["text"])
    rc, out, _ = run_cli(capsys, "tree", str(DEMO), "--leaf", target)
    assert rc == 0
    assert "├─ • user: Migrate the fixture file instead." in out.splitlines()
    rc, _, err = run_cli(capsys, "tree", str(DEMO), "--leaf", "nope")
    assert rc == 2 and err == "sessiontree tree: Entry nope not found\n"


def test_tree_without_file_uses_the_newest_session_or_the_demo(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from sessiontree.core import paths

    agent = tmp_path / "agent"
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.chdir(project)
    rc, out, err = run_cli(capsys, "tree", "--agent-dir", str(agent))
    assert rc == 0 and "bundled demo session" in err
    assert "[branch summary]" in out
    assert not (agent / "sessions").exists()  # looking created nothing

    sdir = Path(paths.sessions_root(str(agent))) / paths.encode_cwd(str(project))
    sdir.mkdir(parents=True)
    older = sdir / "2026-01-01T00-00-00-000Z_0000000000000001.jsonl"
    newer = sdir / "2026-01-02T00-00-00-000Z_0000000000000002.jsonl"
    for p, text in ((older, "old session"), (newer, "new session")):
        header = {
            "type": "session",
            "version": 3,
            "id": p.stem.split("_")[1],
            "timestamp": "2026-01-01T00:00:00.000Z",
            "cwd": str(project),
        }
        msg = {
            "type": "message",
            "id": "aaaa0001",
            "parentId": None,
            "timestamp": "2026-01-01T00:00:01.000Z",
            "message": {"role": "user", "content": text, "timestamp": 1},
        }
        p.write_text(json.dumps(header) + "\n" + json.dumps(msg) + "\n")
    os.utime(older, (1_000_000_000, 1_000_000_000))
    rc, out, err = run_cli(capsys, "tree", "--agent-dir", str(agent))
    assert rc == 0 and err == ""
    assert out.splitlines()[0] == "● user: new session"  # the leaf


def test_tree_bad_inputs(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    rc, _, err = run_cli(capsys, "tree", str(tmp_path / "missing.jsonl"))
    assert rc == 2 and "no such file" in err
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json at all\n")
    rc, _, err = run_cli(capsys, "tree", str(bad))
    assert rc == 2 and "bad.jsonl" in err
    assert bad.read_text() == "not json at all\n"


def test_tree_and_context_on_a_real_v1_session(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    copy = tmp_path / "real-v1.jsonl"
    shutil.copyfile(real_v1_session(), copy)
    before = copy.read_bytes()
    rc, out, _ = run_cli(capsys, "tree", str(copy))
    assert rc == 0
    lines = out.splitlines()
    assert (
        as_core_lines(lines[:-1])
        == (GOLDEN / "real-v1-default.txt").read_text(encoding="utf-8").splitlines()[:-1]
    )
    assert lines[-1].startswith("(720 of 1018 entries, leaf ")
    rc, out, _ = run_cli(capsys, "context", str(copy), "--json")
    assert rc == 0
    ctx = json.loads(out)
    assert ctx["messages"][0]["role"] == "user" and ctx["thinkingLevel"] == "off"
    assert copy.read_bytes() == before  # both commands only read


def test_context_readable_json_and_llm(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run_cli(capsys, "context", str(DEMO))
    assert rc == 0
    assert "models:    default=openai/gpt-5" in out and "thinking:  medium" in out
    assert "── compactionSummary (48500 tokens before) ──" in out
    rc, out, _ = run_cli(capsys, "context", str(DEMO), "--json", "--llm")
    data = json.loads(out)
    assert data["messages"][0]["role"] == "compactionSummary"
    first = data["llmMessages"][0]
    assert first["role"] == "user" and first["content"][0]["text"].startswith(
        "Another language model started"
    )
    # merged with the following user prompt (consecutive user text messages)
    assert first["content"][1]["text"] == "Make Store.load tolerant of the old layout instead."
    # from a node on the abandoned branch: no compaction on that path
    rc, out, _ = run_cli(capsys, "tree", str(DEMO), "--json", "--filter", "all")
    target = next(r["id"] for r in json.loads(out)["rows"] if "keep coming back" in r["text"])
    rc, out, _ = run_cli(capsys, "context", str(DEMO), "--leaf", target, "--json")
    roles = [m["role"] for m in json.loads(out)["messages"]]
    assert "compactionSummary" not in roles and roles[-1] == "assistant"
    rc, _, err = run_cli(capsys, "context", str(DEMO), "--leaf", "nope")
    assert rc == 2 and err == "sessiontree context: Entry nope not found\n"


def test_demo_is_package_data_and_the_console_script_runs() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "sessiontree", "tree", "--demo", "--filter", "user-only"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0].startswith("• user: The todo CLI")
    assert proc.stdout.splitlines()[-1].endswith(" [user]")


def run_proc(tmp_path: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """The CLI as a real process, with HOME, the XDG dirs and the agent dir in tmp."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
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


def write_jsonl(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


HEADER = {"type": "session", "version": 3, "id": "s1", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/w"}


def test_model_change_of_older_pi_names_its_model(tmp_path: Path) -> None:
    # DIVERGENCE 8: older pi wrote provider + modelId and no model; the row read [model: null].
    f = write_jsonl(
        tmp_path / "s.jsonl",
        [
            HEADER,
            {
                "type": "model_change",
                "id": "m1",
                "parentId": None,
                "timestamp": "2026-01-01T00:00:01.000Z",
                "provider": "anthropic",
                "modelId": "claude-sonnet-4-5",
            },
            {
                "type": "model_change",
                "id": "m2",
                "parentId": "m1",
                "timestamp": "2026-01-01T00:00:02.000Z",
                "model": "openai/gpt-5",
            },
        ],
    )
    res = run_proc(tmp_path, "tree", str(f), "--filter", "all")
    assert res.returncode == 0, res.stderr
    rows = res.stdout.splitlines()[:-1]
    assert rows == ["• [model: anthropic/claude-sonnet-4-5]", "● [model: openai/gpt-5]"]
    data = json.loads(run_proc(tmp_path, "tree", str(f), "--filter", "all", "--json").stdout)
    assert [r["text"] for r in data["rows"]] == [
        "[model: anthropic/claude-sonnet-4-5]",
        "[model: openai/gpt-5]",
    ]


def test_context_leaves_absent_fields_out(tmp_path: Path) -> None:
    ts = "2026-01-01T00:00:01.000Z"
    f = write_jsonl(
        tmp_path / "s.jsonl",
        [
            HEADER,
            {
                "type": "message",
                "id": "u",
                "parentId": None,
                "timestamp": ts,
                "message": {"role": "user", "content": "hi"},
            },
            {
                "type": "message",
                "id": "a",
                "parentId": "u",
                "timestamp": ts,
                "message": {
                    "role": "assistant",
                    "content": [{"type": "toolCall", "arguments": {"x": None}}, None],
                },
            },
            {
                "type": "message",
                "id": "t",
                "parentId": "a",
                "timestamp": ts,
                "message": {"role": "toolResult", "content": [{"type": "text", "text": "out"}]},
            },
            {
                "type": "message",
                "id": "b",
                "parentId": "t",
                "timestamp": ts,
                "message": {"role": "bashExecution", "command": "ls", "output": None},
            },
            {"type": "message", "id": "n", "parentId": "b", "timestamp": ts, "message": {"content": None}},
        ],
    )
    res = run_proc(tmp_path, "context", str(f))
    assert res.returncode == 0, res.stderr
    assert "None" not in res.stdout
    out = res.stdout.splitlines()
    assert "── assistant ──" in out  # no provider, model or stop reason: nothing in brackets
    assert '→ (no name)({"x": null})' in out
    assert "── toolResult ──" in out and "── bashExecution ──" in out and "── (no role) ──" in out
    # JSON keeps the values as they are (null)
    data = json.loads(run_proc(tmp_path, "context", str(f), "--json").stdout)
    assert data["messages"][1]["content"][0]["arguments"] == {"x": None}

    only_header = write_jsonl(tmp_path / "h.jsonl", [HEADER])
    res = run_proc(tmp_path, "context", str(only_header))
    assert res.returncode == 0, res.stderr
    assert "None" not in res.stdout and res.stdout.startswith("leaf:      none (no entries)\n")
    assert json.loads(run_proc(tmp_path, "context", str(only_header), "--json").stdout)["leafId"] is None


def test_tree_and_context_of_an_empty_file(tmp_path: Path) -> None:
    # The read-only open of a 0-byte file started a session in memory and drew it.
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    for verb in ("tree", "context"):
        res = run_proc(tmp_path, verb, str(empty))
        assert res.returncode == 2 and res.stdout == ""
        assert (
            res.stderr
            == f"sessiontree {verb}: {empty}: empty file: no session header (no session has been written to it yet)\n"
        )
    assert empty.read_bytes() == b""


def test_unknown_leaf_is_unusable_input(tmp_path: Path) -> None:
    for verb in ("tree", "context"):
        res = run_proc(tmp_path, verb, str(DEMO), "--leaf", "nope", "--json")
        assert res.returncode == 2 and res.stdout == ""
        assert res.stderr == f"sessiontree {verb}: Entry nope not found\n"
