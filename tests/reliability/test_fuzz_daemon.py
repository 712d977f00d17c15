"""Fuzzing of the daemon: thousands of malformed messages, then it still answers correctly.

Messages are generated from the protocol package's METHOD_TO_TYPES: for each request
method, params that miss a required field, give a field a wrong JSON type, are not an
object at all, name an unknown or closed session handle, carry huge strings, deep nesting
or extra fields; plus unknown methods and bodies that are not JSON or not UTF-8. Each
class of message has a known expected error code; a request with plausible params may
succeed or fail with an application error, but never with an internal error (-32603).
"""

from __future__ import annotations

import os
import random
import time
import types as pytypes
import typing
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

import attrs
import pytest
from sessiontree.core.format.jsonl import parse_jsonl_lenient
from sessiontree_protocol import types as ptypes
from sessiontree_protocol.types import METHOD_TO_TYPES

from .helpers import chain, write_session
from .rawlsp import RawLsp

N_MESSAGES = 3000
APP_CODES = {-32001, -32002, -32003, -32004, -32005, -32006, -32007, -32602}
NOTIFICATIONS = {name for name in METHOD_TO_TYPES if "/did" in name}
REQUESTS = sorted(set(METHOD_TO_TYPES) - NOTIFICATIONS)


def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls, globalns=vars(ptypes))


def json_kinds(tp: Any) -> set[str]:
    """The JSON kinds a field of this type accepts."""
    if tp is Any:
        return {"string", "number", "boolean", "array", "object", "null"}
    if tp is str:
        return {"string"}
    if tp is bool:
        return {"boolean"}
    if tp in (int, float):
        return {"number"}
    if tp is type(None):
        return {"null"}
    origin = get_origin(tp)
    if origin in (typing.Union, pytypes.UnionType):
        out: set[str] = set()
        for a in get_args(tp):
            out |= json_kinds(a)
        return out
    if origin is Literal:
        return {"string"} if all(isinstance(a, str) for a in get_args(tp)) else set()
    if origin is list:
        return {"array"}
    if origin is dict or attrs.has(tp):
        return {"object"}
    return {"string", "number", "boolean", "array", "object", "null"}


WRONG = {"string": "not-that", "number": 7, "boolean": True, "array": ["x"], "object": {"k": 1}}


def fields_of(cls: type) -> list[tuple[str, Any, bool]]:
    """(wire name, type, required) of an attrs params class."""
    from sessiontree_protocol.converters import camel

    hints = _hints(cls)
    return [(camel(f.name), hints[f.name], f.default is attrs.NOTHING) for f in attrs.fields(cls)]


class Ctx:
    def __init__(self, tmp: Path, handle: str, closed: str, path: str, ids: list[str]) -> None:
        self.tmp, self.handle, self.closed, self.path, self.ids = tmp, handle, closed, path, ids


def plausible(name: str, tp: Any, ctx: Ctx, rng: random.Random) -> Any:
    """A value of the right JSON type, chosen to make the call meaningful."""
    kinds = json_kinds(tp)
    origin = get_origin(tp)
    lit = [a for a in get_args(tp) if isinstance(a, str)] if origin is Literal else []
    if origin in (typing.Union, pytypes.UnionType):
        for a in get_args(tp):
            if get_origin(a) is Literal and all(isinstance(x, str) for x in get_args(a)):
                lit = list(get_args(a))
    if lit:
        return rng.choice(lit)
    if "string" in kinds:
        if name == "session":
            return ctx.handle
        if name in ("path", "sourcePath"):
            return ctx.path
        if name in ("cwd", "sessionDir"):
            return str(ctx.tmp / "proj")
        if name.endswith("Id") or name == "id":
            return rng.choice([*ctx.ids, "deadbeef", "../../etc/passwd"])
        return rng.choice(["fuzz", "", "é✓\u0000", "x" * rng.randrange(0, 5000)])
    if "boolean" in kinds:
        return rng.random() < 0.5
    if "number" in kinds:
        return rng.choice([0, 1, 3, 10**6])
    if "array" in kinds:
        item = _list_item_type(tp)
        if item is not None and attrs.has(item):
            # a list of objects (session/restore's hashes): objects of that class, plausible too
            return [
                {name: plausible(name, ftp, ctx, rng) for name, ftp, _req in fields_of(item)}
                for _ in range(rng.choice([0, 1, 2]))
            ]
        return rng.choice([[], ["rule-a"], ["a", "b"]])
    if "object" in kinds:
        return rng.choice(
            [
                {"type": "custom", "customType": "fuzz", "data": {"n": 1}},
                {"type": "message", "message": {"role": "user", "content": "fuzz", "timestamp": 1}},
                {"type": "thinking_level_change", "thinkingLevel": "high"},
            ]
        )
    return None


