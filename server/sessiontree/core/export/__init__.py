"""Export of a branch or a subtree as Markdown, HTML or a session file, with redaction
(docs/graph-export-compare.md).

`export_session` is the one entry point the command line and the daemon call; it only
reads the session.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..format.words import counted
from ..ids import Clock, IdSource
from .conversation import ConversationStream, hold_points, plan_agrees
from .gate import GateAhead
from .html import HtmlDocument
from .jsonl import JsonlDocument
from .markdown import MarkdownDocument
from .names import export_file_name, is_plain_file_name
from .redact import ExportBudgetExceeded, Finding, Redactor, config_path, export_budget, load_redactor
from .select import PAGE, Selection, read_page, read_pages, select_path, select_subtree

__all__ = [
    "FORMATS",
    "PAGE",
    "ExportBudgetExceeded",
    "ExportInput",
    "ExportResult",
    "ExportRun",
    "Finding",
    "Redactor",
    "config_path",
    "export_file_name",
    "export_session",
    "is_plain_file_name",
    "load_redactor",
    "read_export",
    "read_page",
    "read_pages",
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
    """What an export reads from the session before its entries (`read_export`): the
    selection's skeletons, the labels, the names; the entries are read a page at a time
    (`select.read_pages`) and fed to an `ExportRun`, which may run after the session is
    released."""

    selection: Selection
    labels: dict[str, str]
    source: str | None
    cwd: str
    session_id: str
    title: str
    subtree_id: str | None = None


def read_export(manager: Any, *, leaf_id: Any = ..., subtree_id: str | None = None) -> ExportInput:
    """Select the path to ``leaf_id`` (default: the leaf) or the subtree of ``subtree_id``."""
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


class ExportRun:
    """One export, made a page of entries at a time: `start` (the document's head), `feed`
    for each page of the selection's entries in order (`select.read_pages`), `finish` (the
    rest), then `result`. Each returns the text to write next; the parts joined are the
    document. What it holds is a page and the items still waiting for a tool result
    (`conversation.ConversationStream`), not the branch.

    Redaction covers every string that reaches the output: the entries (values and keys at
    any depth), the labels, the title (auto-titles come from the first prompt), the ids and
    names in the header and, for a session file, its cwd and source path. ``budget``
    (seconds; default `export_budget()`, 0: none) bounds the whole run from its start: past
    it `ExportBudgetExceeded` is raised by the call that finds it out.
    """

    def __init__(
        self,
        inp: ExportInput,
        fmt: str,
        *,
        redact: bool | None = None,
        dry_run: bool = False,
        redactor: Redactor | None = None,
        clock: Clock | None = None,
        ids: IdSource | None = None,
        budget: float | None = None,
    ) -> None:
        if fmt not in FORMATS:
            raise ValueError(f"unknown export format {fmt!r} (one of {', '.join(FORMATS)})")
        self.inp, self.fmt, self.dry_run = inp, fmt, dry_run
        sel = inp.selection
        do_redact = redacts_by_default(fmt) if redact is None else redact
        if dry_run:
            do_redact = True
        red = (redactor or load_redactor()) if do_redact else None
        if red is not None:
            red.set_budget(export_budget() if budget is None else budget)
        self.red = red
        # What is not an entry is redacted now (the head is written first) by a fork, whose
        # counts and findings come after the entries' at the end, as they always have.
        self.side = red.fork() if red is not None else None
        side = self.side
        labels = inp.labels
        title, session_id, cwd, source = inp.title, inp.session_id, inp.cwd, inp.source
        leaf_id, subtree_id = sel.leaf_id, inp.subtree_id
        if side is not None:
            labels = side.value(labels)
            title, session_id = side.string(title), side.string(session_id)
            if fmt == "jsonl":  # only a session file's header shows the cwd
                cwd = side.string(cwd)
            source = side.string(source) if source is not None else None
            leaf_id = side.string(leaf_id) if leaf_id is not None else None
            subtree_id = side.string(subtree_id) if subtree_id is not None else None
        self.title, self.session_id, self.source = title, session_id, source
        self.leaf_id, self.subtree_id = leaf_id, subtree_id
        self.pos = 0
        self.stream: ConversationStream | None = None
        self.doc: Any = None
        if dry_run:
            return
        if fmt == "jsonl":
            self.doc = JsonlDocument(cwd=cwd, parent_session=source, labels=labels, clock=clock, ids=ids)
            return
        changed = None
        if red is not None:
            sks = sel.skeletons
            ids_seen = [sk.tool_call_id for sk in sks if sk.role == "toolResult"]
            ids_seen += [c for sk in sks if sk.call_ids for c in sk.call_ids]
            changed = red.changed_ids(ids_seen).__contains__
        self.stream = ConversationStream(labels, hold_points(sel.skeletons, changed))
        self.doc = MarkdownDocument() if fmt == "md" else HtmlDocument()

    def start(self) -> str:
        """The document's head."""
        if self.doc is None:
            return ""
        if self.fmt == "jsonl":
            return str(self.doc.head())
        n = len(self.inp.selection)
        what = f"subtree of {self.subtree_id}" if self.subtree_id is not None else f"path to {self.leaf_id}"
        meta = [
            ("session", self.session_id),
            ("source", os.path.basename(self.source) if self.source else "(in memory)"),
            ("exported", f"{what} ({counted(n, 'entry')})"),
        ]
        return str(self.doc.head(self.title, meta))

    def feed(self, entries: Sequence[Mapping[str, Any]], maybe: Sequence[bool] | None = None) -> str:
        """The text of the next page of the selection's entries, as read (``maybe``: which
        of them may hold a trigger, from their lines: `Redactor.raw_maybe`)."""
        sks = self.inp.selection.skeletons[self.pos : self.pos + len(entries)]
        self.pos += len(entries)
        stream = self.stream
        if stream is not None:
            for sk, e in zip(sks, entries, strict=False):
                if not plan_agrees(sk, e):
                    stream.hold_all()
        done = self.red.entries(entries, maybe) if self.red is not None else entries
        if self.doc is None:
            return ""
        if stream is None:
            return str(self.doc.entries(done))
        items: list[Any] = []
        for e in done:
            items += stream.feed(e)
        return str(self.doc.items(items))

    def finish(self) -> str:
        """The rest of the document."""
        if self.red is not None and self.side is not None:
            self.red.absorb(self.side)
            self.side = None
        if self.doc is None:
            return ""
        if self.stream is None:
            return str(self.doc.end())
        rest = str(self.doc.items(self.stream.finish()))
        red = self.red
        total = red.total if red is not None else 0
        if red is None:
            footer = "Not redacted."
        elif total:
            footer = (
                f"Redacted {total}: " + ", ".join(f"{k} {v}" for k, v in sorted(red.counts.items())) + "."
            )
        else:
            footer = "Redaction found nothing to replace."
        return rest + str(self.doc.end(footer))

    def result(self, content: str = "") -> ExportResult:
        """What was made (``content``: the document, when the caller kept it)."""
        red = self.red
        counts = dict(red.counts) if red is not None else {}
        findings = list(red.findings) if red is not None else []
        return ExportResult(
            content,
            self.fmt,
            len(self.inp.selection),
            self.inp.selection.leaf_id,
            red is not None,
            counts,
            findings,
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
    pages: Iterable[Sequence[Mapping[str, Any]]] = (),
    write: Callable[[str], Any] | None = None,
    maybe: Callable[[int], Sequence[bool] | None] | None = None,
) -> ExportResult:
    """Redact and render what `read_export` selected, its entries given as ``pages`` (in
    order; `select.read_pages`). With ``write`` each part of the document is written as it
    is made and the result's content is empty; without, the content is the document.
    ``maybe(n)``: for the next page of ``n`` entries, which may hold a trigger (`GateAhead`)."""
    run = ExportRun(
        inp, fmt, redact=redact, dry_run=dry_run, redactor=redactor, clock=clock, ids=ids, budget=budget
    )
    parts: list[str] = []
    out = write if write is not None else parts.append
    out(run.start())
    for page in pages:
        out(run.feed(page, maybe(len(page)) if maybe is not None else None))
    out(run.finish())
    return run.result("".join(parts))


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
    write: Callable[[str], Any] | None = None,
    page: int | None = None,
    gate_ahead: bool = False,
) -> ExportResult:
    """Export the path to ``leaf_id`` (default: the leaf) or the subtree of ``subtree_id``.

    ``redact``: None means the format's default (`redacts_by_default`). ``dry_run``: find
    what would be redacted and export nothing. ``redactor`` defaults to the built-in
    patterns plus the user's config (`load_redactor`). The entries are read ``page``
    (default `select.PAGE`) at a time; with ``write``, each part of the document is written as it is made (the result's
    content is then empty), so what is held is a page, not the branch. ``gate_ahead``: a
    forked child looks for the patterns' triggers in the lines ahead (`GateAhead`; for a
    process that may fork: the command line).
    """
    if fmt not in FORMATS:
        raise ValueError(f"unknown export format {fmt!r} (one of {', '.join(FORMATS)})")
    inp = read_export(manager, leaf_id=leaf_id, subtree_id=subtree_id)
    do_redact = dry_run or (redacts_by_default(fmt) if redact is None else redact)
    if redactor is None and do_redact:
        redactor = load_redactor()
    ahead = (
        GateAhead(manager, inp.selection, redactor, page) if gate_ahead and do_redact and redactor else None
    )
    try:
        return render_export(
            inp,
            fmt,
            redact=redact,
            dry_run=dry_run,
            redactor=redactor,
            clock=clock,
            ids=ids,
            pages=read_pages(manager, inp.selection, page),
            write=write,
            maybe=ahead.next if ahead is not None else None,
        )
    finally:
        if ahead is not None:
            ahead.close()
