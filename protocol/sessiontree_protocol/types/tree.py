"""Params and results of the tree, entries, navigation, labels, context, history and doctor."""

from __future__ import annotations

import attrs

from sessiontree_protocol.types.base import ABSENT, JSON, Absent, JSONObject, ViewFilter, _list, _opt, _req
from sessiontree_protocol.types.shared import (
    DoctorProblem,
    EntrySummary,
    HistoryEntry,
    LabelInfo,
    Row,
    TreeNode,
)

# ---------------------------------------------------------------------------------------
# Tree and entries


# The default nesting of `session/tree`: each level is two JSON levels (a node and its
# children array), so 200 levels stay far inside the 1,000 that common decoders accept.
TREE_MAX_DEPTH = 200


@attrs.define(kw_only=True)
class TreeParams:
    """Params of `session/tree`."""

    session: str = _req("The session handle.")
    flat: bool = _opt(
        "Addition: return every node once in `nodes` (pre-order, `parentId` links, no nesting) "
        "and `roots` empty.",
        False,
        addition=True,
    )
    root_id: str | None = _opt(
        "Addition: the subtree of this entry only (-32002 when unknown); absent: the whole tree.",
        addition=True,
    )
    max_depth: int = _opt(
        "Addition: nested levels at most (1 or more); a node at the last level that has children "
        "is sent with `children: []` and `truncated: true`. Keeps the answer within the ~1,000 "
        "nesting levels standard JSON decoders accept.",
        TREE_MAX_DEPTH,
        addition=True,
    )


@attrs.define(kw_only=True)
class TreeResult:
    """Result of `session/tree`."""

    roots: list[TreeNode] = _list("The root nodes (nested to `maxDepth`; empty with `flat`).")
    leaf_id: str | None = _req("The current leaf.", nullable=True)
    nodes: list[EntrySummary] | None = _opt(
        "Addition: with `flat`, every node of the (sub)tree in pre-order, children in `getTree()` order.",
        addition=True,
    )


@attrs.define(kw_only=True)
class ViewParams:
    """Params of `session/view`."""

    session: str = _req("The session handle.")
    filter: ViewFilter = _opt("The tree selector's filter mode.", "default")
    search: str | None = _opt("Search query (every token must match).")
    offset: int = _opt("First row to return.", 0)
    limit: int | None = _opt("At most this many rows (default: all).")
    leaf_id: str | Absent | None = _opt(
        "Addition: render as if this were the leaf (absent: the current leaf).",
        ABSENT,
        nullable=True,
        addition=True,
    )
    partial: bool = _opt(
        "Addition: a search of a big session may answer with the rows matched so far "
        "(`complete: false` in the result); `session/didCompleteSearch` follows once every "
        "row is known. Absent or false: the whole answer, however long it takes.",
        False,
        addition=True,
    )
    selected_window: int | None = _opt(
        "Addition: also answer, as `window`, up to this many rows around the selected row when it "
        "lies past the rows asked for (0 or more): a sidebar draws its first page and the rows "
        "around the leaf from one request. Absent: no window.",
        addition=True,
    )


@attrs.define(kw_only=True)
class ViewWindow:
    """The rows around the selected row of a `session/view` answer (`selectedWindow`)."""

    offset: int = _req(
        "Index (in the whole view) of the first row: the selected row in the rows' middle, pulled "
        "back so they end at the last row, never before the end of the rows asked for."
    )
    rows: list[Row] = _list("The rows from `offset`, as many as `selectedWindow` at most.")


@attrs.define(kw_only=True)
class ViewResult:
    """Result of `session/view`."""

    rows: list[Row] = _list("The requested rows.")
    total: int = _req("Number of visible rows in the whole view.")
    selected_index: int | None = _req(
        "Row index (in the whole view) of the leaf or its nearest visible ancestor; null when none is visible.",
        nullable=True,
    )
    leaf_id: str | None = _req("The leaf the view was rendered for.", nullable=True)
    complete: bool | None = _opt(
        "Addition: false when a `partial` search answered with the rows matched so far: "
        "`total` counts them, `selectedIndex` is null; absent when the answer is whole.",
        addition=True,
    )
    window: ViewWindow | None = _opt(
        "Addition: with `selectedWindow`, the rows around the selected row when it lies past "
        "`rows`; absent otherwise (no selected row, or `rows` holds it or lies past it).",
        addition=True,
    )


@attrs.define(kw_only=True)
class PreviewParams:
    """Params of `session/preview`: the rows around a session's leaf from the end of its file."""

    path: str = _req("Path of the session file (the access rules of `session/open`).")
    filter: ViewFilter = _opt("The tree selector's filter mode.", "default")
    limit: int = _opt(
        "At most this many rows (0 to 2000), the selected row in their middle when the rows allow.", 200
    )


