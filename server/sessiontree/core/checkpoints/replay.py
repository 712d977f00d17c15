"""A file's content at any node, computed from the session itself.

The entries of the path root → node are replayed in order (docs/checkpoints.md):

- a write (pi, oh-my-pi, Claude Code's Write) makes the file its ``content``;
- an edit applies to the content known before it exactly as the agent's tool does
  (`textedit.apply_pi_edits`, `apply_claude_edits`; Codex's patch: `patches`); an edit that
  would not apply to it shows the replayed text was not the disk's: the file is *unknown*;
- oh-my-pi 18's edit results carry the whole file before and after (``details.oldText``,
  ``newText``), older ones a numbered diff; Claude Code's Edit/Write results the file before
  (``originalFile``); Claude Code's ``file-history-snapshot`` backups the file at a turn's
  start; a whole ``read`` (no offset or limit, not cut) the file as it was. Such evidence
  also tells the content back to the last event that could have changed the file (a command,
  an edit that did not apply);
- a failed call changes nothing; a command (``bash``, ``!cmd``) that may write
  (`shell.reads_only`) makes every file unknown until new evidence; a file not seen yet is
  unknown; nothing is ever guessed;
- the daemon's own snapshots (`snapshots.SnapshotStore`), taken when it saw a call's result
  appended, tell the file as the call left it, and win over the replay.

States are kept per file as a timeline of positions on the path (``pos`` is the entry's
index on it), so one replay of a path answers for every node on it.
"""

from __future__ import annotations

import os
from bisect import bisect_right
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..compare.effects import BASH_TOOLS, READ_TOOLS, effects_of_call, tool_path
from ..view.tool_calls import calls_of
from . import patches
from .shell import reads_only
from .textedit import EditFailed, apply_claude_edits, apply_pi_edits

__all__ = ["FileState", "Replay", "changed_files", "replay_entries", "whole_read"]

KNOWN = "known"
ABSENT = "absent"
UNKNOWN = "unknown"


@dataclass(frozen=True)
class FileState:
    """What the session says of one file at one node."""

    status: str
    """``known`` (``content`` holds it), ``absent`` (no such file) or ``unknown``."""
    content: str | None = None
    how: str = ""
    """How it is known (``write``, ``edit``, ``read``, ``snapshot``, ...) or why it is not."""
    entry_id: str | None = None
    """The entry that made it so."""

    @property
    def known(self) -> bool:
        """Known content or known absence."""
        return self.status != UNKNOWN


NOT_SEEN = FileState(UNKNOWN, how="not seen in the session before")


@dataclass
class _Timeline:
    pos: list[int] = field(default_factory=list)
    states: list[FileState] = field(default_factory=list)


#: ``(entry_id, path) -> content`` (``None``: the file was absent) of the daemon's snapshots.
Snapshots = Mapping[tuple[str, str], "str | None"]


