"""Which agent wrote each real session file of ../shared/fixtures/real (its README names the
source of each): the compatibility suite compares a file with the agent that writes files
like it. An agent reading another agent's file reads it by its own rules (pi reads an
oh-my-pi file's model changes as undefined; omp drops what pi's context_edit keeps), and so
does sessiontree, by the file's rules: such readings differ by design and are not compared.
"""

from __future__ import annotations

__all__ = ["HEADERLESS", "OMP_FILES", "PI_FILES", "WITHOUT_IDS"]

#: pi and the tools of its ecosystem (pi-mono's own fixtures and sessions, pi 0.85.1, the
#: harnesses built on pi, pi-doctor's and pi-session-manager's fixtures).
PI_FILES = [
    "carlesba-pi-skill-memory-session.jsonl",
    "dexter-v3-pi-session.jsonl",
    "kimchi-dev-session.jsonl",
    "kirgadjello-crew-planner-header-only.jsonl",
    "paradocs-session.jsonl",
    "pidoctor-v3-no-ids.jsonl",
    "pimono-before-compaction.jsonl",
    "pimono-d5dde00d-root-session.jsonl",
    "pimono-large-session.jsonl",
    "twkrash-pi-0.85.1-branching.jsonl",
    "welpy-session.jsonl",
    "../real-v1-session.jsonl",
]

#: oh-my-pi and its forks (gajae-code).
OMP_FILES = [
    "omp-pinion05-03-raddit-dashboard-pr.jsonl",
    "omp-pinion05-04-awesome-agent-ide.jsonl",
]

#: Files without a session header: no agent opens them.
HEADERLESS = ["omp-pinion05-01-youtube-transcript-extraction.jsonl"]

#: Files whose entries carry no ids (v1, and pidoctor's v3 header over id-less entries):
#: each reader makes ids up in memory (the agents at random), so their read-only states
#: cannot be compared id for id; after a write both read the ids the writer put in.
WITHOUT_IDS = {
    "pimono-before-compaction.jsonl",
    "pimono-d5dde00d-root-session.jsonl",
    "pimono-large-session.jsonl",
    "pidoctor-v3-no-ids.jsonl",
    "../real-v1-session.jsonl",
}
