#!/usr/bin/env python3
"""Editor feel: what a person waits for in an editor, end to end over stdio, beside the floor.

Usage:
    .venv/bin/python benchmarks/editor_feel.py [--sizes 100000,1000000] [--repeat 3] [--out FILE]

A real daemon (`sessiontree serve`) runs over stdio, driven the way the editors drive it:
a click opens the session and asks for the first page (500 rows, the sidebars' page size)
and, when the leaf lies beyond it, the page around the leaf; a click on a session not
indexed yet also sends `session/preview` beside the open, whose rows are drawn first; a search asks for the rows
matching a query, then for the same query one character longer; a navigation moves the leaf
and asks for the rows around the new leaf; a label is set and the rows are asked again; a
filter change asks for the first page in another mode; `session/context` is asked once after
an open; a search comes 3 s after the open (a person looks first; the daemon builds the
searchable text in that idle time); an external writer appends one line and the time to the `session/didChange` and the
row in the next page is taken. Every figure is printed beside the floor measured in the same
run: reading the file and `orjson.loads` of every line. Library figures (`get_tree`,
`get_branch`, 1,000 appends with flush) run in a fresh process each.

Corpora come from `benchmarks/gen_corpus.py` into `benchmarks/.corpus/` (git-ignored).
Not part of the test run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "server"), str(ROOT / "protocol")]

from sessiontree.client import Client  # noqa: E402

CORPUS_DIR = ROOT / "benchmarks" / ".corpus"
GEN = ROOT / "benchmarks" / "gen_corpus.py"
PAGE = 500

# (key, what a person does, target as a ratio to the floor, or None; absolute targets below)
ROWS_100K: list[tuple[str, str, float | None]] = [
    (
        "click_preview",
        "click a session -> first rows (cold index cache; from the file's end, docs/preview.md)",
        1.0,
    ),
    ("click_cold", "... -> the whole view's rows around the leaf (cold index cache)", None),
    ("click_warm", "click a session -> first rows (index cached, new daemon)", 0.3),
    ("click_again", "click it again (already open in the daemon)", 0.3),
    ("click_ahead", "click a session listed a moment before (indexed ahead, new daemon)", None),
    ("ahead_ready", "... listing -> its indexing ahead done (docs/preindex.md)", None),
    ("search_first", "type a search query -> rows (first query)", 0.1),
    ("search_more", "type one more character -> rows", 0.1),
    ("search_complete", "... -> every match known (total, selected row)", None),
    ("navigate", "navigate to another node -> rows around the new leaf", 0.1),
    ("label", "set a label -> rows", 0.1),
    ("filter", "change the filter -> rows", 0.1),
    ("context", "`session/context` (first call after open)", 0.3),
    ("context_page", "`session/context`, last 50 messages (first call after open)", 0.3),
    ("append_row", "the agent appends -> the row appears", None),
]
ABS_1M = {
    "click_preview": 3.0,
    "navigate": 0.3,
    "search_first": 0.3,
    "search_more": 0.3,
    "daemon_rss_mb": 1024,
}
REFERENCE_100K = {"get_tree": 0.080, "get_branch": 0.982, "appends_1000": 0.106}


def corpus(n: int) -> Path:
    CORPUS_DIR.mkdir(parents=True, exist_ok=True)
    path = CORPUS_DIR / f"c{n}.jsonl"
    if not path.exists():
        tmp = path.with_suffix(".tmp")
        subprocess.run([sys.executable, str(GEN), str(tmp), str(n)], check=True, stdout=subprocess.DEVNULL)
        tmp.rename(path)
    return path


def floor(path: Path) -> float:
    best = float("inf")
    for _ in range(2):
        t = time.perf_counter()
        with open(path, "rb") as f:
            data = f.read()
        for line in data.split(b"\n"):
            if line:
                orjson.loads(line)
        best = min(best, time.perf_counter() - t)
        del data
    return best


def vm_kb(pid: int, key: str) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


class Daemon:
    """A daemon over stdio with its own cache and state dirs; the agent dir holds the session."""

    def __init__(self, work: Path, cache: Path) -> None:
        self.agent = work / "agent"
        self.agent.mkdir(exist_ok=True)
        env = {
            "XDG_CACHE_HOME": str(cache),
            "XDG_STATE_HOME": str(work / "state"),
            "PI_CODING_AGENT_DIR": str(self.agent),
            "PYTHONPATH": os.pathsep.join([str(ROOT / "server"), str(ROOT / "protocol")]),
        }
        self.client = Client.spawn(
            init_options={
                "agentDir": str(self.agent),
                "allowedRoots": [str(work)],
                "stateDir": str(work / "state"),
            },
            env=env,
        )
        self.pid = self.client.process.pid if self.client.process else 0

    def request(self, method: str, params: dict[str, Any]) -> Any:
        return self.client.request(method, params, timeout=600)

    def rows(self, handle: str, **params: Any) -> dict[str, Any]:
        """What the sidebar asks after any change: the head page, with the page around the leaf
        in the same answer (`selectedWindow`) when the leaf lies past the head."""
        head = self.request(
            "session/view", {"session": handle, "offset": 0, "limit": PAGE, "selectedWindow": PAGE, **params}
        )
        sel = head.get("selectedIndex")
        if sel is not None and sel >= PAGE and "window" not in head:
            raise SystemExit("the leaf lies past the head and the answer has no window around it")
        return head

    def click(self, path: Path) -> tuple[float, str]:
        def run() -> str:
            # as the editors click a big file: `session/preview` beside the open (answered
            # without reading when the session is open or its index cached)
            opening = self.client.request_future("session/open", {"path": str(path)})
            early = self.client.request_future("session/preview", {"path": str(path), "limit": PAGE})
            handle = opening.result(600)["session"]
            self.rows(handle)
            early.result(600)
            return handle

        return timed(run)

    def click_cold(self, path: Path, add: Callable[[str, float], None]) -> tuple[float, str]:
        """A click on a session not indexed yet, as the editors make it: `session/preview`
        beside `session/open`; the preview's rows are the first drawn (`click_preview`)."""
        t0 = time.perf_counter()
        opening = self.client.request_future("session/open", {"path": str(path)})
        early = self.client.request_future("session/preview", {"path": str(path), "limit": PAGE})
        found = early.result(600)
        add("click_preview", time.perf_counter() - t0)
        if not found["rows"] or found["selectedIndex"] is None:
            raise SystemExit("the preview drew no rows around the leaf")
        handle = opening.result(600)["session"]
        self.rows(handle)
        return time.perf_counter() - t0, handle

    def close(self) -> None:
        self.client.close()