class Replay:
    """The replayed states of every file a path's calls touched."""

    def __init__(self) -> None:
        self._files: dict[str, _Timeline] = {}
        self._commands: list[int] = []
        self.touched: list[tuple[int, str]] = []
        """``(pos, path)`` of every write or edit applied (failed calls left out)."""
        self.commands: list[tuple[int, str | None, str]] = []
        """``(pos, entry_id, command)`` of the commands that may have written files."""
        self.checks: list[tuple[int, str, bool, str]] = []
        """``(pos, path, agreed, how)``: each time evidence (a read, a result's whole file)
        met replayed content: whether they agreed. A disagreement is a change no call shows."""

    # -- queries ---------------------------------------------------------------------------
    def state_at(self, path: str, pos: int) -> FileState:
        """The file's state after the entry at ``pos`` (``-1``: before the first)."""
        tl = self._files.get(path)
        if tl is None:
            return NOT_SEEN
        i = bisect_right(tl.pos, pos) - 1
        if i < 0:
            return NOT_SEEN
        at = tl.pos[i]
        j = bisect_right(self._commands, pos) - 1
        if j >= 0 and self._commands[j] > at:
            return FileState(UNKNOWN, how="a command ran since the file was last known")
        return tl.states[i]

    def last_known(self, path: str, pos: int) -> FileState | None:
        """The file's last known state at or before ``pos``, commands since left aside (None:
        never known, or made unknown by something other than a command)."""
        tl = self._files.get(path)
        if tl is None:
            return None
        i = bisect_right(tl.pos, pos) - 1
        return tl.states[i] if i >= 0 and tl.states[i].known else None

    def files(self) -> list[str]:
        """Every file the replay has a state for."""
        return list(self._files)

    def touched_between(self, lo: int, hi: int) -> set[str]:
        """Files a write or edit changed at positions in ``(lo, hi]``."""
        return {p for pos, p in self.touched if lo < pos <= hi}

    # -- building --------------------------------------------------------------------------
    def _set(self, path: str, pos: int, state: FileState) -> None:
        tl = self._files.setdefault(path, _Timeline())
        if tl.pos and tl.pos[-1] == pos:
            tl.states[-1] = state
        else:
            tl.pos.append(pos)
            tl.states.append(state)

    def _insert(self, path: str, pos: int, state: FileState) -> None:
        tl = self._files.setdefault(path, _Timeline())
        i = bisect_right(tl.pos, pos)
        if i > 0 and tl.pos[i - 1] == pos:
            tl.states[i - 1] = state
        else:
            tl.pos.insert(i, pos)
            tl.states.insert(i, state)

    def _evidence(self, path: str, pos: int, state: FileState) -> None:
        """The file was ``state`` just before ``pos``, and so since the last event that could
        have changed it (a command, a call whose outcome is not known, the session's start)."""
        q = pos - 1
        cur = self.state_at(path, q)
        if cur.known:
            self.checks.append(
                (q, path, cur.status == state.status and cur.content == state.content, cur.how)
            )
        if cur.status == state.status and cur.content == state.content:
            return
        tl = self._files.setdefault(path, _Timeline())
        last = tl.pos[-1] if tl.pos else -1
        if cur.known:
            # the replayed content is not the disk's: changed outside the calls, when is not known
            if last + 1 < q:
                self._insert(path, last + 1, FileState(UNKNOWN, how="changed outside the session's calls"))
            self._insert(path, q, state)
            return
        j = bisect_right(self._commands, q) - 1
        command = self._commands[j] if j >= 0 else -1
        self._insert(path, max(last, command), state)

    def _command(self, pos: int, eid: str | None, command: str) -> None:
        if reads_only(command):
            return
        self._commands.append(pos)
        self.commands.append((pos, eid, command))


def _str(v: Any) -> str | None:
    return v if isinstance(v, str) else None


