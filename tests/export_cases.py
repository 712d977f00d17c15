"""Exports, comparisons and tree drawings of many sessions, as the code before streaming
made them: the digests in ``fixtures/golden/export/streamed-sha256.json``.

The exports, `diff` and `tree` read and write a page at a time (docs/reliability.md, big
sessions in the command line); the documents they make must be the very documents the
whole-document code made. This module names every case (a session, what is asked of it)
and makes its output through public functions only, so the same cases run against the
code before (``PYTHONPATH=<old checkout>/server:<old checkout>/protocol python
tests/export_cases.py --write DIR``, DIR holding the sessions `write_sessions` made) and
against the code now (tests/reliability/test_big_cli.py).

The sessions: the demo, the real corpus (``../shared``), generated ones
(benchmarks/gen_corpus.py, with branches every few dozen entries) and `tricky_session`:
tool results long after their calls, call ids used twice, results with no call or before
it, call ids that are secrets (two of them redacted to the same text, one spelled as a
redaction already), images, summaries, labels, unknown entry types, numbers JSON writes
in more than one way, and branches under one node.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DEMO = ROOT / "server" / "sessiontree" / "data" / "demo-session.jsonl"
GEN = ROOT / "benchmarks" / "gen_corpus.py"
DIGESTS = HERE / "fixtures" / "golden" / "export" / "streamed-sha256.json"
REAL = ROOT.parent / "shared" / "fixtures" / "real"

#: HOME while the cases run (a tool's ``~/`` path is shown relative to it): the same for the
#: code before and the code now.
CASE_HOME = "/home/dev"

SECRET_A = "sk-ant-api03-" + "A" * 40
SECRET_B = "sk-ant-api03-" + "B" * 40


def _line(obj: dict[str, Any]) -> str:
    return json.dumps(obj, ensure_ascii=False)


def tricky_session(path: Path, seed: int = 3, turns: int = 400) -> None:
    """A session of a few thousand entries with every pairing and rendering case the
    conversation has (see the module doc), deterministic for a seed."""
    rng = random.Random(seed)
    lines = [
        _line(
            {
                "type": "session",
                "version": 3,
                "id": f"tricky-{seed}",
                "timestamp": "2026-01-01T00:00:00.000Z",
                "cwd": "/work/tricky",
            }
        )
    ]
    n = 0
    ids: list[str] = []
    parent: str | None = None

    def add(entry: dict[str, Any], under: str | int | None = -1) -> str:
        nonlocal n, parent
        n += 1
        eid = f"t{n:05d}"
        entry = {
            "type": entry.pop("type"),
            "id": eid,
            "parentId": parent if under == -1 else under,
            "timestamp": f"2026-01-01T{n // 3600 % 24:02d}:{n // 60 % 60:02d}:{n % 60:02d}.000Z",
            **entry,
        }
        lines.append(_line(entry))
        ids.append(eid)
        parent = eid
        return eid

    def msg(role: str, content: Any, **more: Any) -> dict[str, Any]:
        return {"type": "message", "message": {"role": role, "content": content, **more}}

    def assistant(blocks: list[dict[str, Any]], **more: Any) -> dict[str, Any]:
        return msg("assistant", blocks, provider="prov", model="m-1", stopReason="toolUse", **more)

    def call(cid: Any, name: str = "bash", **args: Any) -> dict[str, Any]:
        return {"type": "toolCall", "id": cid, "name": name, "arguments": args or {"command": "ls"}}

    def result(cid: Any, text: str, error: bool = False, name: str = "bash") -> dict[str, Any]:
        return {
            "type": "message",
            "message": {
                "role": "toolResult",
                "toolCallId": cid,
                "toolName": name,
                "content": [{"type": "text", "text": text}],
                "isError": error,
            },
        }

    late: list[tuple[int, Any]] = []  # (turn to answer at, call id)
    branch_points: list[str] = []
    for t in range(turns):
        kind = t % 23
        add(
            msg(
                "user",
                f"turn {t}: "
                + " ".join(rng.choice(["fix", "the", "bug", "<b>", "![x](y)"]) for _ in range(8)),
            )
        )
        if kind == 0:  # parallel calls answered out of order, one never
            a, b, c = f"c{t}a", f"c{t}b", f"c{t}c"
            add(
                assistant(
                    [
                        {"type": "text", "text": "three at once"},
                        call(a),
                        call(b, "read", path="x.py"),
                        call(c),
                    ]
                )
            )
            add(result(b, "b's result"))
            add(result(a, "a's result", error=True))
        elif kind == 1:  # answered much later (after other turns)
            cid = f"late{t}"
            add(assistant([call(cid, "edit", path="a.py", oldText="x", newText="y")]))
            late.append((t + rng.randint(2, 40), cid))
        elif kind == 2:  # one call id in two messages: the later call takes the result
            cid = f"dup{t // 50}"
            add(assistant([call(cid, "write", path="d.py", content="one")]))
            add(assistant([call(cid, "write", path="d.py", content="two")]))
            add(result(cid, "written"))
            add(result(cid, "a second result for it"))
        elif kind == 3:  # a result with no call, and one before its call
            add(result(f"orphan{t}", "nobody asked"))
            add(result(f"early{t}", "too early"))
            add(assistant([call(f"early{t}")]))
        elif kind == 4:  # call ids that are secrets: two redact to the same text
            add(assistant([call(SECRET_A, "bash", command="echo a")]))
            add(assistant([call(SECRET_B, "bash", command="echo b")]))
            add(result(SECRET_A, "a done"))
            add(result("[REDACTED:anthropic-key]", "spelled as a redaction"))
            add(result(SECRET_B, "b done"))
        elif kind == 5:
            add({"type": "model_change", "provider": "prov", "modelId": f"m-{t}"})
            add({"type": "thinking_level_change", "thinkingLevel": rng.choice(["low", "high"])})
        elif kind == 6:
            add(
                {
                    "type": "compaction",
                    "summary": f"summary {t} with `code`",
                    "tokensBefore": 1000 + t,
                    "firstKeptEntryId": ids[-1],
                }
            )
        elif kind == 7:
            add({"type": "branch_summary", "summary": f"left a branch at {t}", "fromId": ids[-1]})
            add(msg("branchSummary", None, summary="inner branch summary"))
        elif kind == 8:
            add({"type": "label", "targetId": ids[-1], "label": f"mark {t}"})
            add({"type": "label", "targetId": ids[-3], "label": None})
        elif kind == 9:
            add({"type": "future_entry", "payload": {"x": t}})
            add({"type": "custom", "customType": "ext-state", "data": {"t": t}})
            add({"type": "custom_message", "customType": "note", "content": f"custom {t}", "display": True})
        elif kind == 10:  # numbers JSON writes in more than one way, in arguments
            add(
                assistant(
                    [
                        call(
                            f"num{t}",
                            "bash",
                            command="x",
                            big=12345678901234567890123,
                            f=1e16,
                            g=1e-7,
                            h=-0.0,
                            i=0.1,
                        )
                    ]
                )
            )
            add(result(f"num{t}", "ok"))
        elif kind == 11:
            add(
                assistant(
                    [
                        {"type": "thinking", "thinking": "hmm\n```\nfence"},
                        {"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="},
                        {"type": "image", "mimeType": "image/png", "data": "blob:sha256:" + "0" * 64},
                        {"type": "text", "text": "````\nfour ticks\n````"},
                    ],
                    errorMessage="overloaded" if t % 2 else None,
                )
            )
        elif kind == 12:
            add(msg("bashExecution", None, command="make test", output="ok\n" * 3, exitCode=t % 2))
            add(msg("custom", "hook said <script>", customType="hook"))
            add(msg("hookMessage", [{"type": "text", "text": "hooked"}]))
        elif kind == 13:  # a branch: a later turn under an earlier entry
            back = ids[rng.randrange(max(1, len(ids) - 30), len(ids))]
            branch_points.append(back)
            add(msg("user", f"try again from {back}"), under=back)
        elif kind == 14:
            add(msg("assistant", "plain string content", provider="prov", model="m-1", stopReason="stop"))
            add(msg("weird-role", [{"type": "text", "text": "unknown role"}]))
            if seed == 4:  # (the tree view of the code before fails on it: tree is drawn of seed 3)
                add({"type": "message", "message": "not a mapping"})
        else:
            cid = f"c{t}"
            add(assistant([{"type": "text", "text": f"doing {t}"}, call(cid, "read", path=f"f{t}.py")]))
            add(result(cid, "line\n" * rng.randint(1, 20)))
        for due, cid in [x for x in late if x[0] == t]:
            add(result(cid, f"late result for {cid}"))
            late.remove((due, cid))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def generated(path: Path, entries: int, branch_every: int, seed: int) -> None:
    """A session from benchmarks/gen_corpus.py."""
    subprocess.run(
        [
            sys.executable,
            str(GEN),
            str(path),
            str(entries),
            "--seed",
            str(seed),
            "--branch-every",
            str(branch_every),
        ],
        check=True,
        capture_output=True,
    )


def write_sessions(where: Path) -> dict[str, Path]:
    """Every generated session of the cases, written into ``where``; with the demo and the
    real corpus (when ``../shared`` is there): name -> path."""
    where.mkdir(parents=True, exist_ok=True)
    out: dict[str, Path] = {"demo": DEMO}
    for seed in (3, 4):
        p = where / f"tricky-{seed}.jsonl"
        tricky_session(p, seed)
        out[p.stem] = p
    for entries, every, seed in ((2500, 37, 11), (1200, 400, 12)):
        p = where / f"gen-{entries}-{seed}.jsonl"
        generated(p, entries, every, seed)
        out[p.stem] = p
    if REAL.is_dir():
        for p in sorted(REAL.glob("*.jsonl")):
            out[f"real-{p.stem}"] = p
    return out


#: The sessions the command line's `tree` and `diff` are run on (a process each).
CLI_SESSIONS = frozenset(
    {
        "demo",
        "tricky-3",
        "gen-2500-11",
        "real-twkrash-pi-0.85.1-branching",
        "real-claudecode-episodic-large-conversation",
        "real-pimono-large-session",
    }
)


def _nodes(mgr: Any) -> tuple[list[str], list[str]]:
    """A session's branch points (entries with more than one child) and tips, in file order."""
    idx = mgr.index
    _, children = idx.child_map()
    order = [i for i in idx.order() if isinstance(i, str)]
    points = [i for i in order if len(children.get(i, [])) > 1]
    tips = [i for i in order if not children.get(i)]
    return points, tips


