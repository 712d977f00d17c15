"""The rows around a session's leaf, read from the end of its file before it is open.

A cold open of a big session indexes every line (about 0.6 s for 100,000 entries, 8 s for
a million) before its first rows can be exact: where a row sits in the whole view and how
far it is indented depend on entries anywhere in the file. A person who clicks a session
wants the latest turns first. `preview` reads the file's header and its last
`PREVIEW_BYTES`, finds the leaf there, and draws the part of the tree the window holds with
the view's own rules (`build_view` over the window's entries): the same texts, labels,
markers and order as the whole view, for the rows around the leaf.

What a preview cannot know, it leaves out rather than guesses:
- the leaf's ancestors before the window (`above` says there are some): the highest
  ancestor in the window is drawn as the root, so the rows' prefixes lack the indentation
  and gutters those ancestors would add;
- rows of the whole view that lie outside the window (older branches) and labels set from
  entries outside it;
- the rows' places in the whole view: indexes count in the preview's own rows.

Entries are appended after their parent, so the window holds every descendant of its
entries; a file whose lines break that rule (a damaged one) only makes the preview less
complete, and `session/open` draws the exact rows after it. Nothing is written.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Final

import orjson

from ..format import jsonl
from ..format.migrations import is_current_version
from ..format.title_slot import split_slot
from ..tuning import bound
from .adapters import EntriesTreeSource
from .page import Row, build_view, window_start

__all__ = ["PREVIEW_BYTES", "PREVIEW_MAX_BYTES", "Preview", "preview"]

#: How much of the file's end a preview reads first (``SESSIONTREE_PREVIEW_BYTES``); four
#: times as much again while the leaf is not in it (its id is looked for before the bytes
#: are parsed), or while the rows before its row do not fill the page and its path runs to
#: the window's start, up to `PREVIEW_MAX_BYTES` (``SESSIONTREE_PREVIEW_MAX_BYTES``).
PREVIEW_BYTES: Final = 1 << 20
PREVIEW_MAX_BYTES: Final = 16 << 20
#: The longest header line a preview reads.
_HEADER_MAX: Final = 1 << 20


@dataclass(frozen=True, slots=True)
class Preview:
    """What `preview` found: `rows` around the leaf, `selected_index` into them (the leaf's
    row or its nearest visible ancestor's), whether the leaf has ancestors before the bytes
    read (`above`), and how many bytes of the file's end were read (`bytes_read`). No rows
    when the file is not a current-version session, has no entries, or its leaf is not in
    the bytes read (`reason` says which)."""

    rows: list[Row] = field(default_factory=list)
    selected_index: int | None = None
    leaf_id: str | None = None
    above: bool = False
    bytes_read: int = 0
    reason: str | None = None


def preview(
    storage: Any,
    path: str,
    *,
    filter: str = "default",
    limit: int = 200,
    restore: tuple[str | None, str | None] | None = None,
) -> Preview:
    """The rows around the leaf of the session file at `path`, from its last bytes.

    `storage` reads the file (``stat``, ``read_range``). The leaf is the file's last entry,
    as a fresh open has it, or with `restore` = (leaf id, last entry id) the remembered leaf
    when the file's last entry is still that one (the daemon's navigation state). At most
    `limit` rows, the selected one in their middle when the rows allow. Raises
    ``ValueError`` for an unknown filter, and the storage's ``OSError`` when the file
    cannot be read.
    """
    size = storage.stat(path).size
    head = storage.read_range(path, 0, min(size, _HEADER_MAX))
    start = split_slot(head)[1]  # the header follows oh-my-pi's title slot
    nl = head.find(b"\n", start)
    reason = _header_problem(head[start:] if nl < 0 else head[start:nl])
    if reason is not None:
        return Preview(reason=reason)
    body = nl + 1
    limit = max(0, limit)
    most = bound("SESSIONTREE_PREVIEW_MAX_BYTES", PREVIEW_MAX_BYTES)
    window = min(size - body, bound("SESSIONTREE_PREVIEW_BYTES", PREVIEW_BYTES), most)

    data = b""

    def read_on(to: int) -> bytes:
        """The last `to` bytes, read from where the bytes read so far begin."""
        return storage.read_range(path, size - to, to - len(data)) + data

    def grown() -> int | None:
        """The next window (four times as much), or None when it read all it may."""
        if window >= most or size - window == body:
            return None
        return min(size - body, window * 4, most)

    while True:
        data = read_on(window)
        entries = _entries(data, whole=size - window == body)
        if entries:
            break
        bigger = grown()
        if bigger is None:
            return Preview(bytes_read=window, reason="no entries")
        window = bigger  # not one whole line yet
    leaf = _leaf_of(entries, restore)
    if leaf is None:
        return Preview(bytes_read=window, reason="no leaf")
    needle = orjson.dumps(leaf)
    while True:
        found = _subtree(entries, leaf)
        if found is None:
            # the remembered leaf lies further back: look for its id in more bytes before
            # parsing them
            while True:
                bigger = grown()
                if bigger is None:
                    return Preview(leaf_id=leaf, bytes_read=window, reason="leaf not in the bytes read")
                window = bigger
                data = read_on(window)
                if needle in data:
                    break
            entries = _entries(data, whole=size - window == body)
            continue
        kept, parent, top_at = found
        src = EntriesTreeSource(kept, leaf_id=leaf)
        whole = build_view(src, filter=filter, offset=0, limit=0)
        # Read on while the rows before the leaf's do not fill the page and its path runs
        # to the window's start (its ancestors are just before it); a path that leaves the
        # window from further in jumps back to an older entry, which more bytes seldom reach.
        bigger = grown()
        if (
            bigger is None
            or parent is None
            or _full(whole.total, whole.selected_index, limit)
            or top_at > len(entries) // 8
        ):
            break
        window = bigger
        data = read_on(window)
        entries = _entries(data, whole=size - window == body)
    sel = whole.selected_index
    first = window_start(sel, whole.total, limit) if sel is not None else max(0, whole.total - limit)
    rows = build_view(src, filter=filter, offset=first, limit=limit).rows
    if parent is not None:
        # the drawn root keeps the parent id it has in the file
        top = kept[0]["id"]
        rows = [dataclasses.replace(r, parent_id=parent) if r.id == top else r for r in rows]
    return Preview(rows, None if sel is None else sel - first, leaf, parent is not None, window)


def _header_problem(line: bytes) -> str | None:
    try:
        header = jsonl.loads_line(line)
    except ValueError:
        return "no readable header"
    if not isinstance(header, dict) or header.get("type") != "session":
        return "no session header"
    if not is_current_version(header.get("version")):
        return "an older version (it is migrated on open)"
    return None


def _entries(data: bytes, whole: bool) -> list[dict[str, Any]]:
    """The entries of the whole lines of `data` (the file's end): a first line cut by the
    window's start is left out, as is a torn last line (the lenient parser drops it)."""
    if not whole:
        nl = data.find(b"\n")
        data = data[nl + 1 :] if nl >= 0 else b""
    values = jsonl.parse_jsonl_lenient(data).values
    return [v for v in values if isinstance(v, dict) and v.get("type") != "session"]


def _leaf_of(entries: list[dict[str, Any]], restore: tuple[str | None, str | None] | None) -> str | None:
    last = entries[-1].get("id")
    last_id = last if isinstance(last, str) else None
    if restore is not None and restore[1] == last_id:
        return restore[0]
    return last_id


def _subtree(entries: list[dict[str, Any]], leaf: str) -> tuple[list[dict[str, Any]], str | None, int] | None:
    """The subtree of the leaf's highest ancestor in the window, in file order, that
    ancestor first and made a root; the parent id it has in the file (None: it is a root
    there too); and its place among `entries`. None when the leaf is not in the window."""
    by_id: dict[str, int] = {}
    for i, e in enumerate(entries):
        eid = e.get("id")
        if isinstance(eid, str):
            by_id[eid] = i  # the last of an id wins, as in the index
    top = by_id.get(leaf)
    if top is None:
        return None
    while True:
        parent = entries[top].get("parentId")
        up = by_id.get(parent) if isinstance(parent, str) else None
        if up is None or up >= top:
            break  # the window's start, a root, or a damaged link (no loop: ever earlier)
        top = up
    root = dict(entries[top])
    in_file = root.get("parentId")
    root["parentId"] = None
    kept = [root]
    ids = {root["id"]}
    for e in entries[top + 1 :]:
        pid = e.get("parentId")
        eid = e.get("id")
        if isinstance(pid, str) and pid in ids and isinstance(eid, str):
            kept.append(e)
            ids.add(eid)
    return kept, in_file if isinstance(in_file, str) else None, top


def _full(total: int, selected: int | None, limit: int) -> bool:
    """Whether the rows before the selected one fill its page (more bytes read would only
    add rows before them, and after the rows its subtree ends with)."""
    if selected is None:
        return False
    after = min(total - selected, limit - limit // 2)
    return selected >= limit - after
