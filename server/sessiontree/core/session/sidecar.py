"""A session's use of the index cache (`index.IndexCache`): when, and never as an error.

Files of `CACHE_MIN_BYTES` and more that load through the fast path keep their skeletons in
a sidecar cache in sessiontree's own cache directory, so the next open reads the skeletons
instead of the file. Only on a real file system and unless ``SESSIONTREE_NO_INDEX_CACHE=1``.
A cache is an optimisation: one that cannot be read is a miss, one that cannot be written
is skipped.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from ..index import EntryIndex, IndexCache, Skeleton, UsageTotals
from ..index.cache import CachedSkeletons
from .split_scan import in_forked_child

__all__ = ["CACHE_MIN_BYTES", "CACHE_RESAVE_MIN", "Sidecar", "caches_on"]

#: Files at least this big get a sidecar index cache for fast reopening.
CACHE_MIN_BYTES = 1 << 20
#: A cache hit on a grown file is saved again once this many bytes (or 1/16) were appended.
CACHE_RESAVE_MIN = 1 << 20

CacheHit = tuple[dict[str, Any], CachedSkeletons, UsageTotals, int]


def caches_on() -> bool:
    """Whether index caches are used at all (``SESSIONTREE_NO_INDEX_CACHE=1``: not)."""
    return os.environ.get("SESSIONTREE_NO_INDEX_CACHE") != "1"


class Sidecar:
    """The index cache of the sessions of one storage (`cache_dir`: None for the default)."""

    def __init__(
        self, storage: Any, cache_dir: str | None, min_bytes: int = CACHE_MIN_BYTES, defer: bool = False
    ) -> None:
        self._real_fs = bool(getattr(storage, "is_real_fs", False))
        self._cache_dir = cache_dir
        #: Files smaller than this are not cached.
        self.min_bytes = min_bytes
        #: An open only notes that the skeletons are due (`take_pending`), instead of
        #: making the caller wait for them to be encoded and written.
        self.defer = defer
        self._pending = False

    def take_pending(self) -> bool:
        """Whether a deferred save is due (and no longer, once asked)."""
        due, self._pending = self._pending, False
        return due

    def usable(self) -> bool:
        return self._real_fs and caches_on()

    def companion(self, path: str, suffix: str) -> str | None:
        """Where something kept beside the index cache of `path` lives (the view's first
        pages: `view.opening`); None when caches are not used."""
        if not self.usable():
            return None
        return IndexCache(self._cache_dir).file_for(path, suffix)

    def load(self, path: str, st: Any) -> CacheHit | None:
        """`(header, skeletons, usage, indexed_size)` of a valid cache of `path`, else None."""
        if not self.usable():
            return None
        try:
            return IndexCache(self._cache_dir).load(path, st)
        except Exception:
            return None

    def save(self, path: str, st: Any, data: bytes, header: dict[str, Any], index: EntryIndex) -> None:
        """Cache the index of a file whose bytes (`data`) were just indexed."""
        if not self.usable():
            return
        try:
            IndexCache(self._cache_dir).save(path, st, data, header, index)
        except Exception:
            pass  # failing to write a cache changes nothing

    def save_skeletons(
        self,
        path: str,
        st: Any,
        header: dict[str, Any],
        index: EntryIndex,
        now: bool = False,
        background: bool = False,
        context: Callable[[], list[Skeleton]] | None = None,
        skeletons: list[Skeleton] | None = None,
    ) -> None:
        """Cache the index as it is (the file is read only for the hash of its tail); noted
        as due instead when saves are deferred, unless `now`. With `background`, a forked
        copy of the process encodes and writes it (`split_scan.in_forked_child`).
        `context` gives the last entry's context skeletons, kept beside them
        (`save_context`); `skeletons` stands for the index's (`IndexCache.save_skeletons`)."""
        if not self.usable():
            return
        if self.defer and not now:
            self._pending = True
            return
        cache = IndexCache(self._cache_dir)

        def write() -> None:
            try:
                cache.save_skeletons(path, st, header, index, skeletons)
            except Exception:
                return  # failing to write a cache changes nothing
            if context is not None:
                self.save_context(path, st, index, context)

        if not (background and in_forked_child(write)):
            write()

    def save_context(
        self, path: str, st: Any, index: EntryIndex, context: Callable[[], list[Skeleton]]
    ) -> None:
        """Keep the last entry's context skeletons (`context()`) for the file as `st` says it
        is, so an open answers the context before it decodes the skeletons."""
        if not self.usable():
            return
        last = index.last()
        if last is None or type(last.id) is not str:
            return
        try:
            ident = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
            IndexCache(self._cache_dir).save_context(path, ident, len(index), last.id, context())
        except Exception:
            pass  # the next open walks the path instead

    def load_context(self, path: str, st: Any, index: EntryIndex) -> list[Skeleton] | None:
        """The last entry's context skeletons kept for the file as `st` says it is, else None."""
        last = index.last()
        if not self.usable() or last is None or type(last.id) is not str:
            return None
        try:
            ident = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
            return IndexCache(self._cache_dir).load_context(path, ident, len(index), last.id)
        except Exception:
            return None

    @staticmethod
    def resave_due(cached_size: int, size: int) -> bool:
        """Whether a hit whose file grew from `cached_size` to `size` is worth saving again.

        Re-encoding every skeleton costs more than indexing a short tail again on the next
        open: the cache is refreshed once the tail is big.
        """
        return size - cached_size >= max(CACHE_RESAVE_MIN, cached_size // 16)
