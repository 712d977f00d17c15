"""The wire, adversarially: no message kills the daemon, every message gets its documented answer.

A seeded crash-by-bytes fuzzer sends thousands of messages built to break the reading
side (lone surrogates in methods, params keys and values and ids; invalid UTF-8, including
UTF-8-encoded surrogates; `NaN`/`Infinity`; numbers beyond a double; deep nesting;
duplicate keys; byte-order marks; notifications sent with an id; envelopes that are not
requests) to one real daemon over stdio. Each message carries the answer it must get
(docs/protocol.md "Errors", docs/reliability.md "The wire"), and afterwards the daemon
still answers a normal request. Then the protocol edges one by one: lone surrogates,
notifications with an id, requests after `shutdown`, the exit code, NUL bytes in paths.
"""

from __future__ import annotations

import collections
import json
import os
import random
import time
from pathlib import Path
from typing import Any

import pytest

from .helpers import chain, write_session
from .rawlsp import RawLsp

APP_CODES = {-32001, -32002, -32003, -32004, -32005, -32006, -32007, -32602}
LONE = ["\ud800", "\udbff", "\udc00", "\udfff", "\ud83d"]  # the last one: half an emoji
# Notifications of LSP and of the protocol (except `exit`, which would end the run when
# sent without an id; with an id it is tried like the others).
NOTIFICATIONS = [
    "initialized",
    "exit",
    "$/cancelRequest",
    "$/setTrace",
    "$/progress",
    "textDocument/didOpen",
    "workspace/didChangeConfiguration",
    "window/workDoneProgress/cancel",
    "session/didChange",
    "session/didNavigate",
    "session/didChangeList",
]


def _env(tmp: Path) -> dict[str, str]:
    return {
        "HOME": str(tmp),
        "PI_CODING_AGENT_DIR": str(tmp / "agent"),
        "SESSIONTREE_STATE_DIR": str(tmp / "state"),
        "XDG_STATE_HOME": str(tmp / "xdg-state"),
        "XDG_CACHE_HOME": str(tmp / "xdg-cache"),
    }


@pytest.fixture
def daemon(tmp_path: Path) -> Any:
    (tmp_path / "agent").mkdir()
    (tmp_path / "proj").mkdir()
    d = RawLsp(env=_env(tmp_path))
    try:
        res = d.initialize(
            {"agentDir": str(tmp_path / "agent"), "allowedRoots": [str(tmp_path)], "watch": False}
        )
        assert "result" in res, res
        yield d
    finally:
        d.close()


def _open(d: RawLsp, path: Path) -> str:
    res = d.request("session/open", {"path": str(path)})
    assert "result" in res, res
    return str(res["result"]["session"])


def _dumps(obj: Any) -> bytes:
    # ensure_ascii: lone surrogates and NUL go out as \\uXXXX escapes, exactly as a
    # JavaScript client's JSON.stringify writes them
    return json.dumps(obj).encode("ascii")


# ------------------------------------------------------------------ the fuzzer

Case = tuple[str, bytes, tuple[Any, ...]]
# expectations: ("error", id, codes, field|None) ("result", id) ("any", id) ("null", code) ("silent",)


