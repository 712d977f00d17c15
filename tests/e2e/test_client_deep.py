"""The Python client decodes results nested deeper than orjson's 1024 levels.

A `session/tree` result of a long linear session nests two levels per entry; the client
used to report "the daemon closed the connection" on it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import orjson
import pytest
from sessiontree.client import Client, decode_body
from sessiontree.core.session import SessionManager

REPO = Path(__file__).resolve().parents[2]


def test_decode_body_deep_and_plain() -> None:
    depth = 50_000
    body = b'{"c":' * depth + b"[1]" + b"}" * depth
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(body)
    value = decode_body(body)
    n = 0
    while isinstance(value, dict):
        value = value["c"]
        n += 1
    assert (n, value) == (depth, [1])
    assert decode_body(b'{"a":[1,2,{"b":null}]}') == {"a": [1, 2, {"b": None}]}
    # a lone surrogate escape is valid JSON that orjson refuses
    assert decode_body(b'{"s":"\\ud800"}') == {"s": "\ud800"}
    with pytest.raises(ValueError):
        decode_body(b"{not json")


def test_session_tree_of_a_long_linear_session(tmp_path: Path) -> None:
    agent = tmp_path / "agent"
    sessions = agent / "sessions" / "-proj"
    sessions.mkdir(parents=True)
    m = SessionManager.create(str(tmp_path), str(sessions))
    count = 1500  # 3,000 levels of nesting in the tree result
    ids = []
    for i in range(count // 2):
        ids.append(m.append_message({"role": "user", "content": f"q{i}", "timestamp": i}))
        reply = {"role": "assistant", "content": [{"type": "text", "text": f"a{i}"}], "timestamp": i}
        ids.append(m.append_message({**reply, "stopReason": "stop"}))
    m.flush()
    path = m.get_session_file()
    assert path
    env = {
        "PI_CODING_AGENT_DIR": str(agent),
        "SESSIONTREE_STATE_DIR": str(tmp_path / "state"),
        "PYTHONPATH": os.pathsep.join([str(REPO / "server"), str(REPO / "protocol")]),
    }
    with Client.spawn(
        init_options={"agentDir": str(agent), "stateDir": str(tmp_path / "state"), "watch": False}, env=env
    ) as client:
        handle = client.request("session/open", {"path": path})["session"]
        # asked unbounded on purpose (the default nests 200 levels at most)
        tree = client.request("session/tree", {"session": handle, "maxDepth": 1_000_000})
        seen = []
        nodes = tree["roots"]
        while nodes:
            assert len(nodes) == 1
            seen.append(nodes[0]["entry"]["id"] if "entry" in nodes[0] else nodes[0]["id"])
            nodes = nodes[0]["children"]
        assert seen == ids
        # the connection is still usable afterwards
        assert client.request("session/view", {"session": handle, "limit": 5})["total"] >= count


def test_pure_python_fallback_decodes_like_the_stdlib() -> None:
    # Python 3.12+ caps the C decoder's recursion; the client then uses the pure-Python scanner.
    from sessiontree.client import _py_loads

    bodies = [
        b'{"a":[1,2.5,-3e2,{"b":null,"c":true,"d":false}],"s":"\\u00e9\\ud800x\\n"}',
        b'{"c":' * 150 + b'"\xc3\xa9"' + b"}" * 150,
        b"[]",
    ]
    for body in bodies:
        assert _py_loads(body) == json.loads(body)
    with pytest.raises(ValueError):
        _py_loads(b'{"a":')
