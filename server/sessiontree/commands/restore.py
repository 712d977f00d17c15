"""`sessiontree restore FILE --to ID [--files|--conversation|--both] [--dry-run]
[--include-unknown] [--undo] [--root DIR]... [--json]`: bring the workspace's files (and, as a
separate choice, the conversation) to a node of a session, on any branch.

The files go through `core.checkpoints` in this process: the plan (each file's status and
exact diff, docs/checkpoints.md), then, unless ``--dry-run``, its apply (re-checked against
the disk, backed up, journaled; ``--undo`` puts back the last restore). Files are written only
inside the roots: ``--root`` (repeatable), else the session's working directory. The
conversation is the daemon's navigation (`session/navigate`: the leaf the editors open on),
so ``--conversation`` and ``--both`` ask a `sessiontree serve` started for the call.

Exit codes: 0 done (files left as `conflict` or `unknown` are listed); 1 a file changed
between the plan and its write (nothing written), or the conversation could not move;
2 the file cannot be read or ID is not in it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from sessiontree.commands.common import (
    EXIT_OK,
    EXIT_PROBLEMS,
    EXIT_UNUSABLE,
    entry_not_found,
    fail,
    open_for_viewing,
)


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "restore",
        help="restore the workspace's files and/or the conversation to a node (any branch)",
        description=(
            "Bring the files the agent changed to their content at a node (a three-way merge that keeps "
            "your edits since), and/or move the conversation there. --dry-run prints each file's diff."
        ),
        epilog="exit codes: 0 done; 1 a file changed meanwhile or the conversation could not move; 2 bad file or ID.",
    )
    p.add_argument("file", metavar="FILE", help="a session file (.jsonl)")
    p.add_argument("--to", metavar="ID", help="the node to restore to")
    part = p.add_mutually_exclusive_group()
    part.add_argument(
        "--files", dest="part", action="store_const", const="files", help="the files only (default)"
    )
    part.add_argument(
        "--conversation",
        dest="part",
        action="store_const",
        const="conversation",
        help="the conversation only",
    )
    part.add_argument(
        "--both", dest="part", action="store_const", const="both", help="files and conversation"
    )
    p.add_argument("--dry-run", action="store_true", help="print what would change, write nothing")
    p.add_argument(
        "--include-unknown",
        action="store_true",
        help="also write files whose content at the current node is not known (a backup is kept)",
    )
    p.add_argument("--undo", action="store_true", help="put back the files of the last restore of FILE")
    p.add_argument(
        "--root",
        action="append",
        metavar="DIR",
        help="a directory files may be written in (default: the session's cwd)",
    )
    p.add_argument("--json", action="store_true", help="print JSON")


def _roots(args: argparse.Namespace, mgr: Any) -> list[str]:
    if args.root:
        return [os.path.abspath(r) for r in args.root]
    cwd = mgr.get_cwd()
    return [cwd] if cwd and os.path.isdir(cwd) else [os.getcwd()]


def _file_dict(f: Any) -> dict[str, Any]:
    return {
        "path": f.path,
        "displayPath": f.display,
        "status": f.status,
        "reason": f.reason,
        "hashBefore": f.hash_before,
        "hashAfter": f.hash_after,
        "diff": f.diff,
    }


def _print_files(files: list[Any], diffs: bool) -> None:
    width = max((len(f.status) for f in files), default=0)
    for f in files:
        why = f"  ({f.reason})" if f.reason else ""
        print(f"{f.status:<{width}}  {f.display}{why}")
    if diffs:
        for f in files:
            if f.diff:
                print()
                sys.stdout.write(f.diff if f.diff.endswith("\n") else f.diff + "\n")


def _conversation(path: str, target: str) -> tuple[int, str]:
    from sessiontree.client import Client, RpcError

    real = os.path.realpath(path)
    client = Client.spawn(init_options={"allowedRoots": [os.path.dirname(real)], "watch": False})
    try:
        handle = client.request("session/open", {"path": real})["session"]
        res = client.request("session/navigate", {"session": handle, "targetId": target})
        return EXIT_OK, f"conversation: leaf {res['oldLeafId']} -> {res['newLeafId']}"
    except RpcError as exc:
        return EXIT_PROBLEMS, f"conversation not moved: {exc}"
    finally:
        client.close()


def run(args: argparse.Namespace) -> int:
    from sessiontree.core import checkpoints as ck
    from sessiontree.core.errors import ConflictError
    from sessiontree.core.sources.foreign import claude_root

    if not args.undo and not args.to:
        return fail("restore", "--to ID is needed (or --undo)")
    mgr = open_for_viewing("restore", args.file)
    if mgr is None:
        return EXIT_UNUSABLE
    store = ck.SnapshotStore()
    roots = _roots(args, mgr)
    never = ck.never_written()
    session_file = mgr.get_session_file()
    if args.undo:
        done = ck.undo_last(store, session_file, roots, excluded=never, dry_run=args.dry_run)
        if done is None:
            print("nothing to undo: no restore of this session is in effect")
            return EXIT_OK
        if args.json:
            out = {
                "written": [_file_dict(f) for f in done.written],
                "skipped": [_file_dict(f) for f in done.skipped],
            }
            sys.stdout.write(json.dumps(out, ensure_ascii=False, indent=2) + "\n")
        else:
            print(f"{'would undo' if args.dry_run else 'undid'} restore {done.record.undoes}")
            _print_files(done.written + done.skipped, args.dry_run)
        return EXIT_OK
    if mgr.get_entry(args.to) is None:
        return entry_not_found("restore", args.to)
    part = args.part or "files"
    lines: list[str] = []
    code = EXIT_OK
    result: dict[str, Any] = {"target": args.to, "roots": roots}
    if part in ("files", "both"):
        ck.recover(store)
        base = ck.files_at(store, session_file, mgr.get_leaf_id())
        plan = ck.plan_restore(
            mgr,
            args.to,
            roots,
            base_id=base,
            include_unknown=args.include_unknown,
            excluded=never,
            store=store,
            claude_history=os.path.join(os.path.dirname(claude_root()), "file-history"),
        )
        result["base"] = plan.base_id
        result["files"] = [_file_dict(f) for f in plan.files]
        result["commands"] = [{"entryId": e, "command": c} for e, c in plan.commands]
        if not args.json:
            print(f"files: from {plan.base_id} to {args.to} (roots: {', '.join(roots)})")
            _print_files(plan.files, args.dry_run)
            for _, cmd in plan.commands:
                print(f"note: a command ran on the way and may have changed other files: {cmd}")
        if not args.dry_run:
            try:
                applied = ck.apply_plan(plan, store, roots, token=plan.token, excluded=never)
            except ConflictError as exc:
                return fail("restore", str(exc))
            result["backupId"] = applied.record.id if applied.written else None
            if applied.written:
                lines.append(
                    f"wrote {len(applied.written)} file(s); undo with: sessiontree restore {args.file} --undo"
                )
            else:
                lines.append("no file written")
    if part in ("conversation", "both"):
        if args.dry_run:
            lines.append(f"conversation: would move the leaf to {args.to}")
        else:
            code, line = _conversation(args.file, args.to)
            lines.append(line)
    if args.json:
        result["messages"] = lines
        sys.stdout.write(json.dumps(result, ensure_ascii=False, indent=2) + "\n")
    else:
        for line in lines:
            print(line)
    return code