def _sha(data: str | bytes) -> str:
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    return hashlib.sha256(raw).hexdigest()


def cases(sessions: dict[str, Path]) -> Iterator[tuple[str, Callable[[], str]]]:
    """(name, make) for every case: ``make()`` gives the output's digest (run them with
    ``HOME`` set to `CASE_HOME`)."""
    from sessiontree.core.compare import compare_nodes, render_side
    from sessiontree.core.export import export_session
    from sessiontree.core.export.redact import Redactor
    from sessiontree.core.ids import FixedClock, IdSource
    from sessiontree.core.session import SessionManager

    for name, path in sessions.items():
        try:
            mgr = SessionManager.open(str(path), read_only=True)
        except Exception:
            continue
        if mgr.get_leaf_id() is None:
            continue
        points, tips = _nodes(mgr)
        leaf = mgr.get_leaf_id()

        def export(mgr: Any = mgr, path: Path = path, **kw: Any) -> str:
            r = export_session(
                mgr,
                kw.pop("fmt"),
                clock=FixedClock(),
                ids=IdSource(seed=1, clock=FixedClock()),
                redactor=Redactor(),
                **kw,
            )
            if kw.get("dry_run"):
                return _sha(
                    json.dumps(
                        {
                            "entries": r.entries,
                            "counts": r.counts,
                            "findings": [f.to_dict() for f in r.findings],
                        },
                        ensure_ascii=False,
                    )
                )
            text = r.content.replace(str(path), "<source>")
            return _sha(text + f"\n{r.entries} {r.leaf_id} {r.redacted} {json.dumps(r.counts)}")

        for fmt in ("md", "html", "jsonl"):
            for redact in (None, True, False):
                yield (
                    f"{name} path {fmt} redact={redact}",
                    lambda f=fmt, r=redact, e=export: e(fmt=f, redact=r),
                )
        yield f"{name} path dry-run", lambda e=export: e(fmt="md", dry_run=True)
        others = [t for t in tips if t != leaf][:2]
        for t in others:
            yield f"{name} leaf {t} md", lambda t=t, e=export: e(fmt="md", leaf_id=t)
        roots = [i for i in mgr.index.order()[:1] if isinstance(i, str)]
        for node in (points[:2] + points[-1:] + roots)[:4]:
            for fmt in ("md", "html", "jsonl"):
                yield f"{name} subtree {node} {fmt}", lambda n=node, f=fmt, e=export: e(fmt=f, subtree_id=n)

        def diff(a: str, b: str, mgr: Any = mgr) -> str:
            cmp = compare_nodes(mgr, a, b)
            return _sha(
                json.dumps(cmp.to_dict(), ensure_ascii=False, sort_keys=True)
                + render_side(cmp, "a")
                + render_side(cmp, "b")
            )

        pairs = [(t, leaf) for t in others] + ([(points[0], leaf)] if points else [])
        for a, b in pairs:
            yield f"{name} diff {a} {b}", lambda a=a, b=b, d=diff: d(a, b)
        if name in CLI_SESSIONS:
            yield from _cli_cases(name, path, pairs)


