"""One contract suite for every SessionStorage (CONVENTIONS 6), plus file-only checks.

The same tests run on FileSessionStorage (real files under tmp_path), MemorySessionStorage,
FaultInjectingStorage wrapping each with no fault scheduled (it must be transparent), and
FileSessionStorage checking every use through a RootsGuard over tmp_path (the daemon's).
"""

from __future__ import annotations

import errno
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sessiontree.core.errors import LockTimeoutError
from sessiontree.core.format.jsonl import parse_session_entries
from sessiontree.core.ids import FixedClock, IdSource
from sessiontree.core.store import (
    TORN_LINE_BREAKER,
    FaultInjectingStorage,
    FileSessionStorage,
    MemorySessionStorage,
    SessionStorage,
    SessionStorageWriter,
    lock_file_path,
    separator_after,
)
from sessiontree.core.store.guard import RootsGuard


@dataclass
class Env:
    storage: SessionStorage
    root: str

    def p(self, *parts: str) -> str:
        return os.path.join(self.root, *parts)


def make_file(tmp_path: Path) -> Env:
    return Env(FileSessionStorage(), str(tmp_path / "root"))


def make_guarded_file(tmp_path: Path) -> Env:
    return Env(FileSessionStorage(guard=RootsGuard([tmp_path])), str(tmp_path / "root"))


def make_memory(tmp_path: Path) -> Env:
    return Env(MemorySessionStorage(), "/mem/root")


def make_wrapped_file(tmp_path: Path) -> Env:
    return Env(FaultInjectingStorage(FileSessionStorage()), str(tmp_path / "root"))


def make_wrapped_memory(tmp_path: Path) -> Env:
    return Env(FaultInjectingStorage(MemorySessionStorage()), "/mem/root")


FACTORIES: dict[str, Callable[[Path], Env]] = {
    "file": make_file,
    "guarded-file": make_guarded_file,
    "memory": make_memory,
    "faulty-file": make_wrapped_file,
    "faulty-memory": make_wrapped_memory,
}


@pytest.fixture(params=sorted(FACTORIES))
def env(request: pytest.FixtureRequest, tmp_path: Path) -> Env:
    e = FACTORIES[request.param](tmp_path)
    e.storage.ensure_dir(e.root)
    return e


# ------------------------------------------------------------------ protocol conformance


def test_implements_the_protocol(env: Env) -> None:
    assert isinstance(env.storage, SessionStorage)
    assert isinstance(env.storage.open_writer(env.p("w.jsonl")), SessionStorageWriter)


# ------------------------------------------------------------------ dirs, exists, stat


def test_ensure_dir_exists_and_stat(env: Env) -> None:
    s = env.storage
    d = env.p("a", "b", "c")
    assert not s.exists(d)
    s.ensure_dir(d)
    s.ensure_dir(d)  # idempotent
    assert s.exists(d) and s.exists(env.p("a"))
    st = s.stat(d)
    assert st.is_dir and not st.is_file
    f = env.p("a", "f.jsonl")
    s.write_atomic(f, b"12345")
    st = s.stat(f)
    assert st.is_file and not st.is_dir and st.size == 5
    with pytest.raises(FileNotFoundError):
        s.stat(env.p("missing"))


# ------------------------------------------------------------------ reads


def test_reads(env: Env) -> None:
    s = env.storage
    f = env.p("r.jsonl")
    with pytest.raises(FileNotFoundError):
        s.read_bytes(f)
    with pytest.raises(FileNotFoundError):
        s.read_range(f, 0, 1)
    s.write_atomic(f, b"0123456789")
    assert s.read_bytes(f) == b"0123456789"
    assert s.read_range(f, 2, 3) == b"234"
    assert s.read_range(f, 8, 100) == b"89"
    assert s.read_range(f, 20, 5) == b""
    assert s.read_range(f, 0, 0) == b""
    assert s.read_prefix(f, 4) == b"0123"
    assert s.read_prefix(f, 400) == b"0123456789"
    with pytest.raises(ValueError):
        s.read_range(f, -1, 2)


