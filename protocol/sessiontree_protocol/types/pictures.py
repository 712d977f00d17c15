"""Additions: params and results of `session/graph`, `session/export` and `session/diff`
(docs/graph-export-compare.md)."""

from __future__ import annotations

import attrs

from sessiontree_protocol.types.base import ABSENT, Absent, JSONObject, _list, _opt, _req

# ---------------------------------------------------------------------------------------
# Graph


@attrs.define(kw_only=True)
class GraphParams:
    """Addition: params of `session/graph`."""

    session: str = _req("The session handle.")
    collapse: int | None = _opt(
        "Fold runs of at least this many linear entries (0: never; absent: 2 above 400 entries, else never)."
    )
    leaf_id: str | Absent = _opt("Highlight the path to this entry (absent: the current leaf).", ABSENT)
    nonce: str | None = _opt(
        "A nonce for the page's inline script and style (a webview's CSP); absent: no html."
    )
    csp_source: str | None = _opt("The webview's own source, allowed by the page's CSP.")
    fan: int | None = _opt(
        "Children of one entry drawn at once (absent: 24); the others are folded into `more` nodes."
    )
    pages: dict[str, int] | None = _opt(
        "For a parent id, the index of its first child to draw (a `more` node's `fanParent` and `fanOffset`)."
    )


@attrs.define(kw_only=True)
class GraphResult:
    """Addition: result of `session/graph`."""

    svg: str = _req("The graph as one SVG element (nodes carry `data-id` and `data-i`).")
    nodes: list[JSONObject] = _list(
        "The drawn nodes in row order: id, kind (entry|run|more), type, row, lane, parent (index), text, count, "
        "and when set role, label, firstId, kinds, active, leaf, tip, branchPoint; a `more` node (branches "
        "of a wide fan not drawn) has fanParent and fanOffset, the page to ask for. In another agent's "
        "transcript the lines the tree view's default filter hides are folded into the next node of their "
        "chain: an entry node's count is then more than 1 and its kinds count the folded entries (custom "
        "entries by custom type)."
    )
    entries: int = _req("Entries in the session.")
    lanes: int = _req("Lanes drawn.")
    collapsed: bool = _req("Whether linear runs were folded.")
    leaf_id: str | None = _req("The highlighted leaf.", nullable=True)
    summary: str = _req("A one-line count (entries, nodes, lanes).")
    html: str | None = _opt("The whole page (when `nonce` was given).")
    truncated: bool = _opt(
        "The graph was cut at its most nodes (20,000): part of the tree is not drawn.", False
    )


# ---------------------------------------------------------------------------------------
# Export


@attrs.define(kw_only=True)
class ExportParams:
    """Addition: params of `session/export`."""

    session: str = _req("The session handle.")
    format: str = _req("`md`, `html` or `jsonl` (-32602 for another).")
    leaf_id: str | Absent = _opt("Export the path to this entry (absent: the current leaf).", ABSENT)
    subtree_id: str | None = _opt("Export this entry's whole subtree and the path to it (instead of a path).")
    redact: bool | None = _opt("Redact secrets (absent: yes for md and html, no for jsonl).")
    dry_run: bool = _opt("Only find what would be redacted: `content` is empty.", False)


@attrs.define(kw_only=True)
class RedactionCount:
    """Addition: replacements made by one pattern."""

    pattern: str = _req("The pattern's name (`openai-key`, `jwt`, a user pattern's name).")
    count: int = _req("Replacements.")


@attrs.define(kw_only=True)
class RedactionFinding:
    """Addition: one secret found (masked: at most its first four characters and its length)."""

    pattern: str = _req("The pattern's name.")
    entry_id: str | None = _req("The entry it is in.", nullable=True)
    preview: str = _req("The masked secret.")


@attrs.define(kw_only=True)
class ExportResult:
    """Addition: result of `session/export`."""

    content: str = _req("The exported text (empty for a dry run).")
    format: str = _req("The format.")
    entries: int = _req("Entries exported.")
    leaf_id: str | None = _req("The path's last entry.", nullable=True)
    redacted: bool = _req("Whether redaction ran.")
    redactions: list[RedactionCount] = _list("Replacements per pattern.")
    findings: list[RedactionFinding] = _list("Every secret found, in order.")
    suggested_name: str = _req(
        "A plain file name for the export (`<session id>-<leaf>.<format>`, only `[A-Za-z0-9._-]`, no `..`, "
        "at most 120 characters)."
    )


# ---------------------------------------------------------------------------------------
# Diff


@attrs.define(kw_only=True)
class DiffParams:
    """Addition: params of `session/diff`."""

    session: str = _req("The session handle.")
    a: str = _req("An entry id.")
    b: str = _req("Another entry id.")


@attrs.define(kw_only=True)
class EditHunk:
    """Addition: one replacement an edit call carries (a write: `newText` only)."""

    new_text: str = _req("The new text (a write: the content, capped at 4,000 characters).")
    old_text: str | None = _opt("The text replaced.")


@attrs.define(kw_only=True)
class FileCall:
    """Addition: one tool call that wrote or edited a file."""

    path: str = _req("The path as the call gave it.")
    kind: str = _req("`write` or `edit`.")
    tool: str = _req("The tool's name.")
    entry_id: str | None = _req("The assistant entry holding the call.", nullable=True)
    call_id: str | None = _req("The tool call id.", nullable=True)
    hunks: list[EditHunk] = _list("The replacements.")
    failed: bool = _req("The call's result was an error.")
    patch: str | None = _opt("A patch text the call carries instead of hunks (oh-my-pi's `input`).")


@attrs.define(kw_only=True)
class FileChange:
    """Addition: every call of one side on one file."""

    path: str = _req("The path (relative to the session's cwd when inside it).")
    summary: str = _req("`write`, `edit ×3`, `1 failed`, ...")
    calls: list[FileCall] = _list("The calls, in order.")


@attrs.define(kw_only=True)
class CommandRun:
    """Addition: a shell command run by a call or by the user."""

    command: str = _req("The command.")
    entry_id: str | None = _req("The entry holding it.", nullable=True)
    failed: bool = _req("It ended with an error.")


@attrs.define(kw_only=True)
class DiffSide:
    """Addition: one side of `session/diff`."""

    node_id: str = _req("The node.")
    text: str = _req("The node's one-line text.")
    entry_ids: list[str] = _list("Entries since the common ancestor, oldest first.")
    files: list[FileChange] = _list("Files written or edited since the common ancestor.")
    commands: list[CommandRun] = _list("Commands run since the common ancestor.")
    document: str = _req("This side as a text document (for a diff editor).")


@attrs.define(kw_only=True)
class DiffResult:
    """Addition: result of `session/diff`."""

    ancestor_id: str | None = _req("The deepest common entry (null: different roots).", nullable=True)
    ancestor_text: str = _req("Its one-line text.")
    a: DiffSide = _req("Side A.")
    b: DiffSide = _req("Side B.")