def _text_of(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return None
    texts = []
    for b in content:
        if not isinstance(b, Mapping) or b.get("type") != "text":
            return None  # an image: not the file's text
        texts.append(str(b.get("text", "")))
    return "".join(texts)


def _codex_ok(text: str | None) -> bool:
    if text is None:
        return False
    head = text.lstrip()[:200]
    return head.startswith("Success") or '"exit_code":0' in head.replace(" ", "") or "Exit code: 0" in head


class _Replayer:
    def __init__(
        self,
        cwd: str | None,
        snapshots: Snapshots,
        claude_history: str | None,
        reads: bool,
        only: set[str] | None,
    ) -> None:
        self.cwd = cwd
        self.reads = reads
        self.only = only
        self.snaps = snapshots
        self.claude_history = claude_history
        self.r = Replay()
        self.calls: dict[str, tuple[str, Mapping[str, Any], str | None]] = {}

    def path(self, p: str) -> str:
        return tool_path(p, self.cwd)

    def entry(self, pos: int, e: Mapping[str, Any]) -> None:
        eid = _str(e.get("id"))
        kind = e.get("type")
        if kind == "custom" and e.get("customType") == "claude:file-history-snapshot":
            self._claude_backups(pos, e.get("data"))
            return
        msg = e.get("message") if kind == "message" else None
        if not isinstance(msg, Mapping):
            return
        role = msg.get("role")
        if role == "bashExecution":
            self.r._command(pos, eid, _str(msg.get("command")) or "")
            return
        if role == "assistant":
            for call in calls_of(e):
                cid, name, args = _str(call.get("id")), _str(call.get("name")), call.get("arguments")
                if cid and name and isinstance(args, Mapping):
                    self.calls[cid] = (name, args, eid)
            return
        if role == "toolResult":
            cid = _str(msg.get("toolCallId"))
            found = self.calls.get(cid) if cid else None
            if found is not None:
                self._result(pos, eid, found[0], found[1], msg)

    # -- one call's result ------------------------------------------------------------------
    def _result(
        self, pos: int, eid: str | None, name: str, args: Mapping[str, Any], msg: Mapping[str, Any]
    ) -> None:
        failed = msg.get("isError") is True
        details = msg.get("details") if isinstance(msg.get("details"), Mapping) else {}
        assert isinstance(details, Mapping)
        if name in BASH_TOOLS:
            self.r._command(pos, eid, _str(args.get("command")) or "")
            return
        if failed:
            return
        if name in READ_TOOLS:
            if self.reads:
                self._read(pos, eid, args, msg, details)
            return
        effects = effects_of_call(name, args, eid, None, cap=False)
        changed: list[str] = []
        if name == "apply_patch" or (effects and effects[0].patch is not None and not effects[0].hunks):
            changed = self._patch(pos, eid, name, args, msg, details)
        else:
            for eff in effects:
                path = self.path(eff.path)
                changed.append(path)
                if self.only is None or path in self.only:
                    self._effect(pos, eid, path, eff.kind, eff.hunks, details, eff.tool)
        for path in changed:
            self.r.touched.append((pos, path))
            if eid is not None and (eid, path) in self.snaps:
                snap = self.snaps[(eid, path)]
                state = (
                    FileState(ABSENT, None, "snapshot", eid)
                    if snap is None
                    else FileState(KNOWN, snap, "snapshot", eid)
                )
                self.r._set(path, pos, state)

    def _effect(
        self,
        pos: int,
        eid: str | None,
        path: str,
        kind: str,
        hunks: list[Any],
        details: Mapping[str, Any],
        tool: str,
    ) -> None:
        if "originalFile" in details:
            # Claude Code's Edit and Write: the file before the call, as the tool read it
            orig = details.get("originalFile")
            before = (
                FileState(ABSENT, how="result", entry_id=eid)
                if orig is None
                else FileState(KNOWN, str(orig), "result", eid)
            )
            self.r._evidence(path, pos, before)
        elif "oldText" in details or "newText" in details:
            # oh-my-pi 18: the whole file before and after (None: created, deleted)
            old, new = details.get("oldText"), details.get("newText")
            self.r._evidence(
                path,
                pos,
                FileState(ABSENT, how="result", entry_id=eid)
                if old is None
                else FileState(KNOWN, str(old), "result", eid),
            )
            after = (
                FileState(ABSENT, how="edit result", entry_id=eid)
                if new is None
                else FileState(KNOWN, str(new), "edit result", eid)
            )
            self.r._set(path, pos, after)
            return
        if kind == "write":
            self.r._set(path, pos, FileState(KNOWN, hunks[0].new if hunks else "", "write", eid))
            return
        prior = self.r.state_at(path, pos - 1)
        claude = tool in ("Edit", "MultiEdit") or "originalFile" in details or any(h.all for h in hunks)
        if prior.status == ABSENT and claude:
            prior = FileState(KNOWN, "", "absent")
        if prior.status != KNOWN or prior.content is None:
            self.r._set(
                path, pos, FileState(UNKNOWN, how="edited while its content was not known", entry_id=eid)
            )
            return
        try:
            if claude:
                new_text = apply_claude_edits(prior.content, [(h.old or "", h.new, h.all) for h in hunks])
            else:
                new_text = apply_pi_edits(prior.content, [(h.old or "", h.new) for h in hunks])
        except EditFailed as exc:
            why = f"an edit did not apply to the replayed text ({exc})"
            self.r._set(path, pos, FileState(UNKNOWN, how=why, entry_id=eid))
            return
        self.r._set(path, pos, FileState(KNOWN, new_text, "edit", eid))

    def _patch(
        self,
        pos: int,
        eid: str | None,
        name: str,
        args: Mapping[str, Any],
        msg: Mapping[str, Any],
        details: Mapping[str, Any],
    ) -> list[str]:
        text = _str(args.get("input")) or ""
        # oh-my-pi's edit modes other than replace: the result tells the file before and after
        per = details.get("perFileResults")
        results = (
            per if isinstance(per, list) else [details] if details.get("path") or "oldText" in details else []
        )
        out: list[str] = []
        if results and any(isinstance(x, Mapping) and ("oldText" in x or "newText" in x) for x in results):
            for x in results:
                if not isinstance(x, Mapping) or x.get("snapshotsPruned"):
                    continue
                p = _str(x.get("path")) or _str(args.get("path"))
                if p is None:
                    continue
                path = self.path(p)
                out.append(path)
                self._effect(
                    pos,
                    eid,
                    path,
                    "edit",
                    [],
                    {"oldText": x.get("oldText"), "newText": x.get("newText")},
                    name,
                )
            return out
        if text.lstrip().startswith("*** Begin Patch"):
            if name == "apply_patch" and not _codex_ok(_text_of(msg.get("content"))) and not details:
                for eff in effects_of_call(name, args, eid, None, cap=False):
                    path = self.path(eff.path)
                    out.append(path)
                    self.r._set(
                        path, pos, FileState(UNKNOWN, how="the patch's outcome is not known", entry_id=eid)
                    )
                return out
            try:
                ops = patches.parse_patch(text)
            except EditFailed:
                ops = []
            for op in ops:
                path = self.path(op.path)
                out.append(path)
                if op.kind == "add":
                    self.r._set(path, pos, FileState(KNOWN, op.added, "patch", eid))
                elif op.kind == "delete":
                    self.r._set(path, pos, FileState(ABSENT, how="patch", entry_id=eid))
                else:
                    prior = self.r.state_at(path, pos - 1)
                    state = FileState(UNKNOWN, how="patched while its content was not known", entry_id=eid)
                    if prior.status == KNOWN and prior.content is not None:
                        try:
                            state = FileState(
                                KNOWN, patches.apply_update(prior.content, op.chunks), "patch", eid
                            )
                        except EditFailed as exc:
                            state = FileState(UNKNOWN, how=f"the patch did not apply ({exc})", entry_id=eid)
                    if op.move_to:
                        self.r._set(path, pos, FileState(ABSENT, how="moved by a patch", entry_id=eid))
                        path = self.path(op.move_to)
                        out.append(path)
                    self.r._set(path, pos, state)
            return out
        # oh-my-pi's hashline or patch text without whole texts in the result
        target = _str(args.get("path"))
        paths = [target] if target else [e.path for e in effects_of_call(name, args, eid, None, cap=False)]
        for p in paths:
            path = self.path(p)
            out.append(path)
            prior = self.r.state_at(path, pos - 1)
            diff = details.get("diff")
            state = FileState(UNKNOWN, how="edited while its content was not known", entry_id=eid)
            if (
                prior.status == KNOWN
                and prior.content is not None
                and isinstance(diff, str)
                and len(paths) == 1
            ):
                try:
                    state = FileState(KNOWN, patches.apply_numbered_diff(prior.content, diff), "edit", eid)
                except EditFailed as exc:
                    state = FileState(UNKNOWN, how=f"the edit's diff did not apply ({exc})", entry_id=eid)
            self.r._set(path, pos, state)
        return out

    def _read(
        self,
        pos: int,
        eid: str | None,
        args: Mapping[str, Any],
        msg: Mapping[str, Any],
        details: Mapping[str, Any],
    ) -> None:
        if self.only is not None:
            file = details.get("file")
            named = (
                file.get("filePath")
                if isinstance(file, Mapping)
                else args.get("path") or args.get("file_path")
            )
            if not isinstance(named, str) or self.path(named) not in self.only:
                return  # a file this replay is not asked about
        seen = whole_read(args, msg)
        if seen is not None:
            self.r._evidence(self.path(seen[0]), pos + 1, FileState(KNOWN, seen[1], "read", eid))

    def _claude_backups(self, pos: int, data: Any) -> None:
        if not isinstance(data, Mapping) or self.claude_history is None:
            return
        snap = data.get("snapshot")
        tracked = snap.get("trackedFileBackups") if isinstance(snap, Mapping) else None
        if not isinstance(tracked, Mapping):
            return
        for rel, info in tracked.items():
            name = info.get("backupFileName") if isinstance(info, Mapping) else None
            if not isinstance(rel, str) or not isinstance(name, str) or "/" in name or name.startswith("."):
                continue
            try:
                with open(os.path.join(self.claude_history, name), "rb") as f:
                    content = f.read().decode("utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            self.r._evidence(self.path(rel), pos + 1, FileState(KNOWN, content, "Claude Code backup", None))


def whole_read(args: Mapping[str, Any], msg: Mapping[str, Any]) -> tuple[str, str] | None:
    """``(path, text)`` when a read call's result shows the whole file as its bytes are: pi's
    read without ``offset``/``limit`` and not cut (no ``details.truncation``), Claude Code's
    Read from line 1 showing every line; oh-my-pi's read (lines shown with anchors) never."""
    if msg.get("isError") is True:
        return None
    details = msg.get("details") if isinstance(msg.get("details"), Mapping) else {}
    assert isinstance(details, Mapping)
    file = details.get("file")
    if isinstance(file, Mapping):
        content, p = _str(file.get("content")), _str(file.get("filePath"))
        if content is None or p is None or file.get("startLine", 1) != 1:
            return None
        if file.get("numLines") != file.get("totalLines"):
            return None
        return p, content
    p = _str(args.get("path")) or _str(args.get("file_path"))
    if p is None or args.get("offset") is not None or args.get("limit") is not None:
        return None
    if details and (details.get("truncation") is not None or details.get("isDirectory")):
        return None
    if details.get("meta") is not None or "resolvedPath" in details:
        return None
    text = _text_of(msg.get("content"))
    return (p, text) if text is not None else None


def changed_files(entries: Iterable[tuple[int, Mapping[str, Any]]], after: int, cwd: str | None) -> set[str]:
    """The files that write and edit calls whose results lie after position ``after`` changed
    (failed calls left out): what a restore between two nodes has to look at."""
    calls: dict[str, tuple[str, Mapping[str, Any]]] = {}
    out: set[str] = set()
    for pos, e in entries:
        msg = e.get("message")
        if not isinstance(msg, Mapping):
            continue
        role = msg.get("role")
        if role == "assistant":
            for call in calls_of(e):
                cid, name, args = call.get("id"), call.get("name"), call.get("arguments")
                if isinstance(cid, str) and isinstance(name, str) and isinstance(args, Mapping):
                    calls[cid] = (name, args)
        elif role == "toolResult" and pos > after and msg.get("isError") is not True:
            found = calls.get(msg.get("toolCallId"))  # type: ignore[arg-type]
            if found is not None and found[0] not in BASH_TOOLS and found[0] not in READ_TOOLS:
                out.update(
                    tool_path(eff.path, cwd) for eff in effects_of_call(found[0], found[1], None, None)
                )
    return out


def replay_entries(
    entries: Iterable[tuple[int, Mapping[str, Any]]],
    cwd: str | None = None,
    snapshots: Snapshots | None = None,
    claude_history: str | None = None,
    *,
    reads: bool = True,
    only: set[str] | None = None,
) -> Replay:
    """Replay ``(pos, entry)`` pairs of one path, in path order (``reads=False``: whole
    reads are not taken as evidence, to check the replay against them; ``only``: the states
    of those files only, the others' calls skipped, though `touched` names them all)."""
    rp = _Replayer(cwd, snapshots or {}, claude_history, reads, only)
    for pos, e in entries:
        rp.entry(pos, e)
    return rp.r
