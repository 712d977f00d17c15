"""Listing and opening a generated 100 MB Claude Code history (docs/other-agents.md).

    .venv/bin/python benchmarks/bench_other_agents.py [--mb 100] [--repeat 3] [--no-daemon]

Writes, in a temporary HOME, one Claude Code transcript of about ``--mb`` megabytes (turns of
a user prompt, thinking, tool uses with their results and hook progress lines, a rewind every
200 turns, a compaction every 2,000) beside 50 small ones, then measures (best of the
repeats, each in this process): reading the transcript into pi entries, `SessionManager.open`
(the read-only session), the first view page, the context of the leaf, folding in one
appended turn, listing the project, and through the daemon `session/list` and `session/open`.
Prints a Markdown table; nothing is written outside the temporary directory.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "server"))
sys.path.insert(0, str(ROOT / "protocol"))

SID = "bbbbbbbb-0000-4000-8000-000000000000"
CWD = "/work/bench"


def _line(kind: str, uuid: str, parent: str | None, n: int, **extra: Any) -> str:
    d: dict[str, Any] = {"parentUuid": parent, "isSidechain": False, "type": kind}
    d.update(extra)
    d.update(
        {
            "uuid": uuid,
            "timestamp": f"2026-06-13T{(n // 3600) % 24:02d}:{(n // 60) % 60:02d}:{n % 60:02d}.000Z",
            "cwd": CWD,
            "sessionId": SID,
            "version": "2.1.77",
            "userType": "external",
            "gitBranch": "main",
        }
    )
    return json.dumps(d)


def generate(path: Path, mb: int) -> int:
    """A Claude Code transcript of about ``mb`` MB; returns its line count."""
    target = mb * 1_000_000
    out = path.open("w", encoding="utf-8")
    size = lines = 0
    parent: str | None = None
    turn = 0
    payload = ("lorem ipsum dolor sit amet " * 40).strip()
    keep: str | None = None
    while size < target or turn == 0:
        t = f"{turn:07d}"
        rows = []
        start = parent
        if turn and turn % 200 == 0 and keep is not None:
            start = keep  # a rewind: the next prompt hangs under an older entry
        if turn and turn % 2000 == 0:
            rows.append(
                _line(
                    "system",
                    f"cb{t}",
                    None,
                    turn,
                    subtype="compact_boundary",
                    logicalParentUuid=start,
                    compactMetadata={"trigger": "auto", "preTokens": 150000},
                )
            )
            rows.append(
                _line(
                    "user",
                    f"cs{t}",
                    f"cb{t}",
                    turn,
                    message={"role": "user", "content": f"Summary of the conversation so far ({turn})."},
                    isCompactSummary=True,
                )
            )
            start = f"cs{t}"
        rows.append(
            _line(
                "user",
                f"u{t}",
                start,
                turn,
                message={"role": "user", "content": f"prompt {turn}: {payload[:200]}"},
            )
        )
        msg = {"model": "claude-opus-4-6", "id": f"msg_{t}", "role": "assistant", "type": "message"}
        rows.append(
            _line(
                "assistant",
                f"a{t}",
                f"u{t}",
                turn,
                message={**msg, "content": [{"type": "thinking", "thinking": payload}]},
            )
        )
        call = {
            "type": "tool_use",
            "id": f"toolu_{t}",
            "name": "Bash",
            "input": {"command": f"grep -rn thing{turn} src/"},
        }
        rows.append(_line("assistant", f"b{t}", f"a{t}", turn, message={**msg, "content": [call]}))
        rows.append(
            _line(
                "progress",
                f"p{t}",
                f"b{t}",
                turn,
                data={"type": "hook_progress", "hookEvent": "PostToolUse"},
                toolUseID=f"toolu_{t}",
            )
        )
        result = {"tool_use_id": f"toolu_{t}", "type": "tool_result", "content": (payload + "\n") * 6}
        rows.append(_line("user", f"r{t}", f"b{t}", turn, message={"role": "user", "content": [result]}))
        text = {"type": "text", "text": f"answer {turn}: {payload[:300]}"}
        rows.append(
            _line(
                "assistant",
                f"c{t}",
                f"r{t}",
                turn,
                message={**msg, "content": [text], "usage": {"input_tokens": 10, "output_tokens": 200}},
            )
        )
        rows.append(
            json.dumps(
                {
                    "type": "file-history-snapshot",
                    "messageId": f"u{t}",
                    "snapshot": {},
                    "isSnapshotUpdate": False,
                }
            )
        )
        chunk = "\n".join(rows) + "\n"
        out.write(chunk)
        size += len(chunk.encode())
        lines += len(rows)
        if turn % 200 == 100:
            keep = f"c{t}"
        parent = f"c{t}"
        turn += 1
    out.close()
    return lines


def best(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    times = []
    result = None
    for _ in range(repeat):
        result = None  # the previous result is gone before the next run (peak memory)
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return min(times), result


def fmt(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.2f} s"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mb", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-daemon", action="store_true")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="st-bench-claude-"))
    try:
        home = tmp / "home"
        os.environ["HOME"] = str(home)
        os.environ.pop("CLAUDE_CONFIG_DIR", None)
        os.environ["XDG_CACHE_HOME"] = str(tmp / "cache")
        from sessiontree.core.sources.foreign import claude_project_dir

        proj = Path(claude_project_dir(CWD))
        proj.mkdir(parents=True)
        big = proj / f"{SID}.jsonl"
        t0 = time.perf_counter()
        nlines = generate(big, args.mb)
        gen = time.perf_counter() - t0
        for i in range(50):
            generate(proj / f"aaaaaaaa-0000-4000-8000-{i:012d}.jsonl", 0)
        size = big.stat().st_size
        print(
            f"generated {size / 1e6:.1f} MB, {nlines} lines in {gen:.1f} s (+ 50 small transcripts)",
            file=sys.stderr,
        )

        from sessiontree.core.session import SessionManager
        from sessiontree.core.session.foreign import list_foreign_sessions
        from sessiontree.core.sources import foreign
        from sessiontree.core.view import build_view

        rows: list[tuple[str, str]] = []
        t, mgr = best(lambda: SessionManager.open(str(big), read_only=True), args.repeat)
        rss_open = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
        rows.append(("SessionManager.open (read-only session)", fmt(t)))
        data = big.read_bytes()
        t, tr = best(lambda: foreign.read("claude", data), args.repeat)
        rows.append(("read + map to pi entries (in memory)", f"{fmt(t)} ({len(tr.entries)} entries)"))
        data = b""  # freed before the next figure
        t, _ = best(lambda: build_view(mgr, limit=200), 1)
        rows.append(("first view build (200 rows)", fmt(t)))
        t, _ = best(lambda: build_view(mgr, offset=1000, limit=200), args.repeat)
        rows.append(("next view page (200 rows)", fmt(t)))
        t, _ = best(lambda: mgr.build_session_context(), args.repeat)
        rows.append(("build_session_context (leaf)", fmt(t)))
        turn = "9999999"
        with big.open("a", encoding="utf-8") as f:
            f.write(
                _line(
                    "user", f"u{turn}", mgr.get_leaf_id(), 1, message={"role": "user", "content": "one more"}
                )
                + "\n"
            )
        t, res = best(lambda: mgr.sync_with_file(), 1)
        assert res.appended == [f"u{turn}"], res
        rows.append(("fold in one appended line (live)", fmt(t)))
        rows.append(
            (
                "peak memory after open (VmHWM, this process; measured before the other figures)",
                f"{rss_open} MB",
            )
        )
        mgr = None
        from sessiontree.core.session import foreign as foreign_session

        def cold() -> Any:
            foreign_session._SUMMARIES.clear()
            return list_foreign_sessions("claude", CWD)

        t, infos = best(cold, args.repeat)
        rows.append(
            (f"list the project, cold ({len(infos)} transcripts, one of {size / 1e6:.0f} MB)", fmt(t))
        )
        t, infos = best(lambda: list_foreign_sessions("claude", CWD), args.repeat)
        rows.append(("list the project, warm (files unchanged)", fmt(t)))
        if not args.no_daemon:
            from sessiontree.client import Client

            env = {
                **os.environ,
                "PYTHONPATH": os.pathsep.join([str(ROOT / "server"), str(ROOT / "protocol")]),
            }
            with Client.spawn(
                [sys.executable, "-m", "sessiontree", "serve"],
                env=env,
                init_options={"watch": False, "stateDir": str(tmp / "state")},
            ) as c:
                t, _ = best(
                    lambda: c.request("session/list", {"cwd": CWD, "agent": "claude"}, timeout=600),
                    args.repeat,
                )
                rows.append(("daemon session/list (the project; best of the repeats: warm)", fmt(t)))
                t0 = time.perf_counter()
                opened = c.request("session/open", {"path": str(big)}, timeout=600)
                rows.append(("daemon session/open", fmt(time.perf_counter() - t0)))
                t, _ = best(
                    lambda: c.request("session/view", {"session": opened["session"], "limit": 200}),
                    args.repeat,
                )
                rows.append(("daemon session/view (200 rows)", fmt(t)))
        print(f"\n| figure ({size / 1e6:.0f} MB Claude Code transcript, {nlines} lines) | measured |")
        print("|---|---|")
        for name, value in rows:
            print(f"| {name} | {value} |")
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