def ids_in_file(path: Path) -> list[tuple[str, str]]:
    """(id, type) of every entry, in file order (the header left out)."""
    out = []
    with open(path, "rb") as f:
        next(f)
        for line in f:
            e = orjson.loads(line)
            role = (e.get("message") or {}).get("role") if e.get("type") == "message" else None
            out.append((e["id"], role or e["type"]))
    return out


def measure(n: int, repeat: int) -> dict[str, Any]:
    src = corpus(n)
    fig: dict[str, Any] = {"entries": n, "size_mb": src.stat().st_size / 1e6}
    fig["floor"] = floor(src)
    entries = ids_in_file(src)
    # a user message two fifths into the file: another branch of the tree than the leaf's
    target = next(eid for eid, kind in entries[int(len(entries) * 0.4) :] if kind == "user")
    label_target = next(eid for eid, kind in reversed(entries[-200:]) if kind == "assistant")
    del entries
    samples: dict[str, list[float]] = {}

    def add(key: str, value: float) -> None:
        samples.setdefault(key, []).append(value)

    for _ in range(repeat):
        one_round(src, target, label_target, add, fig)
    for key, vals in samples.items():
        fig[key] = min(vals)
        fig[key + "_median"] = statistics.median(vals)
        fig[key + "_max"] = max(vals)
    if n <= 200_000:
        fig.update(library(src))
    return fig


