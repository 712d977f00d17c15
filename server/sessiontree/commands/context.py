"""`sessiontree context FILE [--leaf ID] [--llm] [--json]`: what the model would see.

Rebuilds the session context from the leaf (or from any entry with ``--leaf``): the
state (thinking level, models, mode, ...) and the messages, as readable text or JSON.
``--llm`` shows the messages after conversion for the model (summaries wrapped, bash
runs turned into user text, tool results paired). The file is opened read-only. Exit
code 0; 2 for a file that cannot be shown (missing, unreadable, empty, no session header,
not a pi session) or an unknown ``--leaf``.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from sessiontree.commands.common import (
    EXIT_OK,
    EXIT_UNUSABLE,
    entry_not_found,
    open_for_viewing,
    text,
)


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "context",
        help="show what the model sees from a node (state and messages)",
        description="Rebuild the session context from the leaf or from any entry.",
        epilog="exit codes: 0 shown; 2 the file cannot be shown (missing, unreadable, empty, "
        "no session header, not a pi session) or --leaf is not in it.",
    )
    p.add_argument("file", metavar="FILE", help="a session file (.jsonl)")
    p.add_argument("--leaf", metavar="ID", help="rebuild from this entry instead of the leaf")
    p.add_argument("--llm", action="store_true", help="show the messages converted for the model")
    p.add_argument("--json", action="store_true", help="print JSON")


def _block_text(block: Any) -> str:
    if not isinstance(block, dict):
        return text(block)
    btype = block.get("type")
    if btype == "text":
        return text(block.get("text"))
    if btype == "thinking":
        return "(thinking) " + text(block.get("thinking"))
    if btype == "toolCall":
        args = text(block.get("arguments", {}))
        call_id = f"  [{text(block.get('id'))}]" if block.get("id") is not None else ""
        return f"→ {text(block.get('name'), '(no name)')}({args}){call_id}"
    if btype == "image":
        mime = text(block.get("mimeType"))
        return f"[image {mime}]" if mime else "[image]"
    return f"[{text(btype, 'no type')}]"


def _content_text(content: Any) -> str:
    if isinstance(content, list):
        return "\n".join(_block_text(b) for b in content)
    return text(content)


def _joined(*parts: Any, sep: str = ", ") -> str:
    return sep.join(text(p) for p in parts if p is not None and text(p) != "")


def _prefixed(prefix: str, value: Any) -> str:
    """``prefix`` and the value, or nothing for an absent or empty value."""
    joined = _joined(value)
    return prefix + joined if joined else ""


def message_lines(msg: dict[str, Any]) -> list[str]:
    """A readable rendering of one agent or LLM message (absent fields are left out)."""
    role = msg.get("role")
    head = f"── {text(role, '(no role)')}"
    body: str
    if role == "assistant":
        model = _joined(msg.get("provider"), msg.get("model"), sep="/")
        about = _joined(model or None, msg.get("stopReason"))
        head += f" ({about})" if about else ""
        body = _content_text(msg.get("content"))
        if msg.get("errorMessage"):
            body += ("\n" if body else "") + f"error: {text(msg.get('errorMessage'))}"
    elif role == "toolResult":
        head += _prefixed(" ", msg.get("toolName"))
        if msg.get("toolCallId") is not None:
            head += f" [{text(msg.get('toolCallId'))}]"
        head += " error" if msg.get("isError") else ""
        body = _content_text(msg.get("content"))
    elif role in ("custom", "hookMessage"):
        head += _prefixed(" ", msg.get("customType"))
        body = _content_text(msg.get("content"))
    elif role == "compactionSummary":
        if msg.get("tokensBefore") is not None:
            head += f" ({text(msg.get('tokensBefore'))} tokens before)"
        body = text(msg.get("summary"))
    elif role == "branchSummary":
        if msg.get("fromId") is not None:
            head += f" (from {text(msg.get('fromId'))})"
        body = text(msg.get("summary"))
    elif role == "bashExecution":
        if msg.get("exitCode") is not None:
            head += f" exit {text(msg.get('exitCode'))}"
        body = f"$ {text(msg.get('command'))}\n{text(msg.get('output'))}"
    elif role == "pythonExecution":
        body = f"{text(msg.get('code'))}\n{text(msg.get('output'))}"
    elif role == "fileMention":
        files = msg.get("files")
        body = (
            "\n".join(text(f.get("path"), "(no path)") for f in files or [] if isinstance(f, dict))
            if isinstance(files, list)
            else ""
        )
    else:
        body = _content_text(msg.get("content"))
    if msg.get("attribution"):
        head += f" · {text(msg.get('attribution'))}"
    return [head + " ──", *body.rstrip("\n").split("\n")]


def run(args: argparse.Namespace) -> int:
    from sessiontree.core.tree.messages import convert_to_llm

    mgr = open_for_viewing("context", args.file)
    if mgr is None:
        return EXIT_UNUSABLE
    leaf = mgr.get_leaf_id()
    if args.leaf is not None:
        if mgr.get_entry(args.leaf) is None:
            return entry_not_found("context", args.leaf)
        leaf = args.leaf
    ctx = mgr.build_session_context(leaf)
    llm = convert_to_llm(ctx.messages) if args.llm else None
    if args.json:
        out = {"leafId": leaf, **ctx.to_dict()}
        if llm is not None:
            out["llmMessages"] = llm
        sys.stdout.write(json.dumps(out, ensure_ascii=False, indent=2) + "\n")
        return EXIT_OK
    d = ctx.to_dict()
    print(f"leaf:      {text(leaf, 'none (no entries)')}")
    print(f"thinking:  {text(ctx.thinking_level, 'off')}")
    models = ", ".join(f"{k}={text(v)}" for k, v in ctx.models.items()) or "(none)"
    print(f"models:    {models}")
    print(
        f"mode:      {text(ctx.mode, 'none')}"
        + (f" {json.dumps(ctx.mode_data, ensure_ascii=False)}" if ctx.mode_data is not None else "")
    )
    if "serviceTier" in d:
        print(f"tier:      {text(ctx.service_tier)}")
    if ctx.active_context_name is not None:
        tenant = ctx.active_context_tenant
        print(
            f"context:   {text(ctx.active_context_name)}"
            + (f" (tenant {text(tenant)})" if tenant is not None else "")
        )
    if ctx.injected_ttsr_rules:
        print(f"ttsr:      {', '.join(text(r) for r in ctx.injected_ttsr_rules)}")
    if ctx.has_persisted_mcp_tool_selection:
        print(f"mcp tools: {', '.join(text(n) for n in ctx.selected_mcp_tool_names) or '(none)'}")
    messages = llm if llm is not None else ctx.messages
    print(f"messages:  {len(messages)}" + (" (converted for the model)" if llm is not None else ""))
    for m in messages:
        print()
        print("\n".join(message_lines(m) if isinstance(m, dict) else [text(m)]))
    return EXIT_OK
