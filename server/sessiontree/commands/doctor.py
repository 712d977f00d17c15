"""`sessiontree doctor FILE... | --all [--repair [--migrate]] [--json]`: check session files.

Exit code: 0 when every file is healthy (after repair, when `--repair` is given), 1 when
problems remain, 2 on a usage error or a file that cannot be read or written.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from sessiontree.core.doctor import DoctorError, check_file, repair_file


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "doctor",
        help="check session files for damage and optionally repair them",
        description=(
            "Check session files: dropped lines, torn tail, header, duplicate ids, orphans, cycles, "
            "dangling labels and compaction anchors, missing or corrupt blobs, old versions. "
            "--repair removes only what the loader drops anyway, after keeping the original "
            "as a quarantine copy beside the file."
        ),
    )
    p.add_argument("files", nargs="*", metavar="FILE", help="session files (.jsonl) to check")
    p.add_argument("--all", action="store_true", help="check every session under the agent dir")
    p.add_argument("--agent-dir", help="agent dir for --all (default: $PI_CODING_AGENT_DIR or ~/.xcsh/agent)")
    p.add_argument("--blobs-dir", help="blob store to verify references against")
    p.add_argument("--repair", action="store_true", help="write a repaired file (keeps a quarantine copy)")
    p.add_argument("--migrate", action="store_true", help="with --repair: also migrate old versions")
    p.add_argument("--json", action="store_true", help="print a JSON report")


def _agent_dir(explicit: str | None) -> Path:
    if explicit:
        return Path(os.path.abspath(os.path.expanduser(explicit)))
    env = os.environ.get("PI_CODING_AGENT_DIR")
    if env:
        return Path(os.path.abspath(os.path.expanduser(env)))
    return Path(os.path.expanduser("~/.xcsh/agent"))


def _all_files(agent_dir: Path) -> list[str]:
    root = agent_dir / "sessions"
    if not root.is_dir():
        return []
    return sorted(str(p) for p in root.rglob("*.jsonl") if p.is_file())


def run(args: argparse.Namespace) -> int:
    files: list[str] = list(args.files)
    if args.all:
        files.extend(_all_files(_agent_dir(args.agent_dir)))
    elif not files:
        print("sessiontree doctor: give FILE... or --all", file=sys.stderr)
        return 2
    if args.migrate and not args.repair:
        print("sessiontree doctor: --migrate needs --repair", file=sys.stderr)
        return 2

    out: list[dict[str, Any]] = []
    code = 0
    for f in files:
        entry: dict[str, Any] = {"path": os.path.abspath(f)}
        try:
            report = check_file(f, blobs_dir=args.blobs_dir)
            entry.update(report.to_dict())
            remaining = report.problems
            if args.repair and not report.ok:
                result = repair_file(f, migrate=args.migrate, blobs_dir=args.blobs_dir)
                entry["repair"] = result.to_dict()
                remaining = result.remaining
            if remaining:
                code = max(code, 1)
        except DoctorError as exc:
            entry["error"] = exc.reason
            code = 2
        out.append(entry)
        if not args.json:
            _print_human(entry)
    if args.json:
        json.dump({"ok": code == 0, "files": out}, sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
    elif args.all and not files:
        print("no session files found")
    return code


def _print_human(entry: dict[str, Any]) -> None:
    path = entry["path"]
    if "error" in entry:
        print(f"{path}: error: {entry['error']}")
        return
    problems = entry.get("problems", [])
    if not problems:
        print(f"{path}: ok ({entry.get('entryCount', 0)} entries, version {entry.get('version')})")
        return
    print(f"{path}: {len(problems)} problem(s)")
    for p in problems:
        where = f"line {p['line']}: " if "line" in p else ""
        ident = f" [{p['entryId']}]" if "entryId" in p else ""
        print(f"  {where}{p['severity']}: {p['kind']}{ident}: {p['message']}")
    repair = entry.get("repair")
    if repair is not None:
        if repair["changes"]:
            print(f"  repaired; original kept as {repair['quarantinedCopy']}")
            for c in repair["changes"]:
                print(f"    - {c}")
        else:
            print("  nothing to repair safely; the file is unchanged")
        for p in repair["remaining"]:
            print(f"  remaining {p['severity']}: {p['kind']}: {p['message']}")
