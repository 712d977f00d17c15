"""omp 18's title slot (issue 31): the fixed-width first line of every file omp writes,
`{"type":"title","v":1,"title",["source",]"updatedAt","pad"}` padded with spaces to exactly
256 UTF-8 bytes, rewritten in place when the title changes (after a `title_change` entry is
appended). /work/brief/omp18-dialect.md §2 has the rules with their source lines.

sessiontree setting a title on a file omp wrote must do what omp does, byte for byte: the
same slot (omp's own serializer is the judge), the rest of the file left as it was, and one
`title_change` entry appended like omp's. And omp must be able to retitle the file afterwards:
it overwrites 256 bytes at offset 0 whatever the old slot's width.
"""

from __future__ import annotations

import shutil
from typing import Any

import orjson
import pytest
from sessiontree.core.session import SessionManager

from compat.conftest import Work
from compat.omp.cases import BASE_STEPS
from compat.state import Agent, agent_load, agent_write, assert_same_state, our_state, run_harness

SLOT_BYTES = 256

TITLES = {
    "ascii": "Second title",
    "quotes_and_backslash": 'Say "hi" \\ then leave',
    "emoji": "🚀 launch ✓ done",
    "long_multibyte_truncated": "日本語のとても長いセッションのタイトル" * 8,
    "control_characters": "tab\there\nand a newline",
}


def omp_file_titled(agent: Agent, work: Work, name: str, title: str) -> bytes:
    """A file omp wrote (base conversation, then `title`); its bytes."""
    path = work.file(name)
    agent_write(agent, path, work.cwd, [*BASE_STEPS, {"op": "title", "title": title}])
    return path.read_bytes()


def first_line(data: bytes) -> bytes:
    nl = data.find(b"\n")
    assert nl >= 0, "no complete first line"
    return data[: nl + 1]


def last_entry(data: bytes, after: int) -> dict[str, Any]:
    """The one line appended past byte `after` (parsed)."""
    tail = data[after:]
    assert tail.endswith(b"\n") and tail.count(b"\n") == 1, f"not one appended line: {tail[:200]!r}"
    entry: dict[str, Any] = orjson.loads(tail)
    return entry


@pytest.mark.parametrize("kind", sorted(TITLES))
def test_sessiontree_retitles_an_omp_file_as_omp_does(omp: Agent, work: Work, kind: str) -> None:
    title = TITLES[kind]
    original = omp_file_titled(omp, work, "omp.jsonl", "First title")
    ours_path = work.file("sessiontree.jsonl")
    shutil.copyfile(work.file("omp.jsonl"), ours_path)

    agent_write(omp, work.file("omp.jsonl"), work.cwd, [{"op": "title", "title": title, "source": "user"}])
    theirs = work.file("omp.jsonl").read_bytes()

    m = SessionManager.open(str(ours_path))
    try:
        assert m.set_session_name(title, "user")
    finally:
        m.close()
    ours = ours_path.read_bytes()

    # omp's title_change holds the title as omp cleaned it (whole: only the slot is cut)
    their_entry = last_entry(theirs, len(original))
    # the slot: 256 bytes, exactly what omp's serializer makes of that title
    slot = first_line(ours)
    assert len(slot) == SLOT_BYTES, f"the slot is {len(slot)} bytes: {slot!r}"
    fields = orjson.loads(slot)
    expected = run_harness(
        omp,
        {
            "op": "serializeTitleSlot",
            "title": their_entry["title"],
            "source": "user",
            "updatedAt": fields.get("updatedAt"),
        },
    )["line"].encode()
    assert slot == expected

    # the rest of the file kept byte for byte (the slot was rewritten in place)
    assert ours[SLOT_BYTES : len(original)] == original[SLOT_BYTES:]

    # one title_change appended, as omp appends it (same keys in the same order, same values
    # but for its id and time)
    our_entry = last_entry(ours, len(original))
    assert list(our_entry) == list(their_entry)
    for key in ("id", "timestamp"):
        our_entry.pop(key)
        their_entry.pop(key)
    assert our_entry == their_entry


def test_omp_retitles_a_file_sessiontree_titled(omp: Agent, work: Work) -> None:
    path = work.file("session.jsonl")
    omp_file_titled(omp, work, "session.jsonl", "First title")
    m = SessionManager.open(str(path))
    try:
        assert m.set_session_name("Titled by sessiontree", "user")
        m.append_message({"role": "user", "content": "after the title", "timestamp": 1_767_225_700_000})
        m.flush()
    finally:
        m.close()
    # omp overwrites the first 256 bytes in place: sessiontree's slot must be exactly that wide
    agent_write(omp, path, work.cwd, [{"op": "title", "title": "Titled by omp", "source": "user"}])
    theirs = agent_load(omp, path, every_leaf=True)
    ours = our_state(path, every_leaf=True)
    assert theirs["name"] == "Titled by omp"
    assert_same_state(ours, theirs, omp, "a file sessiontree then omp titled")
