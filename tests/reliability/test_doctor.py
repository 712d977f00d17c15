"""`sessiontree doctor`: every problem kind is found, repair is safe, the CLI exit codes."""

from __future__ import annotations

import hashlib
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from sessiontree.core.doctor import DoctorError, check_file, repair_file
from sessiontree.core.format.jsonl import parse_jsonl_lenient
from shared_data import real_corpus_file

from .helpers import chain, header, line, message, real_v1_fixture, write_session

CLI = [sys.executable, "-m", "sessiontree"]


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, "doctor", *args], capture_output=True, text=True, timeout=60, env=env)


def tmp_env(tmp_path: Path) -> dict[str, str]:
    """The environment with HOME, the XDG dirs and the agent dir inside the test's directory."""
    return {
        **os.environ,
        "HOME": str(tmp_path / "home"),
        "XDG_CACHE_HOME": str(tmp_path / "xdg-cache"),
        "XDG_STATE_HOME": str(tmp_path / "xdg-state"),
        "XDG_DATA_HOME": str(tmp_path / "xdg-data"),
        "XDG_CONFIG_HOME": str(tmp_path / "xdg-config"),
        "PI_CODING_AGENT_DIR": str(tmp_path / "agent"),
    }


def test_healthy_file_has_no_problems(tmp_path: Path) -> None:
    f = tmp_path / "s.jsonl"
    write_session(f, chain(40))
    report = check_file(f, blobs_dir=tmp_path / "blobs")
    assert report.problems == []
    assert report.ok
    assert report.entry_count == 40
    assert report.version == 3


def test_dropped_lines_and_torn_tail_are_reported_with_lines(tmp_path: Path) -> None:
    f = tmp_path / "s.jsonl"
    entries = chain(6)
    data = b"".join(line(e) for e in entries[:3]) + b"garbage here\n" + b"".join(line(e) for e in entries[3:])
    data += b'{"type":"message","id":"torn'
    f.write_bytes(data)
    report = check_file(f, blobs_dir=tmp_path)
    kinds = report.kinds()
    assert "dropped-line" in kinds
    assert "torn-tail" in kinds
    dropped = next(p for p in report.problems if p.kind == "dropped-line")
    assert dropped.line == 4
    torn = next(p for p in report.problems if p.kind == "torn-tail")
    assert torn.line == 9
    assert report.torn_tail


def test_missing_and_invalid_header(tmp_path: Path) -> None:
    f = tmp_path / "a.jsonl"
    write_session(f, chain(3)[1:])
    assert "missing-header" in check_file(f).kinds()
    g = tmp_path / "b.jsonl"
    h = header()
    del h["id"]
    write_session(g, [h, *chain(2)[1:]])
    assert "invalid-header" in check_file(g).kinds()


def test_graph_problems(tmp_path: Path) -> None:
    f = tmp_path / "s.jsonl"
    entries = [
        header(),
        message("a", None, "user", "one"),
        message("b", "a", "assistant", "two", 1),
        message("b", "a", "assistant", "dup", 2),
        message("o", "nowhere", "user", "orphan", 3),
        message("s", "s", "user", "self", 4),
        message("c1", "c2", "user", "cyc1", 5),
        message("c2", "c1", "user", "cyc2", 6),
        {
            "type": "label",
            "id": "l1",
            "parentId": "b",
            "timestamp": "2026-01-01T00:00:00.000Z",
            "targetId": "zz",
            "label": "x",
        },
        {
            "type": "label",
            "id": "l2",
            "parentId": "l1",
            "timestamp": "2026-01-01T00:00:00.000Z",
            "targetId": "a",
            "label": "ok",
        },
        {
            "type": "compaction",
            "id": "k1",
            "parentId": "b",
            "timestamp": "2026-01-01T00:00:00.000Z",
            "summary": "s",
            "firstKeptEntryId": "o",
            "tokensBefore": 1,
        },
        {
            "type": "compaction",
            "id": "k2",
            "parentId": "b",
            "timestamp": "2026-01-01T00:00:00.000Z",
            "summary": "s",
            "firstKeptEntryId": "a",
            "tokensBefore": 1,
        },
    ]
    write_session(f, entries)
    report = check_file(f, blobs_dir=tmp_path)
    by_kind: dict[str, list[str | None]] = {}
    for p in report.problems:
        by_kind.setdefault(p.kind, []).append(p.entry_id)
    assert by_kind["duplicate-id"] == ["b"]
    assert by_kind["orphan"] == ["o"]
    assert sorted(by_kind["cycle"]) == ["c1", "s"] or sorted(by_kind["cycle"]) == ["c2", "s"]
    assert by_kind["dangling-label"] == ["l1"]
    assert by_kind["dangling-compaction-anchor"] == ["k1"]
    assert "dropped-line" not in by_kind


