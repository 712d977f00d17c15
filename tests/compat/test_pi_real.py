"""Real session files (../shared/fixtures/real/) read by sessiontree and by pi 1.6, as they are
and after a few appends of sessiontree's (issue 31).

The pi-family files of the real corpus (pi-mono, forks, oh-my-pi excerpts; README.md there
names each source) are copied into the test's directory first: pi's open rewrites some files
(a v1 migration, a missing last newline). Reading as they are compares the version 3 files:
a v1 file has no ids, which each reader makes up (pi anew at every load, and it writes them
at once; sessiontree derives them, DIVERGENCES 10), so the two can only agree on it after the
migration is written, which the append test does (sessiontree's first write migrates it).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import orjson
import pytest
from sessiontree.core.errors import InvalidSessionFileError
from sessiontree.core.session import SessionManager
from shared_data import REAL_CORPUS, skip_unless_shared

from compat.conftest import Work
from compat.corpus import HEADERLESS, PI_FILES, WITHOUT_IDS
from compat.pi_messages import assistant, user
from compat.state import Agent, HarnessError, agent_load, assert_read_alike, fingerprint, our_state

# pi's files (compat/corpus.py; oh-my-pi's are compared with omp, the Claude Code and Codex
# transcripts are no sessions), and the headerless ones no agent opens.
PI_FAMILY = [n for n in PI_FILES + HEADERLESS if "/" not in n]


def _version(name: str) -> object:
    first = (REAL_CORPUS / name).read_bytes().split(b"\n", 1)[0]
    try:
        header = orjson.loads(first)
    except orjson.JSONDecodeError:
        return None
    return (
        header.get("version") if isinstance(header, dict) and header.get("type") == "session" else "no header"
    )


# (a v3 file whose entries lack ids is compared after sessiontree wrote them: see corpus.py)
CURRENT = [n for n in PI_FAMILY if _version(n) == 3 and n not in WITHOUT_IDS]
HEADERLESS = [n for n in PI_FAMILY if _version(n) == "no header"]
WITH_HEADER = [n for n in PI_FAMILY if n not in HEADERLESS]


@contextmanager
def copied(work: Work, name: str) -> Iterator[Path]:
    """A copy of the real file to work on; the original must be left as it was."""
    source = REAL_CORPUS / name
    before = fingerprint(source)
    path = work.file(name)
    shutil.copyfile(source, path)
    try:
        yield path
    finally:
        assert fingerprint(source) == before, f"{source} was changed"


@skip_unless_shared("real/README.md")
@pytest.mark.parametrize("name", CURRENT)
def test_a_real_file_as_it_is(pi: Agent, work: Work, name: str) -> None:
    with copied(work, name) as path:
        assert_read_alike(pi, path, f"the real file {name}")


@skip_unless_shared("real/README.md")
@pytest.mark.parametrize("name", HEADERLESS)
def test_a_real_file_without_header_is_refused_by_both(pi: Agent, work: Work, name: str) -> None:
    """Neither reader takes a file without a session header for a session, nor changes it."""
    with copied(work, name) as path:
        before = fingerprint(path)
        with pytest.raises(InvalidSessionFileError):
            our_state(path)
        with pytest.raises(HarnessError, match="not a valid pi session"):
            agent_load(pi, path)
        assert fingerprint(path) == before


@skip_unless_shared("real/README.md")
@pytest.mark.parametrize("name", WITH_HEADER)
def test_a_real_file_after_sessiontree_appends(pi: Agent, work: Work, name: str) -> None:
    """sessiontree continues the real session (an exchange and a label), migrating it first
    when it is older than version 3; then both read it alike."""
    with copied(work, name) as path:
        m = SessionManager.open(str(path))
        first = m.get_entries()[0]["id"] if m.get_entries() else None
        m.append_message(user("continued by sessiontree"))
        m.append_message(assistant("ok"))
        m.append_label_change(first or m.get_entries()[0]["id"], "first")
        m.ensure_on_disk()
        m.close()
        assert_read_alike(pi, path, f"the real file {name} continued by sessiontree")