@attrs.define(kw_only=True)
class PreviewResult:
    """Result of `session/preview` (docs/preview.md)."""

    rows: list[Row] = _list(
        "The rows around the leaf, drawn by the rules of `session/view` from the part of the tree "
        "the bytes read hold; empty when the file is not a current-version session, has no "
        "entries, or its leaf is not in them."
    )
    selected_index: int | None = _req(
        "Index in `rows` (not in the whole view) of the leaf or its nearest visible ancestor.",
        nullable=True,
    )
    leaf_id: str | None = _req(
        "The leaf the rows were drawn for: the one `session/open` restores, else the file's last entry.",
        nullable=True,
    )
    above: bool = _req(
        "The leaf has older ancestors before the bytes read: they are not in `rows`, and the rows' "
        "prefixes lack the indentation they add in the whole view."
    )
    bytes: int = _req("How many bytes of the file's end were read.")
    indexed: bool | None = _opt(
        "true when nothing was read because the session is open in the daemon or its index "
        "cache was written since the file last changed: its open answers at once; absent otherwise."
    )


@attrs.define(kw_only=True)
class ChildrenParams:
    """Params of `session/children`."""

    session: str = _req("The session handle.")
    parent_id: str | None = _opt("The parent entry (null or absent: the roots).", nullable=True)


@attrs.define(kw_only=True)
class PathParams:
    """Params of `session/path`."""

    session: str = _req("The session handle.")
    from_id: str | None = _opt("Start of the path (default: the leaf).")


@attrs.define(kw_only=True)
class EntryParams:
    """Params of `session/entry`."""

    session: str = _req("The session handle.")
    id: str = _req("The entry id.")
    resolve_blobs: bool = _opt("Replace blob references by their content.", False)


@attrs.define(kw_only=True)
class EntryResult:
    """Result of `session/entry`."""

    entry: JSONObject = _req("The entry exactly as stored.")


@attrs.define(kw_only=True)
class EntriesParams:
    """Params of `session/entries`."""

    session: str = _req("The session handle.")
    offset: int = _opt("Index of the first entry (file order).", 0)
    limit: int | None = _opt("At most this many entries (default: all).")


@attrs.define(kw_only=True)
class EntriesResult:
    """Result of `session/entries`."""

    entries: list[JSONObject] = _list("The entries exactly as stored, in file order.")
    total: int = _req("Number of entries in the session.")


# ---------------------------------------------------------------------------------------
# Navigation


@attrs.define(kw_only=True)
class BranchParams:
    """Params of `session/branch`."""

    session: str = _req("The session handle.")
    entry_id: str = _req("The new leaf.")


@attrs.define(kw_only=True)
class BranchWithSummaryParams:
    """Params of `session/branchWithSummary`."""

    session: str = _req("The session handle.")
    branch_from_id: str | None = _req("Where the summary hangs (null: a root summary).", nullable=True)
    summary: str = _req("The summary text.")
    details: JSON = _opt("Free-form details stored with the summary.")
    from_extension: bool | None = _opt("Marks a summary supplied by an extension.")


@attrs.define(kw_only=True)
class PrepareNavigationParams:
    """Params of `session/prepareNavigation`."""

    session: str = _req("The session handle.")
    target_id: str = _req("The entry to navigate to.")


@attrs.define(kw_only=True)
class PrepareNavigationResult:
    """Result of `session/prepareNavigation`."""

    target_id: str = _req("The target entry.")
    old_leaf_id: str | None = _req("The current leaf.", nullable=True)
    common_ancestor_id: str | None = _req("Deepest common ancestor of leaf and target.", nullable=True)
    entries_to_summarize: list[EntrySummary] = _list("Entries a summary would cover, oldest first.")


@attrs.define(kw_only=True)
class NavigateParams:
    """Params of `session/navigate`."""

    session: str = _req("The session handle.")
    target_id: str = _req("The entry to navigate to.")
    summarize: bool = _opt("Write a branch summary of the abandoned branch.", False)
    summary: str | None = _opt("The summary text (when absent and summarize is set, the summarizer runs).")
    summary_details: JSON = _opt("Details stored with the summary.")
    custom_instructions: str | None = _opt("Instructions passed to the summarizer.")


@attrs.define(kw_only=True)
class NavigateResult:
    """Result of `session/navigate` (and of `session/back`)."""

    cancelled: bool = _req("True when nothing happened.")
    new_leaf_id: str | None = _req("The leaf after the call.", nullable=True)
    old_leaf_id: str | None = _req("The leaf before the call.", nullable=True)
    editor_text: str | None = _opt("Text of a user/custom_message target, for the editor.")
    summary_entry: EntrySummary | None = _opt("The branch summary written, if any.")


