#!/usr/bin/env python3
"""Peak memory and time of the command line on a big session (issue 34): `export` of the
leaf's branch (md, html, jsonl), `diff` of the two nodes farthest apart, `tree` (text and
JSON). Each command is a process of its own, measured by `os.wait4` (its peak RSS, its CPU
time) and the wall clock, best of ``--repeat``. Not part of the test run.

Usage: cli_memory.py [--entries 100000] [--repeat 3] [--cold] [--corpus DIR]

The session is benchmarks/gen_corpus.py's (seed 7, a branch every 400 entries: 100,000
entries whose leaf's branch holds 95,406). ``--cold``: no index cache (every command scans
the file); by default the first command writes the cache and the measured ones read it, as
a person's second command does. Only the command line is run, so the same script measures
the code before a change (``PYTHONPATH=<old checkout>/server:<old checkout>/protocol``).
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


def measure(argv: list[str], env: dict[str, str], out: Path) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds, peak RSS in KB) of one run, its output to ``out``."""
    with open(out, "wb") as fh:
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=fh, stderr=subprocess.DEVNULL, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited with {proc.returncode}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss


def farthest_pair(path: Path) -> tuple[str, str]:
    """The leaf and the tip whose common ancestor with it is nearest the root."""
    from sessiontree.core.session import SessionManager

    mgr = SessionManager.open(str(path), read_only=True)
    index = mgr.index
    leaf = mgr.get_leaf_id()
    assert leaf is not None
    on_path = {eid: i for i, eid in enumerate(index.path_to_root(leaf))}
    _, children = index.child_map()
    best, best_len = leaf, 0
    for eid in index.order():
        if children.get(eid):
            continue
        path = index.path_to_root(eid)
        common = next((i for i, x in enumerate(path) if x not in on_path), len(path))
        side = len(path) - common + len(on_path) - common
        if side > best_len:
            best, best_len = eid, side
    return best, leaf


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--entries", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cold", action="store_true", help="no index cache")
    ap.add_argument("--corpus", help="keep the generated session here (default: a temporary directory)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        where = Path(args.corpus or tmp)
        where.mkdir(parents=True, exist_ok=True)
        session = where / f"cli-{args.entries}.jsonl"
        if not session.exists():
            subprocess.run(
                [sys.executable, str(HERE / "gen_corpus.py"), str(session), str(args.entries), "--seed", "7"],
                check=True,
                capture_output=True,
            )
        env = dict(
            os.environ,
            HOME=tmp,
            XDG_CACHE_HOME=str(Path(tmp) / "cache"),
            XDG_CONFIG_HOME=str(Path(tmp) / "config"),
            NO_COLOR="1",
        )
        if args.cold:
            env["SESSIONTREE_NO_INDEX_CACHE"] = "1"
        a, b = farthest_pair(session)
        st = [sys.executable, "-m", "sessiontree"]
        out = Path(tmp) / "out"
        runs = [
            ("export -f md -o OUT", [*st, "export", str(session), "-f", "md", "-o", str(out)]),
            ("export -f html -o OUT", [*st, "export", str(session), "-f", "html", "-o", str(out)]),
            ("export -f jsonl -o OUT", [*st, "export", str(session), "-f", "jsonl", "-o", str(out)]),
            ("export -f md (stdout)", [*st, "export", str(session), "-f", "md"]),
            (f"diff {a} {b}", [*st, "diff", str(session), a, b]),
            ("tree", [*st, "tree", str(session)]),
            ("tree --json", [*st, "tree", str(session), "--json"]),
        ]
        if not args.cold:
            measure(
                [*st, "tree", str(session), "--filter", "all"], env, Path(tmp) / "warm"
            )  # the index cache
        size = session.stat().st_size / 1e6
        print(
            f"{args.entries:,} entries ({size:.0f} MB), {'cold' if args.cold else 'index cached'}, best of {args.repeat}"
        )
        print()
        print("| command | wall | CPU | peak RSS |")
        print("|---|---|---|---|")
        for name, argv in runs:
            best = min(
                (measure(argv, env, Path(tmp) / "stdout") for _ in range(args.repeat)), key=lambda r: r[0]
            )
            wall, cpu, rss = best
            print(f"| `{name}` | {wall:.2f} s | {cpu:.2f} s | {rss / 1024:.0f} MB |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
