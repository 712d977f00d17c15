"""initializationOptions: each bad option gives a warning and keeps its default.

The table pins the daemon's reading of every option (value taken, default kept, the exact
warning); `parse_options` is what `initialize` calls.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import attrs
import pytest
from sessiontree.lsp.config import ServerConfig, parse_options

DEFAULTS = attrs.asdict(ServerConfig())


def _home(value: Any) -> Any:
    if isinstance(value, str):
        return os.path.expanduser(value)
    if isinstance(value, list):
        return [_home(v) for v in value]
    return value


CASES: list[tuple[Any, dict[str, Any], list[str]]] = [
    (None, {}, []),
    ([], {}, ["initializationOptions must be an object, got list; using defaults"]),
    ("x", {}, ["initializationOptions must be an object, got str; using defaults"]),
    (5, {}, ["initializationOptions must be an object, got int; using defaults"]),
    ({}, {}, []),
    ({"agentDir": "~/a"}, {"agent_dir": "~/a"}, []),
    (
        {"agentDir": ""},
        {},
        ["initializationOptions.agentDir: expected a directory path, got ''; using the default"],
    ),
    (
        {"agentDir": 5},
        {},
        ["initializationOptions.agentDir: expected a directory path, got 5; using the default"],
    ),
    ({"agentDir": None}, {}, []),
    ({"allowedRoots": "/r"}, {"allowed_roots": ["/r"]}, []),
    ({"allowedRoots": ["/a", "~/b"]}, {"allowed_roots": ["/a", "~/b"]}, []),
    (
        {"allowedRoots": []},
        {},
        [
            "initializationOptions.allowedRoots: expected a non-empty list of directory paths, got []; using the default"
        ],
    ),
    (
        {"allowedRoots": ["/a", ""]},
        {},
        [
            "initializationOptions.allowedRoots: expected a non-empty list of directory paths, got ['/a', '']; using the default"
        ],
    ),
    (
        {"allowedRoots": ["/a", 3]},
        {},
        [
            "initializationOptions.allowedRoots: expected a non-empty list of directory paths, got ['/a', 3]; using the default"
        ],
    ),
    (
        {"allowedRoots": ""},
        {},
        [
            "initializationOptions.allowedRoots: expected a non-empty list of directory paths, got ''; using the default"
        ],
    ),
    (
        {"allowedRoots": {"a": 1}},
        {},
        [
            "initializationOptions.allowedRoots: expected a non-empty list of directory paths, got {'a': 1}; using the default"
        ],
    ),
    ({"watch": False}, {"watch": False}, []),
    (
        {"watch": "no"},
        {},
        ["initializationOptions.watch: expected true or false, got 'no'; using the default"],
    ),
    ({"watch": 0}, {}, ["initializationOptions.watch: expected true or false, got 0; using the default"]),
    ({"watch": None}, {}, []),
    ({"logLevel": "DEBUG"}, {"log_level": "debug"}, []),
    ({"logLevel": "warning"}, {"log_level": "warning"}, []),
    (
        {"logLevel": "loud"},
        {},
        [
            "initializationOptions.logLevel: expected debug or info or warning or error, got 'loud'; using the default"
        ],
    ),
    (
        {"logLevel": 3},
        {},
        [
            "initializationOptions.logLevel: expected debug or info or warning or error, got 3; using the default"
        ],
    ),
    ({"summarizerCommand": "echo hi"}, {"summarizer_command": ["/bin/sh", "-c", "echo hi"]}, []),
    (
        {"summarizerCommand": "  "},
        {},
        [
            "initializationOptions.summarizerCommand: expected a shell command string or a non-empty argv list, got '  '; using the default"
        ],
    ),
    ({"summarizerCommand": ["a", "b"]}, {"summarizer_command": ["a", "b"]}, []),
    (
        {"summarizerCommand": []},
        {},
        [
            "initializationOptions.summarizerCommand: expected a shell command string or a non-empty argv list, got []; using the default"
        ],
    ),
    (
        {"summarizerCommand": ["a", 1]},
        {},
        [
            "initializationOptions.summarizerCommand: expected a shell command string or a non-empty argv list, got ['a', 1]; using the default"
        ],
    ),
    ({"summarizerCommand": ["a", ""]}, {"summarizer_command": ["a", ""]}, []),
    (
        {"summarizerCommand": 7},
        {},
        [
            "initializationOptions.summarizerCommand: expected a shell command string or a non-empty argv list, got 7; using the default"
        ],
    ),
    ({"summarizerTimeout": 5}, {"summarizer_timeout": 5.0}, []),
    ({"summarizerTimeout": 2.5}, {"summarizer_timeout": 2.5}, []),
    (
        {"summarizerTimeout": 0},
        {},
        [
            "initializationOptions.summarizerTimeout: expected a positive number of seconds, got 0; using the default"
        ],
    ),
    (
        {"summarizerTimeout": -1},
        {},
        [
            "initializationOptions.summarizerTimeout: expected a positive number of seconds, got -1; using the default"
        ],
    ),
    (
        {"summarizerTimeout": True},
        {},
        [
            "initializationOptions.summarizerTimeout: expected a positive number of seconds, got True; using the default"
        ],
    ),
    (
        {"summarizerTimeout": "5"},
        {},
        [
            "initializationOptions.summarizerTimeout: expected a positive number of seconds, got '5'; using the default"
        ],
    ),
    ({"preindex": 0}, {"preindex": 0}, []),
    ({"preindex": 20}, {"preindex": 20}, []),
    (
        {"preindex": 21},
        {},
        ["initializationOptions.preindex: expected an integer from 0 to 20, got 21; using the default"],
    ),
    (
        {"preindex": True},
        {},
        ["initializationOptions.preindex: expected an integer from 0 to 20, got True; using the default"],
    ),
    (
        {"preindex": "many"},
        {},
        ["initializationOptions.preindex: expected an integer from 0 to 20, got 'many'; using the default"],
    ),
    ({"maxRequestBytes": 4096}, {"max_request_bytes": 4096}, []),
    (
        {"maxRequestBytes": 1023},
        {},
        [
            "initializationOptions.limits.maxRequestBytes: expected an integer >= 1024, got 1023; using the default"
        ],
    ),
    ({"maxRequestBytes": 1024}, {"max_request_bytes": 1024}, []),
    (
        {"maxRequestBytes": True},
        {},
        [
            "initializationOptions.limits.maxRequestBytes: expected an integer >= 1024, got True; using the default"
        ],
    ),
    (
        {"maxRequestBytes": 5000.0},
        {},
        [
            "initializationOptions.limits.maxRequestBytes: expected an integer >= 1024, got 5000.0; using the default"
        ],
    ),
    (
        {"maxRequestBytes": "big"},
        {},
        [
            "initializationOptions.limits.maxRequestBytes: expected an integer >= 1024, got 'big'; using the default"
        ],
    ),
    ({"limits": {"maxRequestBytes": 2048}}, {"max_request_bytes": 2048}, []),
    (
        {"limits": {"maxRequestBytes": 10}},
        {},
        [
            "initializationOptions.limits.maxRequestBytes: expected an integer >= 1024, got 10; using the default"
        ],
    ),
    ({"limits": {}}, {}, []),
    ({"limits": 5}, {}, ["initializationOptions.limits: expected an object, got 5; using the defaults"]),
    ({"limits": [1]}, {}, ["initializationOptions.limits: expected an object, got [1]; using the defaults"]),
    # limits.maxRequestBytes, when the key is there (even null), wins over the top-level spelling
    ({"limits": {"maxRequestBytes": 2048}, "maxRequestBytes": 4096}, {"max_request_bytes": 2048}, []),
    ({"limits": {"maxRequestBytes": None}, "maxRequestBytes": 4096}, {}, []),
    ({"limits": {}, "maxRequestBytes": 4096}, {"max_request_bytes": 4096}, []),
    (
        {"limits": 5, "maxRequestBytes": 4096},
        {"max_request_bytes": 4096},
        ["initializationOptions.limits: expected an object, got 5; using the defaults"],
    ),
    ({"stateDir": "/tmp/st"}, {"state_dir": "/tmp/st"}, []),
    ({"stateDir": "~/st"}, {"state_dir": "~/st"}, []),
    (
        {"stateDir": ""},
        {},
        ["initializationOptions.stateDir: expected a directory path, got ''; using the default"],
    ),
    (
        {"stateDir": 1},
        {},
        ["initializationOptions.stateDir: expected a directory path, got 1; using the default"],
    ),
    ({"unknown": 1, "watch": False}, {"watch": False}, []),
    (
        {
            "agentDir": 5,
            "watch": "x",
            "logLevel": "x",
            "stateDir": 2,
            "allowedRoots": 1,
            "summarizerCommand": 1,
            "summarizerTimeout": 0,
            "maxRequestBytes": 1,
        },
        {},
        [
            "initializationOptions.agentDir: expected a directory path, got 5; using the default",
            "initializationOptions.allowedRoots: expected a non-empty list of directory paths, got 1; using the default",
            "initializationOptions.watch: expected true or false, got 'x'; using the default",
            "initializationOptions.logLevel: expected debug or info or warning or error, got 'x'; using the default",
            "initializationOptions.summarizerCommand: expected a shell command string or a non-empty argv list, got 1; using the default",
            "initializationOptions.summarizerTimeout: expected a positive number of seconds, got 0; using the default",
            "initializationOptions.limits.maxRequestBytes: expected an integer >= 1024, got 1; using the default",
            "initializationOptions.stateDir: expected a directory path, got 2; using the default",
        ],
    ),
]


@pytest.mark.parametrize(("raw", "changed", "warnings"), CASES, ids=[repr(c[0])[:60] for c in CASES])
def test_each_option_is_taken_or_warned_about(raw: Any, changed: dict[str, Any], warnings: list[str]) -> None:
    cfg, got = parse_options(raw)
    assert attrs.asdict(cfg) == {**DEFAULTS, **{k: _home(v) for k, v in changed.items()}}
    assert got == warnings


def test_a_state_dir_inside_the_agent_dir_is_refused(tmp_path: Path) -> None:
    agent = tmp_path / "agent"
    cfg, warnings = parse_options({"agentDir": str(agent), "stateDir": str(agent / "state")})
    assert cfg.agent_dir == str(agent)
    assert cfg.state_dir is None
    assert len(warnings) == 1
    assert warnings[0].startswith(
        f"initializationOptions.stateDir: {agent / 'state'} is inside the agent directory"
    )
    assert warnings[0].endswith("using the default")
    cfg, warnings = parse_options({"agentDir": str(agent), "stateDir": str(tmp_path / "elsewhere")})
    assert (cfg.state_dir, warnings) == (str(tmp_path / "elsewhere"), [])


def test_the_options_do_not_change_the_raw_value() -> None:
    raw = {"allowedRoots": ["~/a"], "limits": {"maxRequestBytes": 4096}, "summarizerCommand": ["x"]}
    before = repr(raw)
    cfg, _ = parse_options(raw)
    assert repr(raw) == before
    assert cfg.allowed_roots is not raw["allowedRoots"]


def test_a_path_option_with_a_nul_byte_keeps_its_default() -> None:
    cfg, warnings = parse_options(
        {"agentDir": "/a\x00", "allowedRoots": ["/ok", "/b\x00", 3], "stateDir": "\x00", "watch": False}
    )
    assert (cfg.agent_dir, cfg.allowed_roots, cfg.state_dir, cfg.watch) == (None, None, None, False)
    assert warnings == [
        f"initializationOptions.{name}: a path cannot contain a NUL byte; using the default"
        for name in ("agentDir", "allowedRoots", "stateDir")
    ]


def test_every_option_is_documented_and_read_by_its_own_key() -> None:
    keys = [f.metadata["key"] for f in attrs.fields(ServerConfig)]
    assert len(set(keys)) == len(keys)
    assert all(f.metadata["doc"] for f in attrs.fields(ServerConfig))