def test_list_files(env: Env) -> None:
    s = env.storage
    assert s.list_files(env.p("nope")) == []
    s.write_atomic(env.p("b.jsonl"), b"")
    s.write_atomic(env.p("a.jsonl"), b"x")
    s.write_atomic(env.p("sub", "c.jsonl"), b"y")
    s.ensure_dir(env.p("emptydir"))
    assert s.list_files(env.root) == [env.p("a.jsonl"), env.p("b.jsonl")]
    assert s.list_files(env.root, recursive=True) == [
        env.p("a.jsonl"),
        env.p("b.jsonl"),
        env.p("sub", "c.jsonl"),
    ]


# ------------------------------------------------------------------ atomic writes


def test_write_atomic_creates_replaces_and_leaves_no_temp(env: Env) -> None:
    s = env.storage
    f = env.p("deep", "dir", "s.jsonl")
    s.write_atomic(f, b"one\n")  # parent dirs are created
    assert s.read_bytes(f) == b"one\n"
    before = s.stat(f)
    s.write_atomic(f, b"two\n")
    assert s.read_bytes(f) == b"two\n"
    assert s.stat(f).inode != before.inode  # a new file took the name
    assert s.list_files(env.p("deep", "dir")) == [f]


def test_write_atomic_failure_leaves_target_and_no_temp(env: Env) -> None:
    s = env.storage
    target = env.p("adir")
    s.ensure_dir(target)
    s.write_atomic(env.p("adir", "inside.jsonl"), b"keep")
    with pytest.raises(OSError):
        s.write_atomic(target, b"data")
    assert s.stat(target).is_dir
    assert s.read_bytes(env.p("adir", "inside.jsonl")) == b"keep"
    assert s.list_files(env.root) == []


# ------------------------------------------------------------------ appends


def test_append_whole_lines(env: Env) -> None:
    s = env.storage
    f = env.p("new", "a.jsonl")
    s.append(f, b'{"a":1}\n')  # creates the file and its directory
    s.append(f, b'{"b":2}')  # a newline is added
    s.append(f, b"")  # nothing
    assert s.read_bytes(f) == b'{"a":1}\n{"b":2}\n'
    before = s.stat(f)
    s.append(f, b'{"c":3}\n{"d":4}\n')
    after = s.stat(f)
    assert after.inode == before.inode and after.size == before.size + 16
    assert after.mtime_ns >= before.mtime_ns


def test_append_never_glues_onto_a_torn_line(env: Env) -> None:
    s = env.storage
    f = env.p("torn.jsonl")
    s.write_atomic(f, b'{"a":1}\n{"b":')
    s.append(f, b'{"c":3}\n')
    # A plain newline would let the reference parser read the torn value on into {"c":3}
    # and lose it; the breaker line makes it drop only the torn line.
    assert s.read_bytes(f) == b'{"a":1}\n{"b":\n' + TORN_LINE_BREAKER + b'\n{"c":3}\n'
    assert parse_session_entries(s.read_bytes(f)) == [{"a": 1}, {"c": 3}]


@pytest.mark.parametrize(
    ("tail", "separator"),
    [
        (b'{"a":1}\n', b""),
        (b'{"a":1}', b"\n"),  # a complete value without its newline: just end the line
        (b'{"a":1}\n{"b":"unterminated', b"\n" + TORN_LINE_BREAKER + b"\n"),
        (b'{"a":1}\n[1,2', b"\n" + TORN_LINE_BREAKER + b"\n"),
        (b"garbage", b"\n" + TORN_LINE_BREAKER + b"\n"),
    ],
)
def test_append_separator_after_unterminated_tails(env: Env, tail: bytes, separator: bytes) -> None:
    s = env.storage
    f = env.p("t.jsonl")
    s.write_atomic(f, tail)
    s.append(f, b'{"z":26}\n')
    assert s.read_bytes(f) == tail + separator + b'{"z":26}\n'
    assert parse_session_entries(s.read_bytes(f))[-1] == {"z": 26}
    assert separator_after(tail.rsplit(b"\n", 1)[-1]) == separator


