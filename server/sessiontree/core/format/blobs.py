"""Blob references: how an entry names an externalized image (docs/storage-format.md "Blobs").

A reference is ``blob:sha256:<64 lowercase hex>``; nothing else is ever turned into a path.
The blobs themselves are kept by `core.store.blobs.BlobStore`; the persistence transform
reaches them through the `Blobs` protocol.
"""

from __future__ import annotations

import re
from typing import Protocol

__all__ = [
    "BLOB_REF_BYTES",
    "BLOB_REF_PREFIX",
    "Blobs",
    "is_blob_hash",
    "make_blob_ref",
    "parse_blob_ref",
]

BLOB_REF_PREFIX = "blob:sha256:"
#: The prefix as bytes: a line without it holds no blob reference (a cheap test first).
BLOB_REF_BYTES = BLOB_REF_PREFIX.encode()
_HASH = re.compile(r"[0-9a-f]{64}")


def is_blob_hash(value: object) -> bool:
    """True for exactly 64 lowercase hex characters."""
    return isinstance(value, str) and _HASH.fullmatch(value) is not None


def parse_blob_ref(value: object) -> str | None:
    """The hash of a ``blob:sha256:<64 lowercase hex>`` reference, or ``None``."""
    if not isinstance(value, str) or len(value) != len(BLOB_REF_PREFIX) + 64:
        return None
    if not value.startswith(BLOB_REF_PREFIX):
        return None
    digest = value[len(BLOB_REF_PREFIX) :]
    return digest if _HASH.fullmatch(digest) else None


def make_blob_ref(digest: str) -> str:
    """``blob:sha256:<digest>``."""
    return BLOB_REF_PREFIX + digest


class BlobPutResult(Protocol):
    """What putting a blob gives back: its hash and its reference."""

    @property
    def hash(self) -> str: ...

    @property
    def ref(self) -> str: ...


class Blobs(Protocol):
    """Where externalized images go and come back from (`core.store.blobs.BlobStore`)."""

    def put(self, data: bytes) -> BlobPutResult: ...

    def get(self, digest: str) -> bytes | None: ...
