"""Storage faults: a full disk and a read-only directory.

Two ways to make them: a real small tmpfs (filled up, or remounted read-only), used when
`mount` works here (root on Linux), and a storage wrapper around FileSessionStorage that
fails every write with ENOSPC or EROFS, which runs everywhere. In both cases the error is
latched and reported (`PersistError` naming the path), nothing already on disk is
damaged, and the session recovers once the fault is gone by opening the file again.
"""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sessiontree.core import SessionManager
from sessiontree.core.errors import PersistError
from sessiontree.core.format.jsonl import parse_jsonl_lenient
from sessiontree.core.store import FileSessionStorage

from .helpers import chain, write_session

FAULTS_INJECTED: list[str] = []


def msg(role: str, text: str, n: int = 0) -> dict[str, Any]:
    m: dict[str, Any] = {"role": role, "content": [{"type": "text", "text": text}], "timestamp": n}
    if role == "assistant":
        m.update(
            {"api": "anthropic-messages", "provider": "anthropic", "model": "claude", "stopReason": "stop"}
        )
    return m


class FaultyStorage(FileSessionStorage):
    """FileSessionStorage whose writes fail with `errno_` while `failing` is set.

    Writes through `open_writer` fail the same way: the writer's `write_line` raises (or
    latches, as the real writer does) the error.
    """

    def __init__(self, errno_: int = errno.ENOSPC) -> None:
        super().__init__()
        self.errno = errno_
        self.failing = False
        self.failures = 0

    def _fail(self, path: str) -> None:
        if self.failing:
            self.failures += 1
            raise OSError(self.errno, os.strerror(self.errno), path)

    def write_atomic(self, path: str, data: bytes) -> None:  # type: ignore[override]
        self._fail(path)
        super().write_atomic(path, data)

    def append(self, path: str, data: bytes) -> None:  # type: ignore[override]
        self._fail(path)
        super().append(path, data)

    def open_writer(self, path: str) -> Any:  # type: ignore[override]
        self._fail(path)
        inner = super().open_writer(path)
        outer = self

        class Writer:
            def write_line(self, line: bytes) -> None:
                outer._fail(path)
                inner.write_line(line)

            def flush(self) -> None:
                outer._fail(path)
                inner.flush()

            def fsync(self) -> None:
                outer._fail(path)
                inner.fsync()

            def close(self) -> None:
                inner.close()

            def get_error(self) -> Any:
                return inner.get_error()

        return Writer()


@contextlib.contextmanager
def tmpfs(path: Path, size: str) -> Iterator[Path]:
    path.mkdir(parents=True, exist_ok=True)
    r = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], capture_output=True
    )
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({r.stderr.decode().strip()}); the wrapper tests cover this")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


def fill(path: Path) -> Path:
    """Fill the filesystem of `path` until writes fail with ENOSPC."""
    filler = path / "filler.bin"
    with open(filler, "wb", buffering=0) as f:
        for size in (65536, 4096, 1):
            try:
                while True:
                    f.write(b"\0" * size)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC
    return filler


def _assert_intact(path: Path, before: bytes) -> None:
    now = path.read_bytes()
    assert now[: len(before)] == before, "bytes already on disk were changed"
    # anything after them is at most a torn line the loader drops
    report = parse_jsonl_lenient(now)
    assert report.skipped_lines == 0


# ------------------------------------------------------------------------ wrapper faults


@pytest.mark.parametrize("err", [errno.ENOSPC, errno.EROFS, errno.EIO])
def test_append_fault_is_latched_and_recovers_by_reopening(tmp_path: Path, err: int) -> None:
    f = tmp_path / "s.jsonl"
    write_session(f, chain(10))
    storage = FaultyStorage(err)
    sm = SessionManager.open(str(f), storage=storage)
    ok_id = sm.append_message(msg("assistant", "before the fault"))
    sm.flush()
    before = f.read_bytes()

    storage.failing = True
    FAULTS_INJECTED.append(f"wrapper-{errno.errorcode[err]}-append")
    with pytest.raises(PersistError) as info:
        sm.append_message(msg("user", "during the fault"))
        sm.flush()
    assert info.value.path == str(f)
    assert isinstance(info.value.cause, OSError) and info.value.cause.errno == err
    # latched: later writes fail at once with the same error, even set_session_name
    with pytest.raises(PersistError) as again:
        sm.append_message(msg("user", "still failing"))
    assert again.value is info.value or again.value.cause is info.value.cause
    _assert_intact(f, before)

    storage.failing = False
    with pytest.raises(PersistError):
        sm.flush()  # the latch stays until the file is opened again
    sm.close_quietly()
    sm2 = SessionManager.open(str(f), storage=storage)
    ids = [e["id"] for e in sm2.get_entries()]
    assert ok_id in ids
    new_id = sm2.append_message(msg("user", "after the fault"))
    sm2.flush()
    sm2.close()
    values = parse_jsonl_lenient(f.read_bytes()).values
    assert values[: len(parse_jsonl_lenient(before).values)] == parse_jsonl_lenient(before).values
    assert new_id in [v.get("id") for v in values]


