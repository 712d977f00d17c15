"""Security: non-regular files, blob references as paths, blob verification, allowedRoots
(symlinks, `..`, hard links, FIFOs, devices, directories), request size limits.

Device nodes are made with mknod inside the test's directory (root only), never on the
real /dev entries: a bug that replaces the opened path would otherwise damage the machine.
"""

from __future__ import annotations

import base64
import hashlib
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from sessiontree.core import SessionManager
from sessiontree.core.errors import BlobError, InvalidSessionFileError
from sessiontree.core.format.blobs import parse_blob_ref
from sessiontree.core.store.blobs import BlobStore

from .helpers import chain, header, message, write_session
from .rawlsp import RawLsp


def _mknod_char(path: Path) -> bool:
    try:
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # a private copy of /dev/null
    except (PermissionError, OSError):
        return False
    return True


def _open_in_child(path: Path) -> subprocess.CompletedProcess[str]:
    """SessionManager.open in a child with a timeout, so that a blocking open fails the test."""
    code = (
        "import sys\n"
        "from sessiontree.core import SessionManager\n"
        "from sessiontree.core.errors import SessionTreeError\n"
        "try:\n"
        "    SessionManager.open(sys.argv[1])\n"
        "    print('OPENED')\n"
        "except SessionTreeError as exc:\n"
        "    print('REFUSED', type(exc).__name__, exc)\n"
    )
    return subprocess.run(
        [sys.executable, "-c", code, str(path)],
        capture_output=True,
        text=True,
        timeout=20,
        env=dict(os.environ),
    )


# ------------------------------------------------------------------ non-regular files


def test_library_refuses_a_fifo_without_blocking_or_replacing_it(tmp_path: Path) -> None:
    fifo = tmp_path / "s.jsonl"
    os.mkfifo(fifo)
    r = _open_in_child(fifo)
    assert "REFUSED InvalidSessionFileError" in r.stdout, r.stdout + r.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode), "the FIFO was replaced by a file"


def test_library_refuses_a_device_without_replacing_it(tmp_path: Path) -> None:
    dev = tmp_path / "null.jsonl"
    if not _mknod_char(dev):
        pytest.skip("mknod needs root")
    r = _open_in_child(dev)
    assert "REFUSED InvalidSessionFileError" in r.stdout, r.stdout + r.stderr
    assert stat.S_ISCHR(os.lstat(dev).st_mode), "the device node was replaced by a file"


def test_library_refuses_a_directory(tmp_path: Path) -> None:
    d = tmp_path / "dir.jsonl"
    d.mkdir()
    with pytest.raises(InvalidSessionFileError):
        SessionManager.open(str(d))
    assert d.is_dir()


# ------------------------------------------------------------------ blobs


def test_blob_refs_are_never_paths(tmp_path: Path) -> None:
    bad = [
        "blob:sha256:../../etc/passwd",
        "blob:sha256:" + "A" * 64,
        "blob:sha256:" + "a" * 63,
        "blob:sha256:" + "a" * 65,
        "blob:sha256:" + "a" * 63 + "/",
        "blob:sha256:/" + "a" * 63,
        "blob:sha256:" + "a" * 64 + "\n",
        "blob:sha1:" + "a" * 64,
    ]
    for ref in bad:
        assert parse_blob_ref(ref) is None, ref
    assert parse_blob_ref("blob:sha256:" + "a" * 64) == "a" * 64
    store = BlobStore(str(tmp_path / "blobs"))
    with pytest.raises(BlobError):
        store.path_for("../../etc/passwd")


def test_traversal_ref_in_a_session_is_left_alone(tmp_path: Path) -> None:
    agent = tmp_path / "agent"
    sessions = agent / "sessions" / "-proj"
    sessions.mkdir(parents=True)
    secret = tmp_path / "secret"
    secret.write_bytes(b"TOP SECRET")
    ref = "blob:sha256:../../../secret"
    e = message("a", None, "user", "look")
    e["message"]["content"].append({"type": "image", "mimeType": "image/png", "data": ref})
    f = sessions / "s.jsonl"
    write_session(f, [header(), e])
    os.environ["PI_CODING_AGENT_DIR"] = str(agent)
    try:
        sm = SessionManager.open(str(f))
    finally:
        del os.environ["PI_CODING_AGENT_DIR"]
    got = sm.get_entry("a")
    assert got is not None
    assert got["message"]["content"][1]["data"] == ref
    assert "TOP SECRET" not in repr(sm.get_entries())
    assert base64.b64encode(b"TOP SECRET").decode() not in repr(sm.get_entries())


def test_corrupted_blob_is_never_served(tmp_path: Path) -> None:
    store = BlobStore(str(tmp_path / "blobs"))
    put = store.put(b"real image bytes")
    assert store.get(put.hash) == b"real image bytes"
    Path(put.path).write_bytes(b"tampered")
    with pytest.raises(BlobError):
        store.get(put.hash)
    # a session that references it keeps the reference instead of the tampered bytes
    agent = tmp_path / "agent"
    sessions = agent / "sessions" / "-p"
    sessions.mkdir(parents=True)
    (agent / "blobs").mkdir()
    (agent / "blobs" / put.hash).write_bytes(b"tampered")
    e = message("a", None, "user", "img")
    e["message"]["content"].append({"type": "image", "mimeType": "image/png", "data": put.ref})
    f = sessions / "s.jsonl"
    write_session(f, [header(), e])
    os.environ["PI_CODING_AGENT_DIR"] = str(agent)
    try:
        sm = SessionManager.open(str(f))
    finally:
        del os.environ["PI_CODING_AGENT_DIR"]
    got = sm.get_entry("a")
    assert got is not None and got["message"]["content"][1]["data"] == put.ref
    assert hashlib.sha256(b"tampered").hexdigest() != put.hash


