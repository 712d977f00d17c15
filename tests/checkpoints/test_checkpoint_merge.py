"""The three-way merge (core/checkpoints/merge.py): diff3's laws and its conflicts."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from sessiontree.core.checkpoints.merge import merge3

# few distinct lines, so that the sides share lines and the matcher has work to do
_line = st.sampled_from(["a\n", "b\n", "c\n", "d\n", "\n", "x = 1\n", "end"])
_text = st.lists(_line, max_size=14).map("".join)


@settings(max_examples=300, deadline=None)
@given(_text, _text)
def test_nothing_changed_on_disk_takes_the_target(base: str, target: str) -> None:
    assert merge3(base, base, target).text == target


@settings(max_examples=300, deadline=None)
@given(_text, _text)
def test_a_target_equal_to_the_base_keeps_the_disk(base: str, disk: str) -> None:
    assert merge3(base, disk, base).text == disk


@settings(max_examples=300, deadline=None)
@given(_text, _text)
def test_the_same_change_on_both_sides_is_taken_once(base: str, both: str) -> None:
    r = merge3(base, both, both)
    assert (r.text, r.conflicts) == (both, 0)


@settings(max_examples=300, deadline=None)
@given(_text, _text, _text)
def test_a_merge_without_conflicts_keeps_every_line_each_side_added(
    base: str, disk: str, target: str
) -> None:
    r = merge3(base, disk, target)
    if r.conflicts == 0:
        merged = r.text.splitlines(keepends=True)
        for side in (disk, target):
            for line in set(side.splitlines(keepends=True)) - set(base.splitlines(keepends=True)):
                assert line in merged
    else:
        assert "<<<<<<< " in r.text and ">>>>>>> " in r.text


def test_changes_to_different_lines_are_both_kept() -> None:
    base = "one\ntwo\nthree\nfour\nfive\n"
    disk = "one\nTWO (mine)\nthree\nfour\nfive\n"
    target = "one\ntwo\nthree\nfour\nFIVE (agent)\n"
    r = merge3(base, disk, target)
    assert (r.text, r.conflicts) == ("one\nTWO (mine)\nthree\nfour\nFIVE (agent)\n", 0)


def test_changes_to_the_same_line_are_a_conflict_with_all_three_versions() -> None:
    r = merge3("a\nb\nc\n", "a\nmine\nc\n", "a\ntheirs\nc\n")
    assert r.conflicts == 1
    assert r.text == (
        "a\n<<<<<<< disk (your version)\nmine\n||||||| session (current node)\nb\n"
        "=======\ntheirs\n>>>>>>> restore target\nc\n"
    )


def test_a_last_line_without_a_newline_still_gets_its_marker_on_a_line_of_its_own() -> None:
    r = merge3("a\nb", "a\nB1", "a\nB2")
    assert r.conflicts == 1
    assert "B1\n||||||| " in r.text and "B2\n>>>>>>> " in r.text
