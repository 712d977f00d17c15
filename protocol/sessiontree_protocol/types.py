"""Typed params, results and notifications of the sessiontree protocol (version 1).

One attrs class per request's params and result and per notification, and
`METHOD_TO_TYPES` mapping each method name to `(ParamsCls, ResultCls | None)` (`None`
when the result is JSON `null`). Python field names are snake_case; on the wire they are
camelCase (see `converters.py`). Each field carries its documentation in
`metadata["doc"]`, which the JSON Schema generator turns into `description`.

Field metadata understood by the converter:
- ``doc``: the field's documentation;
- ``nullable``: ``null`` has a meaning for this field and is sent as ``null`` (otherwise an
  optional field that is ``None`` is left out of the message);
- ``addition``: the field is an addition beyond PROTOCOL.md;
- ``wire``: the name on the wire when it is not the camelCase of the field name
  (`selectedMCPToolNames`, as the reference spells it);
- ``aliases``: older wire names read when the wire name is absent;
- ``tag``: the field that tells the classes of a union apart (`type` of the entry kinds
  of `session/append`); its one `Literal` value names the class;
- ``as_sent``: the field holds the whole object as sent, without the keys listed (the
  open-ended payloads of `session/append`, stored exactly as the client gave them).
"""

from __future__ import annotations

import enum
from typing import Any, Final, Literal

import attrs

from sessiontree_protocol import methods as m


class _Absent(enum.Enum):
    """Marker type of `ABSENT`."""

    ABSENT = "absent"

    def __repr__(self) -> str:
        return "ABSENT"

    def __bool__(self) -> bool:
        return False


ABSENT: Final = _Absent.ABSENT
"""Default of the few optional fields where an explicit ``null`` differs from leaving the
field out (e.g. ``expectedLeafId: null`` = "the leaf must be before the first entry")."""

Absent = Literal[_Absent.ABSENT]


def _req(doc: str, *, nullable: bool = False, addition: bool = False) -> Any:
    return attrs.field(metadata={"doc": doc, "nullable": nullable, "addition": addition})


def _opt(doc: str, default: Any = None, *, nullable: bool = False, addition: bool = False) -> Any:
    return attrs.field(default=default, metadata={"doc": doc, "nullable": nullable, "addition": addition})


def _list(doc: str, *, addition: bool = False) -> Any:
    return attrs.field(factory=list, metadata={"doc": doc, "nullable": False, "addition": addition})


def _tag(kind: str) -> Any:
    return attrs.field(
        default=kind, metadata={"doc": f"The entry kind, `{kind}`.", "nullable": False, "tag": True}
    )


def _as_sent(doc: str, without: tuple[str, ...] = ()) -> Any:
    return attrs.field(factory=dict, metadata={"doc": doc, "nullable": False, "as_sent": without})


JSON = Any
"""Any JSON value."""

JSONObject = dict[str, Any]
"""A JSON object (entries, headers and messages are sent exactly as stored)."""

ViewFilter = Literal["default", "no-tools", "user-only", "labeled-only", "all"]
NameSource = Literal["auto", "user"]
ChangeSource = Literal["local", "external"]


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
        'e.g. "‹63› │  │  │  ├─ " (present only when `prefix` is wider than 24 columns; see tree-view.md).'
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


# ---------------------------------------------------------------------------------------
# Sessions


@attrs.define(kw_only=True)
class ListParams:
    """Params of `session/list`."""

    cwd: str | None = _opt("Project directory (default: the daemon's working directory).")
    all: bool = _opt("List every project's sessions.", False)
    limit: int | None = _opt("At most this many sessions.")
    query: str | None = _opt(
        "Full-text filter: every whitespace-separated token must occur (case-insensitive)."
    )


@attrs.define(kw_only=True)
class ListResult:
    """Result of `session/list`, newest first."""

    sessions: list[SessionInfo] = _list("The sessions, newest first.")


@attrs.define(kw_only=True)
class RecentParams:
    """Params of `session/recent`."""

    cwd: str | None = _opt("Project directory (default: the daemon's working directory).")
    session_dir: str | None = _opt("Session directory to look in instead of the project's default.")
    limit: int = _opt("At most this many sessions.", 3)


