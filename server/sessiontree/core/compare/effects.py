"""The code effects of a run of entries: files its tool calls wrote or edited, and commands.

Argument names are the pi family's tools: ``write {path, content}``; ``edit {path, oldText,
newText}`` (pi-mono), ``edit {path, edits: [{oldText, newText}]}`` (later pi; an item may
carry its own ``path``) and ``edit {path, input}`` (oh-my-pi's patch text); ``bash
{command}``. Claude-style spellings (``file_path``, ``old_string``/``new_string``,
``replace_all``) are read too, and Codex's ``apply_patch {input}`` (the files named by its
``*** Add/Update/Delete File:`` lines). A call whose result is an error is kept and marked
failed: it was tried, not applied.

These are the one home of the tool names and argument spellings; `core/checkpoints` replays
the same effects uncapped (``effects_of_call(..., cap=False)``).
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..view.tool_calls import calls_of

__all__ = [
    "BASH_TOOLS",
    "READ_TOOLS",
    "CodeEffects",
    "Command",
    "FileChange",
    "FileEffect",
    "Hunk",
    "code_effects",
    "effects_of_call",
    "patch_files",
    "tool_path",
]

WRITE_TOOLS = frozenset({"write", "create", "write_file", "Write"})
EDIT_TOOLS = frozenset(
    {"edit", "multiedit", "multi_edit", "str_replace", "edit_file", "Edit", "MultiEdit", "apply_patch"}
)
BASH_TOOLS = frozenset({"bash", "shell", "exec", "Bash"})
READ_TOOLS = frozenset({"read", "Read", "read_file"})
_CONTENT_MAX = 4000
_PATCH_FILE = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: (.+?)\s*$", re.M)
_HASHLINE_FILE = re.compile(r"^\u00a7(.+?)\s*$", re.M)


@dataclass
class Hunk:
    """One replacement an edit call carries (``new`` only for a write)."""

    old: str | None
    new: str
    all: bool = False
    """Claude's ``replace_all``: every occurrence of ``old``, not exactly one."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        d: dict[str, Any] = {"newText": self.new}
        if self.old is not None:
            d["oldText"] = self.old
        return d


