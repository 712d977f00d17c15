"""Looking never writes, for other agents' transcripts too (DIVERGENCES 11, issue 17).

A HOME holds Claude Code and Codex transcripts (synthetic ones and copies of the real
corpus files); every way of looking at them (listing, opening for viewing and read-only,
views with every filter, contexts of every node, following appends, doctor) leaves every
name, byte, size and mtime under ~/.claude and ~/.codex as it was, and every change asked
of them is refused before anything is written.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import pytest
from other_agents_data import CLAUDE_ID, CODEX_ID, claude_lines, codex_lines, write_jsonl
from sessiontree.core.doctor import check_file
from sessiontree.core.errors import ReadOnlySessionError
from sessiontree.core.session import SessionManager
from sessiontree.core.session.foreign import list_foreign_sessions
from sessiontree.core.view import build_view
from shared_data import REAL_CORPUS, real_corpus_names


def snapshot(root: Path) -> list[tuple[str, str]]:
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        for d in dirnames:
            st = os.stat(os.path.join(dirpath, d))
            out.append((os.path.join(dirpath, d), f"dir {st.st_mtime_ns}"))
        for f in filenames:
            p = os.path.join(dirpath, f)
            st = os.stat(p)
            out.append(
                (p, f"{hashlib.sha256(Path(p).read_bytes()).hexdigest()} {st.st_size} {st.st_mtime_ns}")
            )
    return sorted(out)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    h = tmp_path / "home"
    proj = h / ".claude" / "projects" / "-work-proj"
    write_jsonl(proj / f"{CLAUDE_ID}.jsonl", claude_lines(), damaged_at=5)
    day = h / ".codex" / "sessions" / "2026" / "06" / "19"
    write_jsonl(day / f"rollout-x-{CODEX_ID}.jsonl", codex_lines())
    for name in real_corpus_names():
        if name.startswith("claudecode-"):
            shutil.copyfile(REAL_CORPUS / name, proj / name)
        elif name.startswith("codex-"):
            shutil.copyfile(REAL_CORPUS / name, day / name)
    monkeypatch.setenv("HOME", str(h))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.delenv("CODEX_HOME", raising=False)
    return h


def test_every_way_of_looking_leaves_the_agents_dirs_as_they_were(home: Path) -> None:
    before = snapshot(home)
    infos = list_foreign_sessions("claude") + list_foreign_sessions("codex")
    assert len(infos) >= 2
    for info in infos:
        for kw in ({"read_only": True}, {"viewing": True, "breadcrumbs": False}):
            mgr = SessionManager.open(info.path, **kw)  # type: ignore[arg-type]
            for mode in ("default", "no-tools", "user-only", "labeled-only", "all"):
                build_view(mgr, filter=mode)
            build_view(mgr, search="the")
            for e in mgr.get_entries()[:200]:
                mgr.build_session_context(e["id"])
            mgr.get_tree()
            mgr.sync_with_file()
            with pytest.raises(ReadOnlySessionError):
                mgr.append_message({"role": "user", "content": "x"})
            with pytest.raises(ReadOnlySessionError):
                mgr.set_session_name("x")
            mgr.flush()
        check_file(info.path)
    assert snapshot(home) == before
