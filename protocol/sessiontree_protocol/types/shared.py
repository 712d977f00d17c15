"""Shapes shared by several messages, and the generic params and results."""

from __future__ import annotations

import attrs

from sessiontree_protocol.types.base import JSONObject, _list, _opt, _req

# ---------------------------------------------------------------------------------------
# Shared shapes


@attrs.define(kw_only=True)
class SessionInfo:
    """One session file as listed by `session/list`."""

    path: str = _req("Absolute path of the session file.")
    id: str = _req("The session id from the header.")
    cwd: str = _req('The working directory from the header ("" when absent).')
    first_message: str = _req('Text of the first user message, or "(no messages)".')
    message_count: int = _req("Number of message entries (all roles, all branches).")
    created: str = _req("ISO timestamp of the header.")
    modified: str = _req("ISO timestamp of the file's modification time.")
    title: str | None = _opt("The session title (header title, else the last compaction's short summary).")
    parent_session: str | None = _opt("The header's parentSession.")
    display_name: str | None = _opt(
        "Addition: the name to show the session under, the same in every list, title and the CLI: the title, "
        "else the first line of the first user message, else the file name without .jsonl; at most 60 characters "
        '(a longer one ends with "…").',
        addition=True,
    )
    agent: str | None = _opt(
        'Addition: which agent wrote the session: "pi" (pi\'s family: pi, oh-my-pi, xcsh), "claude" '
        '(a Claude Code transcript) or "codex" (a Codex rollout). The other agents\' sessions are read-only.',
        addition=True,
    )
    resume_command: str | None = _opt(
        "Addition: for another agent's session, the shell command that resumes it in that agent "
        "(`claude --resume <id>`, `codex resume <id>`).",
        addition=True,
    )
    parent_id: str | None = _opt(
        "Addition: for a Codex fork or subagent thread, the id of the session it came from "
        "(`parentSession` names its file when that is listed too).",
        addition=True,
    )
    parent_kind: str | None = _opt('Addition: "fork" or "subagent", with `parentId`.', addition=True)
    dialect: str | None = _opt(
        'Addition: for a session of pi\'s family, the agent whose words the file uses: "xcsh", "pi" or "omp" '
        "(the agent whose directory holds it unless the file says otherwise). Without an agent dir set, "
        "`session/list` lists every agent dir of the family that exists (storage-format.md), so a list "
        "may mix them.",
        addition=True,
    )
    machine: str | None = _opt(
        "Addition: the machine the session lives on (set when the daemon has a shared store).", addition=True
    )
    user: str | None = _opt(
        "Addition: who ran it there (set when the daemon has a shared store).", addition=True
    )
    local: bool | None = _opt(
        "Addition: true for a file on this machine, false for a shared session only in the store "
        "(open it with `session/openShared`); absent without a store.",
        addition=True,
    )


@attrs.define(kw_only=True)
class RecentSession:
    """One entry of `session/recent`."""

    path: str = _req("Absolute path of the session file.")
    name: str = _req("Display name, cut to 40 characters.")
    modified: str = _req("ISO timestamp of the file's modification time.")


@attrs.define(kw_only=True)
class Recovered:
    """What the lenient loader dropped when opening a file."""

    skipped_lines: int = _req("Number of unreadable lines that were skipped.")
    torn_tail: bool = _req("True when the last line was cut short (an interrupted write).")
    quarantined_copy: str | None = _opt("Path of a copy of the original file kept aside, if one was made.")


@attrs.define(kw_only=True)
class OpenResult:
    """Result of every method that opens or creates a session."""

    session: str = _req("Opaque handle addressing the open session in later requests.")
    header: JSONObject = _req("The session header exactly as stored.")
    leaf_id: str | None = _req("The current leaf (null: before the first entry).", nullable=True)
    entry_count: int = _req("Number of entries (header excluded).")
    path: str | None = _opt("Absolute path of the session file (absent for in-memory sessions).")
    migrated_from: int | None = _opt("The file's version when a migration ran.")
    recovered: Recovered | None = _opt("Present when the lenient loader dropped anything.")
    restored_leaf_id: str | None = _opt(
        "Addition: the leaf remembered from an earlier daemon run that was restored on open.",
        addition=True,
    )
    display_name: str | None = _opt(
        "Addition: the name to show the session under, the `displayName` its `session/list` entry has.",
        addition=True,
    )
    agent: str | None = _opt(
        'Addition: "claude" or "codex" for another agent\'s transcript, opened read-only: every writing '
        "method answers -32008 (absent for pi sessions).",
        addition=True,
    )
    resume_command: str | None = _opt(
        "Addition: with `agent`, the shell command that resumes the session in its agent.", addition=True
    )


@attrs.define(kw_only=True)
class EntrySummary:
    """One entry in brief: what a tree row needs."""

    id: str = _req("The entry id.")
    parent_id: str | None = _req("The parent entry id (null for a root).", nullable=True)
    type: str = _req('The entry type ("message", "compaction", ...).')
    timestamp: str = _req("The entry's timestamp as stored.")
    text: str = _req("One-line display text, exactly as the tree selector shows it.")
    role: str | None = _opt("The message role (message entries only).")
    custom_type: str | None = _opt("The customType (custom and custom_message entries).")
    label: str | None = _opt("The entry's current label, if any.")


