"""Small builders of session files for the reliability tests (plain bytes, no core code)."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import shared_data

TS0 = 1763681581000


def iso(ms: int) -> str:
    import datetime

    dt = datetime.datetime.fromtimestamp(ms / 1000, datetime.UTC)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def line(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


def header(sid: str = "0123456789abcdef", version: int | None = 3, cwd: str = "/tmp/proj") -> dict[str, Any]:
    h: dict[str, Any] = {"type": "session"}
    if version is not None:
        h["version"] = version
    h.update({"id": sid, "timestamp": iso(TS0), "cwd": cwd})
    return h


def message(eid: str, parent: str | None, role: str, text: str, n: int = 0) -> dict[str, Any]:
    msg: dict[str, Any] = {"role": role, "content": [{"type": "text", "text": text}], "timestamp": TS0 + n}
    if role == "assistant":
        msg.update(
            {"api": "anthropic-messages", "provider": "anthropic", "model": "claude", "stopReason": "stop"}
        )
    return {"type": "message", "id": eid, "parentId": parent, "timestamp": iso(TS0 + n), "message": msg}


def chain(n: int, seed: int = 1, prefix: str = "") -> list[dict[str, Any]]:
    """A v3 session: header plus n alternating user/assistant messages in one chain, with a
    branch every 7 entries, a label and a compaction."""
    rng = random.Random(seed)
    out: list[dict[str, Any]] = [header()]
    ids: list[str] = []
    parent: str | None = None
    for i in range(n):
        eid = f"{prefix}{rng.getrandbits(32):08x}"
        while eid in ids:
            eid = f"{prefix}{rng.getrandbits(32):08x}"
        if i and i % 7 == 0:
            parent = ids[rng.randrange(len(ids))]
        role = "user" if i % 2 == 0 else "assistant"
        out.append(message(eid, parent, role, f"{role} text {i} " + "x" * rng.randrange(0, 80), i))
        ids.append(eid)
        parent = eid
    return out


def write_session(path: Path, entries: list[dict[str, Any]]) -> bytes:
    data = b"".join(line(e) for e in entries)
    path.write_bytes(data)
    return data


def real_v1_fixture() -> Path:
    """The real v1 session recorded from the agent, in ../shared (the test skips without it)."""
    return shared_data.real_v1_session()
