"""Text replacements exactly as the agents' edit tools apply them.

pi (1.6, ``core/tools/edit.js`` and ``edit-diff.js``): the file's BOM is set aside, the text
is matched with its line endings as LF; every ``oldText`` (also LF-normalized) must be
non-empty, found (exactly, else in the fuzzy-normalized text: trailing spaces, smart quotes,
Unicode dashes and spaces, NFKC), unique and not overlap another; all are matched against the
original, not one after the other. The replacements are spliced into the original text so
untouched lines keep their line endings (a fuzzy match rewrites the lines it touches from the
normalized text). An edit that changes nothing fails. Claude Code's Edit: ``old_string`` must
occur (exactly once unless ``replace_all``); an empty one on an empty file writes
``new_string``; an empty ``new_string`` takes the line break after ``old_string`` with it
(when ``old_string`` does not end with one and is followed by one).

JavaScript indexes strings in UTF-16 code units and Python in code points; every operation
here (find, count, slice, replace) is the same in either unit, so offsets never cross.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

__all__ = ["EditFailed", "apply_claude_edits", "apply_pi_edits"]


class EditFailed(ValueError):
    """The edit could not have been applied to this text (the agent's tool would have failed)."""


@dataclass
class _Match:
    index: int
    length: int
    new: str


def _to_lf(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


_QUOTES1 = re.compile("[\u2018\u2019\u201a\u201b]")
_QUOTES2 = re.compile("[\u201c\u201d\u201e\u201f]")
_DASHES = re.compile("[\u2010\u2011\u2012\u2013\u2014\u2015\u2212]")
_SPACES = re.compile("[\u00a0\u2002-\u200a\u202f\u205f\u3000]")
_TRAILING = re.compile(r"[ \t\n\v\f\r\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]+$")


def _trim_end(line: str) -> str:
    # JavaScript's trimEnd(): its WhiteSpace and LineTerminator set
    return _TRAILING.sub("", line)


def _fuzzy(text: str) -> str:
    text = unicodedata.normalize("NFKC", text)
    text = "\n".join(_trim_end(line) for line in text.split("\n"))
    text = _QUOTES1.sub("'", text)
    text = _QUOTES2.sub('"', text)
    text = _DASHES.sub("-", text)
    return _SPACES.sub(" ", text)


def _count(text: str, sub: str) -> int:
    """JavaScript's ``text.split(sub).length - 1`` (pi's count): an empty ``sub`` splits
    between every UTF-16 code unit."""
    if sub == "":
        return len(text.encode("utf-16-le")) // 2 - 1
    return text.count(sub)


def _find(content: str, old: str) -> tuple[int, int, bool]:
    i = content.find(old)
    if i != -1:
        return i, len(old), False
    fc, fo = _fuzzy(content), _fuzzy(old)
    j = fc.find(fo)
    return (j, len(fo), True) if j != -1 else (-1, 0, False)


def _line_spans(text: str) -> list[tuple[int, int]]:
    spans = []
    pos = 0
    for m in re.finditer(r"[^\n]*\n|[^\n]+", text):
        spans.append((pos, pos + len(m.group(0))))
        pos += len(m.group(0))
    return spans


def _apply(content: str, reps: Sequence[_Match], offset: int = 0) -> str:
    out = content
    for r in reversed(reps):
        i = r.index - offset
        out = out[:i] + r.new + out[i + r.length :]
    return out


def _widen(original: str, base: str, reps: list[_Match]) -> list[_Match]:
    """pi's widenReplacementsToLines: a fuzzy match rewrites whole lines from the normalized text."""
    olines, blines = _line_spans(original), _line_spans(base)
    if len(olines) != len(blines):
        raise EditFailed("the normalized text has another line count")
    groups: list[tuple[int, int, list[_Match]]] = []
    for r in sorted(reps, key=lambda r: r.index):
        start = next((i for i, (a, b) in enumerate(blines) if a <= r.index < b), -1)
        if start == -1:
            raise EditFailed("replacement outside the text")
        end = start
        while end < len(blines) and blines[end][1] < r.index + r.length:
            end += 1
        if end >= len(blines):
            raise EditFailed("replacement outside the text")
        end += 1
        if groups and start < groups[-1][1]:
            g0, g1, members = groups[-1]
            members.append(r)
            groups[-1] = (g0, max(g1, end), members)
            continue
        groups.append((start, end, [r]))
    out = []
    for start, end, members in groups:
        gs, ge = blines[start][0], blines[end - 1][1]
        ostart = olines[start][0]
        out.append(_Match(ostart, olines[end - 1][1] - ostart, _apply(base[gs:ge], members, gs)))
    return out


def _ending_at(content: str, offset: int) -> str:
    lf = content.find("\n", offset)
    if lf == -1:
        lf = content.rfind("\n", 0, offset + 1) if offset < len(content) else content.rfind("\n")
    if lf == -1:
        return "\r" if "\r" in content else "\n"
    return "\r\n" if lf > 0 and content[lf - 1] == "\r" else "\n"


def _to_original(original: str, reps: Sequence[_Match]) -> str:
    """pi's applyReplacementsToOriginal: LF-space replacements spliced into the CRLF text."""
    crlf = [m.start() for m in re.finditer("\r\n", original)]
    k = 0

    def orig(offset: int) -> int:
        nonlocal k
        while k < len(crlf) and crlf[k] - k < offset:
            k += 1
        return offset + k

    parts: list[str] = []
    ends_cr = False

    def push(part: str) -> None:
        nonlocal ends_cr
        if not part:
            return
        if ends_cr and part[0] == "\n":
            parts.append("\n")
        parts.append(part)
        ends_cr = part[-1] == "\r"

    pos = 0
    for r in reps:
        start = orig(r.index)
        push(original[pos:start])
        ending = _ending_at(original, start)
        push(r.new if ending == "\n" else r.new.replace("\n", ending))
        pos = orig(r.index + r.length)
    push(original[pos:])
    return "".join(parts)


def apply_pi_edits(raw: str, edits: Sequence[tuple[str, str]]) -> str:
    """The file pi's edit tool writes for ``raw`` and ``(oldText, newText)`` pairs."""
    if not edits:
        raise EditFailed("no edits")
    bom = "\ufeff" if raw.startswith("\ufeff") else ""
    content = raw[len(bom) :]
    norm = _to_lf(content)
    pairs = [(_to_lf(o), _to_lf(n)) for o, n in edits]
    if any(not o for o, _ in pairs):
        raise EditFailed("empty oldText")
    fuzzy = any(_find(norm, o)[2] for o, _ in pairs)
    space = _fuzzy(norm) if fuzzy else norm
    matched: list[_Match] = []
    for o, n in pairs:
        i, length, _ = _find(space, o)
        if i == -1:
            raise EditFailed("oldText not found")
        if _count(_fuzzy(space), _fuzzy(o)) > 1:
            raise EditFailed("oldText not unique")
        matched.append(_Match(i, length, n))
    matched.sort(key=lambda r: r.index)
    for a, b in pairwise(matched):
        if a.index + a.length > b.index:
            raise EditFailed("edits overlap")
    reps = _widen(norm, space, matched) if fuzzy else matched
    new = _apply(norm, reps)
    if new == norm:
        raise EditFailed("no change")
    return bom + (new if content == norm else _to_original(content, reps))


def apply_claude_edits(raw: str, edits: Sequence[tuple[str, str, bool]]) -> str:
    """Claude Code's Edit/MultiEdit: ``(old_string, new_string, replace_all)`` one after another."""
    text = raw
    for old, new, every in edits:
        if old == "":
            if text != "":
                raise EditFailed("empty old_string on a file with content")
            text = new
            continue
        n = text.count(old)
        if n == 0:
            raise EditFailed("old_string not found")
        if n > 1 and not every:
            raise EditFailed("old_string not unique")
        if new == "" and not old.endswith("\n") and old + "\n" in text:
            old += "\n"
        text = text.replace(old, new) if every else text.replace(old, new, 1)
    return text