def test_blob_problems(tmp_path: Path) -> None:
    blobs = tmp_path / "blobs"
    blobs.mkdir()
    good = b"\x89PNG good bytes"
    good_h = hashlib.sha256(good).hexdigest()
    (blobs / good_h).write_bytes(good)
    bad_h = hashlib.sha256(b"original").hexdigest()
    (blobs / bad_h).write_bytes(b"tampered")
    missing_h = hashlib.sha256(b"gone").hexdigest()

    def img(eid: str, parent: str | None, ref: str) -> dict:
        e = message(eid, parent, "user", "img")
        e["message"]["content"].append({"type": "image", "mimeType": "image/png", "data": ref})
        return e

    f = tmp_path / "s.jsonl"
    write_session(
        f,
        [
            header(),
            img("a", None, f"blob:sha256:{good_h}"),
            img("b", "a", f"blob:sha256:{bad_h}"),
            img("c", "b", f"blob:sha256:{missing_h}"),
            img("d", "c", "blob:sha256:../../etc/passwd"),
        ],
    )
    report = check_file(f, blobs_dir=blobs)
    got = {(p.kind, p.entry_id) for p in report.problems}
    assert got == {("corrupt-blob", "b"), ("missing-blob", "c"), ("invalid-blob-ref", "d")}


def test_old_version_needs_migration(tmp_path: Path) -> None:
    src = real_v1_fixture()
    f = tmp_path / "v1.jsonl"
    f.write_bytes(src.read_bytes())
    report = check_file(f, blobs_dir=tmp_path)
    assert report.version == 1
    assert "needs-migration" in report.kinds()


def test_repair_removes_only_what_the_loader_drops(tmp_path: Path) -> None:
    f = tmp_path / "s.jsonl"
    entries = chain(12)
    good = [line(e) for e in entries]
    data = b"".join(good[:4]) + b"\x00\xff not json\n" + good[4] + b"{oops}\n" + b"".join(good[5:])
    data += b'{"type":"message","id":"to'
    f.write_bytes(data)
    before_values = parse_jsonl_lenient(data).values

    result = repair_file(f, blobs_dir=tmp_path)
    assert result.changes, "something must have changed"
    assert any("torn" in c for c in result.changes)
    q = Path(result.quarantined_copy or "")
    assert q.parent == tmp_path and q.exists() and not q.name.endswith(".jsonl")
    assert q.read_bytes() == data
    repaired = f.read_bytes()
    # The repaired file is exactly the good lines, byte for byte, in order.
    assert repaired == b"".join(good)
    again = parse_jsonl_lenient(repaired)
    assert again.values == before_values
    assert not again.dropped and not again.torn_tail
    assert result.remaining == []
    assert check_file(f, blobs_dir=tmp_path).ok
    # no temp files left behind
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.endswith(".lock")) == sorted(
        [f.name, q.name]
    )


def test_repair_of_healthy_file_writes_nothing(tmp_path: Path) -> None:
    f = tmp_path / "s.jsonl"
    data = write_session(f, chain(10))
    os.utime(f, ns=(1_000_000_000, 1_000_000_000))
    result = repair_file(f, blobs_dir=tmp_path)
    assert result.changes == [] and result.quarantined_copy is None
    assert f.read_bytes() == data
    assert f.stat().st_mtime_ns == 1_000_000_000
    assert [p.name for p in tmp_path.iterdir() if not p.name.endswith(".lock")] == ["s.jsonl"]


def test_repair_does_not_touch_graph_problems(tmp_path: Path) -> None:
    f = tmp_path / "s.jsonl"
    data = write_session(
        f,
        [
            header(),
            message("a", None, "user", "x"),
            message("o", "missing", "user", "y"),
            message("a", None, "user", "z"),
        ],
    )
    result = repair_file(f, blobs_dir=tmp_path)
    assert result.changes == []
    assert f.read_bytes() == data
    assert {p.kind for p in result.remaining} == {"orphan", "duplicate-id"}


