"""Resources: closed sessions are freed, blob reads are bounded, summarizer output is capped.

- 1,000 open/view/close cycles of a 1 MB session through the real daemon keep its RSS
  and open descriptors flat (a cache that kept every closed manager grew about 460 MB
  per 100 cycles).
- A FIFO, a link to a device, a device node or a file over the size cap in the blob
  directory reads as a missing blob: the request answers at once, memory stays put.
- A summarizer that prints without end, or whose children keep running, is stopped at
  the output cap or the timeout, with -32006, and nothing of it survives.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from sessiontree.core.store.blobs import MAX_BLOB_BYTES, BlobStore

from .helpers import header, message, write_session
from .rawlsp import RawLsp

GEN_CORPUS = Path(__file__).resolve().parents[2] / "benchmarks" / "gen_corpus.py"


def _rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def _fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def _daemon(tmp_path: Path, **options: Any) -> RawLsp:
    agent = tmp_path / "agent"
    (agent / "sessions").mkdir(parents=True, exist_ok=True)
    d = RawLsp(env={"HOME": str(tmp_path), "PI_CODING_AGENT_DIR": str(agent)})
    opts = {
        "agentDir": str(agent),
        "allowedRoots": [str(tmp_path)],
        "stateDir": str(tmp_path / "state"),
        "watch": False,
        **options,
    }
    res = d.initialize(opts)
    assert "result" in res, res
    return d


def _ok(d: RawLsp, method: str, params: Any, timeout: float = 10.0) -> Any:
    res = d.request(method, params, timeout=timeout)
    assert "result" in res, res
    return res["result"]


# ------------------------------------------------------------------ closed sessions


CYCLES = 1000
WARMUP = 100
MAX_GROWTH_MB = 30.0


def test_sessions_are_freed_on_close(tmp_path: Path) -> None:
    path = tmp_path / "agent" / "sessions" / "--p--" / "big.jsonl"
    path.parent.mkdir(parents=True)
    subprocess.run(
        [sys.executable, str(GEN_CORPUS), str(path), "1000", "--seed", "7"], check=True, capture_output=True
    )
    assert path.stat().st_size > 1_000_000
    d = _daemon(tmp_path)
    try:
        pid = d.proc.pid
        base_rss = base_fds = 0.0
        samples: list[tuple[int, float, int]] = []
        t0 = time.monotonic()
        for i in range(1, CYCLES + 1):
            h = _ok(d, "session/open", {"path": str(path)})["session"]
            page = _ok(d, "session/view", {"session": h, "limit": 50})
            assert page["rows"]
            _ok(d, "session/close", {"session": h})
            if i == WARMUP:
                base_rss, base_fds = _rss_mb(pid), _fds(pid)
            if i > WARMUP and i % 100 == 0:
                rss, fds = _rss_mb(pid), _fds(pid)
                samples.append((i, rss, fds))
                # stop early when it clearly leaks (the old cache grew ~4.6 MB a cycle)
                assert rss - base_rss < MAX_GROWTH_MB, (
                    f"RSS grew {rss - base_rss:.1f} MB between cycle {WARMUP} and {i}: {samples}"
                )
                assert fds <= base_fds + 2, f"open descriptors grew from {base_fds} to {fds}: {samples}"
        elapsed = time.monotonic() - t0
        end_rss, end_fds = samples[-1][1], samples[-1][2]
        print(
            f"\n{CYCLES} open/view/close cycles of a {path.stat().st_size / 1e6:.1f} MB session in "
            f"{elapsed:.1f} s: RSS {base_rss:.1f} MB after {WARMUP} -> {end_rss:.1f} MB "
            f"(+{end_rss - base_rss:.1f}), fds {base_fds:.0f} -> {end_fds}"
        )
    finally:
        d.close()


# ------------------------------------------------------------------ blob reads


def _image_session(path: Path, refs: dict[str, str]) -> None:
    entries: list[dict[str, Any]] = [header()]
    parent = None
    for n, (eid, ref) in enumerate(refs.items()):
        e = message(eid, parent, "user", f"image {eid}", n)
        e["message"]["content"].append({"type": "image", "data": ref, "mimeType": "image/png"})
        entries.append(e)
        parent = eid
    write_session(path, entries)


def _mknod_char(path: Path) -> bool:
    try:
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 5))  # a private /dev/zero
    except OSError:
        return False
    return True


def test_blob_reads_only_regular_files_of_bounded_size(tmp_path: Path) -> None:
    blobs = tmp_path / "agent" / "blobs"
    blobs.mkdir(parents=True)
    good = b"\x89PNG\r\n\x1a\n" + bytes(range(200))
    good_ref = BlobStore(str(blobs)).put(good).ref
    names = {k: hashlib.sha256(k.encode()).hexdigest() for k in ("fifo", "zero", "dev", "huge", "dir")}
    os.mkfifo(blobs / names["fifo"])
    os.symlink("/dev/zero", blobs / names["zero"])
    has_dev = _mknod_char(blobs / names["dev"])
    with open(blobs / names["huge"], "wb") as f:
        f.truncate(MAX_BLOB_BYTES + 4096)  # sparse: costs no disk
    (blobs / names["dir"]).mkdir()
    refs = {"e0000001": good_ref} | {
        f"e{i + 2:07d}": "blob:sha256:" + h for i, h in enumerate(names.values())
    }
    sess = tmp_path / "agent" / "sessions" / "--p--" / "img.jsonl"
    sess.parent.mkdir(parents=True)
    _image_session(sess, refs)
    before = sess.read_bytes()
    d = _daemon(tmp_path)
    try:
        pid = d.proc.pid
        rss0 = _rss_mb(pid)
        h = _ok(d, "session/open", {"path": str(sess)})["session"]
        slowest = 0.0
        for eid, ref in refs.items():
            t0 = time.monotonic()
            res = _ok(d, "session/entry", {"session": h, "id": eid, "resolveBlobs": True}, timeout=5)
            took = time.monotonic() - t0
            block = res["entry"]["message"]["content"][1]
            if ref == good_ref:
                assert block["data"] == base64.b64encode(good).decode()
            else:
                assert block["data"] == ref, f"{ref} should read as missing"
            assert took < 3, f"{eid} took {took:.1f} s"
            slowest = max(slowest, took)
        # the view materializes every entry too (blob references resolved on read)
        assert len(_ok(d, "session/view", {"session": h, "filter": "all"}, timeout=5)["rows"]) == len(refs)
        growth = _rss_mb(pid) - rss0
        print(f"\nblobs: {len(refs)} entries resolved, slowest {slowest * 1000:.0f} ms, RSS +{growth:.1f} MB")
        assert growth < 40, f"RSS grew {growth:.0f} MB reading blobs"
        assert _ok(d, "session/labels", {"session": h}) == {"labels": []}
    finally:
        d.close()
    assert sess.read_bytes() == before
    assert stat.S_ISFIFO(os.lstat(blobs / names["fifo"]).st_mode)
    assert os.path.islink(blobs / names["zero"])
    if has_dev:
        assert stat.S_ISCHR(os.lstat(blobs / names["dev"]).st_mode)


def _within(seconds: float, fn: Any, *args: Any) -> Any:
    """`fn(*args)` in a helper thread; fails the test when it has not returned in time (a
    read blocked on a FIFO cannot be interrupted, the thread is left behind as a daemon)."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = fn(*args)
        except BaseException as exc:
            box["error"] = exc

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), f"{getattr(fn, '__name__', fn)} blocked for more than {seconds} s"
    if "error" in box:
        raise box["error"]
    return box.get("value")


