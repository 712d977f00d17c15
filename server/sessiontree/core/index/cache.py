"""`IndexCache`: the skeletons of big session files, kept for fast reopening.

The cache lives in sessiontree's own cache directory (never beside the sessions, never
``*.jsonl``), keyed by the file's real path, and is valid when device, inode, size, mtime
and the hash of the file's last 4 KB match; a file that only grew reuses it.

What an open answers before any tree query (the entry count, the last entry, the labels,
the entries a session's name comes from) is stored beside the skeletons, which stay encoded
(`CachedSkeletons`) until the index first needs them (`EntryIndex.add_cached`).
"""

from __future__ import annotations

import hashlib
import os
from typing import Any

import msgspec
import orjson

from ..format.dialects import Evidence
from .entry_index import EntryIndex
from .skeleton import Skeleton
from .usage import UsageTotals

__all__ = ["CACHE_FORMAT", "CachedSkeletons", "IndexCache", "default_cache_dir", "tail_hash"]


# 2: skeletons hold the tool-call ids of assistant messages; 3: what an open answers is
# stored beside the skeletons, which decode on first use; 4: skeletons without the timestamp;
# 5: usage totals count pi's usage entries, compaction and branch summary usage, omp's model_usage;
# 6: what the entries tell of the file's dialect (`format.dialects.Evidence`)
CACHE_FORMAT = 6
_TAIL_HASH_BYTES = 4096


class _CacheFile(msgspec.Struct, array_like=True):
    format: int
    path: str
    device: int
    inode: int
    size: int
    mtime_ns: int
    tail_hash: str
    header_json: bytes
    usage: UsageTotals
    count: int
    last: Skeleton | None
    labels: dict[Any, Any]
    has_assistant: bool
    first_user: Skeleton | None  # the first user message in file order
    last_compaction: Skeleton | None  # the last compaction in file order
    evidence: list[Any] | None  # `Evidence.to_state()` of the entries (their file's dialect)
    skeletons: msgspec.Raw  # list[Skeleton], decoded by `CachedSkeletons.decode`


_CACHE_DECODER = msgspec.msgpack.Decoder(_CacheFile)
_CACHE_ENCODER = msgspec.msgpack.Encoder()
_SKELETONS_DECODER = msgspec.msgpack.Decoder(list[Skeleton])


class CachedSkeletons:
    """The skeletons of a cache hit, still encoded, and what is known of them without them.

    `decode` gives the list (None when it does not decode as `count` skeletons in file
    order: the index then rescans the file, `EntryIndex.add_cached`).
    """

    __slots__ = (
        "_raw",
        "count",
        "evidence",
        "first_user",
        "has_assistant",
        "labels",
        "last",
        "last_compaction",
    )

    def __init__(self, c: _CacheFile) -> None:
        self._raw: msgspec.Raw | None = c.skeletons
        self.count = c.count
        self.last = c.last
        self.labels = c.labels
        self.has_assistant = c.has_assistant
        self.first_user = c.first_user
        self.last_compaction = c.last_compaction
        #: what the entries tell of the file's dialect (`Evidence.to_state`), or None
        self.evidence = c.evidence

    def decode(self) -> list[Skeleton] | None:
        raw, self._raw = self._raw, None  # the encoded bytes are freed with the hit
        if raw is None:
            return None
        try:
            sks = _SKELETONS_DECODER.decode(raw)
        except (msgspec.DecodeError, msgspec.ValidationError):
            return None
        if len(sks) != self.count:
            return None
        for i, sk in enumerate(sks):
            if sk.order != i:
                return None
        if sks and sks[-1] != self.last:
            return None
        return sks


def default_cache_dir() -> str:
    """`$SESSIONTREE_CACHE_DIR`, else `$XDG_CACHE_HOME/sessiontree/index`, else `~/.cache/...`."""
    env = os.environ.get("SESSIONTREE_CACHE_DIR")
    if env:
        return os.path.abspath(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = xdg if xdg and os.path.isabs(xdg) else os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "sessiontree", "index")


def tail_hash(path: str, size: int, identity: tuple[int, int]) -> str:
    """The hash of the last bytes before `size`, read only from the file whose
    `(st_dev, st_ino)` is `identity` (the one the cache describes): a path swapped for a
    link to another file meanwhile is not read ("" never matches)."""
    import stat

    start = max(0, size - _TAIL_HASH_BYTES)
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if (st.st_dev, st.st_ino) != identity or not stat.S_ISREG(st.st_mode):
            return ""
        f.seek(start)
        data = f.read(size - start)
    if len(data) != size - start:
        return ""
    return hashlib.sha256(data).hexdigest()


class _ContextFile(msgspec.Struct, array_like=True):
    format: int
    device: int
    inode: int
    size: int
    mtime_ns: int
    tail_hash: str
    count: int
    last_id: str
    skeletons: list[Skeleton]


_CONTEXT_DECODER = msgspec.msgpack.Decoder(_ContextFile)
CONTEXT_SUFFIX = ".ctx"


