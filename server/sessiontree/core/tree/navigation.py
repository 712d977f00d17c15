"""The agent's navigation flows over a `SessionManager`: moving the leaf, and branching.

* `prepare_navigation` gathers what a branch summary would cover when moving the leaf
  (``collectEntriesForBranchSummary``);
* `navigate_tree` is the ``/tree`` flow: a user or custom_message target puts the leaf on
  its parent and hands its text back for the editor; any other target becomes the leaf;
  an optional summary hangs at the new position;
* `branch_to_new_session` is the ``/branch`` flow: a new session file holding the history
  up to (not including) a user message;
* `get_user_messages_for_branching` lists the user messages ``/branch`` offers.

sessiontree has no language model of its own: a summary is produced by the caller (an
editor-embedded agent, a hook) and passed in. Asking to summarize without one raises
`SummaryUnavailableError`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sessiontree.core.errors import EntryNotFoundError, SessionTreeError

from ..format.content import content_text

__all__ = [
    "BranchResult",
    "BranchableMessage",
    "InvalidBranchEntryError",
    "NavigationPreparation",
    "NavigationResult",
    "SummaryUnavailableError",
    "branch_to_new_session",
    "get_user_messages_for_branching",
    "message_text",
    "navigate_tree",
    "prepare_navigation",
]


class SummaryUnavailableError(SessionTreeError):
    """``summarize`` was requested but no summary was given and no summarizer exists.

    The daemon maps it to the protocol error -32006.
    """

    def __init__(
        self, message: str = "No summary available: summarize was requested without a summary"
    ) -> None:
        super().__init__(message)


class InvalidBranchEntryError(SessionTreeError, ValueError):
    """``/branch`` was asked for an entry that is not a user message."""

    def __init__(self, entry_id: object) -> None:
        self.entry_id = entry_id
        super().__init__("Invalid entry ID for branching")


@dataclass(frozen=True)
class NavigationPreparation:
    """What moving the leaf to ``target_id`` leaves behind.

    ``entries_to_summarize`` are the entries from the old leaf up to (not including) the
    common ancestor of the old leaf and the target, in chronological order (root side
    first). With no leaf, it is empty and ``common_ancestor_id`` is ``None``.
    """

    target_id: str
    old_leaf_id: str | None
    common_ancestor_id: str | None
    entries_to_summarize: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class NavigationResult:
    """The outcome of `navigate_tree`.

    ``editor_text`` is the text of a user or custom_message target (to put back into the
    editor); ``summary_entry`` the ``branch_summary`` entry appended, if any.
    """

    cancelled: bool
    new_leaf_id: str | None
    old_leaf_id: str | None
    editor_text: str | None = None
    summary_entry: dict[str, Any] | None = None


@dataclass(frozen=True)
class BranchResult:
    """The outcome of `branch_to_new_session`: the selected prompt's text and the new file."""

    selected_text: str
    path: str | None


@dataclass(frozen=True)
class BranchableMessage:
    """A user message ``/branch`` can start from."""

    entry_id: str
    text: str


def message_text(content: Any) -> str:
    """A message's text: a string as is, or its text blocks joined with nothing."""
    return content_text(content)


def _require(manager: Any, entry_id: str) -> dict[str, Any]:
    entry = manager.get_entry(entry_id) if isinstance(entry_id, str) else None
    if entry is None:
        raise EntryNotFoundError(entry_id)
    return entry  # type: ignore[no-any-return]


def _parent_of(manager: Any, entry_id: str) -> str | None:
    # The parent in the tree: None for roots, orphans and loop closers (DIVERGENCES 3).
    return manager.index.effective_parent(entry_id)  # type: ignore[no-any-return]


