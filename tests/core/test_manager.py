"""SessionManager: appends and key orders, tree queries, persistence pipeline, errors."""

from __future__ import annotations

import base64
import itertools
import os
from pathlib import Path
from typing import Any

import orjson
import pytest
from sessiontree.core.errors import EntryNotFoundError, PersistError
from sessiontree.core.ids import FixedClock, IdSource
from sessiontree.core.paths import PathEnv
from sessiontree.core.session import SessionManager
from sessiontree.core.store import FileSessionStorage
from sessiontree.core.store.blobs import BlobStore


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text, "timestamp": 1}


def assistant(text: str, model: str = "m", usage: dict[str, Any] | None = None) -> dict[str, Any]:
    msg: dict[str, Any] = {
        "role": "assistant",
        "content": [{"type": "text", "text": text}],
        "provider": "p",
        "model": model,
        "stopReason": "stop",
        "timestamp": 2,
    }
    if usage is not None:
        msg["usage"] = usage
    return msg


def kw(tmp_path: Path, seed: int = 1, storage: Any = None) -> dict[str, Any]:
    clock = FixedClock(step_ms=1000)
    return {
        "clock": clock,
        "ids": IdSource(seed=seed, clock=clock),
        "blobs": BlobStore(str(tmp_path / "blobs")),
        "cache_dir": str(tmp_path / "cache"),
        "storage": storage if storage is not None else FileSessionStorage(),
        "penv": PathEnv(env={}, home=str(tmp_path / "home"), tmp="/nonexistent-tmp"),
        "agent_dir": str(tmp_path / "agent"),
    }


def new(tmp_path: Path, seed: int = 1, storage: Any = None) -> SessionManager:
    return SessionManager.create(
        str(tmp_path / "proj"), str(tmp_path / "sessions"), **kw(tmp_path, seed, storage)
    )


def lines(path: str | None) -> list[dict[str, Any]]:
    assert path is not None
    return [orjson.loads(x) for x in Path(path).read_bytes().splitlines()]


def test_append_key_orders_match_the_reference(tmp_path: Path) -> None:
    m = new(tmp_path)
    m.append_message(user("q"))
    m.append_message(assistant("a"))
    m.append_thinking_level_change("high")
    m.append_thinking_level_change()
    m.append_model_change("openai/gpt-4o", "smol")
    m.append_model_change("a/b")
    m.append_mode_change("plan", {"x": 1})
    first = m.get_entries()[0]["id"]
    m.append_compaction("sum", "short", first, 1234, {"d": 1}, True, {"p": 2})
    m.append_custom_entry("ext", {"k": 1})
    m.append_custom_message_entry("note", "hello", True, {"det": 1})
    m.append_label_change(first, "L")
    m.append_ttsr_injection(["r1", "r2"])
    m.append_session_init({"systemPrompt": "sp", "task": "t", "tools": ["read"]})
    m.append_context_change("ctx", "ten", "ns")
    m.append_service_tier_change("flex")
    m.append_mcp_tool_selection(["a", "b"])
    m.branch_with_summary(first, "bs", {"readFiles": []}, False)
    out = lines(m.get_session_file())
    keys = [list(e.keys()) for e in out]
    base = ["type", "id", "parentId", "timestamp"]
    assert keys[0] == ["type", "version", "id", "timestamp", "cwd"]
    assert keys[1] == [*base, "message"]
    assert keys[3] == [*base, "thinkingLevel"]
    assert out[4]["thinkingLevel"] is None
    assert keys[5] == [*base, "model", "role"]
    assert keys[6] == [*base, "model"]
    assert keys[7] == [*base, "mode", "data"]
    assert keys[8] == [
        *base,
        "summary",
        "shortSummary",
        "firstKeptEntryId",
        "tokensBefore",
        "details",
        "fromExtension",
        "preserveData",
    ]
    assert keys[9] == ["type", "customType", "data", "id", "parentId", "timestamp"]
    assert keys[10] == [
        "type",
        "customType",
        "content",
        "display",
        "details",
        "attribution",
        "id",
        "parentId",
        "timestamp",
    ]
    assert out[10]["attribution"] == "agent"
    assert keys[11] == [*base, "targetId", "label"]
    assert keys[12] == [*base, "injectedRules"]
    assert keys[13] == [*base, "systemPrompt", "task", "tools"]
    assert keys[14] == [*base, "contextName", "tenant", "namespace"]
    assert keys[15] == [*base, "serviceTier"]
    assert keys[16] == [*base, "selectedToolNames"]
    assert keys[17] == [*base, "fromId", "summary", "details", "fromExtension"]
    # each append chains from the previous leaf
    for prev, cur in itertools.pairwise(out[1:-1]):
        assert cur["parentId"] == prev["id"]
    assert out[-1]["parentId"] == first and out[-1]["fromId"] == first
    assert m.get_leaf_id() == out[-1]["id"]