def one_round(
    src: Path, target: str, label_target: str, add: Callable[[str, float], None], fig: dict[str, Any]
) -> None:
    """One round of every scenario on a fresh copy of the session, with fresh daemons."""
    work = Path(tempfile.mkdtemp(prefix="st-feel-"))
    cache = work / "cache"
    path = work / "agent" / "sessions" / "--home-dev-project--" / src.name
    path.parent.mkdir(parents=True)
    shutil.copyfile(src, path)
    try:
        d = Daemon(work, cache)
        t, handle = d.click_cold(path, add)
        add("click_cold", t)
        add("click_again", d.click(path)[0])
        t, _ = timed(lambda: d.request("session/context", {"session": handle}))
        add("context", t)
        # a person looks at the tree before typing: the daemon builds the searchable text
        # in that idle time (lsp/features/warm.py); the sidebars take a search in part
        # (`partial`): the rows found so far, the rest after `session/didCompleteSearch`
        time.sleep(3)
        t, _ = timed(lambda: d.rows(handle, search="neovim", partial=True))
        add("search_first", t)
        mark = len(d.client.notifications)
        t0 = time.perf_counter()
        page = d.rows(handle, search="neovim s", partial=True)
        add("search_more", time.perf_counter() - t0)
        if page.get("complete") is False:
            d.client.wait_for_notification(
                "session/didCompleteSearch", lambda p: p["search"] == "neovim s", timeout=600, start=mark
            )
            page = d.rows(handle, search="neovim s", partial=True)
            if page.get("complete") is False or page.get("selectedIndex") is None:
                raise SystemExit("the search said it was complete, and its rows are not")
        add("search_complete", time.perf_counter() - t0)
        t, _ = timed(lambda: d.rows(handle, filter="user-only"))
        add("filter", t)

        def nav() -> None:
            d.request("session/navigate", {"session": handle, "targetId": target})
            d.rows(handle)

        add("navigate", timed(nav)[0])

        def label() -> None:
            d.request("session/setLabel", {"session": handle, "targetId": label_target, "label": "bench"})
            d.rows(handle)

        add("label", timed(label)[0])
        add("append_row", external_append(d, handle, path))
        fig["daemon_rss_mb"] = max(fig.get("daemon_rss_mb", 0.0), vm_kb(d.pid, "VmHWM"))
        d.close()
        # a new daemon over the index cached on disk: the warm click, then context paged
        d = Daemon(work, cache)
        t, handle = d.click(path)
        add("click_warm", t)
        t, res = timed(lambda: d.request("session/context", {"session": handle, "offset": -50}))
        if "messages" in res and len(res["messages"]) <= 50:
            add("context_page", t)
        fig["daemon_rss_mb"] = max(fig["daemon_rss_mb"], vm_kb(d.pid, "VmHWM"))
        d.close()
        # a new daemon and an empty cache: the sessions listed, indexed ahead in the quiet
        # moment that follows (lsp/features/preindex.py), then the click
        ahead = work / "cache-ahead"
        d = Daemon(work, ahead)
        d.request("session/list", {"cwd": "/home/dev/project"})
        t0 = time.perf_counter()
        while not any(ahead.rglob("*.view")):
            if time.perf_counter() - t0 > 900:
                raise SystemExit("the listed session was not indexed ahead")
            time.sleep(0.02)
        add("ahead_ready", time.perf_counter() - t0)
        time.sleep(0.2)  # the copy's exit
        t, handle = d.click(path)
        add("click_ahead", t)
        d.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)


