"""What restoring the files to a node would do: the plan a preview shows and an apply writes.

The files are those the agent changed between the node the workspace is at (the current
leaf, or the target of the last restore while the leaf has not moved since) and the target,
on either side of their common ancestor: undone back to it, redone along the target's path.
For each, three states: ``base`` (the file as the session left it at that node), the disk,
and the target's content, all from `replay.py`. The result is ``merge3(base, disk,
target)``, so edits the user made since are kept; different changes to the same lines are a
conflict, shown with markers in the diff and never written. A file whose base or target
state is not known is *unknown* and left alone; ``include_unknown`` writes the target's
content over an unknown base (never over an unknown target: there is nothing to write).

Only files inside the workspace roots are ever written: a path is resolved (symlinks
followed, ``..`` folded) and must lie inside a root, and outside sessiontree's data directory
and the agent directories given as ``excluded``; any other is ``outside-workspace``.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from .. import paths
from ..compare.effects import tool_path
from ..errors import EntryNotFoundError
from ..sources.foreign import claude_root, codex_root
from . import replay as rp
from .events import path_events
from .merge import merge3
from .snapshots import SnapshotStore, data_dir, sha256

__all__ = [
    "STATUSES",
    "FilePlan",
    "RestorePlan",
    "inside_roots",
    "never_written",
    "plan_restore",
    "unified_diff",
]

#: Every status a file of a plan can have.
STATUSES = ("change", "create", "delete", "unchanged", "conflict", "unknown", "outside-workspace")
_WRITES = frozenset({"change", "create", "delete"})


@dataclass
class FilePlan:
    """One file of a restore."""

    path: str
    """The file as the session names it (absolute, normalized)."""
    display: str
    """The path relative to its workspace root (absolute when outside every root)."""
    status: str
    diff: str = ""
    """A unified diff from the disk to what the restore writes (with conflict markers for a
    conflict); empty when nothing changes or nothing is known."""
    hash_before: str | None = None
    """SHA-256 of the disk's bytes now (None: no such file)."""
    hash_after: str | None = None
    """SHA-256 of the bytes the restore writes (None: deleted, or nothing written)."""
    reason: str = ""
    conflicts: int = 0
    base: str = ""
    """How the file's state at the current node is known (or why it is not)."""
    target: str = ""
    """How the file's state at the target is known (or why it is not)."""
    real: str | None = None
    """The resolved path written (None when outside every root)."""
    new: bytes | None = field(default=None, repr=False)
    shown: str | None = field(default=None, repr=False)
    """The text ``diff`` leads to: what the restore writes, or for a conflict the merged text
    with its markers (None: deleted, or nothing to show). A diff editor's second side."""

    @property
    def writes(self) -> bool:
        """Whether applying the plan changes this file."""
        return self.status in _WRITES


@dataclass
class RestorePlan:
    """A restore's files and what they were computed from."""

    session_file: str | None
    base_id: str | None
    target_id: str
    ancestor_id: str | None
    leaf_id: str | None
    include_unknown: bool
    files: list[FilePlan]
    commands: list[tuple[str | None, str]]
    """``(entry_id, command)`` of the commands run on the way (either side of the common
    ancestor) that may have changed files no call names."""

    @property
    def token(self) -> str:
        """A hash of everything the plan was made from and would do: an apply refuses a
        preview's token that no longer matches."""
        parts: list[Any] = [
            self.session_file,
            self.base_id,
            self.target_id,
            self.include_unknown,
            [(f.path, f.status, f.hash_before, f.hash_after) for f in self.files],
        ]
        return sha256(orjson.dumps(parts))[:32]


def never_written(agent_dir: str | None = None) -> list[str]:
    """Directories a restore never writes into, whatever the roots: the agents' own (pi's
    agent dir, Claude Code's and Codex's homes) and sessiontree's data and state."""
    agent = agent_dir or paths.get_agent_dir()
    dirs = [agent, paths.sessions_root(agent), os.path.dirname(claude_root()), os.path.dirname(codex_root())]
    dirs.append(data_dir())
    return dirs


def _real(path: str) -> str:
    return os.path.realpath(path)


def _within(path: str, base: str) -> bool:
    return path == base or path.startswith(base.rstrip(os.sep) + os.sep)