def test_deferred_first_write_then_incremental_appends(tmp_path: Path) -> None:
    m = new(tmp_path)
    m.append_message(user("q"))
    m.append_thinking_level_change("low")
    path = m.get_session_file()
    assert path is not None and not os.path.exists(path)
    m.append_message(assistant("a"))
    assert [e["type"] for e in lines(path)] == ["session", "message", "thinking_level_change", "message"]
    before = Path(path).read_bytes()
    m.append_message(user("q2"))
    m.flush()
    after = Path(path).read_bytes()
    assert after.startswith(before)
    assert after[len(before) :].count(b"\n") == 1
    assert orjson.loads(after[len(before) :])["message"]["content"] == "q2"


def test_ensure_on_disk_persists_without_assistant(tmp_path: Path) -> None:
    m = new(tmp_path)
    m.append_message(user("q"))
    m.ensure_on_disk()
    path = m.get_session_file()
    assert len(lines(path)) == 2
    m.append_message(user("q2"))
    assert len(lines(path)) == 3


def test_tree_branch_children_and_labels(tmp_path: Path) -> None:
    m = new(tmp_path)
    a = m.append_message(user("a"))
    b = m.append_message(assistant("b"))
    m.branch(a)
    c = m.append_message(assistant("c"))
    m.reset_leaf()
    r2 = m.append_message(user("root2"))
    lb = m.append_label_change(b, "bee")
    m.append_label_change(a, "ay")
    m.append_label_change(b, "")
    m.append_label_change(b, "bee2")
    assert m.get_label(b) == "bee2" and m.get_label(a) == "ay"
    assert list(m.index.labels) == [a, b]  # clearing and setting again moves to the end
    tree = m.get_tree()
    assert [n.entry["id"] for n in tree] == [a, r2]
    assert [n.entry["id"] for n in tree[0].children] == [b, c]
    assert tree[0].label == "ay"
    assert [e["id"] for e in m.get_branch(c)] == [a, c]
    assert [e["id"] for e in m.get_children(a)] == [b, c]
    assert m.get_branch("nope") == []
    assert m.get_children("nope") == []
    with pytest.raises(EntryNotFoundError, match="Entry nope not found"):
        m.branch("nope")
    with pytest.raises(EntryNotFoundError):
        m.append_label_change("nope", "x")
    with pytest.raises(EntryNotFoundError):
        m.branch_with_summary("nope", "s")
    assert m.index.path_to_root(lb) == [r2, lb]
    # reopening gives the same structure; the leaf is the last entry in file order
    m2 = SessionManager.open(m.get_session_file() or "", **kw(tmp_path, 2))
    assert m2.get_leaf_id() == m.get_entries()[-1]["id"]
    assert [n.entry["id"] for n in m2.get_tree()] == [a, r2]
    assert m2.index.labels == m.index.labels