# ------------------------------------------------------------------ the daemon's allowedRoots


@pytest.fixture
def world(tmp_path: Path) -> Any:
    root = tmp_path / "root"
    outside = tmp_path / "outside"
    agent = root / "agent"
    (root / "proj").mkdir(parents=True)
    outside.mkdir()
    agent.mkdir()
    inside_file = root / "proj" / "ok.jsonl"
    write_session(inside_file, chain(4, seed=1))
    secret = outside / "secret.jsonl"
    write_session(secret, chain(4, seed=2))
    env = {
        "HOME": str(tmp_path),
        "PI_CODING_AGENT_DIR": str(agent),
        "SESSIONTREE_STATE_DIR": str(tmp_path / "st"),
    }
    d = RawLsp(env=env)
    try:
        res = d.initialize({"agentDir": str(agent), "allowedRoots": [str(root)], "watch": False})
        assert "result" in res, res
        yield d, root, outside, inside_file, secret
    finally:
        d.close()


def _code(res: dict[str, Any]) -> int | None:
    err = res.get("error")
    return err.get("code") if err else None


def test_allowed_roots(world: Any, tmp_path: Path) -> None:
    d, root, outside, inside_file, secret = world
    secret_bytes = secret.read_bytes()
    assert "result" in d.request("session/open", {"path": str(inside_file)})

    # outside, directly and through `..`
    assert _code(d.request("session/open", {"path": str(secret)})) == -32005
    dotdot = f"{root}/proj/../../outside/secret.jsonl"
    res = d.request("session/open", {"path": dotdot})
    assert _code(res) == -32005 and res["error"]["data"]["path"] == dotdot
    # relative paths are refused
    assert _code(d.request("session/open", {"path": "proj/ok.jsonl"})) == -32005

    # a symlink inside the root that points outside
    link = root / "proj" / "link.jsonl"
    link.symlink_to(secret)
    assert _code(d.request("session/open", {"path": str(link)})) == -32005
    # a symlinked directory inside the root that points outside
    (root / "escape").symlink_to(outside, target_is_directory=True)
    assert _code(d.request("session/open", {"path": str(root / "escape" / "secret.jsonl")})) == -32005
    # a symlink inside the root to a file inside the root is fine
    good_link = root / "proj" / "good-link.jsonl"
    good_link.symlink_to(inside_file)
    assert "result" in d.request("session/open", {"path": str(good_link)})

    # creating or forking into a directory outside is refused too
    assert _code(d.request("session/create", {"cwd": str(outside), "sessionDir": str(outside)})) == -32005
    res = d.request("session/forkFrom", {"sourcePath": str(secret), "cwd": str(root)})
    assert _code(res) == -32005

    # FIFOs, devices and directories inside the root: refused at once, never blocking
    fifo = root / "proj" / "fifo.jsonl"
    os.mkfifo(fifo)
    assert _code(d.request("session/open", {"path": str(fifo)}, timeout=5)) == -32005
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    dev = root / "proj" / "dev.jsonl"
    if _mknod_char(dev):
        assert _code(d.request("session/open", {"path": str(dev)}, timeout=5)) == -32005
        assert stat.S_ISCHR(os.lstat(dev).st_mode)
    assert _code(d.request("session/open", {"path": str(root / "proj")})) == -32005
    # doctor goes through the same checks
    assert _code(d.request("session/doctor", {"path": str(secret)})) == -32005
    assert _code(d.request("session/doctor", {"path": str(fifo)}, timeout=5)) == -32005

    # nothing outside was touched
    assert secret.read_bytes() == secret_bytes
    assert sorted(p.name for p in outside.iterdir()) == ["secret.jsonl"]


def test_hard_link_to_a_file_outside_is_refused(world: Any) -> None:
    d, root, _outside, inside_file, secret = world
    hard = root / "proj" / "hard.jsonl"
    try:
        os.link(secret, hard)
    except OSError:
        pytest.skip("hard links across these directories are not possible here")
    before = secret.read_bytes()
    res = d.request("session/open", {"path": str(hard)})
    assert _code(res) == -32005, res
    assert "link" in res["error"]["message"]
    # appends through such a link would change the file outside: nothing was written
    assert secret.read_bytes() == before
    # a file with a single name opens normally
    assert "result" in d.request("session/open", {"path": str(inside_file)})


def test_request_size_limit_is_configurable(tmp_path: Path) -> None:
    env = {
        "HOME": str(tmp_path),
        "PI_CODING_AGENT_DIR": str(tmp_path),
        "SESSIONTREE_STATE_DIR": str(tmp_path / "st"),
    }
    d = RawLsp(env=env)
    try:
        assert "result" in d.initialize(
            {"allowedRoots": [str(tmp_path)], "watch": False, "maxRequestBytes": 4096}
        )
        res = d.request("session/list", {"cwd": str(tmp_path), "query": "q" * 5000})
        assert _code(res) == -32600
        assert "4096" in res["error"]["message"]
        assert "result" in d.request("session/list", {"cwd": str(tmp_path), "query": "q" * 100})
    finally:
        d.close()
