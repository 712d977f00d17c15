"""`session/preview` over stdio with a real daemon: the rows around a session's leaf from the
end of its file, beside `session/open` (lsp/features/preview.py, docs/preview.md)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from e2e_helpers import generate
from sessiontree.client import Client, RpcError
from sessiontree.core.index.cache import IndexCache

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.timeout(120)


def _daemon(tmp_path: Path, agent: Path, caches: bool = True) -> Client:
    env = {
        "PI_CODING_AGENT_DIR": str(agent),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        # a small first window, so that these few-MB sessions read on as a big one does
        "SESSIONTREE_PREVIEW_BYTES": str(64 << 10),
        "PYTHONPATH": os.pathsep.join([str(REPO / "server"), str(REPO / "protocol")]),
    }
    if not caches:
        env["SESSIONTREE_NO_INDEX_CACHE"] = "1"
    init = {
        "agentDir": str(agent),
        "stateDir": str(tmp_path / "state"),
        "allowedRoots": [str(agent)],
        "watch": False,
        "preindex": 0,
    }
    return Client.spawn(init_options=init, env=env)


def _files(root: Path) -> dict[str, tuple[int, int, bytes]]:
    return {
        str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns, p.read_bytes())
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _session(tmp_path: Path) -> tuple[Path, Path]:
    agent = tmp_path / "agent"
    d = agent / "sessions" / "--p--"
    d.mkdir(parents=True)
    return agent, generate(
        d / "2026-01-01T00-00-00-000Z_s.jsonl", 4000, "--seed", "21", "--branch-every", "50"
    )


def _key(row: dict[str, Any]) -> tuple[Any, ...]:
    return (
        row["id"],
        row["parentId"],
        row["type"],
        row.get("role"),
        row["text"],
        row.get("label"),
        row["onActivePath"],
        row["isLeaf"],
    )


def _aligned(preview: dict[str, Any], view: dict[str, Any]) -> None:
    """The preview's rows are the whole view's around its selected row."""
    assert preview["rows"] and preview["selectedIndex"] is not None
    shift = view["selectedIndex"] - preview["selectedIndex"]
    assert shift >= 0
    got = [_key(r) for r in preview["rows"]]
    assert got == [_key(r) for r in view["rows"][shift : shift + len(got)]]
    assert preview["leafId"] == view["leafId"]


def test_the_rows_around_the_leaf_before_the_open_and_nothing_written(tmp_path: Path) -> None:
    agent, path = _session(tmp_path)
    before = _files(agent)
    cache = tmp_path / "cache"
    with _daemon(tmp_path, agent) as c:
        first = c.request("session/preview", {"path": str(path), "limit": 120})
        assert _files(agent) == before, "a preview writes nothing in the agent's directory"
        assert not cache.exists() or not any(p.is_file() for p in cache.rglob("*")), (
            "nor in the cache directory, which an open would write"
        )
        assert first["above"] is True and 0 < first["bytes"] < path.stat().st_size
        assert len(first["rows"]) == 120 and first["selectedIndex"] >= 60
        assert first["rows"][first["selectedIndex"]]["isLeaf"]
    # drawn as the whole view is, in every filter (the session closed after each: a session
    # open in the daemon, or with an index cache, is not drawn, its open answers at once)
    with _daemon(tmp_path, agent, caches=False) as c:
        for filter in ("default", "no-tools", "user-only", "all"):
            found = c.request("session/preview", {"path": str(path), "filter": filter, "limit": 80})
            handle = c.request("session/open", {"path": str(path)})["session"]
            view = c.request("session/view", {"session": handle, "filter": filter})
            _aligned(found, view)
            c.request("session/close", {"session": handle})
    assert _files(agent) == before


def test_the_leaf_the_open_restores(tmp_path: Path) -> None:
    agent, path = _session(tmp_path)
    cache = IndexCache(str(tmp_path / "cache" / "sessiontree" / "index"))
    with _daemon(tmp_path, agent) as c:
        handle = c.request("session/open", {"path": str(path)})["session"]
        view = c.request("session/view", {"session": handle})
        # an entry among the last rows that is not on the leaf's path
        target = next(
            r["id"] for r in reversed(view["rows"]) if not r["onActivePath"] and r.get("role") == "user"
        )
        c.request("session/branch", {"session": handle, "entryId": target})
        # open here: the open answers at once, nothing is read for a preview
        here = c.request("session/preview", {"path": str(path)})
        assert here == {
            "rows": [],
            "selectedIndex": None,
            "leafId": None,
            "above": False,
            "bytes": 0,
            "indexed": True,
        }
    # the daemon kept the session's index cache: the next open reads it, not the file
    assert cache.written_since_change(str(path), path.stat())
    with _daemon(tmp_path, agent) as c:
        assert c.request("session/preview", {"path": str(path)})["indexed"] is True
    for p in Path(cache.dir).iterdir():
        p.unlink()
    with _daemon(tmp_path, agent) as c:
        found = c.request("session/preview", {"path": str(path)})
        assert found["leafId"] == target
        handle = c.request("session/open", {"path": str(path)})["session"]
        view = c.request("session/view", {"session": handle})
        assert view["leafId"] == target
        _aligned(found, view)


def test_refusals_and_files_it_does_not_draw(tmp_path: Path) -> None:
    agent, path = _session(tmp_path)
    outside = tmp_path / "elsewhere.jsonl"
    outside.write_bytes(path.read_bytes())
    with _daemon(tmp_path, agent) as c:
        for params, code, field in (
            ({"path": str(outside)}, -32005, None),
            ({"path": "relative.jsonl"}, -32005, None),
            ({"path": str(path), "limit": -1}, -32602, "limit"),
            ({"path": str(path), "filter": "nope"}, -32602, None),
        ):
            with pytest.raises(RpcError) as err:
                c.request("session/preview", params)
            assert err.value.code == code, params
            if field:
                assert err.value.data["field"] == field
        missing = c.request("session/preview", {"path": str(path.parent / "missing.jsonl")})
        assert missing == {"rows": [], "selectedIndex": None, "leafId": None, "above": False, "bytes": 0}
        assert not (path.parent / "missing.jsonl").exists()
        none = c.request("session/preview", {"path": str(path), "limit": 0})
        assert none["rows"] == [] and none["leafId"]
        most = c.request("session/preview", {"path": str(path), "limit": 100_000})
        assert 0 < len(most["rows"]) <= 2000
