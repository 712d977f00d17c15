"""allowedRoots hold at the point of use, not only when a session is opened.

The real daemon over stdio (RawLsp) with one allowed root; a file outside it holds a
session whose id, entry ids and text are markers. Whatever is swapped under an open
session (the file or a parent directory for a symlink, a hard link of the outside file
renamed over it), whatever a session directory links to, whatever a breadcrumb names,
and however fast a directory flips between real and link while files are opened: no
answer or notification carries a marker (nothing of the outside file was read) and the
outside file's bytes and directory stay as they were (nothing was written or created).
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sessiontree.core.index import IndexCache
from sessiontree.core.store import lock_file_path

from .helpers import chain, line, write_session
from .rawlsp import RawLsp

INSIDE_ID = "1nside0000000000"
OUTSIDE_ID = "0utside5ecret000"
OUTSIDE_TEXT = "OUTSIDE-SECRET-TEXT"
OUTSIDE_PREFIX = "0ut"  # every entry id of the outside session starts with it
MARKERS = (OUTSIDE_ID, OUTSIDE_TEXT, '"' + OUTSIDE_PREFIX)


def outside_entries(n: int = 6) -> list[dict[str, Any]]:
    entries = chain(n, seed=2, prefix=OUTSIDE_PREFIX)
    entries[0]["id"] = OUTSIDE_ID
    entries[0]["title"] = OUTSIDE_TEXT + " title"
    entries[1]["message"]["content"][0]["text"] = OUTSIDE_TEXT + " first message"
    return entries


def inside_entries(n: int = 6) -> list[dict[str, Any]]:
    entries = chain(n, seed=1, prefix="1n")
    entries[0]["id"] = INSIDE_ID
    entries[1]["message"]["content"][0]["text"] = "inside first message"
    return entries


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def tree_of(directory: Path) -> dict[str, str]:
    """Every name below `directory` with the hash of its bytes (links as their target)."""
    out: dict[str, str] = {}
    for p in sorted(directory.rglob("*")):
        rel = str(p.relative_to(directory))
        if p.is_symlink():
            out[rel] = "-> " + os.readlink(p)
        elif p.is_file():
            out[rel] = digest(p)
        else:
            out[rel] = "dir"
    return out


def leaked(obj: Any) -> list[str]:
    text = json.dumps(obj)
    return [m for m in MARKERS if m in text]


class World:
    """An allowed root holding the agent dir, an outside dir, and a daemon limited to the root."""

    def __init__(self, tmp_path: Path, *, roots: list[Path] | None = None, watch: bool = True) -> None:
        self.tmp = tmp_path
        self.root = tmp_path / "root"
        self.agent = self.root / "agent"
        self.sessions = self.agent / "sessions" / "--proj--"
        self.sessions.mkdir(parents=True)
        self.outside = tmp_path / "outside"
        self.outside.mkdir()
        self.secret = self.outside / "secret.jsonl"
        write_session(self.secret, outside_entries())
        self.cache = tmp_path / "cache"
        self.env = {
            "HOME": str(tmp_path / "home"),
            "XDG_CACHE_HOME": str(self.cache),
            "XDG_STATE_HOME": str(tmp_path / "xdg-state"),
            "PI_CODING_AGENT_DIR": str(self.agent),
            "SESSIONTREE_STATE_DIR": str(tmp_path / "state"),
        }
        self.daemon = RawLsp(env=self.env)
        res = self.daemon.initialize(
            {
                "agentDir": str(self.agent),
                "allowedRoots": [str(r) for r in (roots or [self.root])],
                "watch": watch,
            }
        )
        assert "result" in res, res
        self.answers: list[dict[str, Any]] = []

    def request(self, method: str, params: Any, timeout: float = 15.0) -> dict[str, Any]:
        res = self.daemon.request(method, params, timeout)
        self.answers.append(res)
        return res

    def notification(self, method: str, pred: Any, timeout: float = 10.0) -> dict[str, Any]:
        for n in self.daemon.notifications:
            if n.get("method") == method and pred(n.get("params") or {}):
                return n
        return self.daemon.wait_for(
            lambda m: m.get("method") == method and "id" not in m and pred(m.get("params") or {}), timeout
        )

    def inside_session(self, name: str = "s.jsonl", directory: Path | None = None) -> Path:
        path = (directory or self.sessions) / name
        path.parent.mkdir(parents=True, exist_ok=True)
        write_session(path, inside_entries())
        return path

    def assert_nothing_leaked(self) -> None:
        for res in self.answers:
            assert not leaked(res), (leaked(res), res)
        for note in self.daemon.notifications:
            assert not leaked(note), (leaked(note), note)

    def close(self) -> None:
        self.daemon.close()


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    w = World(tmp_path)
    try:
        yield w
    finally:
        w.close()


def _code(res: dict[str, Any]) -> int | None:
    err = res.get("error")
    return err.get("code") if err else None


def _user(text: str) -> dict[str, Any]:
    return {"type": "message", "message": {"role": "user", "content": [{"type": "text", "text": text}]}}


def _assistant(text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "message": {
            "role": "assistant",
            "content": [{"type": "text", "text": text}],
            "api": "anthropic-messages",
            "provider": "anthropic",
            "model": "claude",
            "stopReason": "stop",
        },
    }


def _external_append(path: Path, text: str) -> None:
    """Another writer appends through the path (as an agent with the file open would)."""
    entry = _user(text) | {"id": f"{OUTSIDE_PREFIX}{time.time_ns() % 10**8:08d}", "parentId": None}
    entry["timestamp"] = "2025-11-20T23:33:01.000Z"
    with open(path, "ab") as f:
        f.write(line(entry))


def _use_after_swap(w: World, handle: str, path: Path) -> None:
    """What a client does after the watcher looked: view, entries, context, an append."""
    note = w.notification("session/didReload", lambda p: p.get("session") == handle)
    secret_digest = digest(w.secret)
    for method in ("session/view", "session/entries", "session/context"):
        res = w.request(method, {"session": handle})
        assert not leaked(res), (method, res)
    res = w.request("session/append", {"session": handle, "entry": _user("must not reach the outside file")})
    assert digest(w.secret) == secret_digest, "the outside file was written"
    assert _code(res) == -32005, res
    assert res["error"]["data"]["path"] == str(path)
    w.assert_nothing_leaked()
    assert note["params"]["reason"] == "access denied", note


def _follow(w: World, path: Path) -> str:
    res = w.request("session/open", {"path": str(path)})
    assert res["result"]["header"]["id"] == INSIDE_ID
    handle: str = res["result"]["session"]
    # The watcher takes its first look right after the open; let it settle.
    time.sleep(0.5)
    return handle


# ------------------------------------------------------------------ swaps under an open session


def test_file_swapped_for_a_symlink_to_an_outside_file(world: World) -> None:
    path = world.inside_session()
    handle = _follow(world, path)
    moved = path.with_name("s.jsonl.moved")
    os.rename(path, moved)
    path.symlink_to(world.secret)
    _external_append(path, "an agent writes through the link")
    _use_after_swap(world, handle, path)
    # Once the path names the inside file again, the session follows it and writes again.
    path.unlink()
    os.rename(moved, path)
    world.notification(
        "session/didReload", lambda p: p.get("session") == handle and p.get("reason") != "access denied"
    )
    res = world.request("session/append", {"session": handle, "entry": _user("back inside")})
    assert "result" in res, res
    assert res["result"]["id"] in path.read_text()


def test_parent_directory_swapped_for_a_symlink_to_an_outside_directory(world: World) -> None:
    path = world.inside_session()
    handle = _follow(world, path)
    decoy = world.outside / "decoy"
    decoy.mkdir()
    os.replace(world.secret, decoy / path.name)
    world.secret = decoy / path.name
    os.rename(world.sessions, world.sessions.with_name("--proj--.moved"))
    world.sessions.symlink_to(decoy, target_is_directory=True)
    _external_append(path, "an agent writes through the linked directory")
    _use_after_swap(world, handle, path)


def test_hard_link_of_an_outside_file_renamed_over_the_session(world: World) -> None:
    path = world.inside_session()
    handle = _follow(world, path)
    staged = path.with_name(".staged")
    try:
        os.link(world.secret, staged)
    except OSError:
        pytest.skip("hard links between these directories are not possible here")
    os.rename(staged, path)
    _external_append(world.secret, "the outside writer goes on")
    _use_after_swap(world, handle, path)
    res = world.request("session/view", {"session": handle})
    assert _code(res) == -32005 and "hard link" in res["error"]["message"], res


def test_session_file_moved_outside_with_a_link_left_in_its_place(world: World) -> None:
    """The same file, now outside: a kept-open append descriptor must not follow it there."""
    path = world.inside_session()
    handle = _follow(world, path)
    res = world.request("session/append", {"session": handle, "entry": _user("written inside")})
    assert "result" in res, res  # the append writer now holds the file open
    moved = world.outside / "moved.jsonl"
    os.rename(path, moved)
    path.symlink_to(moved)  # same inode, size and mtime as the daemon last saw
    before = digest(moved)
    res = world.request("session/append", {"session": handle, "entry": _user("must stay inside")})
    assert "error" in res and "Access denied" in res["error"]["message"], res
    assert digest(moved) == before, "the append followed the file out of the roots"
    res = world.request("session/view", {"session": handle})
    assert _code(res) == -32005, res


# ------------------------------------------------------------------ a directory flipping during opens


def _exchanger() -> Any:
    """``renameat2(RENAME_EXCHANGE)``: swap two names atomically (None when unavailable)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        return None
    at_fdcwd, rename_exchange = -100, 2

    def exchange(a: Path, b: Path) -> None:
        if fn(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) != 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err), str(a))

    return exchange