class IndexCache:
    """Skeleton arrays of big session files, kept outside the sessions directories.

    Keyed by the file's real path; valid when device, inode, size, mtime and the hash of the
    last 4 KB match. A file that only grew (same device/inode, same hash at the old end)
    reuses the cache and indexes just the appended bytes. Anything else, including a cache
    file that does not decode, means a full index. Never named `*.jsonl`.
    """

    def __init__(self, cache_dir: str | None = None) -> None:
        self.dir = cache_dir or default_cache_dir()

    def file_for(self, path: str, suffix: str = ".idx") -> str:
        """The cache file of `path` (`suffix`: of a companion kept beside it, e.g. ".view")."""
        key = hashlib.sha256(os.path.realpath(path).encode("utf-8", "surrogateescape")).hexdigest()[:40]
        return os.path.join(self.dir, key + suffix)

    def written_since_change(self, path: str, st: Any) -> bool:
        """Whether the cache of `path` was written after the file (stat `st`) last changed:
        its next open reads the cache, not the file (a cheap test: the cache is not read)."""
        try:
            cached = os.stat(self.file_for(path))
        except OSError:
            return False
        return cached.st_mtime_ns >= st.st_mtime_ns

    def load(self, path: str, st: Any) -> tuple[dict[str, Any], CachedSkeletons, UsageTotals, int] | None:
        """`(header, skeletons, usage, indexed_size)` or None when there is no valid cache."""
        try:
            with open(self.file_for(path), "rb") as f:
                blob = f.read()
        except OSError:
            return None
        try:
            c = _CACHE_DECODER.decode(blob)
        except (msgspec.DecodeError, msgspec.ValidationError):
            return None
        if c.format != CACHE_FORMAT or c.device != st.st_dev or c.inode != st.st_ino:
            return None
        size = st.st_size
        if size < c.size:
            return None
        if size == c.size and st.st_mtime_ns != c.mtime_ns:
            return None
        if tail_hash(path, c.size, (c.device, c.inode)) != c.tail_hash:
            return None
        try:
            header = orjson.loads(c.header_json)
        except orjson.JSONDecodeError:
            return None
        if not isinstance(header, dict):
            return None
        if (c.count == 0) != (c.last is None) or (c.last is not None and c.last.order != c.count - 1):
            return None
        return header, CachedSkeletons(c), c.usage, c.size

    def save_context(
        self, path: str, ident: tuple[int, int, int, int], count: int, last_id: str, sks: list[Skeleton]
    ) -> None:
        """Keep the context skeletons of the last entry (`last_id`, the `count`th) of the file
        whose `(device, inode, size, mtime_ns)` is `ident` beside its cache (`.ctx`)."""
        if not sks or any(sk.offset < 0 for sk in sks):
            return  # only entries a later process reads from the file
        device, inode, size, mtime_ns = ident
        digest = tail_hash(path, size, (device, inode))
        if not digest:
            return
        c = _ContextFile(CACHE_FORMAT, device, inode, size, mtime_ns, digest, count, last_id, sks)
        self._replace(self.file_for(path, CONTEXT_SUFFIX), _CACHE_ENCODER.encode(c))

    def load_context(
        self, path: str, ident: tuple[int, int, int, int], count: int, last_id: str
    ) -> list[Skeleton] | None:
        """The kept context skeletons of the last entry, when they are of this file as it is
        (`ident`), with `count` entries and `last_id` last; else None."""
        try:
            with open(self.file_for(path, CONTEXT_SUFFIX), "rb") as f:
                c = _CONTEXT_DECODER.decode(f.read())
        except (OSError, msgspec.DecodeError, msgspec.ValidationError):
            return None
        if c.format != CACHE_FORMAT or (c.device, c.inode, c.size, c.mtime_ns) != ident:
            return None
        if (c.count, c.last_id) != (count, last_id) or not c.skeletons or c.skeletons[-1].id != last_id:
            return None
        if tail_hash(path, c.size, (c.device, c.inode)) != c.tail_hash:
            return None
        return c.skeletons

    def save(self, path: str, st: Any, data: bytes, header: dict[str, Any], index: EntryIndex) -> None:
        """Write the cache for a file whose bytes (`data`) were just indexed."""
        size = len(data)
        tail = hashlib.sha256(data[max(0, size - _TAIL_HASH_BYTES) : size]).hexdigest()
        self._write(path, st, size, tail, header, index)

    def save_skeletons(
        self,
        path: str,
        st: Any,
        header: dict[str, Any],
        index: EntryIndex,
        skeletons: list[Skeleton] | None = None,
    ) -> None:
        """Write the cache from the index alone (the file is read only for its tail hash);
        `skeletons` stands for the index's own when given (the same entries, every one
        file-backed: those this process wrote as the file holds them)."""
        size = st.st_size
        self._write(path, st, size, tail_hash(path, size, (st.st_dev, st.st_ino)), header, index, skeletons)

    def _write(
        self,
        path: str,
        st: Any,
        size: int,
        tail: str,
        header: dict[str, Any],
        index: EntryIndex,
        skeletons: list[Skeleton] | None = None,
    ) -> None:
        sks = index.skeletons() if skeletons is None else skeletons
        if len(sks) != len(index) or any(sk.offset < 0 for sk in sks):
            return  # only files whose every entry is file-backed
        first_user, last_compaction = index.display_skeletons()
        evidence = Evidence()
        evidence.see_skeletons(sks, index.entry_of)
        c = _CacheFile(
            CACHE_FORMAT,
            os.path.realpath(path),
            st.st_dev,
            st.st_ino,
            size,
            st.st_mtime_ns,
            tail,
            orjson.dumps(header),
            index.usage,
            len(sks),
            sks[-1] if sks else None,
            dict(index.labels),
            index.has_assistant,
            first_user,
            last_compaction,
            evidence.to_state(),
            msgspec.Raw(_CACHE_ENCODER.encode(sks)),
        )
        self._replace(self.file_for(path), _CACHE_ENCODER.encode(c))

    def _replace(self, target: str, blob: bytes) -> None:
        os.makedirs(self.dir, mode=0o700, exist_ok=True)
        tmp = f"{target}.{os.getpid()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(blob)
        os.replace(tmp, target)