def _list_item_type(tp: Any) -> Any:
    """The element type of ``list[X]`` (inside an optional union too), or None."""
    for t in (tp, *get_args(tp)):
        if get_origin(t) is list and get_args(t):
            return get_args(t)[0]
    return None


def wrong_value(tp: Any, rng: random.Random) -> Any:
    ok = json_kinds(tp)
    choices = [k for k in WRONG if k not in ok]
    return WRONG[rng.choice(choices)] if choices else None


def deep(n: int) -> str:
    return "[" * n + "]" * n


def generate(ctx: Ctx, rng: random.Random, n: int) -> list[tuple[str, bytes, set[int] | None, str]]:
    """(class, raw JSON body with id placeholder, expected codes or None for 'any app result')."""
    import json

    out: list[tuple[str, bytes, set[int] | None, str]] = []
    for _ in range(n):
        method = rng.choice(REQUESTS)
        params_cls = METHOD_TO_TYPES[method][0]
        flds = fields_of(params_cls)
        base = {name: plausible(name, tp, ctx, rng) for name, tp, _req in flds}
        required = [f for f in flds if f[2]]
        kind = rng.choices(
            [
                "unknown-method",
                "not-object",
                "missing",
                "wrong-type",
                "unknown-handle",
                "closed-handle",
                "plausible",
                "extra",
                "huge",
                "nested",
                "bad-json",
                "bad-utf8",
            ],
            weights=[6, 6, 14, 18, 10, 6, 20, 8, 4, 4, 2, 2],
        )[0]
        expect: set[int] | None
        params: Any = dict(base)
        field = ""
        if kind == "unknown-method":
            method = rng.choice(["session/nope", "session/", "$/x", "", "session/open/x", "workspace/frob"])
            expect = {-32601}
        elif kind == "not-object":
            if not required:
                kind = "plausible"
                expect = None
            else:
                params = rng.choice([[1, 2], "params", 42, True])
                expect = {-32602}
        elif kind == "missing":
            if not required:
                kind, expect = "plausible", None
            else:
                field = rng.choice(required)[0]
                del params[field]
                expect = {-32602}
        elif kind == "wrong-type":
            name, tp, _r = rng.choice(flds)
            value = wrong_value(tp, rng)
            if value is None:
                kind, expect = "plausible", None
            else:
                params[name] = value
                field = name
                expect = {-32602}
        elif kind in ("unknown-handle", "closed-handle"):
            if "session" not in base:
                kind, expect = "plausible", None
            else:
                params["session"] = (
                    ctx.closed if kind == "closed-handle" else rng.choice(["nope", "", "0" * 300])
                )
                expect = {-32001}
        elif kind == "extra":
            params["zzExtra"] = {"nested": [1, 2, {"x": None}]}
            expect = None
        elif kind == "huge":
            str_fields = [f for f in flds if "string" in json_kinds(f[1]) and f[0] != "session"]
            if not str_fields:
                kind, expect = "plausible", None
            else:
                params[rng.choice(str_fields)[0]] = "h" * rng.choice([100_000, 2_000_000])
                expect = None
        elif kind == "nested":
            name, tp, _r = rng.choice(flds)
            params[name] = "@DEEP@"
            expect = None
        else:
            expect = None
        if kind == "plausible":
            expect = None
        if method == "session/close" and expect is None and params.get("session") == ctx.handle:
            # keep the session the other messages address open
            params["session"], expect = ctx.closed, {-32001}
        msg = {"jsonrpc": "2.0", "id": "@ID@", "method": method, "params": params}
        body = json.dumps(msg).encode()
        if kind == "nested":
            depth = rng.choice([50, 890, 1_010, 5_000, 100_000])
            body = body.replace(b'"@DEEP@"', deep(depth).encode())
            # JSON that deep may be refused as a whole (-32700) or reach the handler
            expect = None if depth <= 890 else {-32700, -32600}
        elif kind == "bad-json":
            body = body[: rng.randrange(1, len(body))]
            expect = {-32700}
        elif kind == "bad-utf8":
            body = body.replace(b'"2.0"', b'"2.0\xff\xfe"', 1)
            expect = {-32700}
        out.append((kind, body, expect, field))
    return out


