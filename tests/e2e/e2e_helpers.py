"""End-to-end helpers: the real daemon (`sessiontree serve`) over stdio with pytest-lsp.

Every server runs with a temporary agent dir (`PI_CODING_AGENT_DIR`) and a temporary
navigation state dir (`SESSIONTREE_STATE_DIR`), so nothing outside tmp dirs is touched.
Session files are generated with the shared corpus generator and copied per test.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import attrs
from lsprotocol import types as lsp
from pygls.protocol import (
    JsonRPCNotification,
    JsonRPCRequestMessage,
    JsonRPCResponseMessage,
    default_converter,
)
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities
from pytest_lsp.client import register_lsp_features

REPO = Path(__file__).resolve().parents[2]
GEN_CORPUS = REPO / "benchmarks" / "gen_corpus.py"
SERVER = [sys.executable, "-m", "sessiontree", "serve", "--log-level", "warning"]
CLIENTS = ["visual-studio-code", "neovim@v0.11"]
NOTIFICATIONS = (
    "session/didChange",
    "session/didNavigate",
    "session/didChangeLabel",
    "session/didReload",
    "session/didChangeList",
)


def _dict_converter() -> Any:
    conv = default_converter()
    for cls in (JsonRPCRequestMessage, JsonRPCNotification, JsonRPCResponseMessage):
        conv.register_structure_hook(cls, lambda obj, cls: cls(**obj))
    return conv


def make_client() -> LanguageClient:
    """A pytest-lsp client that keeps custom results and notifications as plain dicts."""
    client = LanguageClient(converter_factory=_dict_converter)
    register_lsp_features(client)
    client.notes = []  # type: ignore[attr-defined]

    for method in NOTIFICATIONS:

        def collect(ls: Any, params: Any, _m: str = method) -> None:
            client.notes.append((_m, params))  # type: ignore[attr-defined]

        client.feature(method)(collect)
    return client


@attrs.define
class World:
    """Temporary agent dir, sessions dir, state dir and session file templates."""

    root: Path
    agent_dir: Path
    sessions: Path
    state_dir: Path
    small: Path
    big: Path | None = None

    def env(self) -> dict[str, str]:
        return {
            **os.environ,
            "PI_CODING_AGENT_DIR": str(self.agent_dir),
            "SESSIONTREE_STATE_DIR": str(self.state_dir),
            "PYTHONPATH": os.pathsep.join([str(REPO / "server"), str(REPO / "protocol")]),
        }

    def init_options(self, **extra: Any) -> dict[str, Any]:
        return {"agentDir": str(self.agent_dir), "stateDir": str(self.state_dir), **extra}

    def copy(self, name: str, template: Path | None = None, directory: Path | None = None) -> Path:
        """A fresh copy of a session file (default: inside the sessions dir)."""
        directory = directory or self.sessions
        directory.mkdir(parents=True, exist_ok=True)
        dest = directory / name
        shutil.copyfile(template or self.small, dest)
        return dest


def generate(path: Path, entries: int, *extra: str) -> Path:
    subprocess.run(
        [sys.executable, str(GEN_CORPUS), str(path), str(entries), *extra],
        check=True,
        capture_output=True,
    )
    return path


async def start_client(world: World, capabilities: str, **options: Any) -> LanguageClient:
    config = ClientServerConfig(server_command=SERVER, client_factory=make_client, server_env=world.env())
    client = await config.start()
    client.init_result = await client.initialize_session(  # type: ignore[attr-defined]
        lsp.InitializeParams(
            capabilities=client_capabilities(capabilities),
            root_uri=world.root.as_uri(),
            workspace_folders=[lsp.WorkspaceFolder(uri=world.root.as_uri(), name="e2e")],
            initialization_options=world.init_options(**options),
        )
    )
    return client


async def stop_client(client: LanguageClient) -> None:
    await client.shutdown_session()
    await client.stop()


async def call(client: LanguageClient, method: str, params: Any = None, timeout: float = 60) -> Any:
    """Send a request and return its (dict) result (a missing answer fails, never hangs)."""
    return await asyncio.wait_for(client.protocol.send_request_async(method, params), timeout)
