#!/usr/bin/env python3
"""Figures for the graph, export and compare (docs/graph-export-compare.md): how long the
graph of a generated session takes to lay out and draw, how big its page is, and how long an
export of the path to the leaf and a comparison take. Not part of the test run.

Usage: graph_export.py [ENTRIES ...] [--branch-every N]   (default: 10000 100000)
       graph_export.py --wide 60000        a root with 60,000 one-entry side chains
       graph_export.py --adversarial 108000 [--adversarial 1000000]
                                           export a message of that many characters of `sk-`
                                           (the worst case of the old openai-key pattern)

Only public functions are called, so the same script measures the code before a change
(`PYTHONPATH=<old checkout>/server:<old checkout>/protocol`).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("entries", type=int, nargs="*", default=[10000, 100000])
    ap.add_argument("--branch-every", type=int, default=400)
    ap.add_argument("--wide", type=int, action="append", default=[], metavar="N")
    ap.add_argument("--adversarial", type=int, action="append", default=[], metavar="CHARS")
    args = ap.parse_args()
    if args.wide or args.adversarial:
        return wide_and_adversarial(args.wide, args.adversarial)
    os.environ.setdefault("SESSIONTREE_NO_INDEX_CACHE", "1")
    from sessiontree.core.compare import compare_nodes
    from sessiontree.core.export import export_session
    from sessiontree.core.export.redact import Redactor
    from sessiontree.core.graph import build_graph, render_html
    from sessiontree.core.session import SessionManager

    with tempfile.TemporaryDirectory() as tmp:
        print(
            "| entries | branch every | open | graph (layout + texts) | page | page size | nodes | lanes | export md (redacted) | compare tip vs leaf |"
        )
        print("|---|---|---|---|---|---|---|---|---|---|")
        for n in args.entries:
            path = Path(tmp) / f"s{n}.jsonl"
            subprocess.run(
                [
                    sys.executable,
                    str(HERE / "gen_corpus.py"),
                    str(path),
                    str(n),
                    "--seed",
                    "7",
                    "--branch-every",
                    str(args.branch_every),
                ],
                check=True,
                capture_output=True,
            )
            t0 = time.perf_counter()
            mgr = SessionManager.open(str(path), read_only=True)
            t1 = time.perf_counter()
            g = build_graph(mgr)
            t2 = time.perf_counter()
            page = render_html(g)
            t3 = time.perf_counter()
            r = export_session(mgr, "md", redactor=Redactor())
            t4 = time.perf_counter()
            tips = [x.id for x in g.nodes if x.tip]
            other = next((t for t in tips if t != mgr.get_leaf_id()), tips[0])
            compare_nodes(mgr, other, mgr.get_leaf_id())
            t5 = time.perf_counter()
            print(
                f"| {n:,} | {args.branch_every} | {t1 - t0:.2f} s | {t2 - t1:.2f} s | {t3 - t2:.3f} s | "
                f"{len(page.encode()) / 1024:.0f} KB | {len(g.nodes):,} | {g.lanes} | {t4 - t3:.2f} s ({r.entries:,} entries) | {t5 - t4:.2f} s |"
            )
    return 0


def _write(path: Path, lines: list[dict[str, object]]) -> None:
    import json

    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")


def wide_and_adversarial(wides: list[int], sizes: list[int]) -> int:
    import json

    from sessiontree.core.export import export_session
    from sessiontree.core.export.redact import Redactor
    from sessiontree.core.graph import build_graph, render_html
    from sessiontree.core.session import SessionManager

    head = {"type": "session", "version": 3, "id": "b", "timestamp": "2026-01-01T00:00:00Z", "cwd": "/"}
    with tempfile.TemporaryDirectory() as tmp:
        if wides:
            print(
                "| side chains off one root | open | graph | nodes | lanes | answer (nodes as JSON) | page |"
            )
            print("|---|---|---|---|---|---|---|")
        for n in wides:
            path = Path(tmp) / f"wide{n}.jsonl"
            root = {"type": "message", "id": "root", "parentId": None, "timestamp": "2026-01-01T00:00:00Z"}
            root["message"] = {"role": "user", "content": "start"}
            kids = [
                {
                    "type": "message",
                    "id": f"k{i}",
                    "parentId": "root",
                    "timestamp": "2026-01-01T00:00:01Z",
                    "message": {"role": "user", "content": f"side chain {i}"},
                }
                for i in range(n)
            ]
            _write(path, [head, root, *kids])
            t0 = time.perf_counter()
            mgr = SessionManager.open(str(path), read_only=True)
            t1 = time.perf_counter()
            g = build_graph(mgr)
            t2 = time.perf_counter()
            answer = len(json.dumps([x.to_dict() for x in g.nodes]).encode())
            page = len(render_html(g).encode())
            print(
                f"| {n:,} | {t1 - t0:.2f} s | {t2 - t1:.2f} s | {len(g.nodes):,} | {g.lanes:,} | "
                f"{answer / 1024:,.0f} KB | {page / 1024:,.0f} KB |"
            )
        if sizes:
            print("| `sk-` characters in one message | export md (redacted) |")
            print("|---|---|")
        for size in sizes:
            path = Path(tmp) / f"adv{size}.jsonl"
            msg = {"type": "message", "id": "e0", "parentId": None, "timestamp": "2026-01-01T00:00:00Z"}
            msg["message"] = {"role": "user", "content": ("sk-" * (size // 3 + 1))[:size]}
            _write(path, [head, msg])
            mgr = SessionManager.open(str(path), read_only=True)
            t0 = time.perf_counter()
            export_session(mgr, "md", redactor=Redactor())
            print(f"| {size:,} | {time.perf_counter() - t0:.2f} s |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
