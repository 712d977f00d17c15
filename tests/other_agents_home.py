"""Writes a Claude Code transcript and a Codex rollout of one project into a HOME.

``python tests/other_agents_home.py HOME CWD`` (used by the editors' end-to-end suites to
give their temporary HOME other agents' sessions): the Claude Code session with a rewind,
a sidechain and a compaction under ``HOME/.claude/projects/<encoded CWD>/``, the Codex
rollout of CWD under ``HOME/.codex/sessions/2026/06/19/``. Prints the two paths as JSON.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))

from other_agents_data import CLAUDE_ID, CODEX_ID, claude_lines, codex_lines, write_jsonl


def main(home: str, cwd: str) -> dict[str, str]:
    from sessiontree.core.sources.foreign import claude_project_dir

    env = {"HOME": home}
    claude = write_jsonl(Path(claude_project_dir(cwd, env)) / f"{CLAUDE_ID}.jsonl", claude_lines())
    lines = codex_lines()
    lines[0]["payload"]["cwd"] = cwd
    codex = write_jsonl(
        Path(home)
        / ".codex"
        / "sessions"
        / "2026"
        / "06"
        / "19"
        / f"rollout-2026-06-19T02-14-27-{CODEX_ID}.jsonl",
        lines,
    )
    return {"claude": str(claude), "codex": str(codex)}


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], sys.argv[2])))
