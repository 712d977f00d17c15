"""An exported path as a pi session file of its own: a new header, then the entries.

The header is the one the agent writes when it branches into a new session: a new id, the
current version, the source's cwd, and ``parentSession`` set to the source file's path. The
entries are copied as they are (ids and parent ids kept), so the core and the agent load
every one of them; labels of path entries set outside the path are re-created after it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..format.jsonl import dumps_line
from ..format.migrations import CURRENT_SESSION_VERSION
from ..ids import Clock, IdSource

__all__ = ["JsonlDocument", "render_jsonl"]


class JsonlDocument:
    """The file a part at a time: `head` (the header line), `entries` as they come, then
    `end` (the labels re-created); the parts joined are `render_jsonl`'s file."""

    def __init__(
        self,
        *,
        cwd: str,
        parent_session: str | None,
        labels: Mapping[str, str],
        clock: Clock | None = None,
        ids: IdSource | None = None,
    ) -> None:
        self.cwd, self.parent_session, self.labels = cwd, parent_session, labels
        self.clock = clock or Clock()
        self.ids = ids or IdSource()
        self.now = ""
        self.kept: set[Any] = set()
        self.labelled_on_path: set[Any] = set()
        self.last: Any = None

    def head(self) -> str:
        """The header line."""
        self.now = self.clock.now_iso()
        header: dict[str, Any] = {
            "type": "session",
            "version": CURRENT_SESSION_VERSION,
            "id": self.ids.new_session_id(),
            "timestamp": self.now,
            "cwd": self.cwd,
        }
        if self.parent_session is not None:
            header["parentSession"] = self.parent_session
        return dumps_line(header).decode("utf-8") + "\n"

    def entries(self, entries: Sequence[Mapping[str, Any]]) -> str:
        """The entries' lines, as they are."""
        out = []
        for e in entries:
            eid = e.get("id")
            self.kept.add(eid)
            if e.get("type") == "label":
                self.labelled_on_path.add(e.get("targetId"))
            self.last = eid
            out.append(dumps_line(dict(e)).decode("utf-8"))
        return "".join(line + "\n" for line in out)

    def end(self) -> str:
        """A label entry for each label of an entry of the file set outside it."""
        kept, ids = self.kept, self.ids
        taken: set[str] = {i for i in kept if isinstance(i, str)}
        parent = self.last
        out = []
        for target, label in self.labels.items():
            if target not in kept or target in self.labelled_on_path:
                continue
            lid = ids.new_entry_id(taken)
            taken.add(lid)
            out.append(
                dumps_line(
                    {
                        "type": "label",
                        "id": lid,
                        "parentId": parent,
                        "timestamp": self.now,
                        "targetId": target,
                        "label": label,
                    }
                ).decode("utf-8")
            )
            parent = lid
        return "".join(line + "\n" for line in out)


def render_jsonl(
    entries: Sequence[Mapping[str, Any]],
    *,
    cwd: str,
    parent_session: str | None,
    labels: Mapping[str, str],
    clock: Clock | None = None,
    ids: IdSource | None = None,
) -> str:
    """The file's text (one JSON object per line, the last line ending with a newline)."""
    doc = JsonlDocument(cwd=cwd, parent_session=parent_session, labels=labels, clock=clock, ids=ids)
    return doc.head() + doc.entries(entries) + doc.end()