def test_concurrent_appends_do_not_interleave(env: Env) -> None:
    s = env.storage
    f = env.p("conc.jsonl")

    def worker(n: int) -> None:
        for i in range(100):
            s.append(f, f'{{"w":{n},"i":{i},"pad":"{"x" * 2000}"}}\n'.encode())

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    values = parse_session_entries(s.read_bytes(f))
    assert len(values) == 600
    assert sorted((v["w"], v["i"]) for v in values) == [(n, i) for n in range(6) for i in range(100)]


# ------------------------------------------------------------------ writers


def test_writer_appends_lines_lazily(env: Env) -> None:
    s = env.storage
    f = env.p("w", "s.jsonl")
    w = s.open_writer(f)
    assert not s.exists(f)  # nothing is created until the first write
    w.write_line(b'{"a":1}')
    w.write_line(b'{"b":2}\n')
    w.flush()
    w.fsync()
    assert s.read_bytes(f) == b'{"a":1}\n{"b":2}\n'
    assert w.get_error() is None
    w.close()
    w.close()  # idempotent
    with pytest.raises(ValueError):
        w.write_line(b"{}")


def test_writer_starts_a_new_line_after_another_writers_torn_line(env: Env) -> None:
    s = env.storage
    f = env.p("s.jsonl")
    w = s.open_writer(f)
    w.write_line(b'{"a":1}')
    s.append(f, b"x")  # stand-in for another process: complete line
    s.write_atomic(f, s.read_bytes(f) + b'{"torn":')  # then a torn one
    w.close()
    w2 = s.open_writer(f)
    w2.write_line(b'{"c":3}')
    w2.close()
    assert parse_session_entries(s.read_bytes(f)) == [{"a": 1}, {"c": 3}]


def test_writer_latches_the_first_error(env: Env) -> None:
    s = env.storage
    s.write_atomic(env.p("file"), b"x")
    w = s.open_writer(env.p("file", "child.jsonl"))  # the parent is a file
    with pytest.raises(OSError) as first:
        w.write_line(b"{}")
    assert w.get_error() is first.value
    with pytest.raises(OSError) as second:
        w.write_line(b"{}")
    assert second.value is first.value
    with pytest.raises(OSError):
        w.flush()
    w.close()  # close never raises the latched error


# ------------------------------------------------------------------ rename, unlink, remove_tree


def test_rename_files_and_dirs(env: Env) -> None:
    s = env.storage
    a, b = env.p("a.jsonl"), env.p("b.jsonl")
    s.write_atomic(a, b"A")
    s.write_atomic(b, b"B")
    s.rename(a, b)  # replaces a file
    assert not s.exists(a) and s.read_bytes(b) == b"A"
    with pytest.raises(FileNotFoundError):
        s.rename(a, env.p("c.jsonl"))
    s.write_atomic(env.p("d1", "x", "f.jsonl"), b"F")
    s.rename(env.p("d1"), env.p("d2"))
    assert s.read_bytes(env.p("d2", "x", "f.jsonl")) == b"F"
    assert not s.exists(env.p("d1"))


def test_unlink_and_remove_tree(env: Env) -> None:
    s = env.storage
    f = env.p("u.jsonl")
    s.write_atomic(f, b"x")
    s.unlink(f)
    assert not s.exists(f)
    with pytest.raises(FileNotFoundError):
        s.unlink(f)
    s.unlink(f, missing_ok=True)
    s.write_atomic(env.p("art", "a", "1.txt"), b"1")
    s.write_atomic(env.p("art", "2.txt"), b"2")
    s.remove_tree(env.p("art"))
    assert not s.exists(env.p("art"))
    s.remove_tree(env.p("art"))  # missing is fine
    assert s.list_files(env.root, recursive=True) == []


# ------------------------------------------------------------------ locks


