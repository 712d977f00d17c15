"""Migrations: the reference golden cases, the real v1 session, golden v2/v3 files.

Golden files under tests/fixtures/golden/migrations are regenerated only with
SESSIONTREE_REGEN_GOLDEN=1.
"""

from __future__ import annotations

import copy
import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from golden import GOLDEN as GOLDEN_ROOT
from golden import check_golden
from sessiontree.core.format.jsonl import dumps_line, load_entries_from_file, parse_session_entries
from sessiontree.core.format.migrations import (
    CURRENT_SESSION_VERSION,
    MIGRATIONS,
    migrate_session_entries,
    migrate_v1_to_v2,
    migrate_v2_to_v3,
    session_version,
)
from sessiontree.core.ids import FixedClock, IdSource
from shared_data import real_v1_session

FIXTURES = Path(__file__).parent.parent / "fixtures"
REF = FIXTURES / "reference"
GOLDEN = GOLDEN_ROOT / "migrations"

CASES = json.loads((REF / "inputs.json").read_text())["migrationCases"]
EXPECTED = json.loads((REF / "migration.expected.json").read_text())


def counter_ids() -> Any:
    numbers = itertools.count(1)
    return lambda: f"gen{next(numbers):05d}"


def normalize_ids(entries: list[Any], generated: set[str]) -> list[Any]:
    """Rename generated ids to id1, id2, ... by order of first appearance (in file order)."""
    mapping: dict[str, str] = {}

    def walk(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value]
        if isinstance(value, str) and value in generated:
            return mapping.setdefault(value, f"id{len(mapping) + 1}")
        return value

    return [walk(e) for e in entries]


def to_bytes(entries: list[Any]) -> bytes:
    return b"".join(dumps_line(e) + b"\n" for e in entries)


# ------------------------------------------------------------------ reference cases


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_reference_migration_case(case: dict[str, Any]) -> None:
    entries = copy.deepcopy(case["entries"])
    seen: list[str] = []
    numbers = itertools.count(1)

    def new_id() -> str:
        value = f"zz{next(numbers):06d}"
        seen.append(value)
        return value

    result = migrate_session_entries(entries, new_id)
    expected = EXPECTED[case["name"]]
    gen_expected = {
        v
        for e in expected
        for v in (e.get("id"), e.get("parentId"), e.get("firstKeptEntryId"))
        if isinstance(v, str) and v.startswith("gen")
    }
    # Key order and values (JS number formatting included), ids by order of first appearance.
    assert to_bytes(normalize_ids(entries, set(seen))) == to_bytes(normalize_ids(expected, gen_expected))
    version = expected[0].get("version") if expected[0].get("type") == "session" else None
    original = case["entries"][0].get("version", 1) if case["entries"][0].get("type") == "session" else 1
    if original >= CURRENT_SESSION_VERSION:
        assert result is None
        assert entries == case["entries"]
    else:
        assert result == original
        assert version in (None, CURRENT_SESSION_VERSION)


def test_compaction_index_semantics() -> None:
    entries = copy.deepcopy(next(c for c in CASES if c["name"] == "v1-compaction-index")["entries"])
    migrate_session_entries(entries, counter_ids())
    comp = [e for e in entries if e["type"] == "compaction"]
    # Index 2 counts the header as 0, so it is the assistant message.
    assert comp[0]["firstKeptEntryId"] == entries[2]["id"]
    assert list(comp[0]) == [
        "type",
        "timestamp",
        "summary",
        "tokensBefore",
        "id",
        "parentId",
        "firstKeptEntryId",
    ]
    # Index 0 is the header and 99 is past the end: no firstKeptEntryId at all.
    assert "firstKeptEntryId" not in comp[1] and "firstKeptEntryId" not in comp[2]
    assert all("firstKeptEntryIndex" not in c for c in comp)


def test_compaction_index_pointing_at_a_later_entry_leaves_the_id_out() -> None:
    entries: list[Any] = [
        {"type": "session", "id": "s", "timestamp": "t", "cwd": "/"},
        {"type": "compaction", "summary": "x", "firstKeptEntryIndex": 2, "tokensBefore": 1},
        {"type": "message", "message": {"role": "user", "content": "later"}},
        {"type": "compaction", "summary": "self", "firstKeptEntryIndex": 3, "tokensBefore": 1},
    ]
    migrate_session_entries(entries, counter_ids())
    assert "firstKeptEntryId" not in entries[1]
    # An index pointing at the compaction itself gets its freshly assigned id.
    assert entries[3]["firstKeptEntryId"] == entries[3]["id"]


def test_v1_ids_are_not_collision_checked_and_overwrite_existing_ids() -> None:
    entries: list[Any] = [
        {"type": "session", "id": "s", "timestamp": "t", "cwd": "/"},
        {"type": "message", "id": "old", "parentId": "x", "message": {"role": "user"}},
        {"type": "message", "message": {"role": "assistant"}},
    ]
    same = iter(["dup", "dup"])
    migrate_session_entries(entries, lambda: next(same))
    assert [e.get("id") for e in entries] == ["s", "dup", "dup"]
    assert list(entries[1]) == ["type", "id", "parentId", "message"]  # positions kept
    assert entries[2]["parentId"] == "dup"