def external_append(d: Daemon, handle: str, path: Path) -> float:
    """One line appended by another process's single write -> didChange -> the row in a page."""
    before = len(d.client.notifications)
    leaf = d.request("session/view", {"session": handle, "limit": 0})["leafId"]
    line = orjson.dumps(
        {
            "type": "message",
            "id": "feel0001",
            "parentId": leaf,
            "timestamp": "2026-01-01T00:00:00.000Z",
            "message": {"role": "user", "content": "probe from the agent"},
        }
    )
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        os.write(fd, line + b"\n")
        t0 = time.perf_counter()
    finally:
        os.close(fd)
    deadline = t0 + 10
    while time.perf_counter() < deadline:
        if any(m == "session/didChange" for m, _ in d.client.notifications[before:]):
            break
        time.sleep(0.0005)
    else:
        raise SystemExit("no session/didChange within 10 s of an external append")
    page = d.rows(handle)
    if not any(r["id"] == "feel0001" for r in page.get("window", page)["rows"]):
        raise SystemExit("the appended row is not in the page around the leaf")
    return time.perf_counter() - t0


def library(src: Path) -> dict[str, float]:
    code = r"""
import json, sys, time, tempfile
from sessiontree.core import SessionManager
mgr = SessionManager.open(sys.argv[1])
out = {}
for key, fn in (("get_tree", mgr.get_tree), ("get_branch", mgr.get_branch)):
    times = []
    for _ in range(3):  # (the previous answer is held while the next is made)
        t = time.perf_counter(); r = fn(); times.append(time.perf_counter() - t)
    out[key] = min(times)
    out[key + "_first"] = times[0]
work = tempfile.mkdtemp()
m = SessionManager.create(work, session_dir=work)
m.append_message({"role": "user", "content": "hello", "timestamp": 1})
# the first assistant message is what makes the file exist (the agent's rule)
m.append_message({"role": "assistant", "content": [{"type": "text", "text": "hi"}], "provider": "p",
                  "model": "m", "stopReason": "stop", "timestamp": 2})
m.flush()
msg = {"role": "user", "content": [{"type": "text", "text": "x" * 300}], "timestamp": 3}
best = float("inf")
for _ in range(3):
    t = time.perf_counter()
    for _ in range(1000):
        m.append_message(msg)
    m.flush()
    best = min(best, time.perf_counter() - t)
out["appends_1000"] = best
print(json.dumps(out))
"""
    work = Path(tempfile.mkdtemp(prefix="st-feel-lib-"))
    copy = work / src.name
    shutil.copyfile(src, copy)
    env = {
        **os.environ,
        "XDG_CACHE_HOME": str(work / "cache"),
        "XDG_STATE_HOME": str(work / "state"),
        "PI_CODING_AGENT_DIR": str(work / "agent"),
        "PYTHONPATH": os.pathsep.join([str(ROOT / "server"), str(ROOT / "protocol")]),
    }
    try:
        proc = subprocess.run(
            [sys.executable, "-c", code, str(copy)], env=env, capture_output=True, text=True, check=True
        )
        return {k: float(v) for k, v in json.loads(proc.stdout.strip().splitlines()[-1]).items()}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def fmt(v: float | None) -> str:
    if v is None:
        return "-"
    return f"{v * 1000:,.0f} ms" if v < 10 else f"{v:.1f} s"