@attrs.define(kw_only=True)
class BranchToNewSessionParams:
    """Params of `session/branchToNewSession`."""

    session: str = _req("The session handle.")
    entry_id: str = _req("A user message entry.")


@attrs.define(kw_only=True)
class BranchToNewSessionResult:
    """Result of `session/branchToNewSession`."""

    selected_text: str = _req("The text of the selected user message.")
    session: str = _req("Handle of the new session.")
    path: str | None = _opt("The new session file.")


@attrs.define(kw_only=True)
class CreateBranchedSessionParams:
    """Params of `session/createBranchedSession`."""

    session: str = _req("The session handle.")
    leaf_id: str = _req("Last entry to copy into the new file.")


@attrs.define(kw_only=True)
class CreateBranchedSessionResult:
    """Result of `session/createBranchedSession`."""

    path: str | None = _opt("The new session file (absent for in-memory sessions).")


# ---------------------------------------------------------------------------------------
# Labels and context


@attrs.define(kw_only=True)
class SetLabelParams:
    """Params of `session/setLabel`."""

    session: str = _req("The session handle.")
    target_id: str = _req("The entry to label.")
    label: str | None = _opt('The label (absent, null or "" clears).', nullable=True)


@attrs.define(kw_only=True)
class LabelsResult:
    """Result of `session/labels`."""

    labels: list[LabelInfo] = _list("Every current label.")


@attrs.define(kw_only=True)
class ContextParams:
    """Params of `session/context`."""

    session: str = _req("The session handle.")
    leaf_id: str | Absent | None = _opt(
        "Any node (absent: the current leaf; null: before the first entry).", ABSENT, nullable=True
    )
    llm: bool = _opt("Also return the messages converted for the model (those sent, with a page).", False)
    offset: int = _opt(
        "Addition: the first message to return (0 or more from the start; negative counts from the end, "
        "so -50 with no limit gives the last 50).",
        0,
        addition=True,
    )
    limit: int | None = _opt("Addition: at most this many messages (0 or more; absent: all).", addition=True)
    max_bytes: int | None = _opt(
        "Addition: stop adding messages once their JSON exceeds this many bytes (at least one message "
        "is sent when there is one); `truncated` says whether any were left out.",
        addition=True,
    )


@attrs.define(kw_only=True)
class ContextResult:
    """Result of `session/context`: the SessionContext."""

    messages: list[JSONObject] = _list("The context messages.")
    thinking_level: str = _req("The thinking level.")
    models: JSONObject = _req("The selected model per role.")
    injected_ttsr_rules: list[str] = _list("Names of the injected TTSR rules.")
    mode: str = _req("The agent mode.")
    mode_data: JSON = _opt("Data of the mode.")
    service_tier: str | dict[str, str] | None = _opt(
        "The service tier: a string (xcsh), or oh-my-pi's map of a tier per model family."
    )
    active_context_name: str | None = _opt("Active context name.")
    active_context_tenant: str | None = _opt("Active context tenant.")
    selected_mcp_tool_names: list[str] | None = attrs.field(
        default=None,
        metadata={"doc": "Selected MCP tool names.", "nullable": False, "wire": "selectedMCPToolNames"},
    )
    has_persisted_mcp_tool_selection: bool | None = attrs.field(
        default=None,
        metadata={
            "doc": "Whether an MCP tool selection was persisted.",
            "nullable": False,
            "wire": "hasPersistedMCPToolSelection",
        },
    )
    llm_messages: list[JSONObject] | None = _opt("The messages converted for the model (when llm was set).")
    total_messages: int | None = _opt(
        "Addition: the number of context messages before `offset`/`limit`/`maxBytes` were applied.",
        addition=True,
    )
    offset: int | None = _opt("Addition: the index of the first message sent.", addition=True)
    truncated: bool = _opt(
        "Addition: messages after the ones sent were left out by `limit` or `maxBytes`.", False, addition=True
    )


# ---------------------------------------------------------------------------------------
# Additions: navigation history and doctor


@attrs.define(kw_only=True)
class HistoryResult:
    """Addition: result of `session/history`."""

    entries: list[HistoryEntry] = _list("Recorded jumps, oldest first.")
    index: int = _req("Number of jumps in effect; `session/back` undoes entries[index-1].")


@attrs.define(kw_only=True)
class DoctorParams:
    """Addition: params of `session/doctor` (give `path` or `session`)."""

    path: str | None = _opt("A session file to check.")
    session: str | None = _opt("An open session whose file to check.")
    repair: bool = _opt("Repair what can be repaired (the original is quarantined first).", False)


@attrs.define(kw_only=True)
class DoctorResult:
    """Addition: result of `session/doctor`."""

    problems: list[DoctorProblem] = _list("Problems found.")
    repaired: bool | None = _opt("True when a repair was written.")
    quarantined_copy: str | None = _opt("Where the original was copied before repairing.")