def test_lock_excludes_other_holders_and_times_out(env: Env) -> None:
    s = env.storage
    f = env.p("l.jsonl")
    held = threading.Event()
    release = threading.Event()
    errors: list[BaseException] = []

    def holder() -> None:
        try:
            with s.lock(f):
                held.set()
                release.wait(5)
        except BaseException as exc:
            errors.append(exc)
            held.set()

    t = threading.Thread(target=holder)
    t.start()
    assert held.wait(5)
    with pytest.raises(LockTimeoutError), s.lock(f, timeout=0.05):
        pass
    release.set()
    t.join()
    assert errors == []
    with s.lock(f, timeout=1):
        pass
    # Shared locks coexist; an exclusive one waits for them.
    with (
        s.lock(f, shared=True),
        s.lock(f, shared=True, timeout=0.1),
        pytest.raises(LockTimeoutError),
        s.lock(f, timeout=0.05),
    ):
        pass
    with s.lock(f, timeout=0.1):
        pass
    # The lock file never looks like a session.
    assert not any(p.endswith(".jsonl") and p != f for p in s.list_files(env.root))


# ------------------------------------------------------------------ fault injection


def test_fault_injection_fails_then_recovers(tmp_path: Path) -> None:
    storage = FaultInjectingStorage(FileSessionStorage())
    f = str(tmp_path / "s.jsonl")
    storage.append(f, b'{"a":1}\n')
    storage.fail("append", error=OSError(errno.ENOSPC, "No space left on device"))
    with pytest.raises(OSError) as info:
        storage.append(f, b'{"b":2}\n')
    assert info.value.errno == errno.ENOSPC
    storage.append(f, b'{"c":3}\n')  # the fault fired once
    assert parse_session_entries(storage.read_bytes(f)) == [{"a": 1}, {"c": 3}]
    storage.fail("write_atomic", path=f, times=None)
    for _ in range(2):
        with pytest.raises(OSError):
            storage.write_atomic(f, b"")
    storage.write_atomic(str(tmp_path / "other.jsonl"), b"ok\n")  # other paths are fine
    storage.clear()
    storage.write_atomic(f, b"new\n")
    assert storage.read_bytes(f) == b"new\n"
    assert ("append", f) in storage.calls


def test_fault_injection_in_writers_latches(tmp_path: Path) -> None:
    storage = FaultInjectingStorage(MemorySessionStorage())
    w = storage.open_writer("/x/s.jsonl")
    w.write_line(b'{"a":1}')
    storage.fail("write_line")
    with pytest.raises(OSError) as info:
        w.write_line(b'{"b":2}')
    assert w.get_error() is info.value
    with pytest.raises(OSError):
        w.write_line(b'{"c":3}')  # latched, although the fault fired only once
    assert storage.read_bytes("/x/s.jsonl") == b'{"a":1}\n'
    storage.fail("fsync")
    w2 = storage.open_writer("/x/t.jsonl")
    with pytest.raises(OSError):
        w2.fsync()


# ------------------------------------------------------------------ file storage specifics


def test_atomic_write_uses_a_hidden_snowflake_temp_in_the_same_dir(tmp_path: Path) -> None:
    ids = IdSource(seed=5, clock=FixedClock(1_767_225_600_000))
    predicted = IdSource(seed=5, clock=FixedClock(1_767_225_600_000)).snowflake()
    storage = FileSessionStorage(ids)
    target = tmp_path / "s.jsonl"
    target.write_bytes(b"original\n")
    # Occupy the predicted temp name: the write must fail without touching the target.
    (tmp_path / f".s.jsonl.{predicted}.tmp").mkdir()
    with pytest.raises(FileExistsError):
        storage.write_atomic(str(target), b"new\n")
    assert target.read_bytes() == b"original\n"
    storage.write_atomic(str(target), b"new\n")  # the next snowflake is free
    assert target.read_bytes() == b"new\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == [f".s.jsonl.{predicted}.tmp", "s.jsonl"]


def test_lock_file_lives_outside_the_session_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    storage = FileSessionStorage()
    f = str(sessions / "s.jsonl")
    lock = lock_file_path(f)
    assert os.path.dirname(lock) == str(tmp_path / "cache" / "sessiontree" / "locks")
    # One lock per file whatever the name it is reached by (a symlinked directory).
    (tmp_path / "alias").symlink_to(sessions)
    assert lock_file_path(str(tmp_path / "alias" / "s.jsonl")) == lock
    assert lock_file_path(str(sessions / "t.jsonl")) != lock
    with storage.lock(f):
        assert os.path.exists(lock)
    assert os.listdir(sessions) == []


