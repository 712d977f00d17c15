"""The opening view: the first pages of a big session, kept on disk for its next open.

Reopening a session that did not change since it was last viewed shows the same first rows
as last time; building them needs the tree, the filter's hidden set and the leaf's path of
every entry (about a quarter of a second for 100,000 entries), so the pages a sidebar asks
first (the head of the view and the window around the leaf, default filter, no search) are
kept beside the session's index cache, in sessiontree's own cache directory, as
``<key>.view``. The daemon writes them in idle time (`warmup.save_opening_view`, after the
index cache); `kept_page` answers a page from them.

A kept view answers only when everything it was made from is what the session holds now:
the same file (device, inode, size, mtime, the hash of its last 4 KB) read to its end and
nothing appended or changed since (entry and label counts, for one loaded index), the same
leaf, filter and home directory, and the same view code (a hash of the sources of this
package and of the text scrubbing). Anything else, a file that does not decode included,
is a miss and the view is built as always; the first change to the session (an append, a
label) ends the kept view's use for good. A kept view is an optimisation: one that cannot
be read or written changes nothing.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import msgspec

from ..index.cache import tail_hash
from .adapters import as_tree_source
from .cache import cache_of
from .display import home_dir
from .source import TreeSource

__all__ = ["OPENING_MIN_ENTRIES", "KeptPage", "keep_due", "keep_pages", "kept_leaf_is", "kept_page"]

OPENING_FORMAT: Final = 2
#: Sessions with fewer entries build their first pages quickly: nothing is kept for them.
OPENING_MIN_ENTRIES: Final = 5_000
#: Rows kept from the head of the view, and on each side of the leaf's row.
HEAD_ROWS: Final = 1_000
AROUND_ROWS: Final = 1_000
SUFFIX: Final = ".view"

#: A row's fields in `page.Row` order.
_RowTuple = tuple[
    str, str | None, str, str | None, int, str, bool, bool, str | None, str, Any, bool, str | None, int | None
]
#: (the rows of the page as `page.Row` fields, total, selected index, first row)
KeptPage = tuple[list[_RowTuple], int, int | None, int]


class _Window(msgspec.Struct, array_like=True):
    start: int
    rows: list[_RowTuple]


class _Kept(msgspec.Struct, array_like=True):
    format: int
    code: str
    device: int
    inode: int
    size: int
    mtime_ns: int
    tail_hash: str
    entries: int
    labels: int
    leaf: str | None
    filter: str
    home: str
    total: int
    selected: int | None
    windows: list[_Window]


_DECODER: Final = msgspec.msgpack.Decoder(_Kept)
_ENCODER: Final = msgspec.msgpack.Encoder()
_code: str | None = None


def _code_stamp() -> str:
    """A hash of the code rows are made by (this package and the text scrubbing)."""
    global _code
    if _code is None:
        here = Path(__file__).resolve().parent
        files = [*sorted(here.glob("*.py")), here.parent / "format" / "jsonl.py"]
        h = hashlib.sha256(str(OPENING_FORMAT).encode())
        for f in files:
            h.update(f.name.encode())
            h.update(f.read_bytes())
        _code = h.hexdigest()[:32]
    return _code


def _kept_file(manager: Any) -> str | None:
    companion = getattr(manager, "cache_companion", None)
    return companion(SUFFIX) if companion is not None else None


def _identity(manager: Any) -> tuple[int, int, int, int] | None:
    """(device, inode, size, mtime) of the file the session read to its end, else None."""
    fs = getattr(manager, "file_state", None)
    if fs is None or fs.end != fs.size:
        return None
    return fs.device, fs.inode, fs.size, fs.mtime_ns


def _read(target: str) -> _Kept | None:
    try:
        with open(target, "rb") as f:
            return _DECODER.decode(f.read())
    except (OSError, msgspec.DecodeError, msgspec.ValidationError):
        return None


def _of_state(kept: _Kept, manager: Any, ident: tuple[int, int, int, int]) -> bool:
    """Whether `kept` was made by this code from the session's entries as they are now
    (the same file, read to the same end, the same entry and label counts)."""
    index = manager.index
    return (
        kept.format == OPENING_FORMAT
        and kept.code == _code_stamp()
        and (kept.device, kept.inode, kept.size, kept.mtime_ns) == ident
        and (kept.entries, kept.labels) == (len(index), len(index.labels))
    )


def _file_is(path: str, ident: tuple[int, int, int, int]) -> bool:
    """Whether the file at `path` is still the one of `ident` (device, inode, size, mtime)."""
    st = os.stat(path)
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns) == ident


def _load(manager: Any) -> _Kept | None:
    """The kept view valid for the session as it is now, else None."""
    target = _kept_file(manager)
    ident = _identity(manager) if target is not None else None
    path = manager.get_session_file() if ident is not None else None
    if path is None or target is None or ident is None:
        return None
    kept = _read(target)
    if kept is None or not _of_state(kept, manager, ident):
        return None
    try:
        if not _file_is(path, ident) or tail_hash(path, kept.size, ident[:2]) != kept.tail_hash:
            return None
    except OSError:
        return None
    return kept


def kept_leaf_is(manager: Any, leaf: str) -> bool:
    """True when the session's kept view is valid for it as it is now and was made with
    `leaf` as the leaf: `leaf` is then an entry of the file, and the index is told so
    (`EntryIndex.vouch`), so that moving the leaf back to it (the daemon's remembered leaf)
    does not decode a cache hit's skeletons."""
    if kept_page(as_tree_source(manager), leaf, "default", 0, 0, None) is None:
        return False
    manager.index.vouch(leaf)
    return True


def kept_page(
    src: TreeSource, leaf: str | None, filter: str, offset: int, limit: int | None, home: str | None
) -> KeptPage | None:
    """A page from the session's kept view, when one is valid and holds the whole page.

    Only the state the session was loaded in is looked at (the file is read once per
    source): after any change the view is built as always.
    """
    manager = getattr(src, "manager", None)
    if manager is None or filter != "default":
        return None
    cache = cache_of(src)
    version = src.version()
    if cache.opening is None:
        cache.opening = (version, _load(manager))
    seen, kept = cache.opening
    if kept is None or seen != version:
        return None
    if kept.leaf != leaf or kept.home != (home_dir() if home is None else home):
        return None
    start = max(0, offset)
    end = kept.total if limit is None else min(kept.total, start + max(0, limit))
    if start >= end:
        return [], kept.total, kept.selected, start
    for w in kept.windows:
        if w.start <= start and end <= w.start + len(w.rows):
            return w.rows[start - w.start : end - w.start], kept.total, kept.selected, start
    return None


def _tuple(r: Any) -> _RowTuple:
    return (
        r.id,
        r.parent_id,
        r.type,
        r.role,
        r.depth,
        r.prefix,
        r.on_active_path,
        r.is_leaf,
        r.label,
        r.text,
        r.timestamp,
        r.marks_leaf,
        r.hidden_leaf,
        r.head_depth,
    )


def keep_due(manager: Any) -> bool:
    """Whether `keep_pages` would write: a big session read to its end, whose kept pages
    are missing or of another state (reads the kept file's few fields, builds nothing)."""
    target = _kept_file(manager)
    ident = _identity(manager) if target is not None else None
    if target is None or ident is None or len(manager.index) < OPENING_MIN_ENTRIES:
        return False
    old = _read(target)
    return old is None or not (
        _of_state(old, manager, ident) and (old.leaf, old.home) == (manager.get_leaf_id(), home_dir())
    )


def keep_pages(manager: Any, build: Callable[[int, int], Any]) -> bool:
    """Keep the first pages of the session's view (its leaf, default filter, `build(offset,
    limit)` makes a page: `page.build_view`) for its next open; False when there is nothing
    to keep (a small session, a file changed since it was read, no cache directory) or it is
    kept already."""
    if not keep_due(manager):
        return False
    target = _kept_file(manager)
    ident = _identity(manager)
    path = manager.get_session_file()
    if target is None or ident is None or path is None:
        return False
    home = home_dir()
    leaf = manager.get_leaf_id()
    try:
        if not _file_is(path, ident):
            return False
        digest = tail_hash(path, ident[2], ident[:2])
        if not digest:
            return False
        head = build(0, HEAD_ROWS)
        windows = [_Window(0, [_tuple(r) for r in head.rows])]
        sel = head.selected_index
        if sel is not None and sel + AROUND_ROWS > len(head.rows) and len(head.rows) < head.total:
            lo = max(0, sel - AROUND_ROWS)
            around = build(lo, 2 * AROUND_ROWS)
            windows.append(_Window(lo, [_tuple(r) for r in around.rows]))
        kept = _Kept(
            OPENING_FORMAT,
            _code_stamp(),
            *ident,
            digest,
            len(manager.index),
            len(manager.index.labels),
            leaf,
            "default",
            home,
            head.total,
            sel,
            windows,
        )
        # rows hold the session's text: readable by its owner only, like the search index
        os.makedirs(os.path.dirname(target), mode=0o700, exist_ok=True)
        tmp = f"{target}.{os.getpid()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(_ENCODER.encode(kept))
        os.replace(tmp, target)
    except Exception:
        return False  # failing to keep the first pages changes nothing
    return True
