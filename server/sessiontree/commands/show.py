"""`sessiontree show FILE [--json]`: what a session file holds, without changing it.

Prints the header, the number of entries per type (and per message role), the leaf, labels
and what the lenient loader dropped. The file is opened read-only: no migration is written
and nothing is repaired. Exit code 0 (also when the loader dropped lines: `doctor` is the
verb that judges damage); 2 for a file that cannot be shown: missing, unreadable, empty (no
session has been written to it, so it has no id yet), without a session header or not a pi
session at all.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from typing import Any

from sessiontree.commands.common import (
    EXIT_OK,
    EXIT_UNUSABLE,
    open_for_viewing,
    text,
)
from sessiontree.core.format.words import counted


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "show",
        help="summarize one session file (header, entry counts, leaf, dropped lines)",
        description="Summarize a session file without changing it.",
        epilog="exit codes: 0 shown (even when the loader dropped lines); 2 the file cannot be shown "
        "(missing, unreadable, empty, no session header, not a pi session).",
    )
    p.add_argument("file", metavar="FILE", help="a session file (.jsonl)")
    p.add_argument("--json", action="store_true", help="print JSON")


def summarize(mgr: Any, path: str) -> dict[str, Any]:
    """The summary `show` prints for an open session, as a JSON-compatible dict."""
    types: Counter[str] = Counter()
    roles: Counter[str] = Counter()
    for sk in mgr.index.skeletons():
        types[text(sk.type, "(no type)")] += 1
        if sk.type == "message":
            roles[text(sk.role, "(no role)")] += 1
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
    agent = getattr(mgr, "agent", None)
    if agent is not None:
        # another agent's transcript, read through its reader (docs/other-agents.md)
        t = mgr.translation
        out["agent"] = agent
        out["resumeCommand"] = t.resume
        if t.parent_id is not None:
            out["parentId"] = t.parent_id
            out["parentKind"] = t.parent_kind
    return out


def run(args: argparse.Namespace) -> int:
    path = args.file
    mgr = open_for_viewing("show", path)
    if mgr is None:
        return EXIT_UNUSABLE
    info = summarize(mgr, path)
    if args.json:
        sys.stdout.write(json.dumps(info, ensure_ascii=False, indent=2) + "\n")
        return EXIT_OK
    h = info["header"] or {}
    version = h.get("version", 1)
    session = [text(h.get("id"), "(no id)"), f"version {text(version, '1')}"]
    if h.get("cwd") is not None:
        session.append(f"cwd {text(h.get('cwd'))}")
    print(f"file:     {info['path']}")
    if "agent" in info:
        names = {"claude": "Claude Code", "codex": "Codex"}
        session[1] = names.get(info["agent"], info["agent"]) + " transcript (read-only)"
    print(f"session:  {'  '.join(session)}")
    if info.get("resumeCommand"):
        print(f"resume:   {text(info['resumeCommand'])}")
    if info.get("parentId"):
        print(f"parent:   {info['parentId']} ({info['parentKind']})")
    if h.get("title"):
        print(f"title:    {text(h.get('title'))}")
    if h.get("parentSession"):
        print(f"parent:   {text(h.get('parentSession'))}")
    if h.get("timestamp") is not None:
        print(f"created:  {text(h.get('timestamp'))}")
    print(f"entries:  {info['entryCount']}")
    for t, n in info["types"].items():
        extra = ""
        if t == "message" and info["roles"]:
            extra = "  (" + ", ".join(f"{r} {c}" for r, c in info["roles"].items()) + ")"
        print(f"  {t:24s} {n:7d}{extra}")
    if info["leafId"] is None:
        print("leaf:     none (no entries)")
    else:
        print(f"leaf:     {info['leafId']}  (path of {counted(info['branchLength'], 'entry')})")
    if info["labels"]:
        shown = ", ".join(f"{x['targetId']}={text(x['label'])}" for x in info["labels"][:5])
        more = len(info["labels"]) - 5
        print(f"labels:   {len(info['labels'])}: {shown}" + (f", ... ({more} more)" if more > 0 else ""))
    if "migratedFrom" in info:
        print(f"version:  v{info['migratedFrom']} file (migrated to v3 on the next write to it)")
    d = info["dropped"]
    if d["skippedLines"] or d["tornTail"]:
        print(
            f"dropped:  {d['skippedLines']} unreadable line(s), torn tail: {'yes' if d['tornTail'] else 'no'}"
        )
        for r in d["regions"][:_REGIONS_SHOWN]:
            print(f"  line {r['line']}: {r['reason']} ({r['length']} bytes at offset {r['offset']})")
        more = len(d["regions"]) - _REGIONS_SHOWN
        if more > 0:
            print(f"  ... and {more} more region(s); `sessiontree doctor` lists them all")
    else:
        print("dropped:  nothing")
    return EXIT_OK


# A file of garbage has a dropped region per line; a few say enough.
_REGIONS_SHOWN = 5
