"""Two nodes side by side: their common ancestor, each side's entries since it, and what
each side did to the code (`effects.code_effects`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import EntryNotFoundError
from ..format.content import content_text
from ..view.display import display_text, format_tool_call
from .effects import Command, FileChange, code_effects

__all__ = ["Comparison", "Side", "compare_nodes", "render_side"]

_RESULT_LINES = 12
_BULK_ABOVE = 2000


@dataclass
class Side:
    """One node and the part of its path below the common ancestor."""

    node_id: str
    text: str
    entries: list[dict[str, Any]] = field(default_factory=list)
    files: list[FileChange] = field(default_factory=list)
    commands: list[Command] = field(default_factory=list)

    @property
    def entry_ids(self) -> list[str]:
        """Ids of the entries since the common ancestor, root side first."""
        return [e["id"] for e in self.entries if isinstance(e.get("id"), str)]


@dataclass
class Comparison:
    """What `compare_nodes` found."""

    ancestor_id: str | None
    ancestor_text: str
    a: Side
    b: Side

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (camelCase)."""

        def side(s: Side) -> dict[str, Any]:
            return {
                "nodeId": s.node_id,
                "text": s.text,
                "entryIds": s.entry_ids,
                "files": [f.to_dict() for f in s.files],
                "commands": [c.to_dict() for c in s.commands],
            }

        return {
            "ancestorId": self.ancestor_id,
            "ancestorText": self.ancestor_text,
            "a": side(self.a),
            "b": side(self.b),
        }


def _line(entry: Mapping[str, Any] | None) -> str:
    if entry is None:
        return ""
    try:
        return display_text(entry, None, "")
    except Exception:
        return str(entry.get("type", ""))


def compare_nodes(manager: Any, a: str, b: str) -> Comparison:
    """Compare the nodes ``a`` and ``b`` of ``manager``'s session (read only)."""
    index = manager.index
    pa, pb = index.path_to_root(a), index.path_to_root(b)
    if not pa:
        raise EntryNotFoundError(a)
    if not pb:
        raise EntryNotFoundError(b)
    common = 0
    for x, y in zip(pa, pb, strict=False):
        if x != y:
            break
        common += 1
    ancestor = pa[common - 1] if common else None
    cwd = manager.get_cwd()

    def side(node: str, path: list[str]) -> Side:
        if len(path) - common > _BULK_ABOVE:
            # a long side: one sequential read of the path beats an entry-by-entry one
            entries = list(manager.get_branch(node))[common:]
        else:
            entries = [e for e in (manager.get_entry(i) for i in path[common:]) if e is not None]
        files, commands = code_effects(entries, cwd)
        return Side(node, _line(manager.get_entry(node)), entries, files, commands)

    return Comparison(
        ancestor, _line(manager.get_entry(ancestor)) if ancestor else "", side(a, pa), side(b, pb)
    )


def _entry_lines(entry: Mapping[str, Any]) -> list[str]:
    eid = entry.get("id")
    msg = entry.get("message") if entry.get("type") == "message" else None
    if not isinstance(msg, Mapping):
        return [f"── {entry.get('type')} [{eid}] ──", _line(entry)]
    role = msg.get("role")
    head = f"── {role} [{eid}] ──"
    content = msg.get("content")
    if role == "toolResult":
        text = content_text(content, "\n")
        lines = text.split("\n")
        more = len(lines) - _RESULT_LINES
        body = lines[:_RESULT_LINES] + ([f"… ({more} more lines)"] if more > 0 else [])
        err = " error" if msg.get("isError") else ""
        return [f"── toolResult {msg.get('toolName') or ''}{err} [{eid}] ──", *body]
    out = [head]
    if isinstance(content, str):
        out += content.split("\n")
    elif isinstance(content, list):
        for block in content:
            if not isinstance(block, Mapping):
                continue
            if block.get("type") == "text" and isinstance(block.get("text"), str):
                out += block["text"].split("\n")
            elif block.get("type") == "toolCall":
                out.append("→ " + format_tool_call(block.get("name"), block.get("arguments"), ""))
            elif block.get("type") == "thinking":
                out.append("(thinking)")
            elif block.get("type") == "image":
                out.append("[image]")
    if len(out) == 1:
        out.append(_line(entry))
    return out


def _hunk_lines(old: str | None, new: str) -> list[str]:
    out = []
    if old is not None:
        out += ["- " + ln for ln in old.split("\n")]
    out += ["+ " + ln for ln in new.split("\n")]
    return out


def render_side(cmp: Comparison, which: str) -> str:
    """One side as a text document: what the diff editor shows left or right."""
    s = cmp.a if which == "a" else cmp.b
    out = [
        f"# {which.upper()}: {s.node_id}  {s.text}",
        f"common ancestor: {cmp.ancestor_id or '(none: different roots)'}  {cmp.ancestor_text}",
        f"entries since the common ancestor: {len(s.entries)}",
        "",
        f"## Files written or edited ({len(s.files)})",
    ]
    for f in s.files:
        out.append(f"{f.path}: {f.summary}")
    for f in s.files:
        for i, eff in enumerate(f.effects, 1):
            failed = " (failed)" if eff.failed else ""
            out += ["", f"@@ {f.path} · {eff.kind} {i}{failed} · entry {eff.entry_id} @@"]
            for h in eff.hunks:
                out += _hunk_lines(h.old, h.new)
            if eff.patch is not None:
                out += eff.patch.split("\n")
    out += ["", f"## Commands run ({len(s.commands)})"]
    out += [
        f"$ {c.command.splitlines()[0] if c.command else ''}{'  ✗' if c.failed else ''}" for c in s.commands
    ]
    out += ["", "## Messages since the common ancestor"]
    for e in s.entries:
        out += ["", *_entry_lines(e)]
    return "\n".join(out) + "\n"
