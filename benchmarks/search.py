#!/usr/bin/env python3
"""The cross-session search index on a generated agent dir (docs/benchmarks.md, "Search").

Usage: search.py AGENT_DIR [--index PATH] [--queries N] [--fresh]

AGENT_DIR is made by search_corpus.py (about 1 GB; generate under /tmp, once, and reuse).
Prints: the first full build (seconds, entries, index size, the process's peak RSS), an
update with nothing changed, an update after 100 appended entries (one session), and query
latency p50/p99 over common words, prefixes, rare phrases and filtered queries (the FTS
query with snippets, and the same with each hit's path in its tree).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "server"))

from sessiontree.core.fts import SearchIndex, SearchQuery

COMMON = ["session", "tree", "error fix", "python module", "cache", "the", "config server", "test passes"]
PREFIX = ["sess", "ref", "neov", "compa", "typescr"]
RARE = [
    '"quokka lantern protocol"',
    '"zephyr marmalade index"',
    '"obsidian walrus migration"',
    "quokka",
    "walrus",
]


def _pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(p / 100 * (len(xs) - 1)))]


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _vm(pid: int, key: str) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) // 1024
    return 0


def daemon_build(agent_dir: str, index: str) -> None:
    """The daemon's first session/search (the whole build, with progress), its peak memory
    (VmHWM) and a query after it, on a fresh index."""
    from sessiontree.client import Client

    for s in ("", "-wal", "-shm"):
        if os.path.exists(index + s):
            os.unlink(index + s)
    repo = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    env = {
        "PI_CODING_AGENT_DIR": agent_dir,
        "SESSIONTREE_SEARCH_INDEX": index,
        "PYTHONPATH": os.pathsep.join([os.path.join(repo, "server"), os.path.join(repo, "protocol")]),
    }
    c = Client.spawn(init_options={"agentDir": agent_dir, "watch": True}, env=env)
    try:
        pid = c.process.pid if c.process is not None else 0
        rss_before = _vm(pid, "VmRSS")
        t = time.perf_counter()
        res = c.request("session/search", {"query": "session", "prefix": False, "paths": False}, timeout=3600)
        build = time.perf_counter() - t
        progress = [p["value"].get("kind") for p in c.notifications_of("$/progress")]
        times = []
        for q in COMMON * 3:
            t = time.perf_counter()
            c.request("session/search", {"query": q, "prefix": False, "paths": False})
            times.append((time.perf_counter() - t) * 1000)
        out = {
            "daemon_first_search_with_build_s": round(build, 1),
            "indexed_files": res["indexedFiles"],
            "index_mb": round(res["indexBytes"] / 1e6),
            "progress_notifications": len(progress),
            "daemon_rss_mb_before": rss_before,
            "daemon_peak_rss_mb": _vm(pid, "VmHWM"),
            "daemon_round_trip_common_words_p50_ms": round(_pct(times, 50), 1),
            "daemon_round_trip_common_words_p99_ms": round(_pct(times, 99), 1),
        }
    finally:
        c.close()
    print(json.dumps(out, indent=2))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("agent_dir")
    ap.add_argument("--index", default="/tmp/sessiontree-search-bench.db")
    ap.add_argument("--queries", type=int, default=5, help="runs of each query")
    ap.add_argument("--fresh", action="store_true", help="delete the index first (measure the full build)")
    ap.add_argument(
        "--daemon", action="store_true", help="measure the daemon's first build instead (fresh index)"
    )
    a = ap.parse_args()
    if a.daemon:
        daemon_build(a.agent_dir, a.index + ".daemon")
        return
    root = os.path.join(a.agent_dir, "sessions")
    if a.fresh:
        for s in ("", "-wal", "-shm"):
            if os.path.exists(a.index + s):
                os.unlink(a.index + s)
    corpus = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(root) for f in fs)
    ix = SearchIndex([root], path=a.index)
    t = time.perf_counter()
    rep = ix.update()
    build = time.perf_counter() - t
    out: dict[str, object] = {
        "corpus_mb": round(corpus / 1e6),
        "files": rep.files,
        "build_s": round(build, 1),
        "build_entries": rep.entries,
        "index_mb": round(ix.size_bytes() / 1e6),
        "peak_rss_mb_after_build": round(_rss_mb()),
    }
    t = time.perf_counter()
    ix.update()
    out["noop_update_ms"] = round((time.perf_counter() - t) * 1000, 1)
    # 100 appends to the biggest session
    biggest = max((os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs), key=os.path.getsize)
    with open(biggest, "rb") as f:
        f.seek(max(0, os.path.getsize(biggest) - 65536))
        last = json.loads(f.read().rstrip(b"\n").rsplit(b"\n", 1)[-1])
    parent = last["id"]
    lines = []
    stamp = int(time.time() * 1000)
    for i in range(100):
        eid = f"b{stamp % 10**8:08d}{i:03d}"
        lines.append(
            json.dumps(
                {
                    "type": "message",
                    "id": eid,
                    "parentId": parent,
                    "timestamp": "2026-01-01T00:00:00.000Z",
                    "message": {"role": "user", "content": f"appended benchmark line {i} xylophone{stamp}"},
                }
            )
        )
        parent = eid
    with open(biggest, "a") as f:
        f.write("\n".join(lines) + "\n")
    t = time.perf_counter()
    r = ix.update_files([biggest])
    out["update_100_appends_ms"] = round((time.perf_counter() - t) * 1000, 1)
    t = time.perf_counter()
    ix.update()
    out["full_scan_update_100_appends_ms"] = round((time.perf_counter() - t) * 1000, 1)
    assert r.appended == 1 and r.entries == 100, r
    assert ix.search(SearchQuery(f"xylophone{stamp}", with_paths=False)).total == 100

    def bench(name: str, queries: list[str], **kw: object) -> None:
        times: list[float] = []
        for _ in range(a.queries):
            for q in queries:
                t = time.perf_counter()
                ix.search(SearchQuery(q, **kw))  # type: ignore[arg-type]
                times.append((time.perf_counter() - t) * 1000)
        out[name] = {
            "p50_ms": round(_pct(times, 50), 1),
            "p99_ms": round(_pct(times, 99), 1),
            "n": len(times),
        }

    bench("query_common_words", COMMON, with_paths=False, prefix=False)
    bench("query_common_words_last_as_prefix", COMMON, with_paths=False)
    bench("query_typing_prefix", PREFIX, with_paths=False)
    bench("query_rare_phrase", RARE, with_paths=False, prefix=False)
    bench(
        "query_common_role_user_cwd", COMMON, with_paths=False, prefix=False, role="user", cwd="/home/dev/p03"
    )
    bench("query_common_words_with_paths", COMMON, prefix=False)
    bench("query_rare_with_paths", RARE, prefix=False)
    out["peak_rss_mb"] = round(_rss_mb())
    ix.close()
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
