"""oh-my-pi's real session files (../shared/fixtures/real, README there; compat/corpus.py) between
sessiontree and omp 18 (issue 31): each file as it is, after a few appends of sessiontree's
(omp reads them), and after one append of omp's (sessiontree reads it). A copy is used each
time; the shared files are never written.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from sessiontree.core.errors import InvalidSessionFileError
from sessiontree.core.session import SessionManager
from shared_data import REAL_CORPUS, shared_fixture, shared_fixture_path

from compat.conftest import Work
from compat.corpus import HEADERLESS, OMP_FILES, WITHOUT_IDS
from compat.omp.cases import assistant, user
from compat.state import (
    Agent,
    HarnessError,
    agent_load,
    agent_write,
    assert_read_alike,
    fingerprint,
    our_state,
)

#: oh-my-pi's files of the corpus (compat/corpus.py: pi's files are compared with pi).
OMP_FAMILY = OMP_FILES
NO_IDS = WITHOUT_IDS
NO_HEADER = HEADERLESS


def copy_of(name: str, work: Work) -> Path:
    src = shared_fixture(f"real/{name}")
    path = work.file(Path(name).name)
    shutil.copyfile(src, path)
    path.chmod(0o644)
    return path


def compare(agent: Agent, path: Path, what: str) -> None:
    # at the leaf, and at every entry as the leaf (at a sample of entries for a long file)
    assert_read_alike(agent, path, what)


@pytest.mark.parametrize("name", [n for n in OMP_FAMILY if n not in NO_IDS])
def test_real_file_as_it_is(omp: Agent, work: Work, name: str) -> None:
    compare(omp, copy_of(name, work), name)


@pytest.mark.parametrize("name", OMP_FAMILY)
def test_real_file_after_sessiontree_appends(omp: Agent, work: Work, name: str) -> None:
    path = copy_of(name, work)
    m = SessionManager.open(str(path))
    try:
        m.append_message(user("one more question", 1_767_225_700_000))
        m.append_message(assistant("One more answer.", ts=1_767_225_701_000))
        m.flush()
    finally:
        m.close()
    compare(omp, path, f"{name} after sessiontree's appends")


@pytest.mark.parametrize("name", OMP_FAMILY)
def test_real_file_after_omp_appends(omp: Agent, work: Work, name: str) -> None:
    path = copy_of(name, work)
    agent_write(
        omp, path, work.cwd, [{"op": "message", "message": user("one more question", 1_767_225_700_000)}]
    )
    compare(omp, path, f"{name} after omp's append")


@pytest.mark.parametrize("name", NO_HEADER)
def test_file_without_header_is_refused_by_both(omp: Agent, work: Work, name: str) -> None:
    path = copy_of(name, work)
    before = fingerprint(path)
    with pytest.raises(InvalidSessionFileError):
        our_state(path)
    with pytest.raises(HarnessError, match="session header is missing or malformed"):
        agent_load(omp, path)
    assert fingerprint(path) == before


def test_corpus_names_are_the_shared_ones() -> None:
    """The lists above name files that exist (a renamed corpus file must not drop out silently)."""
    if not REAL_CORPUS.is_dir():
        pytest.skip(f"{REAL_CORPUS} is not present (../shared beside the repository)")
    for name in [*OMP_FAMILY, *NO_HEADER]:
        assert shared_fixture_path(f"real/{name}").is_file(), name
