"""`displayName`: a session has one name in `session/list` and in every open (the real daemon)."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from e2e_helpers import World, call
from pytest_lsp import LanguageClient

pytestmark = pytest.mark.asyncio(loop_scope="session")


def _rows(token: str, title: str | None, first: str | None) -> list[dict[str, Any]]:
    header: dict[str, Any] = {
        "type": "session",
        "version": 3,
        "id": uuid.uuid4().hex,
        "timestamp": "2026-01-01T00:00:00.000Z",
        "cwd": "/w",
    }
    if title is not None:
        header["title"] = title
    rows = [header]
    parent = None
    if first is not None:
        rows.append(_msg("u1", None, "user", first))
        parent = "u1"
    # the token makes the listing's full-text query find this file only
    rows.append(_msg("a1", parent, "assistant", f"noted {token}"))
    return rows


def _msg(eid: str, parent: str | None, role: str, text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "id": eid,
        "parentId": parent,
        "timestamp": "2026-01-01T00:00:01.000Z",
        "message": {"role": role, "content": text, "timestamp": 1},
    }


@pytest.mark.parametrize(
    ("title", "first", "want"),
    [
        (None, "/mode\nswitch modes", "/mode"),  # the Sessions view and the tree title agree
        ("Fix the build", "hello", "Fix the build"),
        (None, None, "<file>"),
    ],
)
async def test_list_and_open_name_a_session_alike(
    client: LanguageClient, world: World, title: str | None, first: str | None, want: str
) -> None:
    token = f"tok{uuid.uuid4().hex[:12]}"
    path = world.sessions / f"{token}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in _rows(token, title, first)))
    want = token if want == "<file>" else want
    listed = await call(client, "session/list", {"all": True, "query": token})
    (info,) = [s for s in listed["sessions"] if s["path"] == str(path)]
    assert info["displayName"] == want
    opened = await call(client, "session/open", {"path": str(path)})
    try:
        assert opened["displayName"] == want
        again = await call(client, "session/open", {"path": str(path)})  # an already open session
        assert again["displayName"] == want
    finally:
        await call(client, "session/close", {"session": opened["session"]})
