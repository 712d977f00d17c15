#!/usr/bin/env python3
"""Figures for checkpoints (docs/checkpoints.md): the preview and the apply of a restore of
200 files changed over a 100,000-entry session. Not part of the test run.

The session is made by gen_corpus.py; then 1,000 of the tool calls on the leaf's path, spread
evenly over it, become real file calls: a `write` of each of 200 files (40 lines each), then
800 `edit`s spread over them. The target is the node right after the last write: every file
is changed between it and the leaf. The workspace holds the files as the leaf left them.
Timed: the first preview (in process right after the open: the session's calls read; over
stdio after the daemon was left idle `--idle` seconds: its warm-up reads them ahead), the preview (`plan_restore`: the two paths' calls read and replayed, 200 files read
and merged, their diffs), the apply as `session/restore` does it (the plan again, the
re-check, backups, journal, 200 atomic writes), both in process and over the daemon's stdio;
and over stdio the preview with `contents` (each file's text after the restore too), as the
editors ask it.

Usage: checkpoints.py [--entries N] [--files N] [--edits N] [--runs N]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from itertools import pairwise
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def _make(tmp: Path, entries: int, n_files: int, n_edits: int) -> tuple[Path, Path, str]:
    path = tmp / "session.jsonl"
    subprocess.run(
        [sys.executable, str(HERE / "gen_corpus.py"), str(path), str(entries), "--seed", "7"],
        check=True,
        capture_output=True,
    )
    lines = path.read_bytes().splitlines()
    header = json.loads(lines[0])
    ws = tmp / "ws"
    ws.mkdir()
    header["cwd"] = str(ws)
    entries_ = [json.loads(x) for x in lines[1:]]
    by_id = {e["id"]: i for i, e in enumerate(entries_)}
    # the leaf's path, root first
    path_idx = []
    cur: Any = entries_[-1]["id"]
    while cur is not None:
        i = by_id[cur]
        path_idx.append(i)
        cur = entries_[i]["parentId"]
    path_idx.reverse()
    # assistant messages with one call, whose result is the next entry on the path
    pairs = []
    for a, b in pairwise(path_idx):
        ea, eb = entries_[a], entries_[b]
        msg_a, msg_b = ea.get("message") or {}, eb.get("message") or {}
        if msg_a.get("role") == "assistant" and msg_b.get("role") == "toolResult":
            calls = [c for c in msg_a["content"] if c.get("type") == "toolCall"]
            if len(calls) == 1 and msg_b.get("toolCallId") == calls[0]["id"]:
                pairs.append((a, b))
    total = n_files + n_edits
    step = len(pairs) / total
    chosen = [pairs[int(k * step)] for k in range(total)]
    contents: dict[str, str] = {}
    target = ""
    for k, (a, b) in enumerate(chosen):
        call = next(c for c in entries_[a]["message"]["content"] if c.get("type") == "toolCall")
        if k < n_files:
            name = f"src/pkg{k % 10}/mod{k}.py"
            content = "".join(f"v{j} = 0\n" for j in range(40))
            contents[name] = content
            call["name"], call["arguments"] = "write", {"path": name, "content": content}
            if k == n_files - 1:
                target = entries_[b]["id"]
        else:
            e = k - n_files
            name = f"src/pkg{(e % n_files) % 10}/mod{e % n_files}.py"
            line = e // n_files
            old, new = f"v{line} = 0", f"v{line} = {e + 1}"
            contents[name] = contents[name].replace(old + "\n", new + "\n", 1)
            call["name"], call["arguments"] = (
                "edit",
                {"path": name, "edits": [{"oldText": old, "newText": new}]},
            )
        res = entries_[b]["message"]
        res["toolName"] = call["name"]
        res["content"] = [
            {"type": "text", "text": f"Successfully did {call['name']} on {call['arguments']['path']}"}
        ]
    # the corpus's other calls become greps: its edits carry no texts and its commands would
    # make every file unknown (a real session's commands do; the daemon's snapshots then tell)
    real_calls = {a for a, _ in chosen}
    for i in path_idx:
        msg = entries_[i].get("message") or {}
        if i in real_calls or msg.get("role") != "assistant":
            continue
        for c in msg.get("content") or []:
            if isinstance(c, dict) and c.get("type") == "toolCall" and c.get("name") in ("bash", "edit"):
                c["name"] = "grep"
    with open(path, "wb") as f:
        f.write(json.dumps(header, separators=(",", ":")).encode() + b"\n")
        for e in entries_:
            f.write(json.dumps(e, separators=(",", ":")).encode() + b"\n")
    for name, content in contents.items():
        p = ws / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(content)
    return path, ws, target


def _ms(xs: list[float]) -> str:
    return f"{min(xs) * 1000:.0f} / {statistics.median(xs) * 1000:.0f}"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--entries", type=int, default=100_000)
    ap.add_argument("--files", type=int, default=200)
    ap.add_argument("--edits", type=int, default=800)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--idle", type=float, default=10.0, help="seconds the daemon is left idle after the open")
    args = ap.parse_args()
    os.environ.setdefault("SESSIONTREE_NO_INDEX_CACHE", "1")
    with tempfile.TemporaryDirectory() as tmp_s:
        tmp = Path(tmp_s)
        os.environ["SESSIONTREE_DATA_DIR"] = str(tmp / "data")
        from sessiontree.core import checkpoints as ck
        from sessiontree.core.session import SessionManager

        session, ws, target = _make(tmp, args.entries, args.files, args.edits)
        gc.collect()
        t0 = time.perf_counter()
        mgr = SessionManager.open(str(session), read_only=True)
        t_open = time.perf_counter() - t0
        store = ck.SnapshotStore()
        previews, applies, undos = [], [], []
        plan = None
        for _ in range(args.runs):
            t0 = time.perf_counter()
            plan = ck.plan_restore(mgr, target, [str(ws)], store=store)
            previews.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            again = ck.plan_restore(mgr, target, [str(ws)], store=store)
            ck.apply_plan(again, store, [str(ws)], token=plan.token)
            applies.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            ck.undo_last(store, str(session), [str(ws)])
            undos.append(time.perf_counter() - t0)
        assert plan is not None
        statuses: dict[str, int] = {}
        for f in plan.files:
            statuses[f.status] = statuses.get(f.status, 0) + 1
        # over the daemon's stdio, as an editor asks
        from sessiontree.client import Client

        d_prev, d_apply, d_contents = [], [], []
        with Client.spawn(init_options={"allowedRoots": [str(tmp)], "watch": False}, root=str(ws)) as c:
            h = c.request("session/open", {"path": str(session)})["session"]
            time.sleep(args.idle)  # the daemon's idle-time warm-up reads the calls ahead
            for _ in range(args.runs):
                t0 = time.perf_counter()
                pv = c.request("session/restorePreview", {"session": h, "targetId": target})
                d_prev.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                res = c.request(
                    "session/restore", {"session": h, "targetId": target, "previewToken": pv["previewToken"]}
                )
                d_apply.append(time.perf_counter() - t0)
                assert len(res["written"]) == args.files, [
                    (f["displayPath"], f["status"], f["reason"]) for f in res["skipped"]
                ]
                c.request("session/restoreUndo", {"session": h})
            for _ in range(args.runs):
                # as the editors ask: each file's whole text after the restore too (their diff views)
                t0 = time.perf_counter()
                c.request("session/restorePreview", {"session": h, "targetId": target, "contents": True})
                d_contents.append(time.perf_counter() - t0)
        print(
            f"session: {args.entries} entries, {session.stat().st_size / 1e6:.0f} MB; open {t_open * 1000:.0f} ms"
        )
        print(f"files: {len(plan.files)} ({statuses}); target {target}; runs {args.runs}; min / median ms")
        print("| step | in process | over stdio (session/...) | target |")
        print("|---|---|---|---|")
        print(
            f"| first preview (in process: the session's calls read; daemon: after {args.idle:g} s idle) "
            f"| {previews[0] * 1000:.0f} | {d_prev[0] * 1000:.0f} (restorePreview) | <= 300 |"
        )
        print(
            f"| preview of {args.files} files | {_ms(previews[1:])} | {_ms(d_prev[1:])} (restorePreview) | <= 300 |"
        )
        print(
            f"| preview with `contents` (the editors' diff views) | | {_ms(d_contents)} (restorePreview) | <= 300 |"
        )
        print(
            f"| apply (plan again, re-check, backups, journal, writes) | {_ms(applies)} | {_ms(d_apply)} (restore) | <= 1000 |"
        )
        print(f"| undo | {_ms(undos)} | | |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