def test_toctou_loop_every_successful_open_is_the_inside_file(world: World, capsys: Any) -> None:
    exchange = _exchanger()
    if exchange is None:
        pytest.skip("renameat2(RENAME_EXCHANGE) is not available")
    flip = world.agent / "sessions" / "--flip--"
    path = world.inside_session("f.jsonl", flip)
    decoy = world.outside / "flip"
    decoy.mkdir()
    write_session(decoy / "f.jsonl", outside_entries())
    secret_digest = digest(decoy / "f.jsonl")
    # The path always exists, as the real directory or as a link to the outside one: a
    # missing path would be a new session, not a read of either file.
    link = flip.with_name("--flip--.link")
    link.symlink_to(decoy, target_is_directory=True)
    stop = threading.Event()
    flips = [0]

    def flipper() -> None:
        while not stop.is_set():
            exchange(flip, link)
            flips[0] += 1
            time.sleep(0.0002)

    thread = threading.Thread(target=flipper, daemon=True)
    tried = held = refused = 0
    outside_seen: list[Any] = []
    thread.start()
    deadline = time.monotonic() + 5.0
    try:
        while time.monotonic() < deadline:
            tried += 1
            res = world.daemon.request("session/open", {"path": str(path)}, timeout=15)
            if "result" not in res:
                refused += 1
                assert not leaked(res), res
                continue
            header = res["result"]["header"]
            if header.get("id") != INSIDE_ID or leaked(res):
                outside_seen.append(res["result"])
            else:
                held += 1
            world.daemon.request("session/close", {"session": res["result"]["session"]}, timeout=15)
    finally:
        stop.set()
        thread.join(5)
    with capsys.disabled():
        print(
            f"\n[toctou] opens tried {tried}, inside {held}, refused {refused}, outside {len(outside_seen)};"
            f" {flips[0]} flips"
        )
    assert not outside_seen, f"{len(outside_seen)} of {tried} opens read the outside file: {outside_seen[:1]}"
    assert held > 0, "no open succeeded: the loop tested nothing"
    assert digest(decoy / "f.jsonl") == secret_digest
    world.assert_nothing_leaked()


