"""Export of a branch or a subtree as Markdown, HTML or a session file, with redaction
(docs/graph-export-compare.md).

`export_session` is the one entry point the command line and the daemon call; it only
reads the session.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from ..format.words import counted
from ..ids import Clock, IdSource
from .conversation import build_conversation
from .html import render_html
from .jsonl import render_jsonl
from .markdown import render_markdown
from .names import export_file_name, is_plain_file_name
from .redact import ExportBudgetExceeded, Finding, Redactor, config_path, export_budget, load_redactor
from .select import Selection, select_path, select_subtree

__all__ = [
    "FORMATS",
    "ExportBudgetExceeded",
    "ExportInput",
    "ExportResult",
    "Finding",
    "Redactor",
    "config_path",
    "export_file_name",
    "export_session",
    "is_plain_file_name",
    "load_redactor",
    "read_export",
    "redacts_by_default",
    "render_export",
]

FORMATS = ("md", "html", "jsonl")


def redacts_by_default(fmt: str) -> bool:
    """Markdown and HTML leave the machine to be read: redacted unless asked not to. A session
    file is for the agent, exact unless asked (``--redact``)."""
    return fmt in ("md", "html")


@dataclass
class ExportResult:
    """What an export made."""

    content: str
    """The exported text ("" for a dry run)."""
    format: str
    entries: int
    """Entries exported."""
    leaf_id: str | None
    redacted: bool
    counts: dict[str, int] = field(default_factory=dict)
    """Replacements per pattern."""
    findings: list[Finding] = field(default_factory=list)


def _title(manager: Any) -> str:
    name = manager.get_session_name()
    return name if isinstance(name, str) and name else f"Session {manager.get_session_id()}"


@dataclass
class ExportInput:
    """What an export reads from the session (`read_export`), so that the redaction and
    the rendering can run after the session is released (`render_export`)."""

    selection: Selection
    labels: dict[str, str]
    source: str | None
    cwd: str
    session_id: str
    title: str
    subtree_id: str | None = None


def read_export(manager: Any, *, leaf_id: Any = ..., subtree_id: str | None = None) -> ExportInput:
    """Read the path to ``leaf_id`` (default: the leaf) or the subtree of ``subtree_id``."""
    sel = select_subtree(manager, subtree_id) if subtree_id is not None else select_path(manager, leaf_id)
    return ExportInput(
        selection=sel,
        labels=dict(manager.index.labels),
        source=manager.get_session_file(),
        cwd=manager.get_cwd(),
        session_id=str(manager.get_session_id()),
        title=_title(manager),
        subtree_id=subtree_id,
    )


def render_export(
    inp: ExportInput,
    fmt: str,
    *,
    redact: bool | None = None,
    dry_run: bool = False,
    redactor: Redactor | None = None,
    clock: Clock | None = None,
    ids: IdSource | None = None,
    budget: float | None = None,
) -> ExportResult:
    """Redact and render what `read_export` read (touches no session).

    Redaction covers every string that reaches the output: the entries (values and keys at
    any depth), the labels, the title (auto-titles come from the first prompt), the ids and
    names in the header and, for a session file, its cwd and source path. ``budget``
    (seconds; default `export_budget()`, 0: none) bounds the redaction: past it
    `ExportBudgetExceeded` is raised and nothing is returned.
    """
    if fmt not in FORMATS:
        raise ValueError(f"unknown export format {fmt!r} (one of {', '.join(FORMATS)})")
    sel = inp.selection
    do_redact = redacts_by_default(fmt) if redact is None else redact
    if dry_run:
        do_redact = True
    red = (redactor or load_redactor()) if do_redact else None
    if red is not None:
        red.set_budget(export_budget() if budget is None else budget)
    entries = red.entries(sel.entries) if red is not None else sel.entries
    labels = inp.labels
    title, session_id, cwd, source = inp.title, inp.session_id, inp.cwd, inp.source
    leaf_id, subtree_id = sel.leaf_id, inp.subtree_id
    if red is not None:
        labels = red.value(labels)
        title, session_id = red.string(title), red.string(session_id)
        if fmt == "jsonl":  # only a session file's header shows the cwd
            cwd = red.string(cwd)
        source = red.string(source) if source is not None else None
        leaf_id = red.string(leaf_id) if leaf_id is not None else None
        subtree_id = red.string(subtree_id) if subtree_id is not None else None
    counts = dict(red.counts) if red is not None else {}
    findings = list(red.findings) if red is not None else []
    if dry_run:
        return ExportResult("", fmt, len(entries), sel.leaf_id, True, counts, findings)
    if fmt == "jsonl":
        content = render_jsonl(entries, cwd=cwd, parent_session=source, labels=labels, clock=clock, ids=ids)
    else:
        items = build_conversation(entries, labels)
        what = f"subtree of {subtree_id}" if subtree_id is not None else f"path to {leaf_id}"
        meta = [
            ("session", session_id),
            ("source", os.path.basename(source) if source else "(in memory)"),
            ("exported", f"{what} ({counted(len(entries), 'entry')})"),
        ]
        total = sum(counts.values())
        if red is None:
            footer = "Not redacted."
        elif total:
            footer = f"Redacted {total}: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) + "."
        else:
            footer = "Redaction found nothing to replace."
        render = render_markdown if fmt == "md" else render_html
        content = render(items, title, meta, footer)
    return ExportResult(content, fmt, len(entries), sel.leaf_id, red is not None, counts, findings)


def export_session(
    manager: Any,
    fmt: str,
    *,
    leaf_id: Any = ...,
    subtree_id: str | None = None,
    redact: bool | None = None,
    dry_run: bool = False,
    redactor: Redactor | None = None,
    clock: Clock | None = None,
    ids: IdSource | None = None,
) -> ExportResult:
    """Export the path to ``leaf_id`` (default: the leaf) or the subtree of ``subtree_id``.

    ``redact``: None means the format's default (`redacts_by_default`). ``dry_run``: find
    what would be redacted and export nothing. ``redactor`` defaults to the built-in
    patterns plus the user's config (`load_redactor`).
    """
    if fmt not in FORMATS:
        raise ValueError(f"unknown export format {fmt!r} (one of {', '.join(FORMATS)})")
    inp = read_export(manager, leaf_id=leaf_id, subtree_id=subtree_id)
    return render_export(inp, fmt, redact=redact, dry_run=dry_run, redactor=redactor, clock=clock, ids=ids)
