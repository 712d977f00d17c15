"""`sessiontree doctor FILE... | --all [--repair [--migrate]] [--json]`: check session files.

Exit code: 0 when every file is healthy (after repair, when `--repair` is given; notes
such as an old version that the next write migrates do not count), 1 when problems remain,
2 on a usage error or a file that cannot be checked: missing, unreadable, not a regular
file, empty, or not a pi session at all (a Claude Code or Codex transcript, binary data).
A headerless file with pi entries is a damaged session: problems, exit 1. Reports go to
stdout, errors to stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from sessiontree.commands.common import EXIT_OK, EXIT_PROBLEMS, EXIT_UNUSABLE, fail, missing_agent_dir
from sessiontree.core.doctor import DoctorError, check_file, repair_file
from sessiontree.core.format.words import counted


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
        epilog="exit codes: 0 every file healthy (notes such as an old version do not count); "
        "1 problems found (or left after --repair); 2 a file cannot be checked (missing, "
        "unreadable, empty, not a pi session) or bad arguments.",
    )
    p.add_argument("files", nargs="*", metavar="FILE", help="session files (.jsonl) to check")
    p.add_argument("--all", action="store_true", help="check every session under the agent dir")
    p.add_argument(
        "--agent-dir",
        help="agent dir for --all (default: $PI_CODING_AGENT_DIR, else every agent dir of pi's family that exists)",
    )
    p.add_argument("--blobs-dir", help="blob store to verify references against")
    p.add_argument("--repair", action="store_true", help="write a repaired file (keeps a quarantine copy)")
    p.add_argument("--migrate", action="store_true", help="with --repair: also migrate old versions")
    p.add_argument("--json", action="store_true", help="print a JSON report")


def _all_files(agent_dir: str | None) -> list[str]:
    from sessiontree.core.discovery import agent_homes

    # the agent dir given, else every one of pi's family that exists (as `ls --all` lists)
    found: set[str] = set()
    for home in agent_homes(agent_dir):
        root = Path(home.sessions_root)
        if root.is_dir():
            found.update(str(p) for p in root.rglob("*.jsonl") if p.is_file())
    return sorted(found)


def _needs_repair(report: Any, migrate: bool) -> bool:
    return not report.ok or (migrate and "needs-migration" in report.kinds())


def run(args: argparse.Namespace) -> int:
    files: list[str] = list(args.files)
    if args.all:
        agent_dir = os.path.abspath(os.path.expanduser(args.agent_dir)) if args.agent_dir else None
        problem = missing_agent_dir(agent_dir)
        if problem is not None:
            return fail("doctor", problem)
        files.extend(_all_files(agent_dir))
    elif not files:
        return fail("doctor", "give FILE... or --all")
    if args.migrate and not args.repair:
        return fail("doctor", "--migrate needs --repair")

    out: list[dict[str, Any]] = []
    code = EXIT_OK
    for f in files:
        entry: dict[str, Any] = {"path": os.path.abspath(f)}
        try:
            report = check_file(f, blobs_dir=args.blobs_dir)
            entry.update(report.to_dict())
            unusable = report.unusable
            if unusable is not None:
                # Not a session at all: nothing to report per line and nothing to repair.
                raise DoctorError(entry["path"], _unusable_reason(f, unusable))
            remaining = [p for p in report.problems if not p.is_note]
            if args.repair and report.agent is not None:
                entry["repair"] = {"changes": [], "refused": f"read-only: {report.agent} session"}
            elif args.repair and _needs_repair(report, args.migrate):
                result = repair_file(f, migrate=args.migrate, blobs_dir=args.blobs_dir)
                entry["repair"] = result.to_dict()
                remaining = [p for p in result.remaining if not p.is_note]
            if remaining:
                code = max(code, EXIT_PROBLEMS)
        except DoctorError as exc:
            entry["error"] = exc.reason
            code = EXIT_UNUSABLE
            fail("doctor", f"{entry['path']}: {exc.reason}")
        out.append(entry)
        if not args.json and "error" not in entry:
            _print_human(entry)
    if args.json:
        json.dump({"ok": code == EXIT_OK, "files": out}, sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
    elif args.all and not files:
        print("no session files found")
    return code


def _unusable_reason(path: str, problem: Any) -> str:
    if problem.kind == "empty":
        from sessiontree.core.sources.sniff import not_a_session_reason

        return str(not_a_session_reason(b""))
    return str(problem.message)


# Above this many findings of one kind, the human report shows the first few and a count.
_GROUP_ABOVE = 5
_GROUP_SHOWN = 3

# What a run of findings of one kind is called in the summary line.
_PLURALS = {
    "dropped-line": "unreadable line ranges",
    "invalid-entry": "values that are not entries",
    "missing-id": "entries without an id",
    "duplicate-id": "duplicate ids",
    "orphan": "entries whose parent is not in the file",
    "cycle": "parent cycles",
    "dangling-label": "labels whose target is not in the file",
    "dangling-compaction-anchor": "compactions whose kept entry is not on their path",
    "invalid-blob-ref": "malformed blob references",
    "missing-blob": "missing blobs",
    "corrupt-blob": "corrupt blobs",
    "extra-header": "extra session headers",
}


def _problem_line(p: dict[str, Any]) -> str:
    where = f"line {p['line']}: " if "line" in p else ""
    ident = f" [{p['entryId']}]" if "entryId" in p else ""
    return f"{where}{p['severity']}: {p['kind']}{ident}: {p['message']}"


def _grouped_lines(problems: list[dict[str, Any]], indent: str) -> list[str]:
    """One line per finding, except that a long run of one kind (a binary region, a
    hundred missing blobs) is one summary line and its first few findings."""
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for p in problems:
        by_kind.setdefault(p["kind"], []).append(p)
    lines: list[str] = []
    for kind, group in by_kind.items():
        if len(group) <= _GROUP_ABOVE:
            lines += [indent + _problem_line(p) for p in group]
            continue
        what = _PLURALS.get(kind, "findings of this kind")
        summary = f"{group[0]['severity']}: {kind}: {len(group)} {what}"
        spans = [(p["offset"], p["offset"] + p["length"]) for p in group if "offset" in p and "length" in p]
        if spans:
            total = sum(b - a for a, b in spans)
            summary += f", {total} bytes between bytes {spans[0][0]} and {spans[-1][1]}"
        lines.append(f"{indent}{summary} (first {_GROUP_SHOWN} shown)")
        lines += [indent + "  " + _problem_line(p) for p in group[:_GROUP_SHOWN]]
    return lines


def _print_human(entry: dict[str, Any]) -> None:
    path = entry["path"]
    findings = entry.get("problems", [])
    problems = [p for p in findings if p["severity"] != "note"]
    notes = [p for p in findings if p["severity"] == "note"]
    if not problems:
        version = entry.get("version")
        facts = counted(entry.get("entryCount", 0), "entry") + (
            f", version {version}" if version is not None else ""
        )
        print(f"{path}: ok ({facts})")
    else:
        count = f"{len(problems)} problem(s)" + (f", {len(notes)} note(s)" if notes else "")
        print(f"{path}: {count}")
        for line in _grouped_lines(problems, "  "):
            print(line)
    for n in notes:
        print(f"  note: {n['kind']}: {n['message']}")
    repair = entry.get("repair")
    if repair is not None:
        if repair["changes"]:
            print(f"  repaired; original kept as {repair['quarantinedCopy']}")
            for c in repair["changes"]:
                print(f"    - {c}")
        else:
            print("  nothing to repair safely; the file is unchanged")
        remaining = [p for p in repair["remaining"] if p["severity"] != "note"]
        for line in _grouped_lines(remaining, "  remaining "):
            print(line)