@attrs.define(kw_only=True)
class RecentResult:
    """Result of `session/recent`."""

    sessions: list[RecentSession] = _list("The sessions, newest first.")


@attrs.define(kw_only=True)
class OpenParams:
    """Params of `session/open`."""

    path: str = _req("Path of the session file.")
    work_done_token: int | str | None = _opt("LSP work-done progress token for a long open.")


@attrs.define(kw_only=True)
class CreateParams:
    """Params of `session/create`."""

    cwd: str = _req("Working directory of the new session.")
    session_dir: str | None = _opt("Directory for the file (default: the project's session directory).")
    parent_session: str | None = _opt("parentSession of the new header.")


@attrs.define(kw_only=True)
class ContinueRecentParams:
    """Params of `session/continueRecent`."""

    cwd: str = _req("Working directory.")
    session_dir: str | None = _opt("Session directory (default: the project's).")
    terminal_id: str | None = _opt("Terminal id whose breadcrumb is preferred.")


@attrs.define(kw_only=True)
class OpenInMemoryParams:
    """Params of `session/openInMemory`."""

    cwd: str | None = _opt("Working directory recorded in the header.")


@attrs.define(kw_only=True)
class ForkFromParams:
    """Params of `session/forkFrom`."""

    source_path: str = _req("The session file to copy.")
    cwd: str = _req("Working directory of the new session.")
    session_dir: str | None = _opt("Directory for the new file.")


@attrs.define(kw_only=True)
class ForkResult:
    """Result of `session/fork`."""

    old_path: str = _req("The original file.")
    new_path: str = _req("The new file (the handle now addresses it).")


@attrs.define(kw_only=True)
class SetNameParams:
    """Params of `session/setName`."""

    session: str = _req("The session handle.")
    name: str = _req("The new title.")
    source: NameSource = _opt('"user" (default) or "auto" (does not override a user title).', "user")


@attrs.define(kw_only=True)
class SetNameResult:
    """Result of `session/setName`."""

    changed: bool = _req("False when the name was refused (empty, or auto over a user title).")


# ---------------------------------------------------------------------------------------
# Tree and entries


@attrs.define(kw_only=True)
class TreeResult:
    """Result of `session/tree`."""

    roots: list[TreeNode] = _list("The root nodes.")
    leaf_id: str | None = _req("The current leaf.", nullable=True)


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
    llm: bool = _opt("Also return the messages converted for the model.", False)


@attrs.define(kw_only=True)
class ContextResult:
    """Result of `session/context`: the SessionContext."""

    messages: list[JSONObject] = _list("The context messages.")
    thinking_level: str = _req("The thinking level.")
    models: JSONObject = _req("The selected model per role.")
    injected_ttsr_rules: list[str] = _list("Names of the injected TTSR rules.")
    mode: str = _req("The agent mode.")
    mode_data: JSON = _opt("Data of the mode.")
    service_tier: str | None = _opt("The service tier.")
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


# ---------------------------------------------------------------------------------------
# Appending

STORE_ASSIGNED: Final = ("id", "parentId", "timestamp")
"""Entry fields the store assigns: in an entry to append they are ignored."""


@attrs.define(kw_only=True)
class AppendMessage:
    """The message of a `message` entry: an agent message, stored exactly as sent."""

    role: str = _req("user, assistant, toolResult, bashExecution, custom, ... (the agent's roles).")
    as_sent: JSONObject = _as_sent("The whole message object as sent (role, content, ...).")


@attrs.define(kw_only=True)
class MessageEntry:
    """Entry to append: one agent message."""

    type: Literal["message"] = _tag("message")
    message: AppendMessage = _req("The message.")


@attrs.define(kw_only=True)
class ThinkingLevelChangeEntry:
    """Entry to append: the thinking level changed."""

    type: Literal["thinking_level_change"] = _tag("thinking_level_change")
    thinking_level: str | None = _opt("The new level (absent or null: stored as null).")


@attrs.define(kw_only=True)
class ModelChangeEntry:
    """Entry to append: the model (of a role) changed."""

    type: Literal["model_change"] = _tag("model_change")
    model: str = _req("The new model.")
    role: str | None = _opt("The role it is the model of (absent: the default role).")


