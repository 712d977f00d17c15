"""session/entry with resolveBlobs returns image data from the blob store."""

from __future__ import annotations

import base64
import json

import pytest
from e2e_helpers import World, call
from pytest_lsp import LanguageClient
from sessiontree.core import paths
from sessiontree.core.store.blobs import BlobStore

pytestmark = pytest.mark.asyncio(loop_scope="session")


async def test_entry_resolve_blobs(client: LanguageClient, world: World) -> None:
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(64))
    put = BlobStore(paths.blobs_dir(str(world.agent_dir))).put(png)
    header = {
        "type": "session",
        "version": 3,
        "id": "b10b5e55",
        "timestamp": "2026-01-01T00:00:00.000Z",
        "cwd": "/p",
    }
    image = {"type": "image", "data": put.ref, "mimeType": "image/png"}
    entry = {
        "type": "message",
        "id": "im000001",
        "parentId": None,
        "timestamp": "2026-01-01T00:00:01.000Z",
        "message": {"role": "user", "content": [{"type": "text", "text": "look"}, image], "timestamp": 1},
    }
    path = world.sessions / f"blobs-{client.kind}.jsonl"  # type: ignore[attr-defined]
    path.write_text(json.dumps(header) + "\n" + json.dumps(entry) + "\n")
    h = (await call(client, "session/open", {"path": str(path)}))["session"]
    res = await call(client, "session/entry", {"session": h, "id": "im000001", "resolveBlobs": True})
    block = res["entry"]["message"]["content"][1]
    assert block["data"] == base64.b64encode(png).decode()
    assert json.loads(path.read_text().splitlines()[1])["message"]["content"][1]["data"] == put.ref