def inside_roots(path: str, roots: Sequence[str], excluded: Sequence[str] = ()) -> tuple[str, str] | None:
    """``(resolved path, its root)`` when ``path`` resolves inside a root and outside every
    ``excluded`` directory; None otherwise (relative paths too)."""
    if not os.path.isabs(path) or "\x00" in path:
        return None
    real = _real(path)
    for ex in excluded:
        if _within(real, _real(ex)):
            return None
    for root in roots:
        r = _real(root)
        if _within(real, r) and real != r:
            return real, r
    return None


def _lines(text: str) -> list[str]:
    out = []
    for line in text.splitlines(keepends=True):
        if line.endswith(("\n", "\r")):
            out.append(line)
        else:
            out.append(line + "\n\\ No newline at end of file\n")
    return out


def unified_diff(before: str | None, after: str | None, display: str) -> str:
    """A unified diff (``--- a/p``, ``+++ b/p``; ``/dev/null`` for a side that does not exist)."""
    a = "/dev/null" if before is None else f"a/{display}"
    b = "/dev/null" if after is None else f"b/{display}"
    return "".join(difflib.unified_diff(_lines(before or ""), _lines(after or ""), a, b))


def _disk(real: str) -> tuple[bytes | None, str | None]:
    try:
        with open(real, "rb") as f:
            return f.read(), None
    except FileNotFoundError:
        return None, None
    except IsADirectoryError:
        return None, "a directory is there"
    except OSError as exc:
        return None, f"cannot be read ({exc.strerror})"


def _same(state: rp.FileState, disk: str | None) -> bool:
    return (state.status == rp.ABSENT and disk is None) or (
        state.status == rp.KNOWN and state.content == disk
    )


def _decide(
    fp: FilePlan,
    base: rp.FileState,
    last: rp.FileState | None,
    disk: str | None,
    target: rp.FileState,
    include_unknown: bool,
) -> str | None:
    """Set ``fp``'s status; the text to write (None: delete or nothing)."""
    if not target.known and include_unknown and target is rp.NOT_SEEN:
        # no call on the target's path ever made the file: the user asked to take it as absent
        target = rp.FileState(rp.ABSENT, how="taken as absent: no call on the target's path made it")
        fp.reason = "taken as absent at the target (no call on its path made it)"
    if not target.known:
        fp.status, fp.reason = "unknown", f"its content at the target is not known: {target.how}"
        return None
    t = target.content if target.status == rp.KNOWN else None
    if not base.known and last is not None and _same(last, disk):
        # a command ran since, but the disk is still what the session last knew: nothing of
        # the disk is lost by taking that as the base
        base = last
        fp.reason = "the disk is as the session last knew it (a command ran since)"
    if not base.known and base is rp.NOT_SEEN and (disk is None or _same(target, disk)):
        # the session never saw the file before: nothing on disk to keep, or already the target
        fp.status = "unchanged" if _same(target, disk) else "create" if t is not None else "unchanged"
        return t
    if not base.known:
        if not include_unknown:
            fp.status, fp.reason = "unknown", f"its content at the current node is not known: {base.how}"
            return None
        fp.reason = "written over: its content at the current node is not known"
        if _same(target, disk):
            fp.status = "unchanged"
        else:
            fp.status = "delete" if t is None else "create" if disk is None else "change"
        return t
    b = base.content if base.status == rp.KNOWN else None
    if t is None:
        if disk is None:
            fp.status = "unchanged"
        elif disk == b:
            fp.status = "delete"
        else:
            fp.status, fp.reason = (
                "conflict",
                "not in the target, and changed on disk since the session left it",
            )
            fp.conflicts = 1
        return None
    if disk is None:
        if b is None:
            fp.status = "create"
            return t
        fp.status, fp.reason, fp.conflicts = "conflict", "deleted on disk since the session left it", 1
        return None
    if b is None:
        if disk == t:
            fp.status = "unchanged"
            return t
        fp.status, fp.reason, fp.conflicts = (
            "conflict",
            "created on disk though the session had no such file",
            1,
        )
        merged = merge3("", disk, t)
        fp.diff, fp.shown = unified_diff(disk, merged.text, fp.display), merged.text
        return None
    merged = merge3(b, disk, t)
    if merged.conflicts:
        fp.status, fp.conflicts = "conflict", merged.conflicts
        fp.reason = "your changes and the restore touch the same lines"
        fp.diff, fp.shown = unified_diff(disk, merged.text, fp.display), merged.text
        return None
    fp.status = "unchanged" if merged.text == disk else "change"
    if b != disk and fp.status == "change":
        fp.reason = "merged with your changes since"
    return merged.text