@attrs.define(kw_only=True)
class CompactionEntry:
    """Entry to append: a compaction (the summary of the history before `firstKeptEntryId`)."""

    type: Literal["compaction"] = _tag("compaction")
    summary: str = _req("The summary.")
    short_summary: str | None = _opt("A short form of the summary.")
    first_kept_entry_id: str = _req("The first entry kept after the summary.")
    tokens_before: float = _req("Tokens of the context before the compaction.")
    details: JSON | None = _opt("Free-form details, stored as sent.")
    from_extension: JSON | None = _opt("Set when an extension made it, stored as sent.")
    preserve_data: JSON | None = _opt("Data kept across the compaction, stored as sent.")


@attrs.define(kw_only=True)
class CustomEntry:
    """Entry to append: extension data, outside the model's context."""

    type: Literal["custom"] = _tag("custom")
    custom_type: str = _req("The extension's name for the kind of data.")
    data: JSON | None = _opt("The data, stored as sent.")


@attrs.define(kw_only=True)
class CustomMessageEntry:
    """Entry to append: a message an extension puts into the model's context."""

    type: Literal["custom_message"] = _tag("custom_message")
    custom_type: str = _req("The extension's name for the kind of message.")
    content: str | list[JSON] = _req("The text, or content blocks.")
    display: bool = _req("Whether front ends show it.")
    details: JSON | None = _opt("Free-form details, stored as sent.")
    attribution: JSON | None = _opt(
        'Who it is attributed to (absent or null: the store\'s default, "agent").'
    )


@attrs.define(kw_only=True)
class TtsrInjectionEntry:
    """Entry to append: rules injected into the context."""

    type: Literal["ttsr_injection"] = _tag("ttsr_injection")
    injected_rules: list[str] = attrs.field(
        metadata={"doc": "The names of the rules.", "nullable": False, "aliases": ("ruleNames",)}
    )


@attrs.define(kw_only=True)
class SessionInitEntry:
    """Entry to append: how the session was started (systemPrompt, task, tools, outputSchema...)."""

    type: Literal["session_init"] = _tag("session_init")
    init: JSON | None = _opt(
        "An init object: when the value is an object, it is stored instead of the other fields."
    )
    as_sent: JSONObject = _as_sent(
        "The entry's other fields as sent, stored after the store's own.", ("type", *STORE_ASSIGNED)
    )


@attrs.define(kw_only=True)
class ModeChangeEntry:
    """Entry to append: the agent's mode changed."""

    type: Literal["mode_change"] = _tag("mode_change")
    mode: str = _req("The new mode.")
    data: JSONObject | None = _opt("Data of the mode.")


AppendEntry = (
    MessageEntry
    | ThinkingLevelChangeEntry
    | ModelChangeEntry
    | CompactionEntry
    | CustomEntry
    | CustomMessageEntry
    | TtsrInjectionEntry
    | SessionInitEntry
    | ModeChangeEntry
)
"""An entry `session/append` takes, told apart by `type`."""


@attrs.define(kw_only=True)
class AppendParams:
    """Params of `session/append`."""

    session: str = _req("The session handle.")
    entry: AppendEntry = _req(
        "The entry: `type` names its kind, the other fields are the payload as stored "
        "(id, parentId and timestamp are the store's)."
    )
    expected_leaf_id: str | Absent | None = _opt(
        "Compare-and-append: refuse with -32004 unless the leaf is this (null: before the first entry).",
        ABSENT,
        nullable=True,
    )


@attrs.define(kw_only=True)
class AppendResult:
    """Result of `session/append`."""

    id: str = _req("The new entry id.")
    leaf_id: str = _req("The leaf after the append (the new entry).")


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


# ---------------------------------------------------------------------------------------
# Notifications


@attrs.define(kw_only=True)
class DidChangeParams:
    """`session/didChange`: entries were appended."""

    session: str = _req("The session handle.")
    appended: list[EntrySummary] = _list("The new entries.")
    leaf_id: str | None = _req("The leaf after the change.", nullable=True)
    old_leaf_id: str | None = _req("The leaf before the change.", nullable=True)
    source: ChangeSource = _req('"local" (this daemon) or "external" (another process).')


