"""The agents' dialects over the daemon (issue 31): an oh-my-pi 18 file, whose first line is
its title slot, and a pi 1.6 file named by a `session_info` entry are listed, opened and
drawn with their names; a name set through the daemon is written as the file's agent writes
it. (The core rules: tests/core/test_dialects.py; the agents' own code: tests/compat.)"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from e2e_helpers import World, call
from pytest_lsp import LanguageClient
from sessiontree.core.format.title_slot import SLOT_BYTES, serialize_slot, split_slot

pytestmark = pytest.mark.asyncio(loop_scope="session")


def _line(obj: dict[str, Any]) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


def _session(token: str, extra: list[dict[str, Any]]) -> list[bytes]:
    header = {
        "type": "session",
        "version": 3,
        "id": str(uuid.uuid4()),
        "timestamp": "2026-12-04T10:00:00.000Z",
        "cwd": "/proj",
    }
    entries = [
        {
            "type": "message",
            "id": "u1",
            "parentId": None,
            "timestamp": "2026-12-04T10:00:01.000Z",
            "message": {"role": "user", "content": f"question {token}", "timestamp": 1},
        },
        {
            "type": "message",
            "id": "a1",
            "parentId": "u1",
            "timestamp": "2026-12-04T10:00:02.000Z",
            "message": {
                "role": "assistant",
                "content": [{"type": "text", "text": "answer"}],
                "provider": "anthropic",
                "model": "claude",
                "stopReason": "stop",
                "timestamp": 2,
            },
        },
        *extra,
    ]
    return [_line(header), *(_line(e) for e in entries)]


async def _listed(client: LanguageClient, token: str, path: Path) -> dict[str, Any]:
    listed = await call(client, "session/list", {"all": True, "query": token})
    (info,) = [s for s in listed["sessions"] if s["path"] == str(path)]
    return info  # type: ignore[no-any-return]


async def test_an_omp_18_file_is_listed_opened_and_drawn_with_its_title(
    client: LanguageClient, world: World
) -> None:
    token = f"tok{uuid.uuid4().hex[:12]}"
    path = world.sessions / f"{token}.jsonl"
    title_change = {
        "type": "title_change",
        "id": "t1",
        "parentId": "a1",
        "timestamp": "2026-12-04T10:00:03.000Z",
        "title": "Omp's own title",
        "source": "user",
    }
    path.write_bytes(
        serialize_slot("Omp's own title", "user", "2026-12-04T10:00:03.000Z")
        + b"".join(_session(token, [title_change]))
    )
    before = path.read_bytes()
    info = await _listed(client, token, path)
    assert info["title"] == "Omp's own title" and info["displayName"] == "Omp's own title"
    opened = await call(client, "session/open", {"path": str(path)})
    try:
        assert opened["header"]["title"] == "Omp's own title" and opened["displayName"] == "Omp's own title"
        view = await call(client, "session/view", {"session": opened["session"], "filter": "all"})
        assert [r["text"] for r in view["rows"]] == [
            f"user: question {token}",
            "assistant: answer",
            "[title: Omp's own title]",
        ]
        assert path.read_bytes() == before  # looking wrote nothing
        await call(client, "session/setName", {"session": opened["session"], "name": "Renamed here"})
        after = path.read_bytes()
        assert after[SLOT_BYTES : len(before)] == before[SLOT_BYTES:]  # the slot rewritten in place
        slot, _ = split_slot(after)
        assert slot is not None and slot.title == "Renamed here"
        assert json.loads(after.splitlines()[-1])["type"] == "title_change"
        assert (await _listed(client, token, path))["title"] == "Renamed here"
    finally:
        await call(client, "session/close", {"session": opened["session"]})


async def test_a_pi_16_file_is_named_by_its_session_info(client: LanguageClient, world: World) -> None:
    token = f"tok{uuid.uuid4().hex[:12]}"
    path = world.sessions / f"{token}.jsonl"
    info_entry = {
        "type": "session_info",
        "id": "n1",
        "parentId": "a1",
        "timestamp": "2026-12-04T10:00:03.000Z",
        "name": "Pi's name",
    }
    change = {
        "type": "model_change",
        "id": "m1",
        "parentId": "n1",
        "timestamp": "2026-12-04T10:00:04.000Z",
        "provider": "openai",
        "modelId": "gpt-5",
    }
    path.write_bytes(b"".join(_session(token, [info_entry, change])))
    info = await _listed(client, token, path)
    assert info["title"] == "Pi's name"
    opened = await call(client, "session/open", {"path": str(path)})
    try:
        assert opened["displayName"] == "Pi's name"
        ctx = await call(client, "session/context", {"session": opened["session"]})
        assert ctx["models"] == {"default": "openai/gpt-5"}
        await call(client, "session/setName", {"session": opened["session"], "name": "Renamed here"})
        last = json.loads(path.read_bytes().splitlines()[-1])
        assert (last["type"], last["name"]) == ("session_info", "Renamed here")
        assert "title" not in json.loads(path.read_bytes().splitlines()[0])  # pi never reads it
    finally:
        await call(client, "session/close", {"session": opened["session"]})
