"""Lone surrogates and other strings without a UTF-8 form, end to end.

A JavaScript agent that cuts a string inside an emoji writes a lone surrogate escape
(``"cut \\ud83d here"``). JSON allows it and Python's ``str`` holds it, but orjson and
msgspec refuse it and it has no UTF-8 encoding, so one such line made `session/view`,
`session/entries`, `session/context` and `session/path` never answer and one such title
failed `session/list` for every session. The rule (docs/storage-format.md): every output
shows a lone surrogate as U+FFFD; reading never changes the file; a rewrite writes the
escape back (as ``\\udxxx`` in lower case, like JSON.stringify).

The fuzzer writes session files whose strings hold lone and paired surrogate escapes,
invalid UTF-8, overlong and out-of-range sequences, odd and broken escapes, NULs, BOMs
and raw control characters, and checks that every viewing method of the real daemon
answers each of them in time with a result or a documented error.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import time
from pathlib import Path
from typing import Any

import pytest
from sessiontree.core import view as core_view
from sessiontree.core.errors import InvalidSessionFileError
from sessiontree.core.session import SessionManager

from .helpers import TS0, iso
from .rawlsp import RawLsp

FFFD = "\ufffd"
HIGH = "\ud83d"  # the first half of 😀 (U+1F600 is \ud83d\ude00)


def _daemon(tmp_path: Path) -> RawLsp:
    agent = tmp_path / "agent"
    (agent / "sessions").mkdir(parents=True, exist_ok=True)
    d = RawLsp(env={"HOME": str(tmp_path), "PI_CODING_AGENT_DIR": str(agent)})
    res = d.initialize(
        {
            "agentDir": str(agent),
            "allowedRoots": [str(tmp_path)],
            "stateDir": str(tmp_path / "state"),
            "watch": False,
        }
    )
    assert "result" in res, res
    return d


def _ok(d: RawLsp, method: str, params: Any, timeout: float = 10.0) -> Any:
    res = d.request(method, params, timeout=timeout)
    assert "result" in res, (method, res)
    return res["result"]


def _line(obj: Any) -> bytes:
    # ensure_ascii writes a lone surrogate as its \udxxx escape, as JSON.stringify does
    return json.dumps(obj, separators=(",", ":")).encode("ascii") + b"\n"


def _msg(eid: str, parent: str | None, role: str, content: Any, n: int, **extra: Any) -> dict[str, Any]:
    m: dict[str, Any] = {"role": role, "content": content, "timestamp": TS0 + n, **extra}
    if role == "assistant":
        m.update(
            {"api": "anthropic-messages", "provider": "anthropic", "model": "claude", "stopReason": "stop"}
        )
    return {"type": "message", "id": eid, "parentId": parent, "timestamp": iso(TS0 + n), "message": m}


def _surrogate_session(cwd: str, version: int = 3) -> list[dict[str, Any]]:
    call = {"type": "toolCall", "id": "call1", "name": "bash", "arguments": {"command": f"echo {HIGH}"}}
    return [
        {
            "type": "session",
            "version": version,
            "id": "5u220a7e5e55104a",
            "timestamp": iso(TS0),
            "cwd": cwd,
            "title": f"title {HIGH} cut",
        },
        _msg("u0000001", None, "user", [{"type": "text", "text": f"cut {HIGH} here"}], 1),
        _msg(
            "a0000001",
            "u0000001",
            "assistant",
            [{"type": "text", "text": "pair \ud83d\ude00 low \udc00 escaped \\ud800 stays"}, call],
            2,
        ),
        _msg(
            "t0000001",
            "a0000001",
            "toolResult",
            [{"type": "text", "text": "out \udfff"}],
            3,
            toolCallId="call1",
            toolName="bash",
        ),
        {
            "type": "label",
            "id": "l0000001",
            "parentId": "t0000001",
            "timestamp": iso(TS0 + 4),
            "targetId": "u0000001",
            "label": "lab\ud800el",
        },
        {
            "type": "custom_message",
            "id": "c0000001",
            "parentId": "l0000001",
            "timestamp": iso(TS0 + 5),
            "customType": "note",
            "content": "custom \udbff",
            "display": True,
        },
        {
            "type": "model_change",
            "id": "m0000001",
            "parentId": "c0000001",
            "timestamp": iso(TS0 + 6),
            "provider": "p",
            "model": "m\ud800",
        },
        _msg("u0000002", "m0000001", "user", [{"type": "text", "text": "upper UPPERCASE-ESCAPE end"}], 7),
    ]


def _write(path: Path, entries: list[dict[str, Any]]) -> bytes:
    data = b"".join(_line(e) for e in entries)
    # one escape in upper case, as some writers produce
    data = data.replace(b"UPPERCASE-ESCAPE", b"\\uD83D")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return data


def _texts(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False)


# ------------------------------------------------------------------ the viewing methods


def test_viewing_methods_answer_and_show_lone_surrogates_as_u_fffd(tmp_path: Path) -> None:
    path = tmp_path / "agent" / "sessions" / "--p--" / "s.jsonl"
    data = _write(path, _surrogate_session("/p"))
    mtime = path.stat().st_mtime_ns
    d = _daemon(tmp_path)
    try:
        opened = _ok(d, "session/open", {"path": str(path)})
        assert opened["header"]["title"] == f"title {FFFD} cut"
        assert "recovered" not in opened  # nothing dropped: every line is valid JSON
        h = opened["session"]
        view = _ok(d, "session/view", {"session": h, "filter": "all"})
        by_id = {r["id"]: r for r in view["rows"]}
        assert by_id["u0000001"]["text"] == f"user: cut {FFFD} here"
        assert by_id["u0000001"]["label"] == f"lab{FFFD}el"
        assert by_id["a0000001"]["text"] == "assistant: pair 😀 low \ufffd escaped \\ud800 stays"
        assert by_id["t0000001"]["text"] == f"[bash: echo {FFFD}]"
        assert by_id["c0000001"]["text"] == f"[note]: custom {FFFD}"
        assert by_id["m0000001"]["text"] == f"[model: m{FFFD}]"
        assert by_id["u0000002"]["text"] == f"user: upper {FFFD} end"
        found = _ok(d, "session/view", {"session": h, "filter": "all", "search": FFFD})
        assert {r["id"] for r in found["rows"]} >= {"u0000001", "t0000001", "c0000001", "u0000002"}
        assert [r["id"] for r in _ok(d, "session/view", {"session": h, "search": "cut here"})["rows"]] == [
            "u0000001"
        ]
        tree = _ok(d, "session/tree", {"session": h})
        assert f"user: cut {FFFD} here" in _texts(tree)
        assert len(_ok(d, "session/children", {"session": h, "parentId": None})["entries"]) == 1
        path_res = _ok(d, "session/path", {"session": h})
        assert path_res["entries"][0]["id"] == "u0000001"  # root first
        assert path_res["entries"][0]["label"] == f"lab{FFFD}el"
        entry = _ok(d, "session/entry", {"session": h, "id": "u0000001"})["entry"]
        assert entry["message"]["content"][0]["text"] == f"cut {FFFD} here"
        entries = _ok(d, "session/entries", {"session": h})["entries"]
        assert entries[1]["message"]["content"][0]["text"] == "pair 😀 low \ufffd escaped \\ud800 stays"
        assert entries[1]["message"]["content"][1]["arguments"]["command"] == f"echo {FFFD}"
        ctx = _ok(d, "session/context", {"session": h, "llm": True})
        assert ctx["messages"][0]["content"][0]["text"] == f"cut {FFFD} here"
        assert f"cut {FFFD} here" in _texts(ctx["llmMessages"])
        assert _ok(d, "session/labels", {"session": h})["labels"] == [
            {"targetId": "u0000001", "label": f"lab{FFFD}el"}
        ]
        prep = _ok(d, "session/prepareNavigation", {"session": h, "targetId": "u0000001"})
        assert f"custom {FFFD}" in _texts(prep["entriesToSummarize"])
        doc = _ok(d, "session/doctor", {"path": str(path)})
        assert not [p for p in doc["problems"] if p.get("severity") == "error"], doc
        _ok(d, "session/close", {"session": h})
        assert d.alive()
    finally:
        d.close()
    assert path.read_bytes() == data, "reading changed the file"
    assert path.stat().st_mtime_ns == mtime
    assert sorted(p.name for p in path.parent.iterdir()) == ["s.jsonl"]


def test_list_and_recent_show_a_lone_surrogate_title_as_u_fffd(tmp_path: Path) -> None:
    sessions = tmp_path / "agent" / "sessions" / "--p--"
    _write(sessions / "2025-01-01T00-00-00-000Z_5u220a7e5e55104a.jsonl", _surrogate_session("/p"))
    plain = _surrogate_session("/p")[:2]
    plain[0] = {**plain[0], "id": "0123456789abcdef", "title": "plain"}
    _write(sessions / "2025-01-02T00-00-00-000Z_0123456789abcdef.jsonl", plain)
    d = _daemon(tmp_path)
    try:
        listed = _ok(d, "session/list", {"all": True})["sessions"]
        assert sorted(s["title"] for s in listed) == ["plain", f"title {FFFD} cut"]
        cut = next(s for s in listed if s["title"] != "plain")
        assert cut["firstMessage"] == f"cut {FFFD} here"
        assert [
            s["title"] for s in _ok(d, "session/list", {"all": True, "query": "title cut"})["sessions"]
        ] == [f"title {FFFD} cut"]
        recent = _ok(d, "session/recent", {"sessionDir": str(sessions), "limit": 5})["sessions"]
        assert f"title {FFFD} cut" in [s["name"] for s in recent]
    finally:
        d.close()


# ------------------------------------------------------------------ loading and rewriting


def test_fast_path_reads_lone_surrogates_and_keeps_them_in_the_values(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    entries = _surrogate_session("/p")
    entries[0]["title"] = "plain"  # the header is read by the manager with orjson alone
    _write(path, entries)
    m = SessionManager.open(str(path), read_only=True)
    assert m.load_report.fast_path, "one lone surrogate used to send the whole file to the slow path"
    assert not m.load_report.recovered
    assert m.get_entry("u0000001")["message"]["content"][0]["text"] == f"cut {HIGH} here"
    assert m.index.labels == {"u0000001": "lab\ud800el"}
    assert m.get_entry("u0000002")["message"]["content"][0]["text"] == f"upper {HIGH} end"


def test_a_rewrite_writes_the_escape_back(tmp_path: Path) -> None:
    # A v2 file is migrated on open: the whole file is written again from the values.
    path = tmp_path / "agent" / "sessions" / "--p--" / "old.jsonl"
    _write(path, _surrogate_session("/p", version=2))
    d = _daemon(tmp_path)
    try:
        opened = _ok(d, "session/open", {"path": str(path)})
        assert opened.get("migratedFrom") == 2, opened
        h = opened["session"]
        # The wire refuses a lone surrogate in what a client sends (docs/protocol.md); what
        # is in the file stays.
        msg = {"role": "user", "content": [{"type": "text", "text": f"new {HIGH} line"}], "timestamp": 9}
        res = d.request("session/append", {"session": h, "entry": {"type": "message", "message": msg}})
        assert res.get("error", {}).get("code") == -32602, res
        msg["content"][0]["text"] = "new line"
        appended = _ok(d, "session/append", {"session": h, "entry": {"type": "message", "message": msg}})
        _ok(d, "session/flush", {"session": h})
        got = _ok(d, "session/entry", {"session": h, "id": "u0000001"})["entry"]
        assert got["message"]["content"][0]["text"] == f"cut {FFFD} here"
    finally:
        d.close()
    data = path.read_bytes()
    assert b'"version":3' in data.splitlines()[0]
    assert data.count(b"\\ud83d") == 4  # title, text, bash command, and the upper-case one
    assert b"\\ud800" in data and b"\\udc00" in data and b"\\udfff" in data and b"\\udbff" in data
    assert FFFD.encode() not in data, "a rewrite replaced a lone surrogate"
    assert b"\\\\ud800 stays" in data  # an escaped backslash is text, not an escape
    assert "😀".encode() in data  # a pair is one character
    lines = [json.loads(x) for x in data.splitlines()]
    assert lines[1]["message"]["content"][0]["text"] == f"cut {HIGH} here"
    assert lines[-1]["id"] == appended["id"]


def test_a_followed_session_takes_appended_lines_with_lone_surrogates(tmp_path: Path) -> None:
    path = tmp_path / "agent" / "sessions" / "--p--" / "live.jsonl"
    entries = _surrogate_session("/p")
    _write(path, entries)
    agent = tmp_path / "agent"
    d = RawLsp(env={"HOME": str(tmp_path), "PI_CODING_AGENT_DIR": str(agent)})
    try:
        opts = {"agentDir": str(agent), "allowedRoots": [str(tmp_path)], "stateDir": str(tmp_path / "st")}
        assert "result" in d.initialize(opts)  # watch on: the daemon follows the file
        h = _ok(d, "session/open", {"path": str(path)})["session"]
        with open(path, "ab") as f:  # another writer, as the agent appends
            f.write(
                _line(_msg("x0000001", "u0000002", "user", [{"type": "text", "text": f"live {HIGH}"}], 20))
            )
        note = d.wait_for(
            lambda m: m.get("method") == "session/didChange" and m["params"].get("session") == h, timeout=10
        )
        assert [e["text"] for e in note["params"]["appended"]] == [f"user: live {FFFD}"]
        rows = _ok(d, "session/view", {"session": h, "filter": "all"})["rows"]
        assert rows[-1]["id"] == "x0000001" and rows[-1]["text"] == f"user: live {FFFD}"
    finally:
        d.close()


def test_appended_lines_parse_like_loading(tmp_path: Path) -> None:
    from sessiontree.core.live import parse_appended

    data = _line(_msg("x0000001", None, "user", [{"type": "text", "text": f"live {HIGH}"}], 1)) + b"{junk\n"
    parsed = parse_appended(data)
    assert [e["id"] for e in parsed.entries] == ["x0000001"]
    assert parsed.entries[0]["message"]["content"][0]["text"] == f"live {HIGH}"
    assert len(parsed.dropped) == 1


# ------------------------------------------------------------------ the fuzzer

SEED = int(os.environ.get("SURROGATE_SEED", "20"))
FILES = int(os.environ.get("SURROGATE_FILES", "150"))

NASTY: list[bytes] = [
    b"\\ud83d",  # lone high
    b"\\uDE00",  # lone low, upper case
    b"\\udbff\\udbff",  # two highs
    b"\\udc00\\ud800",  # a pair the wrong way round
    b"\\ud83d\\ude00",  # a real pair
    "😀".encode(),
    b"\\\\ud800",  # an escaped backslash, then text
    b"\xff",  # invalid UTF-8
    b"\xc3",  # a truncated sequence
    b"\xed\xa0\x80",  # a UTF-8-encoded surrogate (CESU-8)
    b"\xc0\xaf",  # overlong
    b"\xf4\x90\x80\x80",  # above U+10FFFF
    b"\\u0000",
    b"\\/",
    b"\\u00e9",
    b"\\ud8",  # a broken escape: the line is not JSON
    b"\\x41",  # not a JSON escape
    b"\x00",  # a raw control character: the line is not JSON
    b"\r",
    b"\xef\xbb\xbf",  # a BOM in the middle
    b"\\ufeff",
    b"\\u2028",
]

# Strings of the template that a mutation may fill; ids and their references share a marker.
MARKERS = [
    "TITLE",
    "CWD",
    "U1",
    "A1",
    "CMD",
    "OUT",
    "LABEL",
    "CUSTOM",
    "MODEL",
    "SUMMARY",
    "ID",
    "TS",
    "TYPE",
]


def _template() -> bytes:
    def mk(name: str) -> str:
        return f"@@{name}@@"

    call = {"type": "toolCall", "id": "call1", "name": "bash", "arguments": {"command": "ls " + mk("CMD")}}
    entries: list[dict[str, Any]] = [
        {
            "type": "session",
            "version": 3,
            "id": "f0220f0220f0220f",
            "timestamp": iso(TS0),
            "cwd": "/p" + mk("CWD"),
            "title": "t " + mk("TITLE"),
        },
        _msg("u0000001", None, "user", [{"type": "text", "text": "hi " + mk("U1")}], 1),
        _msg("a000" + mk("ID"), "u0000001", "assistant", [{"type": "text", "text": mk("A1")}, call], 2),
        _msg(
            "t0000001",
            "a000" + mk("ID"),
            "toolResult",
            [{"type": "text", "text": "o " + mk("OUT")}],
            3,
            toolCallId="call1",
            toolName="bash",
        ),
        {
            "type": "label",
            "id": "l0000001",
            "parentId": "t0000001",
            "timestamp": iso(TS0 + 4) + mk("TS"),
            "targetId": "u0000001",
            "label": "L" + mk("LABEL"),
        },
        {
            "type": "custom_message",
            "id": "c0000001",
            "parentId": "l0000001",
            "timestamp": iso(TS0 + 5),
            "customType": "note" + mk("TYPE"),
            "content": "c " + mk("CUSTOM"),
            "display": True,
        },
        {
            "type": "model_change",
            "id": "m0000001",
            "parentId": "c0000001",
            "timestamp": iso(TS0 + 6),
            "provider": "p",
            "model": "m" + mk("MODEL"),
        },
        {
            "type": "branch_summary",
            "id": "b0000001",
            "parentId": "u0000001",
            "timestamp": iso(TS0 + 7),
            "fromId": "m0000001",
            "summary": "s " + mk("SUMMARY"),
        },
        _msg("u0000002", "b0000001", "user", [{"type": "text", "text": "again " + mk("U1")}], 8),
    ]
    return b"".join(_line(e) for e in entries)


def _mutants(rng: random.Random, n: int) -> list[bytes]:
    base = _template()
    out = []
    for _ in range(n):
        data = base
        for name in MARKERS:
            parts = [rng.choice(NASTY) for _ in range(rng.choice((0, 0, 1, 1, 2, 3)))]
            data = data.replace(f"@@{name}@@".encode(), b"".join(parts))
        out.append(data)
    return out


# A result, or one of the documented errors: unknown session, entry not found, invalid
# session file, invalid params (an id that no longer matches after U+FFFD).
DOCUMENTED = {-32001, -32002, -32007, -32602}


def _answered(d: RawLsp, method: str, params: Any, stats: dict[str, int]) -> Any:
    t0 = time.monotonic()
    try:
        res = d.request(method, params, timeout=10)
    except TimeoutError:
        raise AssertionError(f"{method} did not answer within 10 s ({params})") from None
    took = time.monotonic() - t0
    stats["max_ms"] = max(stats.get("max_ms", 0), int(took * 1000))
    stats["requests"] = stats.get("requests", 0) + 1
    if "error" in res:
        code = res["error"]["code"]
        assert code in DOCUMENTED, (method, params, res)
        stats[f"error {code}"] = stats.get(f"error {code}", 0) + 1
        return None
    return res["result"]


def test_fuzzed_session_files_get_an_answer_from_every_viewing_method(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    sessions = tmp_path / "agent" / "sessions" / "--p--"
    sessions.mkdir(parents=True)
    files: list[tuple[Path, str]] = []
    for i, data in enumerate(_mutants(rng, FILES)):
        p = sessions / f"2025-01-01T00-00-{i:02d}-000Z_f0220f0220f022{i:02d}.jsonl"
        p.write_bytes(data)
        files.append((p, hashlib.sha256(data).hexdigest()))
    d = _daemon(tmp_path)
    stats: dict[str, int] = {}
    t_start = time.monotonic()
    try:
        for path, _digest in files:
            opened = _answered(d, "session/open", {"path": str(path)}, stats)
            _answered(d, "session/doctor", {"path": str(path)}, stats)
            if opened is None:
                continue
            h = opened["session"]
            for flt in ("default", "all"):
                _answered(d, "session/view", {"session": h, "filter": flt}, stats)
            _answered(d, "session/view", {"session": h, "search": FFFD + " again"}, stats)
            _answered(d, "session/view", {"session": h, "search": HIGH}, stats)
            _answered(d, "session/tree", {"session": h}, stats)
            _answered(d, "session/children", {"session": h, "parentId": None}, stats)
            _answered(d, "session/path", {"session": h}, stats)
            entries = _answered(d, "session/entries", {"session": h}, stats)
            for e in (entries or {}).get("entries", []):
                eid = e.get("id")
                if isinstance(eid, str):
                    _answered(d, "session/entry", {"session": h, "id": eid}, stats)
                    _answered(d, "session/path", {"session": h, "fromId": eid}, stats)
                    _answered(d, "session/prepareNavigation", {"session": h, "targetId": eid}, stats)
            _answered(d, "session/context", {"session": h, "llm": True}, stats)
            _answered(d, "session/labels", {"session": h}, stats)
            _answered(d, "session/close", {"session": h}, stats)
        assert d.alive()
    finally:
        d.close()
    for path, digest in files:
        assert hashlib.sha256(path.read_bytes()).hexdigest() == digest, f"{path.name} changed"
    assert sorted(p.name for p in sessions.iterdir()) == sorted(p.name for p, _ in files)
    print(
        f"\nsurrogate fuzzer (seed {SEED}): {FILES} files, {stats['requests']} requests in "
        f"{time.monotonic() - t_start:.1f} s, slowest answer {stats['max_ms']} ms, "
        + ", ".join(f"{k}: {v}" for k, v in sorted(stats.items()) if k.startswith("error"))
    )


def test_fuzzed_titles_and_first_messages_list_and_recent(tmp_path: Path) -> None:
    rng = random.Random(SEED + 1)
    sessions = tmp_path / "agent" / "sessions" / "--p--"
    sessions.mkdir(parents=True)
    for i, data in enumerate(_mutants(rng, FILES)):
        (sessions / f"2025-01-01T00-00-{i:02d}-000Z_f0220f0220f022{i:02d}.jsonl").write_bytes(data)
    d = _daemon(tmp_path)
    stats: dict[str, int] = {}
    try:
        for params in ({"all": True}, {"all": True, "query": "hi"}, {"cwd": "/p"}):
            listed = _answered(d, "session/list", params, stats)
            assert listed is not None and listed["sessions"]
        assert _answered(d, "session/recent", {"sessionDir": str(sessions), "limit": 50}, stats) is not None
        assert d.alive()
    finally:
        d.close()


NOT_JSON = {b"\\ud8", b"\\x41", b"\x00", b"\r"}  # make their line invalid JSON


@pytest.mark.parametrize("nasty", NASTY)
def test_each_nasty_string_alone_in_a_title_and_texts(tmp_path: Path, nasty: bytes) -> None:
    data = _template()
    for name in MARKERS:
        data = data.replace(f"@@{name}@@".encode(), nasty if name in ("TITLE", "U1", "LABEL", "CMD") else b"")
    path = tmp_path / "s.jsonl"
    path.write_bytes(data)
    try:
        m = SessionManager.open(str(path), read_only=True)
    except InvalidSessionFileError:
        assert nasty in NOT_JSON  # the header line is not JSON: no session
        return
    page = core_view.build_view(m, filter="all")
    if nasty not in NOT_JSON:
        assert len(page.rows) == 7  # the assistant without text is hidden (not the leaf)
    for r in page.rows:
        r.text.encode("utf-8")  # shown text always has a UTF-8 form
        if r.label is not None:
            r.label.encode("utf-8")
    assert path.read_bytes() == data


@pytest.mark.parametrize(
    "verb", [["show"], ["show", "--json"], ["context"], ["context", "--json"], ["context", "--llm"], ["tree"]]
)
def test_the_command_line_prints_lone_surrogates_as_u_fffd(tmp_path: Path, verb: list[str]) -> None:
    import subprocess
    import sys

    f = tmp_path / "s.jsonl"
    f.write_bytes(
        b'{"type":"session","version":3,"id":"s\\ud800x","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}\n'
        b'{"type":"message","id":"a","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z",'
        b'"message":{"role":"user","content":"hi \\udc00 there","timestamp":1}}\n'
    )
    before = f.read_bytes()
    res = subprocess.run(
        [sys.executable, "-m", "sessiontree", *verb, str(f)],
        capture_output=True,
        env={**os.environ, "PYTHONIOENCODING": "utf-8"},
    )
    assert res.returncode == 0 and b"Traceback" not in res.stderr, res.stderr
    out = res.stdout.decode("utf-8")  # valid UTF-8: no surrogate reached the terminal
    assert "\ufffd" in out
    assert f.read_bytes() == before