def test_repair_refuses_headerless_file(tmp_path: Path) -> None:
    f = tmp_path / "s.jsonl"
    data = b"junk\n" + line(message("a", None, "user", "x"))
    f.write_bytes(data)
    with pytest.raises(DoctorError, match="header"):
        repair_file(f)
    assert f.read_bytes() == data
    assert [p.name for p in tmp_path.iterdir()] == ["s.jsonl"]


def test_repair_migrate(tmp_path: Path) -> None:
    f = tmp_path / "s.jsonl"
    h = header(version=None)
    e1 = {
        "type": "message",
        "timestamp": "2025-11-20T23:33:01.550Z",
        "message": {"role": "user", "content": "hi"},
    }
    data = line(h) + line(e1) + b"junk\n"
    f.write_bytes(data)
    result = repair_file(f, migrate=True, blobs_dir=tmp_path)
    assert any("migrated from version 1" in c for c in result.changes)
    values = parse_jsonl_lenient(f.read_bytes()).values
    assert values[0]["version"] == 3
    assert isinstance(values[1]["id"], str) and values[1]["parentId"] is None
    assert Path(result.quarantined_copy or "").read_bytes() == data


def test_check_refuses_non_regular_files_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(DoctorError, match="FIFO"):
        check_file(fifo)
    with pytest.raises(DoctorError, match="directory"):
        check_file(tmp_path)
    with pytest.raises(DoctorError, match="device"):
        check_file("/dev/null")
    with pytest.raises(DoctorError):
        check_file(tmp_path / "missing.jsonl")


