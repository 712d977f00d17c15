"""Reading the entries of a session that stay in its file (the index keeps only skeletons).

`FileEntries` gives the index its three loaders: one entry (`one`), a batch read with few
reads (`many`), and a sequential stream of many (`stream`, for bulk reads). Every entry read
is checked against its skeleton (the id must match, else the file changed underneath: a
`ConflictError`), its blob references are resolved and its replay metadata is cleaned, as
loading does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import orjson

from ..errors import ConflictError
from ..format import jsonl, persistence
from ..format.blobs import BLOB_REF_BYTES
from ..format.persistence import clean_openai_replay
from ..index import Skeleton
from ..store.blobs import BlobStore

__all__ = ["BATCH_GAP", "BATCH_MAX", "STREAM_MAX", "FileEntries"]

#: Batched reads of file-backed entries: join ranges closer than this, up to this size.
BATCH_GAP = 256 * 1024
BATCH_MAX = 8 << 20
#: Bulk (sequential) reads of many entries: spans of up to this many bytes at a time.
STREAM_MAX = 16 << 20


class FileEntries:
    """The file-backed entries of one session: `path()` names its file as it is now."""

    def __init__(self, storage: Any, path: Callable[[], str | None], blobs: Callable[[], BlobStore]) -> None:
        self._storage = storage
        self._path = path
        self._blobs = blobs

    def stream(self, sks: list[Skeleton]) -> Iterator[dict[str, Any]]:
        """Entries of file-backed skeletons sorted by offset, read span by span.

        Neighbouring lines are read together (spans of up to `STREAM_MAX` bytes), each line
        is parsed from a view of the span (no per-line copy or read), and the results are
        yielded in the order of `sks`; the same checks as `from_line` apply (the id
        must match, blob references are resolved, replay metadata is cleaned).
        """
        path = self._path()
        assert path is not None
        n = len(sks)
        i = 0
        loads = orjson.loads
        read_range = self._storage.read_range
        while i < n:
            first = sks[i]
            start = first.offset
            end = start + first.length
            j = i + 1
            while j < n:
                sk = sks[j]
                if sk.offset - end > BATCH_GAP or sk.offset + sk.length - start > STREAM_MAX:
                    break
                if sk.offset + sk.length > end:
                    end = sk.offset + sk.length
                j += 1
            buf = read_range(path, start, end - start)
            if not isinstance(buf, bytes | bytearray):
                buf = bytes(buf)
            mv = memoryview(buf)
            blobs = BLOB_REF_BYTES in buf
            for k in range(i, j):
                sk = sks[k]
                a = sk.offset - start
                line = mv[a : a + sk.length]
                try:
                    entry = loads(line)
                except orjson.JSONDecodeError:
                    entry = None
                if (
                    type(entry) is not dict
                    or entry.get("id") != sk.id
                    or (blobs and buf.find(BLOB_REF_BYTES, a, a + sk.length) >= 0)
                ):
                    entry = self.from_line(bytes(line), sk)
                elif sk.role == "assistant" and sk.type == "message":
                    msg = entry.get("message")
                    if type(msg) is dict and "providerPayload" in msg:  # (else nothing to clean)
                        clean_openai_replay(entry)
                yield entry
            del mv
            i = j

    def stream_raw(self, sks: list[Skeleton]) -> Iterator[tuple[Skeleton, memoryview]]:
        """The raw lines of file-backed skeletons sorted by offset, read span by span as
        `stream` reads them, unchecked (the caller parses them, and checks the id)."""
        path = self._path()
        assert path is not None
        n = len(sks)
        i = 0
        read_range = self._storage.read_range
        while i < n:
            first = sks[i]
            start = first.offset
            end = start + first.length
            j = i + 1
            while j < n:
                sk = sks[j]
                if sk.offset - end > BATCH_GAP or sk.offset + sk.length - start > STREAM_MAX:
                    break
                if sk.offset + sk.length > end:
                    end = sk.offset + sk.length
                j += 1
            mv = memoryview(read_range(path, start, end - start))
            for k in range(i, j):
                sk = sks[k]
                a = sk.offset - start
                yield sk, mv[a : a + sk.length]
            i = j

    def many(self, sks: list[Skeleton]) -> list[dict[str, Any]]:
        """Read many file-backed entries with few reads (neighbouring lines together)."""
        path = self._path()
        assert path is not None
        order = sorted(range(len(sks)), key=lambda i: sks[i].offset)
        out: list[dict[str, Any] | None] = [None] * len(sks)
        i = 0
        n = len(order)
        while i < n:
            first = sks[order[i]]
            start = first.offset
            end = start + first.length
            j = i + 1
            while j < n:
                sk = sks[order[j]]
                if sk.offset - end > BATCH_GAP or sk.offset + sk.length - start > BATCH_MAX:
                    break
                end = max(end, sk.offset + sk.length)
                j += 1
            buf = bytes(self._storage.read_range(path, start, end - start))
            for k in range(i, j):
                sk = sks[order[k]]
                a = sk.offset - start
                out[order[k]] = self.from_line(buf[a : a + sk.length], sk)
            i = j
        return out  # type: ignore[return-value]

    def one(self, sk: Skeleton) -> dict[str, Any]:
        path = self._path()
        assert path is not None
        line = self._storage.read_range(path, sk.offset, sk.length)
        return self.from_line(bytes(line), sk)

    def from_line(self, line: bytes, sk: Skeleton | None) -> dict[str, Any]:
        try:
            entry = orjson.loads(line)
        except orjson.JSONDecodeError:
            vals = jsonl.parse_jsonl_lenient(line).values
            entry = vals[0] if vals else None
        if not isinstance(entry, dict) or (sk is not None and entry.get("id") != sk.id):
            raise ConflictError(
                f"Session file {self._path()} changed underneath: entry {sk.id if sk else '?'} moved",
                self._path(),
            )
        if BLOB_REF_BYTES in line:
            persistence.resolve_blob_refs(entry, self._blobs())
        clean_openai_replay(entry)
        return entry
