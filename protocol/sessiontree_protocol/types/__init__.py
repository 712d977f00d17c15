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

The classes live in one module per area (`shared`, `sessions`, `tree`, `append`,
`notifications`; the field specifiers and aliases in `base`); every name is re-exported here,
so `sessiontree_protocol.types` is still the one place to import them from.
"""

from __future__ import annotations

from typing import Final

from sessiontree_protocol import methods as m

# isort: off
# The string `Literal` aliases in the order they are defined: the schema's `x-enums` lists
# them in this module's order (schema.named_enums).
from sessiontree_protocol.types.base import ViewFilter, NameSource, ChangeSource

# isort: on
from sessiontree_protocol.types.append import (
    STORE_ASSIGNED,
    AppendEntry,
    AppendMessage,
    AppendParams,
    AppendResult,
    CompactionEntry,
    CustomEntry,
    CustomMessageEntry,
    MessageEntry,
    ModeChangeEntry,
    ModelChangeEntry,
    SessionInitEntry,
    ThinkingLevelChangeEntry,
    TtsrInjectionEntry,
)
from sessiontree_protocol.types.base import ABSENT, JSON, Absent, JSONObject, _Absent
from sessiontree_protocol.types.notifications import (
    DidChangeLabelParams,
    DidChangeListParams,
    DidChangeParams,
    DidCompleteSearchParams,
    DidNavigateParams,
    DidReloadParams,
)
from sessiontree_protocol.types.pictures import (
    CommandRun,
    DiffParams,
    DiffResult,
    DiffSide,
    EditHunk,
    ExportParams,
    ExportResult,
    FileCall,
    FileChange,
    GraphParams,
    GraphResult,
    RedactionCount,
    RedactionFinding,
)
from sessiontree_protocol.types.search import SearchHit, SearchParams, SearchPathLabel, SearchResult
from sessiontree_protocol.types.sessions import (
    ContinueRecentParams,
    CreateParams,
    ForkFromParams,
    ForkResult,
    ListParams,
    ListResult,
    OpenInMemoryParams,
    OpenParams,
    RecentParams,
    RecentResult,
    SetNameParams,
    SetNameResult,
)
from sessiontree_protocol.types.shared import (
    DoctorProblem,
    EntryIdResult,
    EntrySummariesResult,
    EntrySummary,
    HistoryEntry,
    LabelInfo,
    LeafResult,
    OpenResult,
    RecentSession,
    Recovered,
    Row,
    SessionInfo,
    SessionParams,
    TreeNode,
)
from sessiontree_protocol.types.store import OpenSharedParams, StoreStatus
from sessiontree_protocol.types.tree import (
    TREE_MAX_DEPTH,
    BranchParams,
    BranchToNewSessionParams,
    BranchToNewSessionResult,
    BranchWithSummaryParams,
    ChildrenParams,
    ContextParams,
    ContextResult,
    CreateBranchedSessionParams,
    CreateBranchedSessionResult,
    DoctorParams,
    DoctorResult,
    EntriesParams,
    EntriesResult,
    EntryParams,
    EntryResult,
    HistoryResult,
    LabelsResult,
    NavigateParams,
    NavigateResult,
    PathParams,
    PrepareNavigationParams,
    PrepareNavigationResult,
    PreviewParams,
    PreviewResult,
    SetLabelParams,
    TreeParams,
    TreeResult,
    ViewParams,
    ViewResult,
    ViewWindow,
)

__all__ = [
    "ABSENT",
    "JSON",
    "METHOD_TO_TYPES",
    "STORE_ASSIGNED",
    "TREE_MAX_DEPTH",
    "Absent",
    "AppendEntry",
    "AppendMessage",
    "AppendParams",
    "AppendResult",
    "BranchParams",
    "BranchToNewSessionParams",
    "BranchToNewSessionResult",
    "BranchWithSummaryParams",
    "ChangeSource",
    "ChildrenParams",
    "CommandRun",
    "CompactionEntry",
    "ContextParams",
    "ContextResult",
    "ContinueRecentParams",
    "CreateBranchedSessionParams",
    "CreateBranchedSessionResult",
    "CreateParams",
    "CustomEntry",
    "CustomMessageEntry",
    "DidChangeLabelParams",
    "DidChangeListParams",
    "DidChangeParams",
    "DidCompleteSearchParams",
    "DidNavigateParams",
    "DidReloadParams",
    "DiffParams",
    "DiffResult",
    "DiffSide",
    "DoctorParams",
    "DoctorProblem",
    "DoctorResult",
    "EditHunk",
    "EntriesParams",
    "EntriesResult",
    "EntryIdResult",
    "EntryParams",
    "EntryResult",
    "EntrySummariesResult",
    "EntrySummary",
    "ExportParams",
    "ExportResult",
    "FileCall",
    "FileChange",
    "ForkFromParams",
    "ForkResult",
    "GraphParams",
    "GraphResult",
    "HistoryEntry",
    "HistoryResult",
    "JSONObject",
    "LabelInfo",
    "LabelsResult",
    "LeafResult",
    "ListParams",
    "ListResult",
    "MessageEntry",
    "ModeChangeEntry",
    "ModelChangeEntry",
    "NameSource",
    "NavigateParams",
    "NavigateResult",
    "OpenInMemoryParams",
    "OpenParams",
    "OpenResult",
    "OpenSharedParams",
    "PathParams",
    "PrepareNavigationParams",
    "PrepareNavigationResult",
    "PreviewParams",
    "PreviewResult",
    "RecentParams",
    "RecentResult",
    "RecentSession",
    "Recovered",
    "RedactionCount",
    "RedactionFinding",
    "Row",
    "SearchHit",
    "SearchParams",
    "SearchPathLabel",
    "SearchResult",
    "SessionInfo",
    "SessionInitEntry",
    "SessionParams",
    "SetLabelParams",
    "SetNameParams",
    "SetNameResult",
    "StoreStatus",
    "ThinkingLevelChangeEntry",
    "TreeNode",
    "TreeParams",
    "TreeResult",
    "TtsrInjectionEntry",
    "ViewFilter",
    "ViewParams",
    "ViewResult",
    "ViewWindow",
    "_Absent",
]

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
    m.SESSION_TREE: (TreeParams, TreeResult),
    m.SESSION_VIEW: (ViewParams, ViewResult),
    m.SESSION_PREVIEW: (PreviewParams, PreviewResult),
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
    m.SESSION_GRAPH: (GraphParams, GraphResult),
    m.SESSION_EXPORT: (ExportParams, ExportResult),
    m.SESSION_DIFF: (DiffParams, DiffResult),
    m.SESSION_OPEN_SHARED: (OpenSharedParams, OpenResult),
    m.SESSION_SEARCH: (SearchParams, SearchResult),
    # notifications
    m.SESSION_DID_CHANGE: (DidChangeParams, None),
    m.SESSION_DID_NAVIGATE: (DidNavigateParams, None),
    m.SESSION_DID_CHANGE_LABEL: (DidChangeLabelParams, None),
    m.SESSION_DID_RELOAD: (DidReloadParams, None),
    m.SESSION_DID_CHANGE_LIST: (DidChangeListParams, None),
    m.SESSION_DID_COMPLETE_SEARCH: (DidCompleteSearchParams, None),
}
"""Method or notification name -> (params class, result class or None for a null result)."""