def test_id_source_can_be_passed_directly() -> None:
    entries: list[Any] = [{"type": "session", "id": "s"}, {"type": "message", "message": {}}]
    assert migrate_session_entries(entries, IdSource(seed=7)) == 1
    assert len(entries[1]["id"]) == 8 and entries[1]["parentId"] is None


@pytest.mark.parametrize(
    ("version", "runs_v1", "runs_v2", "returned"),
    [
        (None, True, True, 1),
        (0, True, True, 0),
        (1, True, True, 1),
        (1.5, True, True, 1),
        (2, False, True, 2),
        ("2", False, True, 2),
        (3, False, False, None),
        (7, False, False, None),
        ("abc", False, False, None),
    ],
)
def test_version_values(version: Any, runs_v1: bool, runs_v2: bool, returned: int | None) -> None:
    header: dict[str, Any] = {"type": "session", "id": "s"}
    if version is not None:
        header["version"] = version
    msg: dict[str, Any] = {"type": "message", "message": {"role": "hookMessage"}}
    entries: list[Any] = [header, msg]
    assert migrate_session_entries(entries, counter_ids()) == returned
    assert ("id" in msg) == runs_v1
    assert (msg["message"]["role"] == "custom") == runs_v2


def test_numbered_steps_and_non_objects_are_skipped() -> None:
    assert {1: migrate_v1_to_v2, 2: migrate_v2_to_v3} == MIGRATIONS
    assert CURRENT_SESSION_VERSION == 3
    entries: list[Any] = [
        {"type": "session", "id": "s"},
        42,
        None,
        "x",
        [1],
        {"type": "message", "message": {}},
    ]
    assert migrate_session_entries(entries, counter_ids()) == 1
    assert entries[1:5] == [42, None, "x", [1]]
    assert entries[5]["id"] == "gen00001" and entries[5]["parentId"] is None
    assert session_version(entries) == 3


def test_version_key_is_appended_when_missing_and_kept_in_place_otherwise() -> None:
    missing: list[Any] = [{"type": "session", "id": "s", "cwd": "/"}]
    migrate_session_entries(missing, counter_ids())
    assert list(missing[0]) == ["type", "id", "cwd", "version"]
    present: list[Any] = [{"type": "session", "version": 2, "id": "s"}]
    migrate_session_entries(present)
    assert list(present[0]) == ["type", "version", "id"] and present[0]["version"] == 3


# ------------------------------------------------------------------ the real v1 session


def seeded_ids() -> IdSource:
    return IdSource(seed=20260101, clock=FixedClock(1_767_225_600_000))


def test_real_v1_session_migrates_to_a_linear_chain() -> None:
    entries = load_entries_from_file(str(real_v1_session()))
    assert len(entries) == 1019 and "version" not in entries[0]
    assert migrate_session_entries(entries, seeded_ids()) == 1
    assert entries[0]["version"] == 3
    prev = None
    for entry in entries[1:]:
        assert len(entry["id"]) == 8
        assert entry["parentId"] == prev
        prev = entry["id"]
    # Reading what we write gives the same entries back.
    assert parse_session_entries(to_bytes(entries)) == entries


def test_real_v1_session_golden_v2_and_v3() -> None:
    source = real_v1_session().read_bytes()
    ids = seeded_ids()
    v2 = parse_session_entries(source)
    migrate_v1_to_v2(v2, ids)
    check_golden(GOLDEN / "real-v1-session.v2.jsonl", to_bytes(v2))

    v3 = parse_session_entries(source)
    assert migrate_session_entries(v3, seeded_ids()) == 1
    v3_bytes = to_bytes(v3)
    check_golden(GOLDEN / "real-v1-session.v3.jsonl", v3_bytes)

    # The v2 golden goes on to the v3 golden; the v3 golden is left alone.
    from_v2 = parse_session_entries((GOLDEN / "real-v1-session.v2.jsonl").read_bytes())
    assert migrate_session_entries(from_v2) == 2
    assert to_bytes(from_v2) == v3_bytes
    again = parse_session_entries(v3_bytes)
    assert migrate_session_entries(again) is None
    assert to_bytes(again) == v3_bytes


def test_v2_golden_with_hook_messages() -> None:
    entries: list[Any] = [
        {"type": "session", "version": 2, "id": "s", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/w"},
        {
            "type": "message",
            "id": "a",
            "parentId": None,
            "timestamp": "2025-01-01T00:00:01.000Z",
            "message": {
                "role": "hookMessage",
                "customType": "h",
                "content": "x",
                "display": True,
                "timestamp": 1,
            },
        },
        {
            "type": "message",
            "id": "b",
            "parentId": "a",
            "timestamp": "2025-01-01T00:00:02.000Z",
            "message": {"role": "user", "content": "hookMessage", "timestamp": 2},
        },
    ]
    check_golden(GOLDEN / "hook-messages.v2.jsonl", to_bytes(entries))
    assert migrate_session_entries(entries) == 2
    check_golden(GOLDEN / "hook-messages.v3.jsonl", to_bytes(entries))
    assert entries[1]["message"]["role"] == "custom" and entries[2]["message"]["role"] == "user"