@attrs.define(kw_only=True)
class TreeNode:
    """An `EntrySummary` with its children, in `getTree()` order."""

    id: str = _req("The entry id.")
    parent_id: str | None = _req("The parent entry id (null for a root).", nullable=True)
    type: str = _req("The entry type.")
    timestamp: str = _req("The entry's timestamp as stored.")
    text: str = _req("One-line display text.")
    children: list[TreeNode] = _list("The child nodes (empty list for a leaf).")
    role: str | None = _opt("The message role (message entries only).")
    custom_type: str | None = _opt("The customType (custom and custom_message entries).")
    label: str | None = _opt("The entry's current label, if any.")
    truncated: bool = _opt(
        "Addition: the node has children that were cut at `maxDepth` (`children` is empty): "
        "ask `session/tree` again with `rootId` set to this node.",
        False,
        addition=True,
    )


@attrs.define(kw_only=True)
class Row:
    """One line of the rendered tree (see tree-view-rules.md)."""

    id: str = _req("The entry id.")
    parent_id: str | None = _req("The parent entry id (null for a root).", nullable=True)
    type: str = _req("The entry type.")
    depth: int = _req("Display indent (number of 3-character prefix cells).")
    prefix: str = _req('The connector art, e.g. "│  ├─ ".')
    on_active_path: bool = _req("True when the entry is the leaf or one of its ancestors.")
    is_leaf: bool = _req("True when the entry is the current leaf.")
    text: str = _req("One-line display text (as in EntrySummary).")
    timestamp: str = _req("The entry's timestamp as stored.")
    role: str | None = _opt("The message role (message entries only).")
    label: str | None = _opt("The entry's label, if any.")
    short_prefix: str | None = _opt(
        "Addition: the art to show for a deep row: `prefix` cut to its last 4 cells behind a depth marker, "
        'e.g. "‹63› │  │  │  ├─ " (present only when `prefix` is wider than 24 columns; see tree-view.md).',
        addition=True,
    )
    marks_leaf: bool | None = _opt(
        "Addition: this row carries the leaf marker: the leaf's row, or when the filter or search hides the "
        "leaf, its nearest visible ancestor's (the selected row), which names it in `hiddenLeaf`. Front ends "
        'draw the leaf marker here and nowhere else (tree-view.md, "One face"). Sent only when true.',
        addition=True,
    )
    hidden_leaf: str | None = _opt(
        "Addition: on the row that marks a leaf the filter hides, the leaf's display text "
        '(e.g. "[model: anthropic/claude-x]"), shown as "leaf: TEXT".',
        addition=True,
    )
    head_depth: int | None = _opt(
        "Addition: this row is the first visible row of a branch whose first row the filter hides: the depth "
        "of that hidden row. `prefix` draws its connector; a view that nests rows by depth nests this row at "
        "`headDepth` (it stands for the hidden row), so the branch point's fan-out shows.",
        addition=True,
    )


@attrs.define(kw_only=True)
class LabelInfo:
    """A label and the entry it names."""

    target_id: str = _req("The labelled entry.")
    label: str = _req("The label text.")


@attrs.define(kw_only=True)
class HistoryEntry:
    """Addition: one recorded leaf jump (navigation history)."""

    leaf_id: str | None = _req("Where the leaf went (null: before the first entry).", nullable=True)
    previous_leaf_id: str | None = _req("Where the leaf was before the jump.", nullable=True)
    at: str = _req("ISO timestamp of the jump.")
    summary_entry_id: str | None = _opt("The branch summary written by the jump, if any.")


@attrs.define(kw_only=True)
class DoctorProblem:
    """Addition: one problem found by `session/doctor`."""

    kind: str = _req(
        'Problem kind (e.g. "dropped-line", "torn-tail", "orphan"; see sessiontree.core.doctor.KINDS).'
    )
    message: str = _req("Human-readable description.")
    line: int | None = _opt("1-based line number in the file, when it applies.")
    entry_id: str | None = _opt("The entry concerned, when it applies.")


# ---------------------------------------------------------------------------------------
# Generic params and results


@attrs.define(kw_only=True)
class SessionParams:
    """Params of the methods that only name an open session."""

    session: str = _req("The session handle.")


@attrs.define(kw_only=True)
class LeafResult:
    """A new leaf position."""

    leaf_id: str | None = _req("The leaf after the call (null: before the first entry).", nullable=True)


@attrs.define(kw_only=True)
class EntryIdResult:
    """The id of an entry the call wrote."""

    entry_id: str = _req("The id of the written entry.")


@attrs.define(kw_only=True)
class EntrySummariesResult:
    """A list of entries in brief."""

    entries: list[EntrySummary] = _list("The entries.")
