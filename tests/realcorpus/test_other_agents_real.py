"""Golden views, contexts and listings of the real Claude Code and Codex transcripts in
``../shared/fixtures/real/`` (read from there, never copied into the repository).

Each file gets three golden files under ``tests/fixtures/golden/other-agents/``: the view
with every row (filter ``all``: prefix, text, id), the context of the resume leaf (role and
the first line of each message), and its listing (`SessionInfo.to_dict` without the path
and mtime). Rewrite them with ``SESSIONTREE_REGEN_GOLDEN=1`` and review the diff.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from golden import GOLDEN, check_golden
from sessiontree.core.session import SessionManager
from sessiontree.core.session.foreign import ForeignSession, foreign_session_info
from sessiontree.core.view import build_view
from shared_data import REAL_CORPUS, real_corpus_names

NAMES = [n for n in real_corpus_names() if n.startswith(("claudecode-", "codex-"))]
OUT = GOLDEN / "other-agents"


def _path(name: str) -> Path:
    path = REAL_CORPUS / name
    if not path.is_file():
        pytest.skip(f"../shared/fixtures is not present: {path} is missing")
    return path


def _first_line(content: object) -> str:
    if isinstance(content, str):
        text = content
    elif isinstance(content, list):
        text = " ".join(
            str(b.get("text") or b.get("thinking") or f"[{b.get('type')}: {b.get('name', '')}]")
            for b in content
            if isinstance(b, dict)
        )
    else:
        text = ""
    return text.strip().split("\n", 1)[0][:100]


@pytest.mark.parametrize("name", NAMES)
def test_view_golden(name: str) -> None:
    mgr = SessionManager.open(str(_path(name)), read_only=True)
    assert isinstance(mgr, ForeignSession)
    page = build_view(mgr, filter="all", home="/home/user")
    lines = [f"leaf {mgr.get_leaf_id()}  rows {len(page.rows)}"]
    lines += [f"{r.prefix}{r.text[:120]}  [{r.id}]" for r in page.rows]
    check_golden(OUT / f"{name}.view.txt", "\n".join(lines) + "\n")
    default = build_view(mgr, home="/home/user")
    assert 0 < len(default.rows) <= len(page.rows)


@pytest.mark.parametrize("name", NAMES)
def test_context_golden(name: str) -> None:
    mgr = SessionManager.open(str(_path(name)), read_only=True)
    ctx = mgr.build_session_context()
    lines = [f"models {json.dumps(ctx.models, sort_keys=True)}  messages {len(ctx.messages)}"]
    for m in ctx.messages:
        extra = f" {m.get('toolName')}" if m.get("role") == "toolResult" else ""
        lines.append(f"{m.get('role')}{extra}: {_first_line(m.get('content', m.get('summary')))}")
    check_golden(OUT / f"{name}.context.txt", "\n".join(lines) + "\n")


@pytest.mark.parametrize("name", NAMES)
def test_listing_golden(name: str) -> None:
    agent = "claude" if name.startswith("claudecode-") else "codex"
    info = foreign_session_info(str(_path(name)), agent)
    assert info is not None
    d = info.to_dict()
    d.pop("path")
    d.pop("modified")
    check_golden(
        OUT / f"{name}.list.json", json.dumps(d, ensure_ascii=False, indent=2, sort_keys=True) + "\n"
    )
