"""Two nodes side by side: their common ancestor, each side's entries since it, and what
each side did to the code (`effects.code_effects`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import EntryNotFoundError
from ..format.content import content_text
from ..index import Skeleton, gc_paused
from ..view.display import display_text, format_tool_call
from .effects import CodeEffects, Command, FileChange

__all__ = ["Comparison", "Side", "compare_nodes", "render_side", "side_parts"]

_RESULT_LINES = 12
#: Entries of a side read at a time.
PAGE = 1000


@dataclass
class Side:
    """One node and the part of its path below the common ancestor (its skeletons: the
    entries are read a page at a time, `Comparison.pages`)."""

    node_id: str
    text: str
    skeletons: list[Skeleton] = field(default_factory=list)
    files: list[FileChange] = field(default_factory=list)
    commands: list[Command] = field(default_factory=list)

    @property
    def entry_ids(self) -> list[str]:
        """Ids of the entries since the common ancestor, root side first."""
        return [sk.id for sk in self.skeletons if isinstance(sk.id, str)]


@dataclass
class Comparison:
    """What `compare_nodes` found."""

    ancestor_id: str | None
    ancestor_text: str
    a: Side
    b: Side
    read: Callable[[list[Skeleton]], list[dict[str, Any]]] | None = None
    """How a page of a side's entries is read (the session's, by `compare_nodes`)."""

    def pages(self, which: str, size: int | None = None) -> Iterator[list[dict[str, Any]]]:
        """The entries of side ``which`` ("a" or "b") since the ancestor, ``size`` (default
        `PAGE`) at a time."""
        side = self.a if which == "a" else self.b
        if self.read is None:
            return
        sks = side.skeletons
        step = max(1, size or PAGE)
        for i in range(0, len(sks), step):
            yield self.read(sks[i : i + step])

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
    """Compare the nodes ``a`` and ``b`` of ``manager``'s session (read only).

    Each side's entries are read a page at a time for its code effects; `render_side`
    reads them again for its messages: what is held is a page, not the sides."""
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

    def read(sks: list[Skeleton]) -> list[dict[str, Any]]:
        # a page of a side, one sequential read (parsing makes no cycles for the collector)
        with gc_paused():
            return list(index.entries_in_order(sks))

    cmp = Comparison(
        ancestor, _line(manager.get_entry(ancestor)) if ancestor else "", Side(a, ""), Side(b, ""), read
    )
    for which, node in (("a", a), ("b", b)):
        side = cmp.a if which == "a" else cmp.b
        side.skeletons = index.path_skeletons(node)[common:]
        found = CodeEffects(cwd)
        for page in cmp.pages(which):
            found.feed(page)
        side.text = _line(manager.get_entry(node))
        side.files, side.commands = found.files, found.commands
    return cmp


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


def side_parts(cmp: Comparison, which: str) -> Iterator[str]:
    """`render_side`'s document a part at a time (whole lines each): the head, the files
    and commands, then the messages a page at a time."""
    s = cmp.a if which == "a" else cmp.b
    out = [
        f"# {which.upper()}: {s.node_id}  {s.text}",
        f"common ancestor: {cmp.ancestor_id or '(none: different roots)'}  {cmp.ancestor_text}",
        f"entries since the common ancestor: {len(s.skeletons)}",
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
    yield "\n".join(out) + "\n"
    for page in cmp.pages(which):
        lines: list[str] = []
        for e in page:
            lines += ["", *_entry_lines(e)]
        if lines:
            yield "\n".join(lines) + "\n"


def render_side(cmp: Comparison, which: str) -> str:
    """One side as a text document: what the diff editor shows left or right."""
    return "".join(side_parts(cmp, which))
