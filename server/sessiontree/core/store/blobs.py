"""The content-addressed blob store: ``<agentDir>/blobs/<sha256 hex>`` (no extension).

Blobs hold externalized images (docs/storage-format.md "Blobs"), named by the references
of `core.format.blobs`.

Blobs are read only from regular files of at most `MAX_BLOB_BYTES`: the blob directory is
writable by whoever can write the agent directory, and a FIFO there would block a read
forever (holding the session's lock), a link to ``/dev/zero`` or a huge file would grow
memory without bound. The file is opened with ``O_NONBLOCK | O_NOFOLLOW`` (blobs are
written by rename and never are links) and checked with ``fstat`` on the open descriptor,
so what is read is what was checked; anything else reads as a missing blob.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat as stat_module
from dataclasses import dataclass

from ..errors import BlobError
from ..format.blobs import is_blob_hash, make_blob_ref
from .file import FileSessionStorage
from .protocol import SessionStorage

__all__ = ["MAX_BLOB_BYTES", "BlobPut", "BlobStore"]

MAX_BLOB_BYTES = 64 * 1024 * 1024
"""The largest blob that is read (64 MiB); a bigger file reads as a missing blob. Images
an agent sends are a few MB (provider limits are about 5 MB per image), so this leaves a
wide margin while keeping one read's memory bounded."""


@dataclass(frozen=True, slots=True)
class BlobPut:
    """The result of :meth:`BlobStore.put`: the hash, the blob's path and its reference."""

    hash: str
    path: str
    ref: str


class BlobStore:
    """A content-addressed store of byte blobs in one directory.

    Writes are atomic (temp file, fsync, rename); putting content that is already stored
    intact writes nothing. Reads verify the content against its hash.
    """

    def __init__(self, directory: str, storage: SessionStorage | None = None) -> None:
        if storage is None:
            storage = FileSessionStorage()
        self.dir = os.path.abspath(directory) if storage.is_real_fs else directory
        self.storage = storage

    def path_for(self, digest: str) -> str:
        """The path of the blob ``digest``; raises :class:`BlobError` for an invalid hash."""
        if not is_blob_hash(digest):
            raise BlobError(f"Invalid blob hash {digest!r}", blob_hash=str(digest))
        return os.path.join(self.dir, digest)

    def put(self, data: bytes) -> BlobPut:
        """Store ``data``; returns its hash, path and ``blob:sha256:`` reference.

        When an intact blob with this hash is already stored it is left as it is (the
        reference rewrites it with the same bytes; skipping saves a temp file and two
        fsyncs per image on every full rewrite). A missing or corrupted blob is written.
        """
        digest = hashlib.sha256(data).hexdigest()
        path = self.path_for(digest)
        if not self._intact(path, digest, len(data)):
            self.storage.ensure_dir(self.dir)
            self.storage.write_atomic(path, bytes(data))
        return BlobPut(digest, path, make_blob_ref(digest))

    def _intact(self, path: str, digest: str, size: int) -> bool:
        data = self._read(path)
        return data is not None and len(data) == size and hashlib.sha256(data).hexdigest() == digest

    def _read(self, path: str) -> bytes | None:
        """The bytes of a regular file of at most `MAX_BLOB_BYTES`, else ``None``."""
        if not self.storage.is_real_fs:
            try:
                fst = self.storage.stat(path)
                if not fst.is_file or fst.size > MAX_BLOB_BYTES:
                    return None
                data = self.storage.read_bytes(path)
            except OSError:
                return None
            return data if len(data) <= MAX_BLOB_BYTES else None
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError as exc:
            if exc.errno in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP, errno.ENXIO, errno.EACCES):
                return None
            raise
        try:
            st = os.fstat(fd)
            if not stat_module.S_ISREG(st.st_mode) or st.st_size > MAX_BLOB_BYTES:
                return None
            chunks: list[bytes] = []
            left = MAX_BLOB_BYTES + 1  # a file growing while it is read still stops here
            while left > 0:
                chunk = os.read(fd, min(left, 1 << 20))
                if not chunk:
                    break
                chunks.append(chunk)
                left -= len(chunk)
            data = b"".join(chunks)
        finally:
            os.close(fd)
        return data if len(data) <= MAX_BLOB_BYTES else None

    def get(self, digest: str) -> bytes | None:
        """The bytes of blob ``digest``, or ``None`` when it does not exist.

        Anything but a regular file of at most `MAX_BLOB_BYTES` (a FIFO, a device, a link,
        a directory, a bigger file) counts as not existing; nothing is read from it.
        Raises :class:`BlobError` when the hash is malformed or the stored content does not
        match it (a corrupted blob is never returned as if it were valid).
        """
        path = self.path_for(digest)
        data = self._read(path)
        if data is None:
            return None
        if hashlib.sha256(data).hexdigest() != digest:
            raise BlobError(f"Blob {digest} is corrupted (content does not match its hash)", digest, path)
        return data

    def has(self, digest: str) -> bool:
        """True when the blob file exists (its content is not verified)."""
        return self.storage.exists(self.path_for(digest))
