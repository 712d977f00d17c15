"""Data from other projects, read from ``../shared`` beside the repository (never copied in).

Session files written by the agents (``../shared/fixtures/real-v1-session.jsonl``, the
real corpus in ``../shared/fixtures/real/``) come from other repositories, so they stay out
of this one (CONVENTIONS 17). Tests that need them skip with a reason naming the missing
path when ``../shared`` is not checked out beside the repository.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_FIXTURES = REPO.parent / "shared" / "fixtures"
REAL_CORPUS = SHARED_FIXTURES / "real"


def _absent(path: Path) -> str:
    return (
        f"../shared/fixtures is not present: {path} is missing "
        "(data from other projects is read from ../shared beside the repository, never copied into it)"
    )


def shared_fixture_path(name: str) -> Path:
    """``../shared/fixtures/<name>``, whether or not it exists (see :func:`shared_fixture`)."""
    return SHARED_FIXTURES / name


def shared_fixture(name: str) -> Path:
    """``../shared/fixtures/<name>``; the calling test is skipped when it is absent."""
    path = shared_fixture_path(name)
    if not path.is_file():
        pytest.skip(_absent(path))
    return path


def skip_unless_shared(name: str) -> pytest.MarkDecorator:
    """A ``skipif`` mark for tests that read ``../shared/fixtures/<name>`` at import time."""
    path = shared_fixture_path(name)
    return pytest.mark.skipif(not path.is_file(), reason=_absent(path))


REAL_V1_NAME = "real-v1-session.jsonl"


def real_v1_session() -> Path:
    """The real v1 session recorded from pi-mono; the test is skipped when it is absent."""
    return shared_fixture(REAL_V1_NAME)


def real_v1_session_bytes_or_empty() -> bytes:
    """Its bytes, or ``b""`` when absent (for data built at import time; pair it with
    :func:`skip_unless_shared`)."""
    path = shared_fixture_path(REAL_V1_NAME)
    return path.read_bytes() if path.is_file() else b""


def real_corpus_names() -> list[str]:
    """File names of ``../shared/fixtures/real/*.jsonl``, sorted; empty when it is absent."""
    if not REAL_CORPUS.is_dir():
        return []
    return sorted(p.name for p in REAL_CORPUS.glob("*.jsonl") if p.is_file())


def real_corpus_params(names: list[str] | None = None) -> list[Any]:
    """``pytest.param`` per real-corpus file (id: its name), or one skipped param with the
    reason when the folder is absent, so that a parametrized test reports why it did not run."""
    names = real_corpus_names() if names is None else names
    if names:
        return [pytest.param(n, id=n.removesuffix(".jsonl")) for n in names]
    return [pytest.param(None, id="absent", marks=pytest.mark.skip(reason=_absent(REAL_CORPUS)))]


def real_corpus_file(name: str) -> Path:
    """``../shared/fixtures/real/<name>``; the test is skipped when it is absent."""
    path = REAL_CORPUS / name
    if not path.is_file():
        pytest.skip(_absent(path))
    return path
