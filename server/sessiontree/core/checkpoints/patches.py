"""Patch texts applied as the agents apply them: Codex's ``apply_patch`` format (also
oh-my-pi's ``apply_patch`` edit mode) and oh-my-pi's numbered display diff (``details.diff``
of an edit result, for sessions written before oh-my-pi kept whole ``oldText``/``newText``).

Codex (``codex-rs/apply-patch``): ``*** Begin Patch``, then per file ``*** Add File: p``
(lines ``+text``), ``*** Delete File: p`` or ``*** Update File: p`` (optional ``*** Move to:
q``) with chunks: an optional ``@@ context`` line sought first, then `` ``/``-``/``+`` lines;
the old lines are sought from the last position, exactly, then ignoring trailing and then
surrounding white space; an update's file ends with a newline. Anything that does not match
raises :class:`EditFailed`: the caller then does not know the file.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from .textedit import EditFailed

__all__ = ["PatchOp", "apply_numbered_diff", "apply_update", "parse_patch"]


@dataclass
class _Chunk:
    context: str | None
    old: list[str] = field(default_factory=list)
    new: list[str] = field(default_factory=list)
    eof: bool = False


@dataclass
class PatchOp:
    """One file's part of a patch."""

    kind: str
    """``add``, ``delete`` or ``update``."""
    path: str
    move_to: str | None = None
    added: str = ""
    chunks: list[_Chunk] = field(default_factory=list)


_HEAD = re.compile(r"^\*\*\* (Add|Delete|Update) File: (.+?)\s*$")


def parse_patch(text: str) -> list[PatchOp]:
    """The file operations of a Codex patch (:class:`EditFailed` when it is not one)."""
    lines = text.strip().split("\n")
    if not lines or lines[0].strip() != "*** Begin Patch":
        raise EditFailed("not a patch")
    ops: list[PatchOp] = []
    op: PatchOp | None = None
    chunk: _Chunk | None = None
    for line in lines[1:]:
        if line.strip() == "*** End Patch":
            return ops
        m = _HEAD.match(line)
        if m:
            op = PatchOp(m.group(1).lower(), m.group(2))
            ops.append(op)
            chunk = None
            continue
        if op is None:
            raise EditFailed("patch line outside a file")
        if op.kind == "add":
            if not line.startswith("+"):
                raise EditFailed("added file line without +")
            op.added += line[1:] + "\n"
            continue
        if op.kind == "delete":
            continue
        if line.startswith("*** Move to: "):
            op.move_to = line[len("*** Move to: ") :].strip()
            continue
        if line.strip() == "*** End of File":
            if chunk is not None:
                chunk.eof = True
            continue
        if line.startswith("@@"):
            ctx = line[2:].strip()
            chunk = _Chunk(ctx or None)
            op.chunks.append(chunk)
            continue
        if chunk is None:
            chunk = _Chunk(None)
            op.chunks.append(chunk)
        tag, body = (line[:1], line[1:]) if line else (" ", "")
        if tag == " ":
            chunk.old.append(body)
            chunk.new.append(body)
        elif tag == "-":
            chunk.old.append(body)
        elif tag == "+":
            chunk.new.append(body)
        else:
            raise EditFailed(f"bad patch line: {line[:40]!r}")
    raise EditFailed("patch without *** End Patch")


def _seek(lines: Sequence[str], pattern: Sequence[str], start: int, eof: bool) -> int:
    if not pattern:
        return start
    if len(pattern) > len(lines):
        return -1
    last = len(lines) - len(pattern)
    first = last if eof else start
    for norm in (lambda s: s, str.rstrip, str.strip):
        pat = [norm(p) for p in pattern]
        for i in range(first, last + 1):
            if all(norm(lines[i + k]) == pat[k] for k in range(len(pat))):
                return i
    return -1


def apply_update(content: str, chunks: Sequence[_Chunk]) -> str:
    """A file's text after an ``*** Update File`` part."""
    lines = content.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    reps: list[tuple[int, int, list[str]]] = []
    at = 0
    for c in chunks:
        if c.context is not None:
            i = _seek(lines, [c.context], at, False)
            if i == -1:
                raise EditFailed("patch context not found")
            at = i + 1
        if not c.old:
            reps.append((len(lines), 0, c.new))
            continue
        old, new = c.old, c.new
        i = _seek(lines, old, at, c.eof)
        if i == -1 and old and old[-1] == "":
            old, new = old[:-1], new[:-1] if new and new[-1] == "" else new
            i = _seek(lines, old, at, c.eof)
        if i == -1:
            raise EditFailed("patch lines not found")
        reps.append((i, len(old), new))
        at = i + len(old)
    for i, n, new in sorted(reps, reverse=True):
        lines[i : i + n] = new
    return "\n".join([*lines, ""])


_NUMBERED = re.compile(r"^([ +-])\s*(\d+)\|(.*)$", re.S)


def apply_numbered_diff(content: str, diff: str) -> str:
    """oh-my-pi's numbered diff (`` N|ctx``, ``-N|old``, ``+M|new``, `` N|...`` for skipped
    lines) applied to ``content``; every context and removed line must be the file's."""
    old = content.split("\n")
    out: list[str] = []
    cursor = 0
    for line in diff.split("\n"):
        if not line:
            continue
        m = _NUMBERED.match(line)
        if m is None:
            if line.strip() == "...":
                continue
            raise EditFailed("not a numbered diff")
        tag, num, text = m.group(1), int(m.group(2)), m.group(3)
        if tag == "+":
            if num != len(out) + 1:
                raise EditFailed("added line out of place")
            out.append(text)
            continue
        if num < cursor + 1 or num > len(old):
            raise EditFailed("diff line outside the file")
        out.extend(old[cursor : num - 1])
        if text != "..." and old[num - 1] != text:
            raise EditFailed("diff line differs from the file")
        if tag == " ":
            out.append(old[num - 1])
        cursor = num
    out.extend(old[cursor:])
    return "\n".join(out)