@attrs.define(kw_only=True)
class DidNavigateParams:
    """`session/didNavigate`: the leaf moved."""

    session: str = _req("The session handle.")
    new_leaf_id: str | None = _req("The new leaf.", nullable=True)
    old_leaf_id: str | None = _req("The previous leaf.", nullable=True)
    summary_entry: EntrySummary | None = _opt("The branch summary written by the move, if any.")
    from_extension: bool | None = _opt("The summary came from an extension.")


@attrs.define(kw_only=True)
class DidChangeLabelParams:
    """`session/didChangeLabel`: a label was set or cleared."""

    session: str = _req("The session handle.")
    target_id: str = _req("The labelled entry.")
    label: str | None = _opt("The new label (absent: cleared).")


@attrs.define(kw_only=True)
class DidReloadParams:
    """`session/didReload`: the file was replaced or rewritten underneath."""

    session: str = _req("The session handle.")
    reason: str = _req("Why the session was reloaded.")


@attrs.define(kw_only=True)
class DidChangeListParams:
    """`session/didChangeList`: session files appeared or vanished."""

    cwd: str | None = _opt("The project whose list changed (absent: unknown or several).")


# ---------------------------------------------------------------------------------------

METHOD_TO_TYPES: Final[dict[str, tuple[type, type | None]]] = {
    m.SESSION_LIST: (ListParams, ListResult),
    m.SESSION_RECENT: (RecentParams, RecentResult),
    m.SESSION_OPEN: (OpenParams, OpenResult),
    m.SESSION_CREATE: (CreateParams, OpenResult),
    m.SESSION_CONTINUE_RECENT: (ContinueRecentParams, OpenResult),
    m.SESSION_OPEN_IN_MEMORY: (OpenInMemoryParams, OpenResult),
    m.SESSION_FORK_FROM: (ForkFromParams, OpenResult),
    m.SESSION_FORK: (SessionParams, ForkResult),
    m.SESSION_CLOSE: (SessionParams, None),
    m.SESSION_FLUSH: (SessionParams, None),
    m.SESSION_SET_NAME: (SetNameParams, SetNameResult),
    m.SESSION_TREE: (SessionParams, TreeResult),
    m.SESSION_VIEW: (ViewParams, ViewResult),
    m.SESSION_CHILDREN: (ChildrenParams, EntrySummariesResult),
    m.SESSION_PATH: (PathParams, EntrySummariesResult),
    m.SESSION_ENTRY: (EntryParams, EntryResult),
    m.SESSION_ENTRIES: (EntriesParams, EntriesResult),
    m.SESSION_BRANCH: (BranchParams, LeafResult),
    m.SESSION_RESET_LEAF: (SessionParams, LeafResult),
    m.SESSION_BRANCH_WITH_SUMMARY: (BranchWithSummaryParams, EntryIdResult),
    m.SESSION_PREPARE_NAVIGATION: (PrepareNavigationParams, PrepareNavigationResult),
    m.SESSION_NAVIGATE: (NavigateParams, NavigateResult),
    m.SESSION_BRANCH_TO_NEW_SESSION: (BranchToNewSessionParams, BranchToNewSessionResult),
    m.SESSION_CREATE_BRANCHED_SESSION: (CreateBranchedSessionParams, CreateBranchedSessionResult),
    m.SESSION_SET_LABEL: (SetLabelParams, EntryIdResult),
    m.SESSION_LABELS: (SessionParams, LabelsResult),
    m.SESSION_CONTEXT: (ContextParams, ContextResult),
    m.SESSION_APPEND: (AppendParams, AppendResult),
    m.SESSION_HISTORY: (SessionParams, HistoryResult),
    m.SESSION_BACK: (SessionParams, NavigateResult),
    m.SESSION_DOCTOR: (DoctorParams, DoctorResult),
    # notifications
    m.SESSION_DID_CHANGE: (DidChangeParams, None),
    m.SESSION_DID_NAVIGATE: (DidNavigateParams, None),
    m.SESSION_DID_CHANGE_LABEL: (DidChangeLabelParams, None),
    m.SESSION_DID_RELOAD: (DidReloadParams, None),
    m.SESSION_DID_CHANGE_LIST: (DidChangeListParams, None),
}
"""Method or notification name -> (params class, result class or None for a null result)."""