# ------------------------------------------------------------------ listings


def _cwd_dir(w: World) -> tuple[str, Path]:
    """A project dir and the sessions dir the daemon uses for it (nothing is written)."""
    cwd = str(w.root / "proj")
    res = w.request("session/create", {"cwd": cwd})
    sdir = Path(res["result"]["path"]).parent
    w.request("session/close", {"session": res["result"]["session"]})
    return cwd, sdir


def test_list_and_recent_never_read_outside_files(world: World) -> None:
    cwd, sdir = _cwd_dir(world)
    inside = world.inside_session("inside.jsonl", sdir)
    (sdir / "evil.jsonl").symlink_to(world.secret)
    # a whole directory of the sessions root that links outside
    (world.agent / "sessions" / "--evil-dir--").symlink_to(world.outside, target_is_directory=True)
    # an inside file hard-linked from outside
    try:
        os.link(world.secret, sdir / "hard.jsonl")
    except OSError:
        pass
    for params in ({"cwd": cwd}, {"all": True}):
        res = world.request("session/list", params)
        paths = [s["path"] for s in res["result"]["sessions"]]
        assert str(inside) in paths, res
        assert not any(p.endswith(("evil.jsonl", "hard.jsonl")) or "--evil-dir--" in p for p in paths), res
        for query in (OUTSIDE_TEXT, OUTSIDE_ID, "first message"):
            found = world.request("session/list", {**params, "query": query})["result"]["sessions"]
            assert all(s["path"] == str(inside) for s in found), (query, found)
    for params in ({"cwd": cwd}, {"cwd": cwd, "sessionDir": str(sdir)}):
        res = world.request("session/recent", params)
        assert [s["path"] for s in res["result"]["sessions"]] == [str(inside)], res
    world.assert_nothing_leaked()