@pytest.fixture
def daemon(tmp_path: Path) -> Any:
    agent = tmp_path / "agent"
    (tmp_path / "proj").mkdir()
    agent.mkdir()
    d = RawLsp(
        env={
            "HOME": str(tmp_path),
            "PI_CODING_AGENT_DIR": str(agent),
            "SESSIONTREE_STATE_DIR": str(tmp_path / "state"),
        }
    )
    try:
        res = d.initialize({"agentDir": str(agent), "allowedRoots": [str(tmp_path)], "watch": False})
        assert "result" in res, res
        yield d
    finally:
        d.close()


def _open(d: RawLsp, path: Path) -> dict[str, Any]:
    res = d.request("session/open", {"path": str(path)})
    assert "result" in res, res
    return res["result"]


@pytest.mark.timeout(120)
def test_thousands_of_malformed_requests(daemon: RawLsp, tmp_path: Path) -> None:
    d = daemon
    f = tmp_path / "proj" / "s.jsonl"
    entries = chain(30, seed=5)
    write_session(f, entries)
    handle = _open(d, f)["session"]
    g = tmp_path / "proj" / "closed.jsonl"
    write_session(g, chain(3, seed=6))
    closed = _open(d, g)["session"]
    assert "result" in d.request("session/close", {"session": closed})
    ctx = Ctx(tmp_path, handle, closed, str(f), [e["id"] for e in entries[1:]])

    rng = random.Random(int(os.environ.get("FUZZ_SEED", "4242")))
    msgs = generate(ctx, rng, N_MESSAGES)
    t0 = time.monotonic()
    failures: list[str] = []
    counts: dict[str, int] = {}
    batch = 50
    rid = 0
    for start in range(0, len(msgs), batch):
        pending: dict[int, tuple[str, bytes, set[int] | None, str]] = {}
        for kind, body, expect, field in msgs[start : start + batch]:
            rid += 1
            counts[kind] = counts.get(kind, 0) + 1
            raw = body.replace(b'"@ID@"', str(rid).encode())
            pending[rid] = (kind, raw, expect, field)
            d.write(RawLsp.frame(raw))
        # A valid request after the batch: once it is answered, every message before it
        # has been read and dispatched; slower handlers get a short grace period.
        sentinel = f"sentinel-{start}"
        d.send({"jsonrpc": "2.0", "id": sentinel, "method": "session/labels", "params": {"session": handle}})
        answered: set[int] = set()
        null_answers = 0
        sentinel_seen = False
        deadline = time.monotonic() + 30
        while len(answered) + null_answers < len(pending) or not sentinel_seen:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            try:
                m = d.wait_for(lambda m: "method" not in m, timeout=left)
            except TimeoutError:
                break
            mid = m.get("id")
            if mid == sentinel:
                sentinel_seen = True
                if "result" not in m:
                    failures.append(f"the sentinel request failed: {m}")
                deadline = min(deadline, time.monotonic() + 5)
                continue
            if mid is None:
                null_answers += 1
                if m.get("error", {}).get("code") not in (-32700, -32600):
                    failures.append(f"null-id answer with a strange error: {m}")
                continue
            if mid not in pending:
                failures.append(f"answer to an unknown id: {str(m)[:300]}")
                continue
            answered.add(mid)
            kind, raw, expect, field = pending[mid]
            err = m.get("error")
            if err is not None:
                code = err.get("code")
                got_field = str((err.get("data") or {}).get("field", ""))
                if expect is not None and code not in expect:
                    failures.append(
                        f"{kind}: expected {expect}, got {code} {err.get('message')!r} for {raw[:300]!r}"
                    )
                elif expect is None and code not in APP_CODES:
                    failures.append(f"{kind}: internal error {code} {err.get('message')!r} for {raw[:300]!r}")
                elif kind in ("missing", "wrong-type") and field and got_field.split(".")[0] != field:
                    failures.append(f"{kind}: data.field {err.get('data')} does not name {field}")
            elif expect is not None:
                failures.append(f"{kind}: expected error {expect}, got a result for {raw[:300]!r}")
        if not sentinel_seen:
            failures.append(f"batch {start}: the daemon stopped answering")
        unanswered = [pending[i] for i in pending if i not in answered]
        # requests whose body could not be parsed are answered with id null instead
        if len(unanswered) > null_answers:
            for kind, raw, _e, _f in unanswered[:5]:
                failures.append(f"{kind}: no answer for {raw[:200]!r}")
        assert d.alive(), d.stderr()[-3000:]
        if len(failures) > 30:
            break
    elapsed = time.monotonic() - t0
    assert not failures, f"{len(failures)} failures, e.g.:\n" + "\n".join(failures[:30])

    # still answering correctly afterwards, and nothing on disk was lost
    fresh = tmp_path / "proj" / "fresh.jsonl"
    fresh_entries = chain(8, seed=9)
    write_session(fresh, fresh_entries)
    h2 = _open(d, fresh)["session"]
    res = d.request("session/entries", {"session": h2})
    assert "result" in res, res
    assert [e["id"] for e in res["result"]["entries"]] == [e["id"] for e in fresh_entries[1:]]
    on_disk = {v.get("id") for v in parse_jsonl_lenient(f.read_bytes()).values[1:] if isinstance(v, dict)}
    assert {e["id"] for e in entries[1:]} <= on_disk
    assert d.request("session/nope", {})["error"]["code"] == -32601
    assert d.request("session/tree", {"session": closed})["error"]["code"] == -32001
    assert sum(counts.values()) == N_MESSAGES
    print("fuzzed messages by class:", dict(sorted(counts.items())), f"in {elapsed:.1f}s")
    assert elapsed < 60, f"fuzzing took {elapsed:.1f}s"