def test_cli_exit_codes_and_json(tmp_path: Path) -> None:
    healthy = tmp_path / "ok.jsonl"
    write_session(healthy, chain(5))
    broken = tmp_path / "bad.jsonl"
    data = b"".join(line(e) for e in chain(5)) + b"not json\n"
    broken.write_bytes(data)

    r = run_cli(str(healthy), "--blobs-dir", str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "ok" in r.stdout

    r = run_cli(str(healthy), str(broken), "--json", "--blobs-dir", str(tmp_path))
    assert r.returncode == 1, r.stderr
    doc = json.loads(r.stdout)
    assert doc["ok"] is False
    assert [f["ok"] for f in doc["files"]] == [True, False]
    assert doc["files"][1]["problems"][0]["kind"] == "dropped-line"
    assert doc["files"][1]["problems"][0]["line"] == 7
    assert broken.read_bytes() == data  # checking never writes

    r = run_cli(str(broken), "--repair", "--blobs-dir", str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "quarantine" in r.stdout and "removed 1" in r.stdout
    assert broken.read_bytes() == b"".join(line(e) for e in chain(5))

    assert run_cli(str(tmp_path / "nope.jsonl")).returncode == 2
    assert run_cli().returncode == 2
    fifo = tmp_path / "p.jsonl"
    os.mkfifo(fifo)
    r = run_cli(str(fifo))
    assert r.returncode == 2 and "FIFO" in r.stderr and r.stdout == ""


def test_cli_all(tmp_path: Path) -> None:
    agent = tmp_path / "agent"
    d = agent / "sessions" / "-proj"
    d.mkdir(parents=True)
    write_session(d / "a.jsonl", chain(3))
    (d / "b.jsonl").write_bytes(b"".join(line(e) for e in chain(3)) + b'{"torn')
    env = {**os.environ, "PI_CODING_AGENT_DIR": str(agent)}
    r = run_cli("--all", "--json", env=env)
    assert r.returncode == 1, r.stderr
    doc = json.loads(r.stdout)
    assert [Path(f["path"]).name for f in doc["files"]] == ["a.jsonl", "b.jsonl"]
    assert doc["files"][1]["tornTail"] is True
    r = run_cli("--all", "--repair", env=env)
    assert r.returncode == 0, r.stdout
    r = run_cli("--all", env=env)
    assert r.returncode == 0, r.stdout


def test_repair_gives_back_an_entry_swallowed_by_a_torn_line(tmp_path: Path) -> None:
    f = tmp_path / "s.jsonl"
    entries = chain(6)
    good = [line(e) for e in entries]
    # A torn line that reads as the start of a longer value makes the loader read on into
    # the next line; when the input then ends, both are lost (reference-behavior.md §4).
    data = b"".join(good[:-1]) + b'{"type":"message","id":"x","parentId":\n' + good[-1]
    f.write_bytes(data)
    report = check_file(f, blobs_dir=tmp_path)
    assert report.entry_count == 5
    torn = [p for p in report.problems if p.kind == "torn-tail"]
    assert len(torn) == 1 and torn[0].line == 7 and "1 line(s) after it" in torn[0].message

    result = repair_file(f, blobs_dir=tmp_path)
    assert f.read_bytes() == b"".join(good)
    assert any("kept 1 entry" in c for c in result.changes), result.changes
    assert Path(result.quarantined_copy or "").read_bytes() == data
    assert check_file(f, blobs_dir=tmp_path).ok


def test_session_doctor_over_the_protocol(tmp_path: Path) -> None:
    from .rawlsp import RawLsp

    root = tmp_path / "root"
    root.mkdir()
    broken = root / "bad.jsonl"
    good = [line(e) for e in chain(5)]
    data = b"".join(good) + b"junk\n" + b'{"type":"mess'
    broken.write_bytes(data)
    headerless = root / "nohead.jsonl"
    headerless.write_bytes(b"junk\n" + good[1])
    env = {
        "HOME": str(tmp_path),
        "PI_CODING_AGENT_DIR": str(tmp_path / "agent"),
        "SESSIONTREE_STATE_DIR": str(tmp_path / "st"),
    }
    d = RawLsp(env=env)
    try:
        assert "result" in d.initialize({"allowedRoots": [str(root)], "watch": False})
        res = d.request("session/doctor", {"path": str(broken)})["result"]
        assert [p["kind"] for p in res["problems"]] == ["dropped-line", "torn-tail"]
        assert [p["line"] for p in res["problems"]] == [7, 8]
        assert broken.read_bytes() == data
        res = d.request("session/doctor", {"path": str(broken), "repair": True})["result"]
        assert res["repaired"] is True
        assert Path(res["quarantinedCopy"]).read_bytes() == data
        assert broken.read_bytes() == b"".join(good)
        assert d.request("session/doctor", {"path": str(broken)})["result"]["problems"] == []
        # a file without a header cannot be repaired: -32007, nothing written
        err = d.request("session/doctor", {"path": str(headerless), "repair": True})["error"]
        assert err["code"] == -32007, err
        assert headerless.read_bytes() == b"junk\n" + good[1]
    finally:
        d.close()


def test_cli_needed_migration_is_a_note_not_a_problem(tmp_path: Path) -> None:
    f = tmp_path / "v1.jsonl"
    data = real_v1_fixture().read_bytes()
    f.write_bytes(data)
    env = tmp_env(tmp_path)
    r = run_cli(str(f), env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.splitlines() == [
        f"{f}: ok (1018 entries, version 1)",
        "  note: needs-migration: version 1 file: migrated to version 3 on the next write to it",
    ]
    doc = json.loads(run_cli(str(f), "--json", env=env).stdout)
    assert doc["ok"] is True and doc["files"][0]["ok"] is True
    assert [(p["kind"], p["severity"]) for p in doc["files"][0]["problems"]] == [("needs-migration", "note")]
    # --repair alone has nothing to do; --repair --migrate migrates
    r = run_cli(str(f), "--repair", env=env)
    assert r.returncode == 0 and "repaired" not in r.stdout and f.read_bytes() == data
    r = run_cli(str(f), "--repair", "--migrate", env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "migrated from version 1 to 3" in r.stdout
    assert check_file(f, blobs_dir=tmp_path).problems == []


def test_cli_binary_file_is_one_error_line(tmp_path: Path) -> None:
    f = tmp_path / "noise.jsonl"
    f.write_bytes(random.Random(7).randbytes(20000))
    r = run_cli(str(f), env=tmp_env(tmp_path))
    assert r.returncode == 2
    assert r.stdout == ""
    assert (
        r.stderr
        == f"sessiontree doctor: {f}: not a session file: binary data (20000 bytes, no JSON object line)\n"
    )
    doc = json.loads(run_cli(str(f), "--json", env=tmp_env(tmp_path)).stdout)
    assert doc["ok"] is False and [p["kind"] for p in doc["files"][0]["problems"]] == ["not-a-session"]
    assert "binary data" in doc["files"][0]["error"]


def test_cli_empty_file_is_unusable(tmp_path: Path) -> None:
    f = tmp_path / "empty.jsonl"
    f.write_bytes(b"")
    r = run_cli(str(f), env=tmp_env(tmp_path))
    assert r.returncode == 2 and r.stdout == ""
    assert (
        r.stderr
        == f"sessiontree doctor: {f}: empty file: no session header (no session has been written to it yet)\n"
    )


def test_cli_a_garbage_region_in_a_session_is_summarized(tmp_path: Path) -> None:
    f = tmp_path / "s.jsonl"
    good = [line(e) for e in chain(4)]
    garbage = b"".join(b"\x00\x9c\xff bad %d\n" % i for i in range(40))
    f.write_bytes(b"".join(good[:2]) + garbage + b"".join(good[2:]))
    start = len(good[0]) + len(good[1])
    r = run_cli(str(f), "--blobs-dir", str(tmp_path), env=tmp_env(tmp_path))
    assert r.returncode == 1, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == f"{f}: 40 problem(s)"
    assert lines[1] == (
        f"  error: dropped-line: 40 unreadable line ranges, {len(garbage) - 40} bytes between bytes "
        f"{start} and {start + len(garbage) - 1} (first 3 shown)"
    )
    assert lines[2].startswith("    line 3: error: dropped-line: ")
    assert len(lines) == 5
    doc = json.loads(run_cli(str(f), "--json", "--blobs-dir", str(tmp_path), env=tmp_env(tmp_path)).stdout)
    dropped = doc["files"][0]["problems"]
    assert len(dropped) == 40 and dropped[0]["offset"] == start and dropped[0]["length"] == 9


def test_missing_id_message_uses_the_right_article(tmp_path: Path) -> None:
    f = tmp_path / "s.jsonl"
    t = "2026-01-01T00:00:00.000Z"
    write_session(
        f,
        [header(), {"type": "assistant", "timestamp": t}, {"type": "message", "timestamp": t}],
    )
    messages = [p.message for p in check_file(f, blobs_dir=tmp_path).problems if p.kind == "missing-id"]
    assert messages == [
        "an assistant entry at value 2 has no string id",
        "a message entry at value 3 has no string id",
    ]


@pytest.mark.parametrize(
    ("name", "agent"),
    [
        ("claudecode-feipi-8a283a61.jsonl", "a Claude Code transcript"),
        ("claudecode-episodic-large-conversation.jsonl", "a Claude Code transcript"),
        ("codex-feipi-rollout-019edda8.jsonl", "a Codex rollout"),
    ],
)
def test_other_agents_transcripts_are_checked_read_only(tmp_path: Path, name: str, agent: str) -> None:
    # Checked through their readers (docs/other-agents.md): a note naming the agent, and
    # the damage of the mapped entries (an excerpt's first parent is not in the file).
    src = real_corpus_file(name)
    report = check_file(src, blobs_dir=tmp_path)
    assert report.problems[0].kind == "foreign-transcript"
    assert {p.kind for p in report.problems} <= {"foreign-transcript", "orphan"}
    r = run_cli(str(src), env=tmp_env(tmp_path))
    assert r.returncode == (1 if "orphan" in report.kinds() else 0) and r.stderr == ""
    said = {"a Claude Code transcript": "a Claude Code transcript", "a Codex rollout": "a Codex transcript"}[
        agent
    ]
    assert f"note: foreign-transcript: {said}: read-only" in r.stdout


def test_headerless_pi_excerpt_is_damage_not_foreign(tmp_path: Path) -> None:
    # A pi-family file published without its header is a damaged session: problems, exit 1.
    src = real_corpus_file("omp-pinion05-01-youtube-transcript-extraction.jsonl")
    r = run_cli(str(src), "--blobs-dir", str(tmp_path), env=tmp_env(tmp_path))
    assert r.returncode == 1, r.stdout + r.stderr
    assert "error: missing-header: no session header; the file does not open" in r.stdout