def test_blob_store_get_and_put_skip_what_is_not_a_regular_file(tmp_path: Path) -> None:
    store = BlobStore(str(tmp_path))
    data = b"image bytes"
    digest = hashlib.sha256(data).hexdigest()
    os.mkfifo(tmp_path / digest)
    assert _within(3, store.get, digest) is None
    put = _within(3, store.put, data)  # a FIFO in the way is replaced, never read
    assert store.get(put.hash) == data
    empty = hashlib.sha256(b"").hexdigest()
    os.mkfifo(tmp_path / empty)
    assert _within(3, store.put, b"").hash == empty  # size 0 == 0 used to read the FIFO
    big = hashlib.sha256(b"big").hexdigest()
    with open(tmp_path / big, "wb") as f:
        f.truncate(MAX_BLOB_BYTES + 1)
    assert _within(3, store.get, big) is None  # over the cap: never read


# ------------------------------------------------------------------ summarizer


def _nav_session(tmp_path: Path) -> tuple[Path, list[str]]:
    path = tmp_path / "agent" / "sessions" / "--p--" / "nav.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    entries: list[dict[str, Any]] = [header()]
    ids = [f"n{i:07d}" for i in range(12)]
    parent = None
    for i, eid in enumerate(ids):
        entries.append(message(eid, parent, "user" if i % 2 == 0 else "assistant", f"text {i}", i))
        parent = eid
    write_session(path, entries)
    return path, ids