def test_rewrite_fault_keeps_the_old_file(tmp_path: Path) -> None:
    f = tmp_path / "s.jsonl"
    data = write_session(f, chain(10))
    storage = FaultyStorage(errno.ENOSPC)
    sm = SessionManager.open(str(f), storage=storage)
    storage.failing = True
    FAULTS_INJECTED.append("wrapper-ENOSPC-rewrite")
    with pytest.raises(PersistError) as info:
        sm.set_session_name("new title", "user")
    assert info.value.path == str(f)
    assert f.read_bytes() == data
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")], "no temp file left behind"
    storage.failing = False
    sm2 = SessionManager.open(str(f), storage=storage)
    assert sm2.set_session_name("new title", "user")
    assert parse_jsonl_lenient(f.read_bytes()).values[0]["title"] == "new title"


def test_first_write_fault_creates_nothing(tmp_path: Path) -> None:
    storage = FaultyStorage(errno.ENOSPC)
    sm = SessionManager.create(str(tmp_path), session_dir=str(tmp_path / "d"), storage=storage)
    sm.append_message(msg("user", "q"))
    storage.failing = True
    FAULTS_INJECTED.append("wrapper-ENOSPC-first-write")
    with pytest.raises(PersistError) as info:
        sm.append_message(msg("assistant", "a"))
    path = sm.get_session_file()
    assert info.value.path == path
    assert path is not None and not os.path.exists(path)
    assert not list(tmp_path.rglob("*.jsonl")) and not list(tmp_path.rglob("*.tmp"))


# ------------------------------------------------------------------------ real filesystems


def test_real_full_disk_on_tmpfs(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "mnt", "256k") as mnt:
        f = mnt / "s.jsonl"
        write_session(f, chain(20))
        sm = SessionManager.open(str(f))
        acked = [sm.append_message(msg("assistant", "fits"))]
        sm.flush()
        before = f.read_bytes()
        filler = fill(mnt)
        FAULTS_INJECTED.append("tmpfs-ENOSPC")
        big = "y" * 20_000
        with pytest.raises(PersistError) as info:
            for i in range(50):
                sm.append_message(msg("user", f"{i} {big}"))
                sm.flush()
        assert info.value.path == str(f)
        assert isinstance(info.value.cause, OSError) and info.value.cause.errno == errno.ENOSPC
        _assert_intact(f, before)
        # a full rewrite (set_session_name) fails too and leaves the file as it was
        sm2 = None
        with pytest.raises(PersistError):
            sm2 = SessionManager.open(str(f))
            sm2.set_session_name("t", "user")
        _assert_intact(f, before)
        assert not [p for p in mnt.iterdir() if p.name.endswith(".tmp")]
        # the fault goes away: reopening recovers, appends work again
        filler.unlink()
        sm.close_quietly()
        sm3 = SessionManager.open(str(f))
        assert set(acked) <= {e["id"] for e in sm3.get_entries()}
        after = sm3.append_message(msg("user", "after"))
        sm3.flush()
        sm3.close()
        assert after in [v.get("id") for v in parse_jsonl_lenient(f.read_bytes()).values]


def test_real_read_only_directory(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "mnt", "1m") as mnt:
        f = mnt / "s.jsonl"
        data = write_session(f, chain(10))
        sm = SessionManager.open(str(f))
        r = subprocess.run(["mount", "-o", "remount,ro", str(mnt)], capture_output=True)
        if r.returncode != 0:
            pytest.skip("cannot remount read-only")
        FAULTS_INJECTED.append("tmpfs-EROFS")
        try:
            with pytest.raises(PersistError) as info:
                sm.append_message(msg("assistant", "x"))
                sm.flush()
            assert info.value.path == str(f)
            assert isinstance(info.value.cause, OSError) and info.value.cause.errno == errno.EROFS
            with pytest.raises(PersistError):
                sm.set_session_name("t", "user")
            # opening for reading still works on a read-only directory
            ro = SessionManager.open(str(f))
            assert len(ro.get_entries()) == 10
        finally:
            subprocess.run(["mount", "-o", "remount,rw", str(mnt)], capture_output=True)
        assert f.read_bytes() == data
        sm2 = SessionManager.open(str(f))
        eid = sm2.append_message(msg("assistant", "after"))
        sm2.flush()
        sm2.close()
        assert eid in [v.get("id") for v in parse_jsonl_lenient(f.read_bytes()).values]