def _run_cli(*args: str) -> str:
    env = dict(os.environ, NO_COLOR="1", SESSIONTREE_NO_INDEX_CACHE="1")
    r = subprocess.run(
        [sys.executable, "-m", "sessiontree", *args], capture_output=True, env=env, check=False
    )
    return _sha(r.stdout + b"\n" + str(r.returncode).encode())


def _cli_cases(
    name: str, path: Path, pairs: list[tuple[str, str]]
) -> Iterator[tuple[str, Callable[[], str]]]:
    """`tree` and `diff` as the command line prints them (standard output)."""
    p = str(path)
    for args in (
        (),
        ("--ids",),
        ("--filter", "all"),
        ("--filter", "no-tools", "--full-art"),
        ("--search", "the"),
    ):
        yield f"{name} cli tree {' '.join(args)}", lambda a=args: _run_cli("tree", p, *a)
    yield (
        f"{name} cli tree --json",
        lambda: _sha(
            json.dumps({k: v for k, v in json.loads(_raw_cli("tree", p, "--json")).items() if k != "path"})
        ),
    )
    for a, b in pairs[:1]:
        yield f"{name} cli diff {a} {b}", lambda a=a, b=b: _run_cli("diff", p, a, b)
        yield f"{name} cli diff --json {a} {b}", lambda a=a, b=b: _run_cli("diff", p, a, b, "--json")


def _raw_cli(*args: str) -> str:
    env = dict(os.environ, NO_COLOR="1", SESSIONTREE_NO_INDEX_CACHE="1")
    r = subprocess.run([sys.executable, "-m", "sessiontree", *args], capture_output=True, env=env, check=True)
    return r.stdout.decode("utf-8", "surrogateescape")


def digests(sessions: dict[str, Path]) -> dict[str, str]:
    """Every case's digest, by name."""
    out: dict[str, str] = {}
    for name, make in cases(sessions):
        try:
            out[name] = make()
        except Exception as exc:  # an error is an outcome too (its kind, not its text)
            out[name] = f"error {type(exc).__name__}"
    return out


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument(
        "--write", metavar="DIR", required=True, help="write the sessions here, the digests to the golden"
    )
    args = ap.parse_args()
    os.environ["HOME"] = CASE_HOME
    got = digests(write_sessions(Path(args.write)))
    DIGESTS.parent.mkdir(parents=True, exist_ok=True)
    DIGESTS.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"{len(got)} digests written to {DIGESTS}")
