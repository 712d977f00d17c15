"""`sessiontree ls [--all] [--cwd DIR] [--session-dir DIR] [--json]`: list sessions.

Prints one line per session, newest first: modified time, message count, the session's
display name (`core.discovery.display_name`: the title, else the first user message's first
line, else the file name; the name the editors show) and the path. Exit code 0, or 2 when the directory cannot be read.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "ls",
        help="list sessions of a directory (or of every project)",
        description=(
            "List sessions newest first: modified time, message count, name (the title, else the first "
            "line of the first user message, else the file name; as the editors show it) and path."
        ),
    )
    p.add_argument("--all", action="store_true", help="every project under the agent dir's sessions root")
    p.add_argument("--cwd", help="the project directory (default: the current directory)")
    p.add_argument("--session-dir", help="list this sessions directory instead of the cwd's")
    p.add_argument(
        "--agent-dir",
        help="agent dir (default: $PI_CODING_AGENT_DIR, else every agent dir of pi's family that exists: "
        "~/.xcsh/agent, ~/.pi/agent, ~/.omp/agent and its profiles)",
    )
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument(
        "--agent",
        choices=("pi", "claude", "codex", "all"),
        default="all",
        help="whose sessions: pi's family (the agent dir), Claude Code (~/.claude/projects, "
        "$CLAUDE_CONFIG_DIR), Codex (~/.codex/sessions, $CODEX_HOME), or all that exist (default)",
    )


def run(args: argparse.Namespace) -> int:
    from sessiontree.commands.common import missing_agent_dir
    from sessiontree.core.discovery import (
        agent_homes,
        list_all_sessions_of_homes,
        list_sessions,
        list_sessions_of_dirs,
        session_dirs_of_homes,
    )

    agent = getattr(args, "agent", "all")
    others: list[Any] = []
    if not args.session_dir and agent != "pi":
        from sessiontree.commands.ls_agents import other_agents_exist, other_agents_sessions

        cwd = None if args.all else os.path.abspath(args.cwd or os.getcwd())
        others = sorted(other_agents_sessions(agent, cwd), key=lambda s: s.modified, reverse=True)
        if agent != "all":
            return _print(others, args.json)
        problem = missing_agent_dir(args.agent_dir)
        if problem is not None and other_agents_exist():
            # `all` lists the agents that exist: no pi agent dir is no error then (but
            # named, so that a typo in the variable is not mistaken for "no pi sessions").
            print(f"sessiontree ls: {problem}; listing the other agents' sessions", file=sys.stderr)
            return _print(others, args.json)
    try:
        if args.session_dir:
            sdir = os.path.abspath(args.session_dir)
            if not os.path.isdir(sdir):
                print(f"sessiontree ls: {sdir}: no such directory", file=sys.stderr)
                return 2
            sessions = list_sessions(sdir)
        else:
            problem = missing_agent_dir(args.agent_dir)
            if problem is not None:
                print(f"sessiontree ls: {problem}", file=sys.stderr)
                return 2
            # the agent dir given, else every one of pi's family that exists
            homes = agent_homes(args.agent_dir)
            if args.all:
                sessions = list_all_sessions_of_homes(homes)
            else:
                # Every directory encoding the agents use for this cwd; nothing is moved.
                cwd = os.path.abspath(args.cwd or os.getcwd())
                sessions = list_sessions_of_dirs(session_dirs_of_homes(cwd, homes))
    except OSError as exc:
        print(f"sessiontree ls: {exc.filename or ''}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    if others:
        sessions = sorted([*sessions, *others], key=lambda s: s.modified, reverse=True)
    return _print(sessions, args.json)


def _print(sessions: list[Any], as_json: bool) -> int:
    if as_json:
        out = [s.to_dict() for s in sessions]
        sys.stdout.write(json.dumps({"sessions": out}, ensure_ascii=False, indent=2) + "\n")
        return 0
    if not sessions:
        print("no sessions")
        return 0
    # which agent: pi's family by its dialect (xcsh, pi, omp), when the list mixes agents
    tags = [_agent_tag(s) for s in sessions]
    mixed = len(set(tags)) > 1
    for s, agent in zip(sessions, tags, strict=True):
        modified = s.modified.astimezone().strftime("%Y-%m-%d %H:%M")
        tag = f"{agent:<6}  " if mixed else ""
        msgs = "msg " if s.message_count == 1 else "msgs"
        print(f"{modified}  {tag}{s.message_count:5d} {msgs}  {s.display_name}  {s.path}")
    return 0


def _agent_tag(session: Any) -> str:
    agent = getattr(session, "agent", "pi")
    return str(getattr(session, "dialect", None) or agent) if agent == "pi" else str(agent)