_F = RawLsp.frame

# name -> (raw bytes, expected error code of an answer with id null or the case's id, or None)
FRAMING_CASES: dict[str, tuple[bytes, int | None]] = {
    "bad content-length": (b"Content-Length: abc\r\n\r\n{}", None),
    "negative content-length": (b"Content-Length: -5\r\n\r\n", None),
    "missing content-length": (
        b'Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n{"jsonrpc":"2.0","id":1,"method":"x"}',
        None,
    ),
    "garbage between messages": (b"garbage garbage\r\n\x00\xff\xfe\r\nmore garbage without newline", None),
    "lower-case header, bare newlines": (
        b'content-length: 40\n\n{"jsonrpc":"2.0","id":2,"method":"nope"}',
        -32601,
    ),
    "header without body": (b"Content-Length: 10\r\n\r\n", -32700),
    "truncated body": (
        b'Content-Length: 200\r\n\r\n{"jsonrpc":"2.0","id":77,"method":"session/list"',
        -32700,
    ),
    "body not json": (_F(b"hello world"), -32700),
    "body invalid utf8": (_F(b'"\xff\xfe\xfd"'), -32700),
    "body a json array": (_F(b"[]"), -32600),
    "body a json number": (_F(b"7"), -32600),
    "request without method": (_F(b'{"jsonrpc":"2.0","id":9}'), -32600),
    "method not a string": (_F(b'{"jsonrpc":"2.0","id":10,"method":5}'), -32600),
    "id an object": (_F(b'{"jsonrpc":"2.0","id":{"a":1},"method":"session/list","params":{}}'), -32600),
    "request without params": (_F(b'{"jsonrpc":"2.0","id":11,"method":"session/tree"}'), -32602),
    "nested 100000 deep": (
        _F(b'{"jsonrpc":"2.0","id":12,"method":"x","params":' + b"[" * 100_000 + b"]" * 100_000 + b"}"),
        -32700,
    ),
    "nested 1010 deep": (
        _F(b'{"jsonrpc":"2.0","id":13,"method":"x","params":' + b"[" * 1010 + b"]" * 1010 + b"}"),
        -32600,
    ),
    "body over maxRequestBytes": (
        _F(
            b'{"jsonrpc":"2.0","id":55,"method":"session/open","params":{"path":"' + b"x" * (2 << 20) + b'"}}'
        ),
        -32600,
    ),
}