class Gen:
    """Messages with the answer each must get."""

    def __init__(self, rng: random.Random, handle: str, tmp: Path) -> None:
        self.rng = rng
        self.handle = handle
        self.tmp = tmp
        self.n = 0

    def mid(self) -> Any:
        self.n += 1
        return self.n if self.rng.random() < 0.7 else f"f-{self.n}"

    def lone(self) -> str:
        return self.rng.choice(LONE)

    def text(self) -> str:
        """A string with a lone surrogate somewhere in it."""
        r = self.rng
        return (
            r.choice(["", "abc", "é✓ ", "x" * r.randrange(0, 300)])
            + self.lone()
            + r.choice(["", "tail", "😀"])
        )

    def nested_with_lone(self) -> tuple[Any, str]:
        """A params value holding one lone surrogate at a random place, and its field path."""
        r = self.rng
        depth = r.randrange(0, 5)
        path = ""
        leaf: Any = self.text()
        lone_key = r.random() < 0.25
        if lone_key:
            key = "k" + self.lone() + "y"
            leaf = {"fine": 1, key: r.choice([1, "v", None])}
            inner_field = f"k\\u{ord(key[1]):04x}y"
        else:
            inner_field = ""
        steps: list[str] = []
        for _ in range(depth):
            if r.random() < 0.5:
                leaf = [0, "ok", leaf]
                steps.append("[2]")
            else:
                name = r.choice(["entry", "message", "content", "data", "x"])
                leaf = {"before": "ok", name: leaf}
                steps.append(name)
        for step in reversed(steps):
            if step.startswith("["):
                path += step
            else:
                path = f"{path}.{step}" if path else step
        if inner_field:
            path = f"{path}.{inner_field}" if path else inner_field
        return leaf, path

    def case(self) -> Case:
        r = self.rng
        kind = r.choices(
            [
                "lone-method",
                "lone-param",
                "lone-top-field",
                "lone-id",
                "lone-notification",
                "lone-jsonrpc",
                "valid-pair",
                "invalid-utf8",
                "utf8-surrogate-bytes",
                "non-json-token",
                "number-beyond-double",
                "big-int-param",
                "big-int-id",
                "deep",
                "duplicate-keys",
                "notification-with-id",
                "bad-id",
                "not-object",
                "jsonrpc-inside-params",
                "extra-envelope-keys",
                "params-array",
                "nul-path",
                "bom",
                "bad-jsonrpc",
                "no-method",
                "stray-response",
                "truncated",
                "plausible",
                "unknown-method",
                "invalid-notification",
                "harmless-notification",
            ],
            weights=[
                6,
                10,
                5,
                5,
                4,
                2,
                3,
                4,
                3,
                4,
                3,
                2,
                2,
                4,
                3,
                5,
                3,
                3,
                2,
                2,
                2,
                3,
                2,
                2,
                2,
                2,
                3,
                6,
                2,
                2,
                2,
            ],
        )[0]
        h = self.handle
        if kind == "lone-method":
            i = self.mid()
            body = _dumps(
                {"jsonrpc": "2.0", "id": i, "method": r.choice(["x/", "session/", ""]) + self.text()}
            )
            return kind, body, ("error", i, {-32601}, None)
        if kind == "lone-param":
            i = self.mid()
            value, path = self.nested_with_lone()
            method = r.choice(
                ["session/labels", "session/view", "session/append", "session/list", "session/open"]
            )
            name = r.choice(["zz", "entry", "data"])
            params = {"session": h, name: value}
            field = f"{name}.{path}" if path and not path.startswith("[") else f"{name}{path}"
            body = _dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params})
            return kind, body, ("error", i, {-32602}, field)
        if kind == "lone-top-field":
            i = self.mid()
            method, name = r.choice(
                [
                    ("session/open", "path"),
                    ("session/list", "cwd"),
                    ("session/list", "query"),
                    ("session/labels", "session"),
                    ("session/setName", "name"),
                    ("session/entry", "id"),
                ]
            )
            params: dict[str, Any] = {"session": h, name: str(self.tmp / "proj") + "/" + self.text()}
            body = _dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params})
            return kind, body, ("error", i, {-32602}, name)
        if kind == "lone-id":
            i = f"id-{self.n}-{self.lone()}"
            self.n += 1
            body = _dumps({"jsonrpc": "2.0", "id": i, "method": "session/labels", "params": {"session": h}})
            return kind, body, ("result", i)
        if kind == "lone-notification":
            body = _dumps(
                {"jsonrpc": "2.0", "method": "session/append", "params": {"session": h, "x": self.text()}}
            )
            return kind, body, ("silent",)
        if kind == "lone-jsonrpc":
            i = self.mid()
            body = _dumps({"jsonrpc": "2.0" + self.lone(), "id": i, "method": "session/labels", "params": {}})
            return kind, body, ("error", i, {-32600}, None)
        if kind == "valid-pair":
            i = self.mid()
            q = r.choice(["\ud83d\ude00", "a\U0001f600b", "\u0000", "\uffff", "\ufeff"])
            body = _dumps(
                {
                    "jsonrpc": "2.0",
                    "id": i,
                    "method": "session/list",
                    "params": {"query": q, "cwd": str(self.tmp)},
                }
            )
            return kind, body, ("result", i)
        if kind == "invalid-utf8":
            i = self.mid()
            raw = _dumps(
                {"jsonrpc": "2.0", "id": i, "method": "session/labels", "params": {"session": h, "q": "@@"}}
            )
            bad = r.choice([b"\xff", b"\xfe\xfd", b"\xc3", b"\xe2\x82", b"\xf8\x88\x80\x80\x80", b"\x80"])
            return kind, raw.replace(b"@@", b"a" + bad + b"b"), ("null", -32700)
        if kind == "utf8-surrogate-bytes":
            i = self.mid()
            raw = _dumps(
                {"jsonrpc": "2.0", "id": i, "method": "session/labels", "params": {"session": h, "q": "@@"}}
            )
            bad = r.choice([b"\xed\xa0\x80", b"\xed\xbf\xbf", b"\xc0\x80", b"\xe0\x80\xaf"])
            return kind, raw.replace(b"@@", bad), ("null", -32700)
        if kind == "non-json-token":
            i = self.mid()
            tok = r.choice([b"NaN", b"Infinity", b"-Infinity"])
            where = r.choice(["id", "param"])
            if where == "id":
                return (
                    kind,
                    b'{"jsonrpc":"2.0","id":' + tok + b',"method":"session/labels"}',
                    ("null", -32700),
                )
            return (
                kind,
                b'{"jsonrpc":"2.0","id":%d,"method":"session/view","params":{"session":"%s","limit":%s}}'
                % (self.n, h.encode(), tok),
                ("null", -32700),
            )
        if kind == "number-beyond-double":
            num = r.choice([b"1e400", b"-1e999", b"9" * 400, b"-" + b"1" * 5000, b"1" * 320 + b".5"])
            self.n += 1
            return (
                kind,
                b'{"jsonrpc":"2.0","id":%d,"method":"session/view","params":{"session":"%s","limit":%s}}'
                % (self.n, h.encode(), num),
                ("null", -32700),
            )
        if kind == "big-int-param":
            i = self.mid()
            body = _dumps(
                {
                    "jsonrpc": "2.0",
                    "id": i,
                    "method": "session/view",
                    "params": {"session": h, "limit": 10**25},
                }
            )
            return kind, body, ("any", i)
        if kind == "big-int-id":
            return (
                kind,
                _dumps({"jsonrpc": "2.0", "id": 10**25, "method": "session/labels"}),
                ("null", -32600),
            )
        if kind == "deep":
            i = self.mid()
            d = r.choice([10, 400, 950, 1000, 2000, 50_000])
            body = b'{"jsonrpc":"2.0","id":%s,"method":"session/labels","params":{"session":"%s","x":%s}}' % (
                _dumps(i),
                h.encode(),
                b"[" * d + b"]" * d,
            )
            if d <= 400:
                return kind, body, ("result", i)
            if d <= 1000:
                return kind, body, ("error", i, {-32600}, None)
            return kind, body, ("null", -32700)
        if kind == "duplicate-keys":
            a, b = self.mid(), self.mid()
            if r.random() < 0.5:
                body = (
                    b'{"jsonrpc":"2.0","id":%s,"id":%s,"method":"session/labels","params":{"session":"%s"}}'
                    % (
                        _dumps(a),
                        _dumps(b),
                        h.encode(),
                    )
                )
                return kind, body, ("result", b)
            body = (
                b'{"jsonrpc":"2.0","id":%s,"method":"session/nope","method":"session/labels",'
                b'"params":{"session":"nope","session":"%s"}}' % (_dumps(a), h.encode())
            )
            return kind, body, ("result", a)
        if kind == "notification-with-id":
            i = self.mid()
            body = _dumps({"jsonrpc": "2.0", "id": i, "method": r.choice(NOTIFICATIONS), "params": {"id": 1}})
            return kind, body, ("error", i, {-32600}, None)
        if kind == "bad-id":
            bad = r.choice([1.5, True, False, {"a": 1}, [1], None, 0.0])
            return (
                kind,
                _dumps({"jsonrpc": "2.0", "id": bad, "method": "session/labels", "params": {}}),
                ("null", -32600),
            )
        if kind == "not-object":
            return kind, r.choice([b"[]", b"7", b'"s"', b"null", b"true", b"[{}]"]), ("null", -32600)
        if kind == "jsonrpc-inside-params":
            i = self.mid()
            inner = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": r.choice(["initialize", "shutdown", "exit"]),
                "params": 5,
            }
            body = _dumps(
                {"jsonrpc": "2.0", "id": i, "method": "session/labels", "params": {"session": h, "x": inner}}
            )
            return kind, body, ("result", i)
        if kind == "extra-envelope-keys":
            i = self.mid()
            msg = {"jsonrpc": "2.0", "id": i, "method": "session/labels", "params": {"session": h}}
            msg[r.choice(["extra", "k" + self.lone(), "result", "error"])] = {"x": [1]}
            return kind, _dumps(msg), ("result", i)
        if kind == "params-array":
            i = self.mid()
            body = _dumps({"jsonrpc": "2.0", "id": i, "method": "session/labels", "params": [h]})
            return kind, body, ("error", i, {-32602}, "")
        if kind == "nul-path":
            i = self.mid()
            method, name, extra = r.choice(
                [
                    ("session/open", "path", {}),
                    ("session/list", "cwd", {}),
                    ("session/recent", "cwd", {}),
                    ("session/create", "cwd", {}),
                    ("session/create", "sessionDir", {"cwd": str(self.tmp / "proj")}),
                    ("session/forkFrom", "sourcePath", {"cwd": str(self.tmp / "proj")}),
                    ("session/doctor", "path", {}),
                ]
            )
            params = {
                **extra,
                name: str(self.tmp / "proj") + r.choice(["/a\u0000b.jsonl", "\u0000", "/\u0000/x"]),
            }
            return (
                kind,
                _dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}),
                ("error", i, {-32602}, name),
            )
        if kind == "bom":
            i = self.mid()
            body = b"\xef\xbb\xbf" + _dumps(
                {"jsonrpc": "2.0", "id": i, "method": "session/labels", "params": {"session": h}}
            )
            return kind, body, ("null", -32700)
        if kind == "bad-jsonrpc":
            i = self.mid()
            msg: dict[str, Any] = {"id": i, "method": "session/labels", "params": {"session": h}}
            v = r.choice(["1.0", 2.0, None, "missing"])
            if v != "missing":
                msg["jsonrpc"] = v
            return kind, _dumps(msg), ("error", i, {-32600}, None)
        if kind == "no-method":
            i = self.mid()
            return kind, _dumps({"jsonrpc": "2.0", "id": i, "params": {}}), ("error", i, {-32600}, None)
        if kind == "stray-response":
            msg = r.choice(
                [
                    {"jsonrpc": "2.0", "id": "zz", "result": 1},
                    {"jsonrpc": "2.0", "id": 424242, "error": "not an object"},
                    {"jsonrpc": "2.0", "id": "zz", "error": {"code": 1, "message": self.text()}},
                ]
            )
            return kind, _dumps(msg), ("silent",)
        if kind == "truncated":
            raw = _dumps(
                {"jsonrpc": "2.0", "id": self.mid(), "method": "session/labels", "params": {"session": h}}
            )
            return kind, raw[: r.randrange(1, len(raw) - 1)], ("null", -32700)
        if kind == "unknown-method":
            i = self.mid()
            return (
                kind,
                _dumps({"jsonrpc": "2.0", "id": i, "method": r.choice(["session/nope", "$/x", "a" * 500])}),
                (
                    "error",
                    i,
                    {-32601},
                    None,
                ),
            )
        if kind == "invalid-notification":
            msg = r.choice(
                [{"jsonrpc": "2.0", "method": 5}, {"jsonrpc": "1.0", "method": "x"}, {"jsonrpc": "2.0"}]
            )
            return kind, _dumps(msg), ("null", -32600)
        if kind == "harmless-notification":
            msg = r.choice(
                [
                    {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": "nope"}},
                    {"jsonrpc": "2.0", "method": "$/setTrace", "params": {"value": "off"}},
                    {
                        "jsonrpc": "2.0",
                        "method": "workspace/didChangeConfiguration",
                        "params": {"settings": None},
                    },
                    {"jsonrpc": "2.0", "method": "$/cancelRequest"},
                    {"jsonrpc": "2.0", "method": "session/didChange", "params": {"x": 1}},
                ]
            )
            return kind, _dumps(msg), ("silent",)
        i = self.mid()
        return (
            "plausible",
            _dumps({"jsonrpc": "2.0", "id": i, "method": "session/labels", "params": {"session": h}}),
            (
                "result",
                i,
            ),
        )


def _check(expect: tuple[Any, ...], msg: dict[str, Any]) -> str | None:
    """Why `msg` is not the answer `expect` describes (None: it is)."""
    kind = expect[0]
    err = msg.get("error")
    if kind == "result":
        return None if "result" in msg else f"expected a result, got {err}"
    if kind == "any":
        if "result" in msg or (err and err.get("code") in APP_CODES):
            return None
        return f"expected a result or an application error, got {err}"
    codes, field = expect[2], expect[3]
    if not err:
        return f"expected error {codes}, got a result"
    if err.get("code") not in codes:
        return f"expected error {codes}, got {err}"
    if field is not None and (err.get("data") or {}).get("field") != field:
        return f"expected data.field {field!r}, got {err}"
    return None


N_FUZZ = 8000


@pytest.mark.timeout(120)
def test_crash_by_bytes_fuzzer(daemon: RawLsp, tmp_path: Path) -> None:
    """Thousands of hostile messages, each answered as documented; the daemon keeps serving."""
    d = daemon
    f = tmp_path / "proj" / "s.jsonl"
    entries = chain(20, seed=3)
    original = write_session(f, entries)
    handle = _open(d, f)
    gen = Gen(random.Random(int(os.environ.get("FUZZ_SEED", "2020"))), handle, tmp_path)
    cases = [gen.case() for _ in range(N_FUZZ)]
    counts = collections.Counter(k for k, _b, _e in cases)
    failures: list[str] = []
    held = 0
    t0 = time.monotonic()
    batch = 100
    for start in range(0, len(cases), batch):
        chunk = cases[start : start + batch]
        by_id: dict[Any, tuple[str, bytes, tuple[Any, ...]]] = {}
        null_expected: collections.Counter[int] = collections.Counter()
        silent = 0
        for kind, body, expect in chunk:
            if expect[0] in ("error", "result", "any"):
                by_id[expect[1]] = (kind, body, expect)
            elif expect[0] == "null":
                null_expected[expect[1]] += 1
            else:
                silent += 1
            d.write(RawLsp.frame(body))
        sentinel = f"sentinel-{start}"
        d.send({"jsonrpc": "2.0", "id": sentinel, "method": "session/labels", "params": {"session": handle}})
        nulls: collections.Counter[int] = collections.Counter()
        seen: set[Any] = set()
        sentinel_ok = False
        deadline = time.monotonic() + 20
        while not (sentinel_ok and len(seen) == len(by_id) and nulls == null_expected):
            left = deadline - time.monotonic()
            if left <= 0:
                break
            try:
                msg = d.wait_for(lambda m: "method" not in m, timeout=left)
            except TimeoutError:
                break
            mid = msg.get("id")
            if mid == sentinel:
                sentinel_ok = "result" in msg
                continue
            if mid is None:
                nulls[(msg.get("error") or {}).get("code")] += 1
                continue
            if mid not in by_id or mid in seen:
                failures.append(f"an answer nobody asked for (or a second one): {str(msg)[:300]}")
                continue
            seen.add(mid)
            kind, body, expect = by_id[mid]
            why = _check(expect, msg)
            if why is None:
                held += 1
            else:
                failures.append(f"{kind}: {why} for {body[:200]!r}")
        assert d.alive(), f"the daemon died in batch {start}:\n{d.stderr()[-3000:]}"
        if not sentinel_ok:
            failures.append(f"batch {start}: the sentinel request got no result")
        for mid, (kind, body, _e) in by_id.items():
            if mid not in seen:
                failures.append(f"{kind}: no answer for {body[:200]!r}")
        if nulls != null_expected:
            failures.append(f"batch {start}: id-null answers {dict(nulls)}, expected {dict(null_expected)}")
        else:
            held += sum(nulls.values())
        held += silent  # checked below: nothing arrived that nobody asked for
        if len(failures) > 20:
            break
    elapsed = time.monotonic() - t0
    assert not failures, f"{len(failures)} failures, e.g.:\n" + "\n".join(failures[:20])

    # still serving: a normal request, an unknown method, and the file untouched
    res = d.request("session/entries", {"session": handle})
    assert [e["id"] for e in res["result"]["entries"]] == [e["id"] for e in entries[1:]]
    assert d.request("session/nope", {})["error"]["code"] == -32601
    assert f.read_bytes() == original, "a refused message wrote to the session file"
    time.sleep(0.3)
    stray = [m for m in d.backlog if "method" not in m]
    assert not stray, f"answers to messages that must stay unanswered: {stray[:5]}"
    print(
        f"wire fuzzer: {held} held / {N_FUZZ} tried in {elapsed:.1f}s; by class: {dict(sorted(counts.items()))}"
    )
    assert held == N_FUZZ
    assert elapsed < 30, f"fuzzing took {elapsed:.1f}s"


# ------------------------------------------------------------------ one by one


def test_the_45_byte_message_is_answered(daemon: RawLsp) -> None:
    """The message that ended the daemon: a method with an escaped lone surrogate."""
    body = b'{"jsonrpc":"2.0","id":77,"method":"x/\\ud800"}'
    assert len(body) == 45
    daemon.write(RawLsp.frame(body))
    answer = daemon.response(77)
    assert answer["error"]["code"] == -32601
    assert "\\ud800" in answer["error"]["message"]
    assert daemon.alive()
    assert "result" in daemon.request("session/list", {"all": False})


def test_lone_surrogates_in_params_are_refused_naming_the_field(daemon: RawLsp, tmp_path: Path) -> None:
    f = tmp_path / "proj" / "s.jsonl"
    before = write_session(f, chain(3, seed=4))
    h = _open(daemon, f)
    entry = {
        "type": "message",
        "message": {"role": "user", "content": [{"type": "text", "text": "cut \ud83d"}]},
    }
    res = daemon.request("session/append", {"session": h, "entry": entry})
    assert res["error"]["code"] == -32602
    assert res["error"]["data"]["field"] == "entry.message.content[0].text"
    assert f.read_bytes() == before, "the refused append wrote something"
    res = daemon.request(
        "session/append",
        {"session": h, "entry": {"type": "custom", "customType": "x", "data": {"k\udc00": 1}}},
    )
    assert res["error"]["data"]["field"] == "entry.data.k\\udc00"
    res = daemon.request("session/open", {"path": str(tmp_path / "proj" / "\udcff.jsonl")})
    assert res["error"]["code"] == -32602 and res["error"]["data"]["field"] == "path"
    # a valid pair is a character like any other
    res = daemon.request("session/setName", {"session": h, "name": "pair \ud83d\ude00"})
    assert "result" in res, res
    # an id that holds a lone surrogate is echoed as sent
    daemon.send({"jsonrpc": "2.0", "id": "\udfff-x", "method": "session/labels", "params": {"session": h}})
    assert "result" in daemon.response("\udfff-x")
    # a notification cannot be answered: it is ignored, and the daemon goes on
    daemon.send({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": "\ud800"}})
    assert "result" in daemon.request("session/labels", {"session": h})


def test_non_json_numbers_and_tokens_are_parse_errors(daemon: RawLsp) -> None:
    for raw in (
        b'{"jsonrpc":"2.0","id":1,"method":"session/list","params":{"limit":NaN}}',
        b'{"jsonrpc":"2.0","id":2,"method":"session/list","params":{"limit":-Infinity}}',
        b'{"jsonrpc":"2.0","id":3,"method":"session/list","params":{"limit":1e400}}',
        b'{"jsonrpc":"2.0","id":4,"method":"session/list","params":{"limit":' + b"7" * 5000 + b"}}",
        b'{"jsonrpc":"2.0","id":5,"method":"session/list","params":{"q":"\\ud800","limit":1e400}}',
    ):
        daemon.write(RawLsp.frame(raw))
        err = daemon.wait_for(lambda m: "error" in m and m.get("id") is None)["error"]
        assert err["code"] == -32700, err
    # duplicate keys: the last one wins, as in every JSON parser the daemon uses
    daemon.write(
        RawLsp.frame(
            b'{"jsonrpc":"2.0","id":8,"id":9,"method":"session/nope","method":"session/list","params":{}}'
        )
    )
    assert "result" in daemon.response(9)


@pytest.mark.parametrize("method", NOTIFICATIONS)
def test_a_notification_sent_with_an_id_is_answered(daemon: RawLsp, method: str) -> None:
    daemon.send({"jsonrpc": "2.0", "id": 5, "method": method, "params": {"id": 1, "value": "off"}})
    err = daemon.response(5)["error"]
    assert err["code"] == -32600 and method in err["message"]
    assert daemon.alive()
    assert "result" in daemon.request("session/list", {})


def test_requests_after_shutdown_get_invalid_request_and_exit_is_0(tmp_path: Path) -> None:
    d = RawLsp(env=_env(tmp_path))
    try:
        assert "result" in d.initialize({"allowedRoots": [str(tmp_path)], "watch": False})
        assert d.request("shutdown")["result"] is None
        for method, params in (
            ("session/list", {}),
            ("shutdown", None),
            ("initialize", {"capabilities": {}}),
        ):
            res = d.request(method, params)
            assert res["error"]["code"] == -32600, res
        d.send({"jsonrpc": "2.0", "method": "exit"})
        assert d.proc.wait(10) == 0
    finally:
        d.close()


def test_exit_without_shutdown_exits_with_1(tmp_path: Path) -> None:
    d = RawLsp(env=_env(tmp_path))
    try:
        assert "result" in d.initialize({"allowedRoots": [str(tmp_path)], "watch": False})
        d.send({"jsonrpc": "2.0", "method": "exit"})
        assert d.proc.wait(10) == 1
    finally:
        d.close()


def test_a_path_with_a_nul_byte_is_invalid_params(daemon: RawLsp, tmp_path: Path) -> None:
    proj = str(tmp_path / "proj")
    cases = [
        ("session/open", {"path": proj + "/a\u0000.jsonl"}, "path"),
        ("session/list", {"cwd": proj + "\u0000"}, "cwd"),
        ("session/recent", {"cwd": proj + "\u0000"}, "cwd"),
        ("session/create", {"cwd": proj + "\u0000x"}, "cwd"),
        ("session/create", {"cwd": proj, "sessionDir": proj + "/\u0000"}, "sessionDir"),
        ("session/continueRecent", {"cwd": "/\u0000"}, "cwd"),
        ("session/forkFrom", {"sourcePath": proj + "/\u0000", "cwd": proj}, "sourcePath"),
        ("session/doctor", {"path": proj + "/\u0000"}, "path"),
    ]
    for method, params, field in cases:
        err = daemon.request(method, params)["error"]
        assert err["code"] == -32602 and err["data"]["field"] == field, (method, err)
    assert list((tmp_path / "agent").iterdir()) == [], "a refused request created something"


def test_initialize_with_a_nul_or_a_lone_surrogate_in_a_path_option(tmp_path: Path) -> None:
    """A NUL in a path option is a bad option (a warning, the default); a lone surrogate in
    the params is -32602 like in any request, and initialize can then be sent again."""
    d = RawLsp(env=_env(tmp_path))
    try:
        params: dict[str, Any] = {
            "processId": None,
            "capabilities": {},
            "initializationOptions": {"allowedRoots": [str(tmp_path) + "\ud800"], "watch": False},
        }
        err = d.request("initialize", params)["error"]
        assert err["code"] == -32602 and err["data"]["field"] == "initializationOptions.allowedRoots[0]", err
        params["rootUri"] = "file://" + str(tmp_path) + "/a%00b"
        params["initializationOptions"] = {
            "allowedRoots": [str(tmp_path) + "/a\u0000b"],
            "agentDir": "/\u0000",
            "stateDir": str(tmp_path) + "\u0000",
            "watch": False,
        }
        assert "result" in d.request("initialize", params)
        warnings = [
            n["params"]["message"] for n in d.notifications if n.get("method") == "window/showMessage"
        ]
        for name in ("allowedRoots", "agentDir", "stateDir", "workspace folder"):
            assert any(name in w and "NUL" in w for w in warnings), (name, warnings)
        assert "result" in d.request("session/list", {"cwd": str(tmp_path)})
    finally:
        d.close()