def test_children_sorted_by_timestamp_stable(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    rows = [
        {"type": "session", "version": 3, "id": "s", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/"},
        {
            "type": "message",
            "id": "r",
            "parentId": None,
            "timestamp": "2025-01-01T00:00:01.000Z",
            "message": user("r"),
        },
        {
            "type": "message",
            "id": "x",
            "parentId": "r",
            "timestamp": "2025-01-01T00:00:05.000Z",
            "message": user("x"),
        },
        {
            "type": "message",
            "id": "y",
            "parentId": "r",
            "timestamp": "2025-01-01T00:00:03.000Z",
            "message": user("y"),
        },
        {
            "type": "message",
            "id": "z",
            "parentId": "r",
            "timestamp": "2025-01-01T00:00:03.000Z",
            "message": user("z"),
        },
        {
            "type": "message",
            "id": "o",
            "parentId": "missing",
            "timestamp": "2025-01-01T00:00:00.000Z",
            "message": user("o"),
        },
    ]
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    m = SessionManager.open(str(path), **kw(tmp_path))
    assert m.index.children("r") == ["y", "z", "x"]
    assert m.index.roots() == ["r", "o"]
    assert [e["id"] for e in m.get_children("r")] == ["x", "y", "z"]  # getChildren: map order
    # an appended sibling with an earlier timestamp moves first
    m.branch("r")
    clock = m._clock
    assert isinstance(clock, FixedClock)
    clock.current_ms = 1735689600000  # 2025-01-01T00:00:00Z
    w = m.append_message(user("w"))
    assert m.index.children("r") == [w, "y", "z", "x"]


def test_latched_persist_error_memory_still_updated(tmp_path: Path) -> None:
    class FailingWriter:
        def write_line(self, data: bytes) -> None:
            raise OSError(28, "No space left on device")

        def flush(self) -> None: ...
        def fsync(self) -> None: ...
        def close(self) -> None: ...
        def get_error(self) -> BaseException | None:
            return None

    class FailingAppends(FileSessionStorage):
        def open_writer(self, path: str) -> Any:
            return FailingWriter()

    m = new(tmp_path, storage=FailingAppends())
    m.append_message(user("q"))
    m.append_message(assistant("a"))  # the first write is a full rewrite: succeeds
    with pytest.raises(PersistError) as first:
        m.append_message(user("q2"))
    assert "No space left" in str(first.value)
    assert m.get_leaf_entry()["message"]["content"] == "q2"  # type: ignore[index]
    with pytest.raises(PersistError) as second:
        m.append_message(user("q3"))
    assert second.value is first.value
    assert len(m.get_entries()) == 4
    with pytest.raises(PersistError):
        m.flush()
    assert len(lines(m.get_session_file())) == 3  # header + the two written entries


def test_failing_rewrite_keeps_the_old_file_and_latches(tmp_path: Path) -> None:
    class FailingAtomic(FileSessionStorage):
        fail = False

        def write_atomic(self, path: str, data: bytes) -> None:
            if self.fail:
                raise OSError(5, "I/O error")
            super().write_atomic(path, data)

    st = FailingAtomic()
    m = new(tmp_path, storage=st)
    m.append_message(user("q"))
    m.append_message(assistant("a"))
    path = m.get_session_file()
    assert path is not None
    before = Path(path).read_bytes()
    st.fail = True
    with pytest.raises(PersistError):
        m.rewrite_entries()
    assert Path(path).read_bytes() == before
    assert [p.name for p in Path(path).parent.iterdir() if p.name.endswith(".tmp")] == []
    with pytest.raises(PersistError):
        m.append_message(user("later"))


def test_rewrite_entries_is_atomic_and_keeps_edits(tmp_path: Path) -> None:
    m = new(tmp_path)
    m.append_message(user("q"))
    m.append_message(assistant("a"))
    entry = m.get_entries()[0]
    entry["message"]["content"] = "edited"
    m.rewrite_entries()
    path = m.get_session_file()
    assert lines(path)[1]["message"]["content"] == "edited"
    names = [p.name for p in Path(path or "").parent.iterdir()]
    assert [n for n in names if not n.endswith(".lock")] == [Path(path or "").name]


def test_truncation_and_blob_round_trip(tmp_path: Path) -> None:
    m = new(tmp_path)
    big = "x" * 600_000
    img = base64.b64encode(os.urandom(3000)).decode()
    m.append_message(user(big))
    m.append_message(
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "see"},
                {"type": "image", "mimeType": "image/png", "data": img},
            ],
            "provider": "p",
            "model": "m",
            "stopReason": "stop",
            "timestamp": 2,
        }
    )
    path = m.get_session_file()
    on_disk = lines(path)
    assert len(on_disk[1]["message"]["content"]) == 500_000
    assert on_disk[1]["message"]["content"].endswith("[Session persistence truncated large content]")
    ref = on_disk[2]["message"]["content"][1]["data"]
    assert ref.startswith("blob:sha256:")
    # memory keeps the original
    assert m.get_entries()[0]["message"]["content"] == big
    m2 = SessionManager.open(path or "", **kw(tmp_path, 3))
    assert m2.get_entries()[1]["message"]["content"][1]["data"] == img
    # the clean fast path resolves blob refs too, through the entry loader
    assert m2.load_report.fast_path


