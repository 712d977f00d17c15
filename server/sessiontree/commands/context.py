"""`sessiontree context FILE [--leaf ID] [--llm] [--json]`: what the model would see.

Rebuilds the session context from the leaf (or from any entry with ``--leaf``): the
state (thinking level, models, mode, ...) and the messages, as readable text or JSON.
``--llm`` shows the messages after conversion for the model (summaries wrapped, bash
runs turned into user text, tool results paired). The file is opened read-only. Exit
code 0; 1 for an unknown ``--leaf`` or a file with no valid session header; 2 when the
file cannot be read.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "context",
        help="show what the model sees from a node (state and messages)",
        description="Rebuild the session context from the leaf or from any entry.",
    )
    p.add_argument("file", metavar="FILE", help="a session file (.jsonl)")
    p.add_argument("--leaf", metavar="ID", help="rebuild from this entry instead of the leaf")
    p.add_argument("--llm", action="store_true", help="show the messages converted for the model")
    p.add_argument("--json", action="store_true", help="print JSON")


def _block_text(block: Any) -> str:
    if not isinstance(block, dict):
        return str(block)
    btype = block.get("type")
    if btype == "text":
        return str(block.get("text", ""))
    if btype == "thinking":
        return "(thinking) " + str(block.get("thinking", ""))
    if btype == "toolCall":
        args = json.dumps(block.get("arguments"), ensure_ascii=False)
        return f"→ {block.get('name')}({args})  [{block.get('id')}]"
    if btype == "image":
        return f"[image {block.get('mimeType', '')}]".replace(" ]", "]")
    return f"[{btype}]"


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(_block_text(b) for b in content)
    return "" if content is None else json.dumps(content, ensure_ascii=False)


def message_lines(msg: dict[str, Any]) -> list[str]:
    """A readable rendering of one agent or LLM message."""
    role = msg.get("role")
    head = f"── {role}"
    body: str
    if role == "assistant":
        head += f" ({msg.get('provider')}/{msg.get('model')}, {msg.get('stopReason')})"
        body = _content_text(msg.get("content"))
        if msg.get("errorMessage"):
            body += ("\n" if body else "") + f"error: {msg.get('errorMessage')}"
    elif role == "toolResult":
        head += f" {msg.get('toolName')} [{msg.get('toolCallId')}]" + (" error" if msg.get("isError") else "")
        body = _content_text(msg.get("content"))
    elif role in ("custom", "hookMessage"):
        head += f" {msg.get('customType')}"
        body = _content_text(msg.get("content"))
    elif role == "compactionSummary":
        head += f" ({msg.get('tokensBefore')} tokens before)"
        body = str(msg.get("summary", ""))
    elif role == "branchSummary":
        head += f" (from {msg.get('fromId')})"
        body = str(msg.get("summary", ""))
    elif role == "bashExecution":
        head += f" exit {msg.get('exitCode')}"
        body = f"$ {msg.get('command')}\n{msg.get('output', '')}"
    elif role == "pythonExecution":
        body = f"{msg.get('code')}\n{msg.get('output', '')}"
    elif role == "fileMention":
        body = "\n".join(str(f.get("path")) for f in msg.get("files") or [] if isinstance(f, dict))
    else:
        body = _content_text(msg.get("content"))
    if msg.get("attribution"):
        head += f" · {msg.get('attribution')}"
    return [head + " ──", *body.rstrip("\n").split("\n")]


def run(args: argparse.Namespace) -> int:
    from sessiontree.core.errors import InvalidSessionFileError, SessionTreeError
    from sessiontree.core.manager import SessionManager
    from sessiontree.core.messages import convert_to_llm

    path = args.file
    try:
        if os.path.isdir(path):
            raise IsADirectoryError(path)
        if not os.path.exists(path):
            raise FileNotFoundError(path)
        mgr = SessionManager.open(path, read_only=True)
    except FileNotFoundError:
        print(f"sessiontree context: {path}: no such file", file=sys.stderr)
        return 2
    except IsADirectoryError:
        print(f"sessiontree context: {path}: is a directory", file=sys.stderr)
        return 2
    except InvalidSessionFileError as exc:
        print(f"sessiontree context: {path}: {exc.reason}", file=sys.stderr)
        return 1
    except (OSError, SessionTreeError) as exc:
        print(f"sessiontree context: {path}: {exc}", file=sys.stderr)
        return 2
    leaf = mgr.get_leaf_id()
    if args.leaf is not None:
        if mgr.get_entry(args.leaf) is None:
            print(f"sessiontree context: Entry {args.leaf} not found", file=sys.stderr)
            return 1
        leaf = args.leaf
    ctx = mgr.build_session_context(leaf)
    llm = convert_to_llm(ctx.messages) if args.llm else None
    if args.json:
        out = {"leafId": leaf, **ctx.to_dict()}
        if llm is not None:
            out["llmMessages"] = llm
        sys.stdout.write(json.dumps(out, ensure_ascii=False, indent=2) + "\n")
        return 0
    d = ctx.to_dict()
    print(f"leaf:      {leaf}")
    print(f"thinking:  {ctx.thinking_level}")
    models = ", ".join(f"{k}={v}" for k, v in ctx.models.items()) or "(none)"
    print(f"models:    {models}")
    print(
        f"mode:      {ctx.mode}"
        + (f" {json.dumps(ctx.mode_data, ensure_ascii=False)}" if ctx.mode_data is not None else "")
    )
    if "serviceTier" in d:
        print(f"tier:      {ctx.service_tier}")
    if ctx.active_context_name is not None:
        print(f"context:   {ctx.active_context_name} (tenant {ctx.active_context_tenant})")
    if ctx.injected_ttsr_rules:
        print(f"ttsr:      {', '.join(ctx.injected_ttsr_rules)}")
    if ctx.has_persisted_mcp_tool_selection:
        print(f"mcp tools: {', '.join(ctx.selected_mcp_tool_names) or '(none)'}")
    messages = llm if llm is not None else ctx.messages
    print(f"messages:  {len(messages)}" + (" (converted for the model)" if llm is not None else ""))
    for m in messages:
        print()
        print("\n".join(message_lines(m)))
    return 0