def render(
    figs: list[dict[str, Any]], repeat: int, load: tuple[tuple[float, ...], tuple[float, ...]]
) -> list[str]:
    uname = platform.uname()
    out = [
        f"Generated by `benchmarks/editor_feel.py` on {time.strftime('%Y-%m-%d %H:%M')} ({uname.machine}, "
        f"{os.cpu_count()} cores, Python {platform.python_version()}), {repeat} rounds; each cell is the "
        "best round, then (median / worst), then the ratio of the best to the floor. Load average before: "
        f"{', '.join(f'{x:.2f}' for x in load[0])}; after: {', '.join(f'{x:.2f}' for x in load[1])}.",
        "",
        "| what a person does | target | "
        + " | ".join(f"{f['entries']:,} entries ({f['size_mb']:.0f} MB)" for f in figs)
        + " |",
        "|---|---|" + "---|" * len(figs),
    ]
    out.append(
        "| floor: read the file + `orjson.loads` every line | | "
        + " | ".join(fmt(f["floor"]) for f in figs)
        + " |"
    )
    verdicts: list[str] = []
    for key, label, ratio in ROWS_100K:
        cells = []
        for f in figs:
            v = f.get(key)
            if v is None:
                cells.append("-")
                continue
            cells.append(
                f"{fmt(v)} ({fmt(f.get(key + '_median'))} / {fmt(f.get(key + '_max'))}) {v / f['floor']:.2f}x"
            )
            limit = None
            if f["entries"] == 100_000 and ratio is not None:
                limit = ratio * f["floor"]
                tlabel = f"<= {ratio}x floor ({fmt(limit)})"
            elif f["entries"] == 1_000_000 and key in ABS_1M:
                limit = ABS_1M[key]
                tlabel = f"<= {fmt(limit)}"
            if limit is not None:
                verdicts.append(
                    f"| {label}, {f['entries']:,} | {tlabel} | {fmt(v)} | {'met' if v <= limit else '**missed**'} |"
                )
        target = f"<= {ratio}x floor (100k)" if ratio is not None else ""
        out.append(f"| {label} | {target} | " + " | ".join(cells) + " |")
    out.append(
        "| daemon peak memory (VmHWM) | <= 1 GB (1M) | "
        + " | ".join(f"{f.get('daemon_rss_mb', float('nan')):.0f} MB" for f in figs)
        + " |"
    )
    for f in figs:
        if f["entries"] == 1_000_000 and "daemon_rss_mb" in f:
            v = f["daemon_rss_mb"]
            verdicts.append(
                f"| daemon peak memory, 1,000,000 | <= 1024 MB | {v:.0f} MB | {'met' if v <= 1024 else '**missed**'} |"
            )
    lib = [f for f in figs if "get_tree" in f]
    if lib:
        out += [
            "",
            "| library (fresh process, best of 3, each call while the previous answer is held) | reference (Bun, 100k) | "
            + " | ".join(f"{f['entries']:,}" for f in lib)
            + " |",
            "|---|---|" + "---|" * len(lib),
        ]
        for key, label in (
            ("get_tree", "`get_tree`"),
            ("get_branch", "`get_branch` (leaf)"),
            ("appends_1000", "1,000 appends, then flush"),
        ):
            out.append(
                f"| {label} | {fmt(REFERENCE_100K[key])} | "
                + " | ".join(f"{fmt(f[key])} {f[key] / f['floor']:.2f}x" for f in lib)
                + " |"
            )
            if key + "_first" in lib[0]:
                out.append(
                    f"| {label}, its first call | | "
                    + " | ".join(
                        f"{fmt(f[key + '_first'])} {f[key + '_first'] / f['floor']:.2f}x" for f in lib
                    )
                    + " |"
                )
            f100 = next((f for f in lib if f["entries"] == 100_000), None)
            if f100:
                limit = {
                    "get_tree": f100["floor"],
                    "get_branch": 0.3 * f100["floor"],
                    "appends_1000": REFERENCE_100K["appends_1000"],
                }[key]
                verdicts.append(
                    f"| {label}, 100,000 | <= {fmt(limit)} | {fmt(f100[key])} | {'met' if f100[key] <= limit else '**missed**'} |"
                )
    out += ["", "| against the targets | target | measured | |", "|---|---|---|---|", *verdicts]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="100000,1000000")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", help="also write the table to this file")
    a = ap.parse_args()
    load0 = os.getloadavg()
    figs = []
    for n in (int(s) for s in a.sizes.split(",")):
        fig = measure(n, a.repeat if n <= 200_000 else max(1, a.repeat - 1))
        print(json.dumps({k: round(v, 4) if isinstance(v, float) else v for k, v in fig.items()}), flush=True)
        figs.append(fig)
    lines = render(figs, a.repeat, (load0, os.getloadavg()))
    print("\n".join(lines))
    if a.out:
        Path(a.out).write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
