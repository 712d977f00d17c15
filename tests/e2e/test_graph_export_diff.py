"""session/graph, session/export and session/diff against the real daemon over stdio."""

from __future__ import annotations

import hashlib
import html
import json
import shutil
import sys
from pathlib import Path

import pytest
from e2e_helpers import World
from sessiontree.client import Client, RpcError
from sessiontree.core.session import SessionManager

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "server" / "sessiontree" / "data" / "demo-session.jsonl"
FIXTURE_TIP, LEAF, BRANCH_POINT = "1a2caaa9", "1a2ebbb8", "1a2c4443"


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def demo(world: World) -> Path:
    dest = world.sessions / "demo-graph.jsonl"
    shutil.copyfile(DEMO, dest)
    return dest


def spawn(world: World, **env: str) -> Client:
    return Client.spawn(
        [sys.executable, "-m", "sessiontree", "serve"],
        env={**world.env(), **env},
        init_options=world.init_options(),
    )


def test_graph_export_diff_over_the_wire_write_nothing(world: World, demo: Path) -> None:
    before = _digest(demo)
    listing = sorted(p.name for p in demo.parent.iterdir())
    with spawn(world) as c:
        s = c.request("session/open", {"path": str(demo)})["session"]

        g = c.request("session/graph", {"session": s})
        assert g["entries"] == 56 and g["lanes"] == 2 and not g["collapsed"]
        assert g["svg"].startswith("<svg") and "html" not in g
        assert next(n for n in g["nodes"] if n.get("leaf"))["id"] == LEAF
        page = c.request("session/graph", {"session": s, "nonce": "n0nce", "cspSource": "vscode-webview:"})[
            "html"
        ]
        assert "script-src 'nonce-n0nce'" in html.unescape(page)
        folded = c.request("session/graph", {"session": s, "collapse": 2})
        assert folded["collapsed"] and sum(n["count"] for n in folded["nodes"]) == 56

        md = c.request("session/export", {"session": s, "format": "md"})
        assert md["redacted"] and md["entries"] == 46 and md["content"].startswith("# Add a due-date column")
        assert md["suggestedName"].endswith(f"-{LEAF}.md")
        sub = c.request("session/export", {"session": s, "format": "html", "subtreeId": BRANCH_POINT})
        assert sub["content"].count("Branch from") == 2
        raw = c.request("session/export", {"session": s, "format": "jsonl", "leafId": FIXTURE_TIP})
        assert not raw["redacted"]
        out = world.root / "exported.jsonl"
        out.write_text(raw["content"], encoding="utf-8")
        back = SessionManager.open(str(out), read_only=True)
        assert back.get_leaf_id() == FIXTURE_TIP
        assert json.loads(raw["content"].split("\n", 1)[0])["parentSession"] == str(demo)

        d = c.request("session/diff", {"session": s, "a": FIXTURE_TIP, "b": LEAF})
        assert d["ancestorId"] == BRANCH_POINT
        assert [f["path"] for f in d["a"]["files"]] == ["tests/fixtures/tasks.json"]
        assert [f["path"] for f in d["b"]["files"]] == ["src/store.py", "src/cli.py", "tests/test_due.py"]
        assert d["b"]["files"][0]["calls"][0]["hunks"][0]["oldText"] == "Task(**d)"
        assert d["a"]["document"].startswith(f"# A: {FIXTURE_TIP}")

        for method, params, code in [
            ("session/export", {"session": s, "format": "pdf"}, -32602),
            ("session/export", {"session": s, "format": "md", "leafId": "nope"}, -32002),
            ("session/export", {"session": s, "format": "md", "leafId": LEAF, "subtreeId": LEAF}, -32602),
            ("session/diff", {"session": s, "a": LEAF, "b": "nope"}, -32002),
            ("session/graph", {"session": s, "collapse": -1}, -32602),
            ("session/graph", {"session": "nope"}, -32001),
        ]:
            with pytest.raises(RpcError) as err:
                c.request(method, params)
            assert err.value.code == code, (method, params)
    assert _digest(demo) == before
    assert sorted(p.name for p in demo.parent.iterdir()) == listing


def test_user_redaction_patterns_and_dry_run(world: World, demo: Path, tmp_path: Path) -> None:
    config = tmp_path / "cfg" / "sessiontree" / "redact.toml"
    config.parent.mkdir(parents=True)
    config.write_text("[[patterns]]\nname = 'demo-home'\nregex = '/home/demo'\n", encoding="utf-8")
    with spawn(world, XDG_CONFIG_HOME=str(tmp_path / "cfg")) as c:
        s = c.request("session/open", {"path": str(demo)})["session"]
        dry = c.request("session/export", {"session": s, "format": "md", "dryRun": True})
        assert dry["content"] == "" and dry["redactions"] == [{"pattern": "demo-home", "count": 1}]
        assert {f["pattern"] for f in dry["findings"]} == {"demo-home"}
        md = c.request("session/export", {"session": s, "format": "md"})
        assert "/home/demo" not in md["content"] and "[REDACTED:demo-home]" in md["content"]
    config.write_text("[[patterns]]\nname = 'bad'\nregex = '(['\n", encoding="utf-8")
    with spawn(world, XDG_CONFIG_HOME=str(tmp_path / "cfg")) as c:
        s = c.request("session/open", {"path": str(demo)})["session"]
        with pytest.raises(RpcError) as err:
            c.request("session/export", {"session": s, "format": "md"})
        assert err.value.code == -32602