def prepare_navigation(manager: Any, target_id: str) -> NavigationPreparation:
    """``collectEntriesForBranchSummary(oldLeaf, target)`` plus the ids around it."""
    _require(manager, target_id)
    old_leaf = manager.get_leaf_id()
    if old_leaf is None:
        return NavigationPreparation(target_id, None, None, [])
    index = manager.index
    target_path = set(index.path_to_root(target_id))
    old_path = index.path_to_root(old_leaf)
    common: str | None = None
    for eid in reversed(old_path):
        if eid in target_path:
            common = eid
            break
    collected: list[dict[str, Any]] = []
    for eid in reversed(old_path):
        if eid == common:
            break
        entry = manager.get_entry(eid)
        if entry is not None:
            collected.append(entry)
    collected.reverse()
    return NavigationPreparation(target_id, old_leaf, common, collected)


def navigate_tree(
    manager: Any,
    target_id: str,
    *,
    summarize: bool = False,
    summary: str | None = None,
    summary_details: Any = None,
    from_extension: bool = False,
) -> NavigationResult:
    """The ``/tree`` selection flow (reference ``navigateTree``).

    Selecting the current leaf changes nothing. A ``user`` message or ``custom_message``
    target moves the leaf to its parent (``None``: before the first entry) and returns its
    text as ``editor_text``; any other target becomes the leaf. With ``summarize`` and a
    ``summary``, a ``branch_summary`` (``fromId`` the new position, or ``"root"``) is
    appended at the new position and becomes the leaf. Raises `EntryNotFoundError` for an
    unknown target and `SummaryUnavailableError` for ``summarize`` without ``summary``.
    """
    old_leaf = manager.get_leaf_id()
    if target_id == old_leaf:
        return NavigationResult(False, old_leaf, old_leaf)
    if summarize and summary is None:
        raise SummaryUnavailableError()
    target = _require(manager, target_id)

    editor_text: str | None = None
    new_leaf: str | None
    ttype = target.get("type")
    message = target.get("message") if ttype == "message" else None
    if isinstance(message, Mapping) and message.get("role") == "user":
        new_leaf = _parent_of(manager, target_id)
        editor_text = message_text(message.get("content"))
    elif ttype == "custom_message":
        new_leaf = _parent_of(manager, target_id)
        editor_text = message_text(target.get("content"))
    else:
        new_leaf = target_id

    summary_entry: dict[str, Any] | None = None
    if summarize and summary is not None:
        sid = manager.branch_with_summary(
            new_leaf, summary, summary_details, True if from_extension else None
        )
        summary_entry = manager.get_entry(sid)
    elif new_leaf is None:
        manager.reset_leaf()
    else:
        manager.branch(new_leaf)
    return NavigationResult(False, manager.get_leaf_id(), old_leaf, editor_text, summary_entry)


def branch_to_new_session(manager: Any, entry_id: str) -> BranchResult:
    """The ``/branch`` flow: a new session with the history before a user message.

    The entry must be a user message (`InvalidBranchEntryError` otherwise; an unknown id
    is not a user message either). The manager is flushed, then a root message starts an
    empty session whose ``parentSession`` is the previous file, and any other message a
    branched session holding the path to its parent. Returns the message's text and the
    new file (``None`` in memory).
    """
    entry = manager.get_entry(entry_id) if isinstance(entry_id, str) else None
    message = entry.get("message") if entry is not None and entry.get("type") == "message" else None
    if not isinstance(message, Mapping) or message.get("role") != "user":
        raise InvalidBranchEntryError(entry_id)
    selected_text = message_text(message.get("content"))
    manager.flush()
    parent = _parent_of(manager, entry_id)
    if parent is None:
        previous = manager.get_session_file()
        path = manager.new_session(parent_session=previous)
    else:
        path = manager.create_branched_session(parent)
    return BranchResult(selected_text, path)


def get_user_messages_for_branching(manager: Any) -> list[BranchableMessage]:
    """Every user message with non-empty text, on every branch, in file order."""
    index = manager.index
    out: list[BranchableMessage] = []
    seen: set[str] = set()
    for eid in index.order():
        if eid in seen:
            continue
        seen.add(eid)
        sk = index.skeleton(eid)
        if sk is None or sk.type != "message" or sk.role != "user":
            continue
        entry = manager.get_entry(eid)
        if entry is None:
            continue
        message = entry.get("message")
        text = message_text(message.get("content")) if isinstance(message, dict) else ""
        if text:
            out.append(BranchableMessage(eid, text))
    return out