def plan_restore(
    manager: Any,
    target_id: str,
    roots: Sequence[str],
    *,
    base_id: str | None = None,
    include_unknown: bool = False,
    excluded: Sequence[str] = (),
    store: SnapshotStore | None = None,
    claude_history: str | None = None,
    only: Iterable[str] | None = None,
) -> RestorePlan:
    """The plan to bring the files to ``target_id`` (``base_id``: the node the workspace is
    at, default the leaf). ``only`` limits it to those paths. Reads files, writes nothing."""
    if manager.index.skeleton(target_id) is None:
        raise EntryNotFoundError(target_id)
    leaf = manager.get_leaf_id()
    base_id = base_id if base_id is not None else leaf
    session_file = manager.get_session_file()
    cwd = manager.get_cwd() if hasattr(manager, "get_cwd") else None
    snaps: Mapping[tuple[str, str], str | None] = (
        store.contents(session_file) if store and session_file else {}
    )
    header = manager.get_header() or {}
    sid = header.get("id") if isinstance(header, dict) else None
    # Claude Code keeps a session's backups in <file-history>/<session id>/
    backups = os.path.join(claude_history, sid) if claude_history and isinstance(sid, str) and sid else None
    base_ids, base_entries = path_events(manager, base_id)
    target_ids, target_entries = path_events(manager, target_id)
    common = 0
    for a, b in zip(base_ids, target_ids, strict=False):
        if a != b:
            break
        common += 1
    anc = common - 1
    # which files: those the calls changed on either side of the ancestor (a first pass that
    # computes no file's state), then the states of those files only
    on_base_path = anc == len(target_ids) - 1  # the target is the base or one of its ancestors
    paths = rp.changed_files(base_entries, anc, cwd)
    if not on_base_path:
        paths |= rp.changed_files(target_entries, anc, cwd)
    if only is not None:
        wanted = {tool_path(p, cwd) for p in only}
        paths &= wanted
    base_rp = rp.replay_entries(base_entries, cwd, snaps, backups, only=paths)
    target_rp = (
        base_rp if on_base_path else rp.replay_entries(target_entries, cwd, snaps, backups, only=paths)
    )
    files: list[FilePlan] = []
    for path in sorted(paths):
        where = inside_roots(path, roots, excluded)
        display = os.path.relpath(path, where[1]) if where else path
        fp = FilePlan(path, display, "outside-workspace")
        # a node on the other's path is read from the longer replay: evidence after it (a
        # later read, a backup, a result's original file) tells it too
        if on_base_path:
            target = base_rp.state_at(path, anc)
            base = base_rp.state_at(path, len(base_ids) - 1)
        elif anc == len(base_ids) - 1:
            base = target_rp.state_at(path, anc)
            target = target_rp.state_at(path, len(target_ids) - 1)
        else:
            base = base_rp.state_at(path, len(base_ids) - 1)
            target = target_rp.state_at(path, len(target_ids) - 1)
        fp.base, fp.target = _how(base), _how(target)
        if where is None:
            fp.reason = "outside the workspace folders"
            files.append(fp)
            continue
        fp.real = where[0]
        raw, problem = _disk(where[0])
        fp.hash_before = sha256(raw) if raw is not None else None
        disk: str | None = None
        if raw is not None:
            try:
                disk = raw.decode("utf-8")
            except UnicodeDecodeError:
                problem = "not UTF-8 text"
        if problem:
            fp.status, fp.reason = "unknown", f"on disk: {problem}"
            files.append(fp)
            continue
        last = base_rp.last_known(path, len(base_ids) - 1)
        text = _decide(fp, base, last, disk, target, include_unknown)
        if fp.writes:
            fp.new = text.encode("utf-8") if text is not None else None
            fp.hash_after = sha256(fp.new) if fp.new is not None else None
            fp.diff, fp.shown = unified_diff(disk, text, fp.display), text
        files.append(fp)
    commands = [(eid, cmd) for pos, eid, cmd in base_rp.commands if pos > anc]
    if not on_base_path:
        commands += [(eid, cmd) for pos, eid, cmd in target_rp.commands if pos > anc]
    return RestorePlan(
        session_file,
        base_id,
        target_id,
        base_ids[anc] if anc >= 0 else None,
        leaf,
        include_unknown,
        files,
        commands,
    )


def _how(state: rp.FileState) -> str:
    if state.status == rp.KNOWN:
        return f"known ({state.how})"
    if state.status == rp.ABSENT:
        return f"absent ({state.how})" if state.how else "absent"
    return f"unknown: {state.how}"
