"""The real sessions' tool calls replayed (../shared/fixtures/real: pi, oh-my-pi, Claude Code,
Codex): wherever a later whole read or a result's whole file shows a file the replay knew,
they agree, except where the session itself shows the file changed outside its calls."""

from __future__ import annotations

import pytest
from sessiontree.core.checkpoints.events import path_events
from sessiontree.core.checkpoints.replay import replay_entries
from sessiontree.core.session.manager import SessionManager
from shared_data import real_corpus_file

FIXTURES = [
    "pimono-large-session.jsonl",
    "pimono-before-compaction.jsonl",
    "pimono-d5dde00d-root-session.jsonl",
    "dexter-v3-pi-session.jsonl",
    "welpy-session.jsonl",
    "kimchi-dev-session.jsonl",
    "omp-pinion05-03-raddit-dashboard-pr.jsonl",
    "omp-pinion05-04-awesome-agent-ide.jsonl",
    "claudecode-apanloco-random.jsonl",
    "claudecode-episodic-large-conversation.jsonl",
    "claudecode-feipi-8a283a61.jsonl",
    "codex-feipi-rollout-019edda8.jsonl",
    "codex-feipi-rollout-019ede26-child.jsonl",
]

#: Disagreements the sessions explain: in pimono-large the agent edits
#: user-message-selector.ts, then reads it back unedited (the user undid the edit between
#: two turns): from there the read is what the replay knows.
EXPLAINED = {("pimono-large-session.jsonl", "user-message-selector.ts")}


def _checks(name: str) -> list[tuple[int, str, bool, str]]:
    m = SessionManager.open(str(real_corpus_file(name)), read_only=True)
    cwd = m.get_cwd()
    leaves = [sk.id for sk in m.index.skeletons() if not m.index.children(sk.id)]
    out = []
    for leaf in leaves:
        _, entries = path_events(m, leaf)
        out.extend(replay_entries(entries, cwd).checks)
    return out


@pytest.mark.parametrize("name", FIXTURES)
def test_replayed_contents_agree_with_what_the_session_later_shows(name: str) -> None:
    disagree = [
        (path, how)
        for _, path, ok, how in _checks(name)
        if not ok and (name, path.rsplit("/", 1)[-1]) not in EXPLAINED
    ]
    assert disagree == []


def test_the_claude_code_replays_are_checked_against_every_later_original_file() -> None:
    # not a vacuous pass: Claude Code's Edit results carry the file before each edit, and
    # every one of them matches the replay of the calls before it (12 in the big transcript)
    checks = _checks("claudecode-episodic-large-conversation.jsonl")
    assert sum(ok for _, _, ok, _ in checks) >= 12
    assert all(ok for _, _, ok, _ in checks)


def test_the_explained_disagreement_is_seen() -> None:
    bad = [(p, how) for _, p, ok, how in _checks("pimono-large-session.jsonl") if not ok]
    assert [(p.rsplit("/", 1)[-1], how) for p, how in bad] == [("user-message-selector.ts", "edit")]