def test_usage_statistics_all_branches(tmp_path: Path) -> None:
    m = new(tmp_path)
    u = {
        "input": 10,
        "output": 2,
        "cacheRead": 1,
        "cacheWrite": 0,
        "premiumRequests": 0.5,
        "cost": {"total": 0.25},
    }
    a = m.append_message(user("q"))
    m.append_message(assistant("a", usage=u))
    m.branch(a)
    m.append_message(assistant("b", usage=u))
    m.append_message(
        {
            "role": "toolResult",
            "toolCallId": "t",
            "toolName": "task",
            "content": [],
            "details": {"usage": {"input": 1, "output": 1, "cost": {"total": 1}}},
            "timestamp": 3,
        }
    )
    want = {"input": 21, "output": 5, "cacheRead": 2, "cacheWrite": 0, "premiumRequests": 1.0, "cost": 1.5}
    assert m.get_usage_statistics() == want
    m2 = SessionManager.open(m.get_session_file() or "", **kw(tmp_path, 4))
    assert m2.get_usage_statistics() == want


def test_context_helpers(tmp_path: Path) -> None:
    m = new(tmp_path)
    assert m.get_last_model_change_role() is None
    m.append_model_change("a/b", "smol")
    m.append_ttsr_injection(["r1", "r2"])
    m.append_message(user("q"))
    m.append_ttsr_injection(["r2", "r3"])
    m.append_model_change("c/d")
    assert m.get_injected_ttsr_rules() == ["r1", "r2", "r3"]
    assert m.get_last_model_change_role() == "default"
    ctx = m.build_session_context()
    assert ctx.models == {"smol": "a/b", "default": "c/d"}
    m.reset_leaf()
    assert m.build_session_context().messages == []


def test_build_session_context_with_compaction_loads_only_what_matters(tmp_path: Path) -> None:
    m = new(tmp_path)
    ids = []
    for i in range(30):
        ids.append(m.append_message(user(f"u{i}")))
        ids.append(m.append_message(assistant(f"a{i}", model=f"m{i}")))
    m.append_thinking_level_change("high")
    for i in range(30, 40):
        m.append_message(user(f"u{i}"))
    m.append_compaction("sum", "short", ids[50], 1000)
    m.append_message(user("after"))
    path = m.get_session_file() or ""
    m2 = SessionManager.open(path, **kw(tmp_path, 5))
    full = m2.build_session_context()
    # the reference result over all entries
    from sessiontree.core.tree.context import build_session_context

    ref = build_session_context(m2.get_entries(), m2.get_leaf_id())
    assert full.to_dict() == ref.to_dict()
    assert full.thinking_level == "high"
    assert full.messages[0]["role"] == "compactionSummary"
    # any node's context
    mid = ids[10]
    assert m2.build_session_context(mid).to_dict() == build_session_context(m2.get_entries(), mid).to_dict()


def test_set_session_name_sanitizes_and_respects_user_titles(tmp_path: Path) -> None:
    m = new(tmp_path)
    assert m.set_session_name("  a\n\x1b[31mb  \t c ") is True
    assert m.get_session_name() == "a [31mb c"
    assert m.get_title_source() == "auto"
    assert not os.path.exists(m.get_session_file() or "")  # not on disk yet: goes out with the first write
    m.append_message(user("q"))
    m.append_message(assistant("a"))
    assert lines(m.get_session_file())[0]["title"] == "a [31mb c"
    assert m.set_session_name("mine", "user") is True
    assert lines(m.get_session_file())[0]["titleSource"] == "user"
    assert m.set_session_name("auto again") is False
    assert m.set_session_name(" \n ", "user") is False
    assert list(lines(m.get_session_file())[0].keys()) == [
        "type",
        "version",
        "id",
        "timestamp",
        "cwd",
        "title",
        "titleSource",
    ]


def test_fork_keeps_entries_and_links_parent_id(tmp_path: Path) -> None:
    m = new(tmp_path)
    m.append_message(user("q"))
    m.append_message(assistant("a"))
    m.set_session_name("t", "user")
    old_id = m.get_session_id()
    res = m.fork()
    assert res is not None
    old, newp = res
    assert old != newp and os.path.exists(old) and os.path.exists(newp)
    hdr = lines(newp)[0]
    assert list(hdr.keys()) == [
        "type",
        "version",
        "id",
        "title",
        "titleSource",
        "timestamp",
        "cwd",
        "parentSession",
    ]
    assert hdr["parentSession"] == old_id and hdr["title"] == "t"
    assert [e["id"] for e in lines(newp)[1:]] == [e["id"] for e in lines(old)[1:]]
    m.append_message(user("more"))
    assert len(lines(newp)) == 4 and len(lines(old)) == 3
    assert SessionManager.in_memory().fork() is None