@pytest.mark.timeout(120)
def test_malformed_framing_never_kills_the_daemon(tmp_path: Path) -> None:
    """Every case in a row on one daemon: after each one it answers a real request."""
    agent = tmp_path / "agent"
    agent.mkdir()
    env = {
        "HOME": str(tmp_path),
        "PI_CODING_AGENT_DIR": str(agent),
        "SESSIONTREE_STATE_DIR": str(tmp_path / "st"),
    }
    d = RawLsp(env=env)
    survived = 0
    try:
        opts = {
            "agentDir": str(agent),
            "allowedRoots": [str(tmp_path)],
            "watch": False,
            "maxRequestBytes": 1 << 20,
        }
        assert "result" in d.initialize(opts)
        for name, (raw, code) in FRAMING_CASES.items():
            d.write(raw)
            if name in ("truncated body", "header without body"):
                # the announced length swallows what follows: blank lines end it
                d.write(b"\r\n" * 120)
            rid = d.next_id()
            d.send({"jsonrpc": "2.0", "id": rid, "method": "session/list", "params": {"cwd": str(tmp_path)}})
            try:
                answered = d.response(rid, timeout=10)
            except TimeoutError:
                answered = None
            assert d.alive(), f"{name}: the daemon died:\n{d.stderr()[-3000:]}"
            assert answered is not None and "result" in answered, f"{name}: no answer afterwards"
            if code is not None:
                err = d.wait_for(lambda m: "error" in m, timeout=5)["error"]
                assert err["code"] == code, (name, err)
            d.backlog.clear()
            survived += 1
    finally:
        d.close()
    assert survived == len(FRAMING_CASES)


TCP_TOKEN = "fuzz-daemon-tcp-token-0123456789"


@pytest.mark.timeout(60)
def test_malformed_framing_over_tcp(tmp_path: Path) -> None:
    """The TCP transport applies the same checks: every case answered, the stream in sync."""
    import json
    import socket
    import subprocess
    import sys

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {
        **os.environ,
        "HOME": str(tmp_path),
        "PI_CODING_AGENT_DIR": str(tmp_path),
        "SESSIONTREE_STATE_DIR": str(tmp_path / "st"),
        "SESSIONTREE_TOKEN": TCP_TOKEN,
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "sessiontree", "serve", "--tcp", f"127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                sock = socket.create_connection(("127.0.0.1", port), timeout=10)
                break
            except OSError:
                assert time.monotonic() < deadline, "the TCP daemon did not start"
                time.sleep(0.1)
        buf = b""

        def read_message() -> dict[str, Any]:
            nonlocal buf
            while b"\r\n\r\n" not in buf:
                buf += sock.recv(65536) or b""
            head, _, rest = buf.partition(b"\r\n\r\n")
            length = int(
                next(h.split(b":")[1] for h in head.split(b"\r\n") if h.lower().startswith(b"content-length"))
            )
            while len(rest) < length:
                rest += sock.recv(65536)
            buf = rest[length:]
            return json.loads(rest[:length])

        def answer(rid: int) -> dict[str, Any]:
            while True:
                m = read_message()
                if m.get("id") == rid and "method" not in m:
                    return m

        init = {
            "processId": None,
            "capabilities": {},
            "initializationOptions": {
                "allowedRoots": [str(tmp_path)],
                "watch": False,
                "maxRequestBytes": 4096,
                "token": TCP_TOKEN,
            },
        }
        sock.sendall(
            RawLsp.frame(
                json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}).encode()
            )
        )
        assert "result" in answer(1)
        sock.sendall(RawLsp.frame(b'{"jsonrpc":"2.0","method":"initialized","params":{}}'))
        errors: list[dict[str, Any]] = []
        cases = [
            (b"garbage without newline", None),
            (RawLsp.frame(b"not json"), -32700),
            (RawLsp.frame(b'{"jsonrpc":"2.0","id":5,"method":"session/tree"}'), -32602),
            (
                RawLsp.frame(b'{"jsonrpc":"2.0","id":6,"method":"x","params":{"q":"' + b"q" * 5000 + b'"}}'),
                -32600,
            ),
        ]
        rid = 100
        for raw, _code in cases:
            sock.sendall(raw)
            rid += 1
            sock.sendall(
                RawLsp.frame(
                    json.dumps(
                        {
                            "jsonrpc": "2.0",
                            "id": rid,
                            "method": "session/list",
                            "params": {"cwd": str(tmp_path)},
                        }
                    ).encode()
                )
            )
            while True:
                m = read_message()
                if m.get("id") == rid and "method" not in m:
                    assert "result" in m, m
                    break
                if "error" in m:
                    errors.append(m["error"])
        assert [e["code"] for e in errors] == [c for _r, c in cases if c is not None]
        sock.close()
    finally:
        proc.kill()
        proc.wait(timeout=10)