def test_list_all_refused_when_the_sessions_root_is_not_allowed(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    w = World(tmp_path, roots=[workspace], watch=False)
    try:
        write_session(w.sessions / "agent.jsonl", outside_entries())
        res = w.request("session/list", {"all": True})
        assert _code(res) == -32005, res
        data = res["error"]["data"]
        assert data["path"] == str(w.agent / "sessions") and "outside" in data["reason"], data
        w.assert_nothing_leaked()
    finally:
        w.close()


# ------------------------------------------------------------------ continueRecent and create


def test_continue_recent_with_a_breadcrumb_naming_an_outside_file(world: World, monkeypatch: Any) -> None:
    cwd, sdir = _cwd_dir(world)
    inside = world.inside_session("inside.jsonl", sdir)
    crumbs = world.agent / "terminal-sessions"
    crumbs.mkdir()
    empty = world.outside / "empty.jsonl"
    empty.touch()
    big = world.outside / "big.jsonl"
    entries = outside_entries(6)
    filler = [_user("x" * 2000) | {"id": f"{OUTSIDE_PREFIX}{i:08d}", "parentId": None} for i in range(700)]
    for e in filler:
        e["timestamp"] = "2025-11-20T23:33:01.000Z"
    write_session(big, entries + filler)  # over 1 MB: a load would leave an index cache
    before = tree_of(world.outside)
    monkeypatch.setenv("XDG_CACHE_HOME", str(world.cache))
    for target in (world.secret, empty, big):
        (crumbs / "tmux-%9").write_text(f"{cwd}\n{target}\n")
        res = world.request("session/continueRecent", {"cwd": cwd, "terminalId": "tmux-%9"})
        assert _code(res) == -32005, res
        assert res["error"]["data"]["path"] == str(target)
        assert not os.path.exists(lock_file_path(str(target))), "the outside file was locked"
        assert not os.path.exists(
            IndexCache(str(world.cache / "sessiontree" / "index")).file_for(str(target))
        )
    assert tree_of(world.outside) == before, "something outside was written or created"
    # a breadcrumb naming a file inside still wins
    (crumbs / "tmux-%9").write_text(f"{cwd}\n{inside}\n")
    res = world.request("session/continueRecent", {"cwd": cwd, "terminalId": "tmux-%9"})
    assert res["result"]["path"] == str(inside), res
    world.assert_nothing_leaked()


def test_refused_create_creates_nothing(world: World) -> None:
    before = tree_of(world.tmp / "outside")
    res = world.request("session/create", {"cwd": str(world.root), "sessionDir": str(world.outside / "new")})
    assert _code(res) == -32005, res
    link = world.root / "link"
    link.symlink_to(world.outside, target_is_directory=True)
    res = world.request("session/create", {"cwd": str(world.root), "sessionDir": str(link / "new")})
    assert _code(res) == -32005, res
    assert tree_of(world.outside) == before
    # Allowed at create time, then the directory above becomes a link before the first write.
    proj = world.root / "proj2"
    proj.mkdir()
    res = world.request("session/create", {"cwd": str(world.root), "sessionDir": str(proj / "new")})
    handle = res["result"]["session"]
    assert not (proj / "new").exists(), "create wrote before the first assistant message"
    os.rename(proj, world.root / "proj2.moved")
    (world.outside / "proj2").mkdir()
    before = tree_of(world.outside)
    proj.symlink_to(world.outside / "proj2", target_is_directory=True)
    world.request("session/append", {"session": handle, "entry": _user("hello")})
    res = world.request("session/append", {"session": handle, "entry": _assistant("hi")})
    assert "error" in res, res
    assert "Access denied" in res["error"]["message"], res
    assert tree_of(world.outside) == before, "the first write created something outside"
