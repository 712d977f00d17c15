"""The short connector art of deep rows (core/tree_art.py): one rule for every front end."""

from __future__ import annotations

from pathlib import Path

import orjson
from sessiontree.core import view
from sessiontree.core.session import SessionManager
from sessiontree.core.view.tree_art import KEPT_CELLS, SHORT_ART_WIDTH, short_prefix


def test_shallow_art_is_kept_and_deep_art_is_cut_behind_a_depth_marker() -> None:
    shallow = "│  " * 7 + "├─ "
    assert short_prefix(shallow) == shallow
    deep = "│  " * 62 + "└─ "
    cut = short_prefix(deep)
    assert cut == "‹63› " + "│  " * (KEPT_CELLS - 1) + "└─ "
    assert deep.endswith(cut[len("‹63› ") :])


def test_every_row_of_a_deep_session_starts_its_text_within_the_bound(tmp_path: Path) -> None:
    # 70 levels of branching: each entry gets two children, the second continues the chain.
    header = {
        "type": "session",
        "version": 3,
        "id": "deep",
        "timestamp": "2026-01-01T00:00:00.000Z",
        "cwd": "/",
    }
    lines = [header]
    parent = None
    for i in range(70):
        for k in ("a", "b"):
            lines.append(
                {
                    "type": "message",
                    "id": f"{k}{i:03d}",
                    "parentId": parent,
                    "timestamp": f"2026-01-01T00:00:{i % 60:02d}.{'0' if k == 'a' else '5'}00Z",
                    "message": {"role": "user", "content": f"{k} {i}", "timestamp": i},
                }
            )
        parent = f"b{i:03d}"
    p = tmp_path / "deep.jsonl"
    p.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in lines))
    m = SessionManager.open(str(p), read_only=True)
    page = view.build_view(m, filter="all", limit=1000)
    assert max(len(r.prefix) for r in page.rows) > 60 * 3
    bound = len(f"‹{10**4}› ") + KEPT_CELLS * 3
    for r in page.rows:
        assert len(r.short_prefix) <= max(SHORT_ART_WIDTH, bound)
        assert r.line(full_art=False).endswith(r.text) and r.line().endswith(r.text)
        wire = r.to_dict()
        assert wire["prefix"] == r.prefix
        assert wire.get("shortPrefix", r.prefix) == r.short_prefix
