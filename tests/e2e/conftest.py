"""End-to-end fixtures: the real daemon (`sessiontree serve`) over stdio with pytest-lsp."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from e2e_helpers import CLIENTS, World, generate, start_client, stop_client
from pytest_lsp import LanguageClient


@pytest.fixture(scope="session")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    root = tmp_path_factory.mktemp("e2e")
    agent = root / "agent"
    sessions = agent / "sessions" / "--proj--"
    sessions.mkdir(parents=True)
    state = root / "state"
    templates = root / "templates"
    templates.mkdir()
    small = generate(templates / "small.jsonl", 120, "--branch-every", "30", "--seed", "3")
    return World(root=root, agent_dir=agent, sessions=sessions, state_dir=state, small=small)


@pytest.fixture(scope="session")
def big_session(world: World) -> Path:
    """A ~30 MB session file that takes the lenient (slow) load path (one bad line)."""
    path = generate(world.root / "templates" / "big.jsonl", 26000, "--seed", "5")
    data = path.read_bytes()
    cut = data.index(b"\n", len(data) // 2) + 1
    path.write_bytes(data[:cut] + b"{not json\n" + data[cut:])
    # outside the sessions dir, so that `session/list` does not read every big copy
    return world.copy("big.jsonl", path, world.root / "big")


@pytest_asyncio.fixture(scope="session", loop_scope="session", params=CLIENTS)
async def client(request: pytest.FixtureRequest, world: World) -> AsyncIterator[LanguageClient]:
    """One daemon per client kind (VS Code, Neovim capabilities), shared by the e2e tests
    (each test works on its own copies of session files)."""
    c = await start_client(world, request.param)
    c.kind = request.param  # type: ignore[attr-defined]
    yield c
    await stop_client(c)
