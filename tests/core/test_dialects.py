"""The dialects of the agents' files (issue 31): oh-my-pi's title slot, pi 1.6's and
omp 18's words, each read and written as that agent does (docs/storage-format.md,
"Dialects"). The agents' own code checks the same files in tests/compat; these tests pin
the rules themselves on real files, without the agents installed."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from sessiontree.core import SessionManager
from sessiontree.core.discovery.summary import summarize_file
from sessiontree.core.format.dialects import Dialect, Evidence, home_dialect, id_dialect
from sessiontree.core.format.title_slot import (
    SLOT_BYTES,
    TitleSlot,
    fold_into_header,
    serialize_slot,
    split_slot,
)

HEADER = {
    "type": "session",
    "version": 3,
    "id": "01a24176-cba1-7621-b665-ce691883e79b",
    "timestamp": "2026-12-04T14:30:34.145Z",
    "cwd": "/proj",
}


def _line(obj: dict[str, Any]) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


def _entries() -> list[dict[str, Any]]:
    return [
        {
            "type": "message",
            "id": "u1",
            "parentId": None,
            "timestamp": "2026-12-04T14:30:35.000Z",
            "message": {"role": "user", "content": "hello", "timestamp": 1},
        },
        {
            "type": "message",
            "id": "a1",
            "parentId": "u1",
            "timestamp": "2026-12-04T14:30:36.000Z",
            "message": {
                "role": "assistant",
                "content": [{"type": "text", "text": "hi"}],
                "provider": "anthropic",
                "model": "claude",
                "stopReason": "stop",
                "timestamp": 2,
            },
        },
    ]


def _omp_file(
    path: Path,
    title: str = "Omp title",
    source: str | None = "user",
    entries: list[dict[str, Any]] | None = None,
) -> Path:
    data = serialize_slot(title, source, "2026-12-04T14:30:40.000Z") + _line(HEADER)
    for e in entries if entries is not None else _entries():
        data += _line(e)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


# --- the slot itself ----------------------------------------------------------------------


def test_the_slot_is_256_bytes_in_omps_key_order_with_or_without_a_source() -> None:
    line = serialize_slot("Fix the build", "user", "2026-12-04T14:31:37.145Z")
    assert len(line) == SLOT_BYTES and line.endswith(b'"}\n')
    assert line.startswith(
        b'{"type":"title","v":1,"title":"Fix the build","source":"user","updatedAt":"2026-12-04T14:31:37.145Z","pad":"'
    )
    bare = serialize_slot("", None, "2026-12-04T14:31:37.145Z")
    assert len(bare) == SLOT_BYTES
    assert bare.startswith(b'{"type":"title","v":1,"title":"","updatedAt":')


def test_a_long_title_is_cut_by_whole_code_points_to_fit() -> None:
    title = "日本語のとても長いタイトル" * 20  # 3 bytes a character
    line = serialize_slot(title, "user", "2026-12-04T14:31:37.145Z")
    assert len(line) == SLOT_BYTES
    slot, width = split_slot(line)
    assert slot is not None and width == SLOT_BYTES
    assert title.startswith(slot.title) and 0 < len(slot.title) < len(title)
    # the longest prefix that fits: one more character would not
    one_more = title[: len(slot.title) + 1]
    assert (
        len(
            json.dumps(
                {
                    "type": "title",
                    "v": 1,
                    "title": one_more,
                    "source": "user",
                    "updatedAt": "2026-12-04T14:31:37.145Z",
                    "pad": "",
                },
                separators=(",", ":"),
                ensure_ascii=False,
            ).encode()
        )
        + 1
        > SLOT_BYTES
    )


@pytest.mark.parametrize(
    "line",
    [
        b'{"type":"title","v":2,"title":"x","updatedAt":"t","pad":""}',
        b'{"type":"title","v":1,"title":"x","source":null,"updatedAt":"t","pad":""}',
        b'{"type":"title","v":1,"title":"x","source":"bot","updatedAt":"t","pad":""}',
        b'{"type":"title","v":1,"updatedAt":"t","pad":""}',
        b'{"type":"title","v":1,"title":"x","updatedAt":"t"}',
        b'{"type":"session","version":3,"id":"x","timestamp":"t","cwd":"/"}',
    ],
)
def test_only_what_omp_takes_for_a_slot_is_one(line: bytes) -> None:
    assert split_slot(line + b"\n") == (None, 0)


def test_a_slot_of_any_width_is_read_and_folded_into_the_header() -> None:
    line = b'{"type":"title","v":1.0,"title":"Short","updatedAt":"t","pad":" "}\n'
    slot, width = split_slot(line + b'{"type":"session"}\n')
    assert slot == TitleSlot("Short", None, "t", len(line)) and width == len(line)
    header = fold_into_header({"type": "session", "title": "old", "titleSource": "user"}, slot)
    assert header == {"type": "session", "title": "Short"}  # no source: it is removed
    empty = fold_into_header({"type": "session", "title": "old"}, TitleSlot("", "auto", "t"))
    assert empty == {"type": "session", "titleSource": "auto"}  # an empty title hides the header's


# --- reading an omp 18 file --------------------------------------------------------------


def test_an_omp_file_opens_with_its_title_and_nothing_is_written(tmp_path: Path) -> None:
    path = _omp_file(tmp_path / "omp.jsonl")
    before = path.read_bytes()
    m = SessionManager.open(str(path), read_only=True)
    assert m.get_header() == {**HEADER, "title": "Omp title", "titleSource": "user"}
    assert m.get_session_name() == "Omp title" and m.dialect is Dialect.OMP
    assert [e["id"] for e in m.get_entries()] == ["u1", "a1"]
    assert m.get_entry("a1")["message"]["content"][0]["text"] == "hi"  # read back by its offset
    assert m.build_session_context().models == {"default": "anthropic/claude"}
    assert path.read_bytes() == before


def test_an_omp_file_opens_the_same_from_the_index_cache(tmp_path: Path) -> None:
    path = _omp_file(tmp_path / "omp.jsonl")
    cache = tmp_path / "cache"
    first = SessionManager.open(str(path), read_only=True, cache_dir=str(cache), cache_min_bytes=1)
    first.save_index_cache()
    again = SessionManager.open(str(path), read_only=True, cache_dir=str(cache), cache_min_bytes=1)
    assert again.load_report.from_cache
    assert again.get_session_name() == "Omp title"
    assert [e["id"] for e in again.get_entries()] == ["u1", "a1"]


def test_listings_show_omp_titles_and_pi_names(tmp_path: Path) -> None:
    omp = _omp_file(tmp_path / "s" / "omp.jsonl")
    pi = tmp_path / "s" / "pi.jsonl"
    named = [
        *_entries(),
        {
            "type": "session_info",
            "id": "n1",
            "parentId": "a1",
            "timestamp": "2026-12-04T14:31:00.000Z",
            "name": "  Pi name  ",
        },
    ]
    pi.write_bytes(
        _line({**HEADER, "title": "a header title pi never reads"}) + b"".join(_line(e) for e in named)
    )
    s_omp, s_pi = summarize_file(str(omp)), summarize_file(str(pi))
    assert s_omp is not None and s_omp.title == "Omp title" and s_omp.dialect == "omp"
    assert s_pi is not None and s_pi.title == "Pi name" and s_pi.dialect == "pi"
    m = SessionManager.open(str(pi), read_only=True)
    assert m.get_session_name() == "Pi name"


# --- writing in the file's dialect -----------------------------------------------------------


def test_omp_title_change_rewrites_the_slot_in_place_and_appends_the_audit_entry(tmp_path: Path) -> None:
    path = _omp_file(tmp_path / ".omp" / "agent" / "sessions" / "--proj--" / "omp.jsonl")
    before = path.read_bytes()
    inode = os.stat(path).st_ino
    m = SessionManager.open(str(path))
    assert m.set_session_name("Renamed", "user")
    m.close()
    after = path.read_bytes()
    assert os.stat(path).st_ino == inode  # in place, not a new file
    assert after[SLOT_BYTES : len(before)] == before[SLOT_BYTES:]  # everything after the slot stays
    slot, _ = split_slot(after)
    assert slot is not None and (slot.title, slot.source) == ("Renamed", "user")
    last = json.loads(after.rstrip(b"\n").rsplit(b"\n", 1)[-1])
    assert {k: last[k] for k in ("type", "parentId", "title", "source", "previousTitle")} == {
        "type": "title_change",
        "parentId": "a1",
        "title": "Renamed",
        "source": "user",
        "previousTitle": "Omp title",
    }
    assert list(last)[:4] == ["type", "id", "parentId", "timestamp"]
    assert not m.set_session_name("auto title", "auto")  # an automatic name never replaces a user's
    again = SessionManager.open(str(path), read_only=True)
    assert again.get_session_name() == "Renamed"


def test_a_title_for_a_slotless_file_in_omps_dir_rewrites_it_with_a_slot(tmp_path: Path) -> None:
    path = tmp_path / ".omp" / "agent" / "sessions" / "--proj--" / "old.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(_line({**HEADER, "id": "s4b9c212331be"}) + b"".join(_line(e) for e in _entries()))
    m = SessionManager.open(str(path))
    assert m.dialect is Dialect.OMP
    assert m.set_session_name("Now titled", "user")
    m.close()
    data = path.read_bytes()
    slot, start = split_slot(data)
    assert slot is not None and slot.title == "Now titled" and start == SLOT_BYTES
    header = json.loads(data[start : data.index(b"\n", start)])
    assert (header["title"], header["titleSource"]) == ("Now titled", "user")


def test_pi_files_get_pis_words(tmp_path: Path) -> None:
    sessions = tmp_path / ".pi" / "agent" / "sessions" / "--proj--"
    m = SessionManager.create("/proj", str(sessions))
    assert id_dialect(m.get_session_id()) is Dialect.PI  # a UUID v7, as pi names sessions
    m.append_message(_entries()[0]["message"])
    m.append_message(_entries()[1]["message"])
    m.append_model_change("openai/gpt-5")
    m.append_thinking_level_change(None)
    assert m.set_session_name("Pi\nname", "user")
    big = "A" * 4096
    m.append_message(
        {"role": "user", "content": [{"type": "image", "data": big, "mimeType": "image/png"}], "timestamp": 3}
    )
    m.close()
    path = m.get_session_file()
    assert path is not None
    lines = [json.loads(x) for x in Path(path).read_bytes().splitlines()]
    by_type = {e["type"]: e for e in lines[1:]}
    assert {k: by_type["model_change"][k] for k in ("provider", "modelId")} == {
        "provider": "openai",
        "modelId": "gpt-5",
    }
    assert "model" not in by_type["model_change"]
    assert by_type["thinking_level_change"]["thinkingLevel"] == "off"  # pi keeps a null as null
    assert by_type["session_info"]["name"] == "Pi name"
    assert lines[-1]["message"]["content"][0]["data"] == big  # inline: pi has no blob store
    again = SessionManager.open(path, read_only=True)
    ctx = again.build_session_context()
    assert again.get_session_name() == "Pi name"
    assert ctx.model == {"provider": "openai", "modelId": "gpt-5"} and ctx.thinking_level == "off"


# --- detection ---------------------------------------------------------------------------


def test_detection_follows_the_content_first_then_the_dir_then_the_words() -> None:
    ev = Evidence(False, {"id": "0123456789abcdef"})
    assert ev.dialect() is Dialect.XCSH
    assert ev.dialect(Dialect.PI) is Dialect.PI  # the dir beats an id's hint
    ev.see({"type": "message", "message": {"role": "system", "content": ""}})
    assert ev.dialect(Dialect.OMP) is Dialect.PI  # what only pi writes beats the dir
    ev.see({"type": "reset_boundary"})
    assert ev.dialect() is Dialect.OMP
    assert Evidence(True).dialect(Dialect.PI) is Dialect.OMP  # a title slot is omp's
    # sessiontree's own words left in a pi session do not make it another agent's file
    junk = Evidence(False, {"id": "01a24176-cba1-7621-b665-ce691883e79b"})
    junk.see({"type": "model_change", "model": "openai/gpt-5"})
    assert junk.dialect(Dialect.PI) is Dialect.PI
    assert junk.dialect() is Dialect.OMP  # outside any agent dir: the omp/xcsh family...
    xcsh = Evidence(False, {"id": "0123456789abcdef"})
    xcsh.see({"type": "model_change", "model": "openai/gpt-5"})
    assert xcsh.dialect() is Dialect.XCSH  # ... xcsh's by its snowflake id
    legacy = Evidence(False, {"id": "sess-1"})
    legacy.see({"type": "model_change", "provider": "p", "modelId": "m"})
    assert legacy.dialect() is Dialect.PI and legacy.dialect(Dialect.OMP) is Dialect.OMP
    assert Evidence(False, {"id": "01a24176-cba1-7621-b665-ce691883e79b"}).dialect() is Dialect.PI


def test_home_dirs_of_the_agents(tmp_path: Path) -> None:
    assert home_dialect("/home/u/.pi/agent/sessions/--x--/a.jsonl") is Dialect.PI
    assert home_dialect("/home/u/.omp/profiles/work/agent/sessions/a.jsonl") is Dialect.OMP
    assert home_dialect("/home/u/.local/share/omp/sessions/a.jsonl") is Dialect.OMP
    assert home_dialect("/home/u/.xcsh/agent/sessions/a.jsonl") is Dialect.XCSH
    assert home_dialect(str(tmp_path / "a.jsonl")) is None


# --- what other writers wrote is kept ----------------------------------------------------------


def test_a_rewrite_keeps_the_bytes_of_a_newer_versions_entries(tmp_path: Path) -> None:
    path = tmp_path / "v4.jsonl"
    odd = b'{"type": "future_entry", "id": "f1", "parentId": "u1", "timestamp": "2026-12-04T14:30:37.000Z", "payload": {"x": 1.50, "y": "\\u00e9"}}\n'
    path.write_bytes(_line({**HEADER, "id": "0123456789abcdef", "version": 4}) + _line(_entries()[0]) + odd)
    m = SessionManager.open(str(path))
    assert [e["type"] for e in m.get_entries()] == ["message", "future_entry"]
    m.set_session_name("named", "user")  # xcsh: the header changes, the file is rewritten
    m.close()
    data = path.read_bytes()
    assert data.endswith(_line(_entries()[0]) + odd)
    assert json.loads(data.split(b"\n", 1)[0])["title"] == "named"


def test_entries_without_ids_get_theirs_written_with_the_first_change(tmp_path: Path) -> None:
    path = tmp_path / "noids.jsonl"
    plain = [{k: v for k, v in e.items() if k not in ("id", "parentId")} for e in _entries()]
    path.write_bytes(_line({**HEADER, "id": "test-session"}) + b"".join(_line(e) for e in plain))
    before = path.read_bytes()
    m = SessionManager.open(str(path), viewing=True)
    derived = [e["id"] for e in m.get_entries()]
    assert path.read_bytes() == before  # looking wrote nothing
    m.append_message({"role": "user", "content": "more", "timestamp": 3})
    m.close()
    lines = [json.loads(x) for x in path.read_bytes().splitlines()]
    assert [e["id"] for e in lines[1:3]] == derived
    assert [e["parentId"] for e in lines[1:4]] == [None, derived[0], derived[1]]
    backups = [p for p in os.listdir(tmp_path) if ".backup-ids-" in p]
    assert len(backups) == 1 and (tmp_path / backups[0]).read_bytes() == before


def test_a_cache_hit_tells_the_dialect_and_name_without_decoding_its_skeletons(tmp_path: Path) -> None:
    path = tmp_path / "pi.jsonl"
    named = [
        *_entries(),
        {
            "type": "session_info",
            "id": "n1",
            "parentId": "a1",
            "timestamp": "2026-12-04T14:31:00.000Z",
            "name": "Cached name",
        },
    ]
    path.write_bytes(_line(HEADER) + b"".join(_line(e) for e in named))
    cache = str(tmp_path / "cache")
    SessionManager.open(str(path), read_only=True, cache_dir=cache, cache_min_bytes=1).save_index_cache()
    with path.open("ab") as f:  # a rename pi appends after the cache was written
        f.write(
            _line(
                {
                    "type": "session_info",
                    "id": "n2",
                    "parentId": "n1",
                    "timestamp": "2026-12-04T14:32:00.000Z",
                    "name": "Later name",
                }
            )
        )
    warm = SessionManager.open(str(path), read_only=True, cache_dir=cache, cache_min_bytes=1)
    assert warm.load_report.from_cache
    assert warm.dialect is Dialect.PI and warm.get_session_name() == "Later name"
    assert warm.index._pending is not None  # the cached skeletons are still encoded


def test_other_agents_transcripts_keep_sessiontrees_own_words(tmp_path: Path) -> None:
    """A Claude Code transcript (its session id is a UUID, as pi's) is no pi session: its
    name is the title its reader gives the header (the transcript's summary line)."""
    from shared_data import shared_fixture

    m = SessionManager.open(
        str(shared_fixture("real/claudecode-episodic-large-conversation.jsonl")), read_only=True
    )
    assert m.dialect is Dialect.XCSH
    title = (m.get_header() or {}).get("title")
    assert isinstance(title, str) and title
    assert m.get_session_name() == title