def test_fork_from_writes_at_once(tmp_path: Path) -> None:
    src = new(tmp_path)
    src.append_message(user("q"))
    src.append_message(assistant("a"))
    src.set_session_name("title", "user")
    f = SessionManager.fork_from(
        src.get_session_file() or "", str(tmp_path / "other"), str(tmp_path / "s2"), **kw(tmp_path, 9)
    )
    out = lines(f.get_session_file())
    assert out[0]["parentSession"] == src.get_session_id()
    assert out[0]["title"] == "title" and out[0]["titleSource"] == "user"
    assert [e["id"] for e in out[1:]] == [e["id"] for e in src.get_entries()]
    assert f.get_leaf_id() == src.get_leaf_id()


def test_new_session_is_lazy(tmp_path: Path) -> None:
    m = new(tmp_path)
    m.append_message(user("q"))
    m.append_message(assistant("a"))
    first = m.get_session_file()
    p = m.new_session(parent_session=first)
    assert p != first and p is not None and not os.path.exists(p)
    assert m.get_entries() == [] and m.get_leaf_id() is None
    assert m.get_header()["parentSession"] == first  # type: ignore[index]
    m.append_message(user("q"))
    assert not os.path.exists(p)
    m.append_message(assistant("a"))
    assert os.path.exists(p)
    assert SessionManager.in_memory().new_session() is None


def test_create_branched_session_recreates_labels_in_order(tmp_path: Path) -> None:
    m = new(tmp_path)
    a = m.append_message(user("a"))
    b = m.append_message(assistant("b"))
    c = m.append_message(user("c"))
    m.append_message(assistant("d"))
    m.append_label_change(c, "sea")
    m.append_label_change(a, "ay")
    m.append_label_change(b, "bee")
    m.set_session_name("not carried", "user")
    old = m.get_session_file()
    old_bytes = Path(old or "").read_bytes()
    newp = m.create_branched_session(c)
    assert newp is not None and newp != old
    assert Path(old or "").read_bytes() == old_bytes
    out = lines(newp)
    assert out[0]["parentSession"] == old and "title" not in out[0]
    assert [e["id"] for e in out[1:4]] == [a, b, c]
    lbls = out[4:]
    assert [(e["targetId"], e["label"]) for e in lbls] == [(c, "sea"), (a, "ay"), (b, "bee")]
    assert lbls[0]["parentId"] == c and lbls[1]["parentId"] == lbls[0]["id"]
    assert len({e["timestamp"] for e in lbls}) == 1
    assert m.get_leaf_id() == lbls[-1]["id"]
    with pytest.raises(EntryNotFoundError):
        m.create_branched_session("nope")
    # in memory: entries replaced, returns None
    mm = SessionManager.in_memory("/x")
    x = mm.append_message(user("x"))
    mm.append_message(user("y"))
    sid = mm.get_session_id()
    assert mm.create_branched_session(x) is None
    assert [e["id"] for e in mm.get_entries()] == [x] and mm.get_session_id() != sid


def test_move_to_renames_file_and_updates_cwd(tmp_path: Path) -> None:

    agent = tmp_path / "agent"
    penv = PathEnv(
        env={"PI_CODING_AGENT_DIR": str(agent)}, home=str(tmp_path / "home"), tmp="/nonexistent-tmp"
    )
    k = kw(tmp_path)
    k.update(penv=penv, agent_dir=str(agent))
    m = SessionManager.create(str(tmp_path / "p1"), **k)
    m.append_message(user("q"))
    m.append_message(assistant("a"))
    old = m.get_session_file() or ""
    art = Path(old[: -len(".jsonl")])
    art.mkdir()
    (art / "x.txt").write_text("artifact")
    m.move_to(str(tmp_path / "p2"))
    newp = m.get_session_file() or ""
    assert newp != old and not os.path.exists(old) and os.path.exists(newp)
    assert (Path(newp[: -len(".jsonl")]) / "x.txt").read_text() == "artifact"
    assert lines(newp)[0]["cwd"] == str(tmp_path / "p2")
    assert m.get_cwd() == str(tmp_path / "p2")
    # a never-written session stays unwritten
    f = SessionManager.create(
        str(tmp_path / "p3"), **{**kw(tmp_path, 7), "penv": penv, "agent_dir": str(agent)}
    )
    f.move_to(str(tmp_path / "p4"))
    assert not os.path.exists(f.get_session_file() or "")


def test_in_memory_session(tmp_path: Path) -> None:
    m = SessionManager.in_memory("/proj")
    m.append_message(user("q"))
    m.append_message(assistant("a"))
    assert m.get_session_file() is None and not m.is_persisted()
    assert len(m.get_entries()) == 2
    m.flush()
    m.close()