def test_a_lock_name_kept_between_appends_follows_the_directory_and_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The name is kept between calls (every append locks): a symlinked directory pointed
    elsewhere, or another lock directory in the environment, gives the name a fresh call
    would; a relative lock directory follows the working directory."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    (tmp_path / "link").symlink_to(one)
    via = str(tmp_path / "link" / "s.jsonl")
    assert lock_file_path(via) == lock_file_path(str(one / "s.jsonl"))
    (tmp_path / "link").unlink()
    (tmp_path / "link").symlink_to(two)
    assert lock_file_path(via) == lock_file_path(str(two / "s.jsonl")) != lock_file_path(str(one / "s.jsonl"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "other-cache"))
    assert os.path.dirname(lock_file_path(via)) == str(tmp_path / "other-cache" / "sessiontree" / "locks")
    monkeypatch.setenv("SESSIONTREE_LOCK_DIR", "rel-locks")
    monkeypatch.chdir(one)
    assert os.path.dirname(lock_file_path(via)) == str(one / "rel-locks")
    monkeypatch.chdir(two)
    assert os.path.dirname(lock_file_path(via)) == str(two / "rel-locks")


def test_a_planted_lock_symlink_is_not_followed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    f = str(tmp_path / "s.jsonl")
    lock = Path(lock_file_path(f))
    lock.parent.mkdir(parents=True)
    target = tmp_path / "outside-target"
    lock.symlink_to(target)
    with pytest.raises(OSError), FileSessionStorage().lock(f):
        pass
    assert not target.exists()


def test_lock_excludes_another_process(tmp_path: Path) -> None:
    import subprocess
    import sys

    f = str(tmp_path / "s.jsonl")
    storage = FileSessionStorage()
    code = (
        "import sys\nfrom sessiontree.core.store import FileSessionStorage\n"
        "from sessiontree.core.errors import LockTimeoutError\n"
        "try:\n    ctx = FileSessionStorage().lock(sys.argv[1], timeout=0.1)\n    ctx.__enter__()\n"
        "except LockTimeoutError:\n    print('busy')\nelse:\n    print('got')\n"
    )
    with storage.lock(f):
        out = subprocess.run([sys.executable, "-c", code, f], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "busy"
    out = subprocess.run([sys.executable, "-c", code, f], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "got"


@pytest.mark.parametrize("how", ["append", "writer"])
def test_a_line_begun_by_another_writer_between_look_and_write_loses_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    # Another process begins a line (in pieces) in the moment after the end was looked at:
    # simulated by writing its first piece right after the real look.
    import sessiontree.core.store.file as file_store
    from sessiontree.core.format.jsonl import parse_jsonl_lenient

    f = tmp_path / "s.jsonl"
    f.write_bytes(b'{"type":"session","id":"s"}\n')
    real = file_store.settled_tail
    other = os.open(f, os.O_WRONLY | os.O_APPEND)

    def look_then_other_writer_begins(fd: int, *a: Any, **k: Any) -> bytes | None:
        tail = real(fd, *a, **k)
        os.write(other, b'{"type":"message","id":"theirs","par')
        return tail

    monkeypatch.setattr(file_store, "settled_tail", look_then_other_writer_begins)
    storage = FileSessionStorage()
    ours = b'{"type":"message","id":"ours"}\n'
    if how == "append":
        storage.append(str(f), ours)
    else:
        w = storage.open_writer(str(f))
        w.write_line(ours)
        w.close()
    monkeypatch.setattr(file_store, "settled_tail", real)
    os.write(other, b'entId":null}\n')  # the other writer finishes its line
    os.close(other)
    values = parse_jsonl_lenient(f.read_bytes()).values
    assert [v.get("id") for v in values if isinstance(v, dict)] == ["s", "ours"]