@dataclass
class FileEffect:
    """One tool call that wrote or edited a file."""

    path: str
    kind: str
    """``write`` or ``edit``."""
    entry_id: str | None
    call_id: str | None
    tool: str
    hunks: list[Hunk] = field(default_factory=list)
    failed: bool = False
    patch: str | None = None
    """oh-my-pi's patch text (``input``), when the call carries one instead of hunks."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        d: dict[str, Any] = {
            "path": self.path,
            "kind": self.kind,
            "tool": self.tool,
            "entryId": self.entry_id,
            "callId": self.call_id,
            "hunks": [h.to_dict() for h in self.hunks],
            "failed": self.failed,
        }
        if self.patch is not None:
            d["patch"] = self.patch
        return d


@dataclass
class FileChange:
    """Every call of one side on one file."""

    path: str
    effects: list[FileEffect] = field(default_factory=list)

    @property
    def summary(self) -> str:
        """``write``, ``edit ×3``, ``write, edit ×2``; failed calls counted apart."""
        parts = []
        for kind in ("write", "edit"):
            ok = sum(1 for e in self.effects if e.kind == kind and not e.failed)
            if ok:
                parts.append(kind if ok == 1 else f"{kind} ×{ok}")
        failed = sum(1 for e in self.effects if e.failed)
        if failed:
            parts.append(f"{failed} failed")
        return ", ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {"path": self.path, "summary": self.summary, "calls": [e.to_dict() for e in self.effects]}


@dataclass
class Command:
    """A shell command a call (or the user, ``!cmd``) ran."""

    command: str
    entry_id: str | None
    failed: bool = False

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {"command": self.command, "entryId": self.entry_id, "failed": self.failed}


def _str(v: Any) -> str | None:
    return v if isinstance(v, str) else None


def _first(*values: Any) -> str | None:
    """The first string among ``values`` (an empty ``oldText`` is an insertion, not absent)."""
    return next((v for v in values if isinstance(v, str)), None)


def _same(text: str) -> str:
    return text


def _capped(text: str) -> str:
    return (
        text
        if len(text) <= _CONTENT_MAX
        else text[:_CONTENT_MAX] + f"\n… ({len(text) - _CONTENT_MAX} more characters)"
    )


def patch_files(patch: str) -> list[str]:
    """The files a patch text names: Codex's ``*** Update File: p`` lines, oh-my-pi's ``§p``."""
    return _PATCH_FILE.findall(patch) or _HASHLINE_FILE.findall(patch)


def effects_of_call(
    name: str, args: Mapping[str, Any], eid: str | None, cid: str | None, *, cap: bool = True
) -> list[FileEffect]:
    """The file effects one tool call asks for (texts cut to a few KB unless ``cap=False``)."""
    _capped_ = _capped if cap else _same
    path = _first(args.get("path"), args.get("file_path"), args.get("filePath"))
    if name in WRITE_TOOLS:
        if path is None:
            return []
        content = _str(args.get("content")) or ""
        return [FileEffect(path, "write", eid, cid, name, [Hunk(None, _capped_(content))])]
    if name not in EDIT_TOOLS:
        return []
    out: list[FileEffect] = []
    edits = args.get("edits")
    if isinstance(edits, list):
        by_path: dict[str, FileEffect] = {}
        for item in edits:
            if not isinstance(item, Mapping):
                continue
            item_path = _first(item.get("path"), path)
            if item_path is None:
                continue
            eff = by_path.get(item_path)
            if eff is None:
                eff = by_path[item_path] = FileEffect(item_path, "edit", eid, cid, name)
                out.append(eff)
            old = _first(item.get("oldText"), item.get("old_string"))
            new = _first(item.get("newText"), item.get("new_string")) or ""
            eff.hunks.append(
                Hunk(
                    _capped_(old) if old is not None else None, _capped_(new), item.get("replace_all") is True
                )
            )
        return out
    patch = _str(args.get("input"))
    if path is None:
        if patch is None:
            return []
        # A patch names its own files (Codex's apply_patch, oh-my-pi's hashline input).
        return [FileEffect(p, "edit", eid, cid, name, patch=_capped_(patch)) for p in patch_files(patch)]
    eff = FileEffect(path, "edit", eid, cid, name)
    old_text = _first(args.get("oldText"), args.get("old_string"))
    new_text = _first(args.get("newText"), args.get("new_string"))
    if old_text is not None or new_text is not None:
        eff.hunks.append(
            Hunk(
                _capped_(old_text) if old_text is not None else None,
                _capped_(new_text or ""),
                args.get("replace_all") is True,
            )
        )
    elif patch is not None:
        eff.patch = _capped_(patch)
    return [eff]


@functools.lru_cache(maxsize=8192)
def tool_path(path: str, cwd: str | None) -> str:
    """The file a tool's path argument names, as pi resolves it: ``@`` and ``~`` expanded,
    relative to ``cwd``, normalized (no symlinks resolved: the session's words, not the disk's)."""
    if path.startswith("@"):
        path = path[1:]
    if path == "~" or path.startswith("~/"):
        path = os.path.expanduser(path)
    if cwd and not os.path.isabs(path):
        return os.path.normpath(os.path.join(cwd, path))
    return os.path.normpath(path)


_key = tool_path


def _shown(path: str, cwd: str | None) -> str:
    if cwd and os.path.isabs(path):
        rel = os.path.relpath(path, cwd)
        if not rel.startswith(".."):
            return rel
    return path


class CodeEffects:
    """`code_effects` fed a page of entries at a time (`feed`), read at the end (`files`,
    `commands`): what it holds is the effects found, not the entries. A call is marked
    failed when an error result with its id comes, before or after it."""

    def __init__(self, cwd: str | None = None) -> None:
        self.cwd = cwd
        self.failed_calls: set[str] = set()
        self.changes: dict[str, FileChange] = {}
        self.commands: list[Command] = []
        self._by_call: dict[str, list[FileEffect | Command]] = {}

    def feed(self, entries: Iterable[Mapping[str, Any]]) -> None:
        """The next entries, in order."""
        cwd, changes, commands, by_call = self.cwd, self.changes, self.commands, self._by_call
        failed_calls = self.failed_calls
        for e in entries:
            eid = _str(e.get("id"))
            msg = e.get("message") if e.get("type") == "message" else None
            if isinstance(msg, Mapping):
                role = msg.get("role")
                if role == "toolResult":
                    if msg.get("isError"):
                        cid = _str(msg.get("toolCallId"))
                        if cid and cid not in failed_calls:
                            failed_calls.add(cid)
                            for item in by_call.pop(cid, ()):
                                item.failed = True
                    continue
                if role == "bashExecution":
                    code = msg.get("exitCode")
                    commands.append(Command(_str(msg.get("command")) or "", eid, bool(code) and code != 0))
                    continue
            for call in calls_of(e):
                name = _str(call.get("name")) or ""
                args = call.get("arguments")
                if not isinstance(args, Mapping):
                    continue
                cid = _str(call.get("id"))
                failed = cid is not None and cid in failed_calls
                made: list[FileEffect | Command] = []
                if name in BASH_TOOLS:
                    cmd = _str(args.get("command"))
                    if cmd is not None:
                        command = Command(cmd, eid, failed)
                        commands.append(command)
                        made.append(command)
                else:
                    for eff in effects_of_call(name, args, eid, cid):
                        eff.failed = failed
                        key = _key(eff.path, cwd)
                        change = changes.get(key)
                        if change is None:
                            change = changes[key] = FileChange(
                                _shown(key if os.path.isabs(key) else eff.path, cwd)
                            )
                        change.effects.append(eff)
                        made.append(eff)
                if made and cid is not None and not failed:
                    by_call.setdefault(cid, []).extend(made)

    @property
    def files(self) -> list[FileChange]:
        """Files changed, in the order first touched."""
        return list(self.changes.values())


def code_effects(
    entries: Sequence[Mapping[str, Any]], cwd: str | None = None
) -> tuple[list[FileChange], list[Command]]:
    """Files changed (in the order first touched) and commands run by ``entries``."""
    found = CodeEffects(cwd)
    found.feed(entries)
    return found.files, found.commands
