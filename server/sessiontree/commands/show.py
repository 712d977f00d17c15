"""`sessiontree show FILE [--json]`: what a session file holds, without changing it.

Prints the header, the number of entries per type (and per message role), the leaf, labels
and what the lenient loader dropped. The file is opened read-only: no migration is written
and nothing is repaired. Exit code 0, 1 for a file without a valid session header, 2 when
the file cannot be read.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from typing import Any


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "show",
        help="summarize one session file (header, entry counts, leaf, dropped lines)",
        description="Summarize a session file without changing it.",
    )
    p.add_argument("file", metavar="FILE", help="a session file (.jsonl)")
    p.add_argument("--json", action="store_true", help="print JSON")


def summarize(path: str) -> dict[str, Any]:
    """The summary `show` prints, as a JSON-compatible dict."""
    from sessiontree.core.manager import SessionManager

    mgr = SessionManager.open(path, read_only=True)
    types: Counter[str] = Counter()
    roles: Counter[str] = Counter()
    for sk in mgr.index.skeletons():
        types[str(sk.type)] += 1
        if sk.type == "message":
            roles[str(sk.role)] += 1
    rep = mgr.load_report
    leaf = mgr.get_leaf_id()
    out: dict[str, Any] = {
        "path": os.path.abspath(path),
        "header": mgr.get_header(),
        "entryCount": len(mgr.index),
        "types": dict(sorted(types.items())),
        "roles": dict(sorted(roles.items())),
        "leafId": leaf,
        "branchLength": len(mgr.index.path_to_root(leaf)),
        "labels": [{"targetId": t, "label": lbl} for t, lbl in mgr.index.labels.items()],
        "usage": mgr.get_usage_statistics(),
        "dropped": {
            "skippedLines": rep.skipped_lines,
            "tornTail": rep.torn_tail,
            "regions": [
                {"line": d.line, "offset": d.offset, "length": d.length, "reason": d.reason}
                for d in rep.dropped
            ],
        },
    }
    if rep.migrated_from is not None:
        out["migratedFrom"] = rep.migrated_from
    return out


def run(args: argparse.Namespace) -> int:
    from sessiontree.core.errors import InvalidSessionFileError, SessionTreeError

    path = args.file
    try:
        info = summarize(path)
    except FileNotFoundError:
        print(f"sessiontree show: {path}: no such file", file=sys.stderr)
        return 2
    except IsADirectoryError:
        print(f"sessiontree show: {path}: is a directory", file=sys.stderr)
        return 2
    except InvalidSessionFileError as exc:
        print(f"sessiontree show: {path}: {exc.reason}", file=sys.stderr)
        return 1
    except (OSError, SessionTreeError) as exc:
        print(f"sessiontree show: {path}: {exc}", file=sys.stderr)
        return 2
    if args.json:
        sys.stdout.write(json.dumps(info, ensure_ascii=False, indent=2) + "\n")
        return 0
    h = info["header"] or {}
    print(f"file:     {info['path']}")
    print(f"session:  {h.get('id')}  version {h.get('version', 1)}  cwd {h.get('cwd')}")
    if h.get("title"):
        print(f"title:    {h.get('title')}")
    if h.get("parentSession"):
        print(f"parent:   {h.get('parentSession')}")
    print(f"created:  {h.get('timestamp')}")
    print(f"entries:  {info['entryCount']}")
    for t, n in info["types"].items():
        extra = ""
        if t == "message" and info["roles"]:
            extra = "  (" + ", ".join(f"{r} {c}" for r, c in info["roles"].items()) + ")"
        print(f"  {t:24s} {n:7d}{extra}")
    print(f"leaf:     {info['leafId']}  (path of {info['branchLength']} entries)")
    if info["labels"]:
        shown = ", ".join(f"{x['targetId']}={x['label']}" for x in info["labels"][:5])
        more = len(info["labels"]) - 5
        print(f"labels:   {len(info['labels'])}: {shown}" + (f", ... ({more} more)" if more > 0 else ""))
    if "migratedFrom" in info:
        print(f"version:  v{info['migratedFrom']} file (would be migrated to v3 on open)")
    d = info["dropped"]
    if d["skippedLines"] or d["tornTail"]:
        print(
            f"dropped:  {d['skippedLines']} unreadable line(s), torn tail: {'yes' if d['tornTail'] else 'no'}"
        )
        for r in d["regions"]:
            print(f"  line {r['line']}: {r['reason']} ({r['length']} bytes at offset {r['offset']})")
    else:
        print("dropped:  nothing")
    return 0