# Prints 1 MiB every 10 ms for ever: 200 MB within a 2 s timeout if nobody stops reading.
ENDLESS = (
    "import sys, time\nb = b'x' * (1 << 20)\nwhile True:\n    sys.stdout.buffer.write(b); time.sleep(0.01)\n"
)


def test_summarizer_output_is_capped(tmp_path: Path) -> None:
    path, ids = _nav_session(tmp_path)
    before = path.read_bytes()
    d = _daemon(tmp_path, summarizerCommand=[sys.executable, "-c", ENDLESS], summarizerTimeout=2)
    try:
        pid = d.proc.pid
        rss0 = _rss_mb(pid)
        h = _ok(d, "session/open", {"path": str(path)})["session"]
        t0 = time.monotonic()
        res = d.request("session/navigate", {"session": h, "targetId": ids[3], "summarize": True}, timeout=30)
        took = time.monotonic() - t0
        assert res.get("error", {}).get("code") == -32006, res
        assert "more than 1048576 bytes" in res["error"]["message"], res
        assert took < 1.8, f"answered after {took:.1f} s, not when the output passed the cap"
        growth = _rss_mb(pid) - rss0
        print(f"\nendless summarizer: -32006 after {took * 1000:.0f} ms, RSS +{growth:.1f} MB")
        assert growth < 30, f"RSS grew {growth:.0f} MB"
        assert _ok(d, "session/view", {"session": h, "limit": 1})["leafId"] == ids[-1]
    finally:
        d.close()
    assert path.read_bytes() == before


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_summarizer_timeout_stops_its_children_too(tmp_path: Path) -> None:
    path, ids = _nav_session(tmp_path)
    pidfile = tmp_path / "child.pid"
    # The child keeps stdout open and outlives the shell: only killing the group ends it.
    script = f"sleep 60 & echo $! > {pidfile}; echo partial; wait"
    d = _daemon(tmp_path, summarizerCommand=script, summarizerTimeout=1)
    try:
        h = _ok(d, "session/open", {"path": str(path)})["session"]
        t0 = time.monotonic()
        res = d.request("session/navigate", {"session": h, "targetId": ids[3], "summarize": True}, timeout=30)
        took = time.monotonic() - t0
        assert res.get("error", {}).get("code") == -32006, res
        assert "did not finish within 1 s" in res["error"]["message"], res
        assert took < 8, took
        child = int(pidfile.read_text())
        deadline = time.monotonic() + 5
        while _alive(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(child), "the summarizer's child survived the timeout"
    finally:
        d.close()


def test_summarizer_gets_valid_json_for_lone_surrogates(tmp_path: Path) -> None:
    path = tmp_path / "agent" / "sessions" / "--p--" / "nav.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(header())]
    ids = [f"s{i:07d}" for i in range(6)]
    parent = None
    for i, eid in enumerate(ids):
        e = message(eid, parent, "user" if i % 2 == 0 else "assistant", f"cut \ud83d here {i}", i)
        lines.append(json.dumps(e))  # ensure_ascii: the lone half is written as \ud83d
        parent = eid
    path.write_text("\n".join(lines) + "\n")
    echo = (
        "import json, sys; d = json.load(sys.stdin); print(d['entries'][0]['message']['content'][0]['text'])"
    )
    d = _daemon(tmp_path, summarizerCommand=[sys.executable, "-c", echo])
    try:
        h = _ok(d, "session/open", {"path": str(path)})["session"]
        res = _ok(d, "session/navigate", {"session": h, "targetId": ids[1], "summarize": True})
        assert "cut \ufffd here" in res["summaryEntry"]["text"], res
    finally:
        d.close()
