"""The agents' edits applied as their tools apply them (textedit.py, patches.py).

The pi cases follow pi 1.6's edit tool (`core/tools/edit.js`, `edit-diff.js` in
`.cache/compat`): the same inputs there give the same files.
"""

from __future__ import annotations

import pytest
from sessiontree.core.checkpoints.patches import apply_numbered_diff, apply_update, parse_patch
from sessiontree.core.checkpoints.textedit import EditFailed, apply_claude_edits, apply_pi_edits


def test_pi_edit_replaces_the_unique_match() -> None:
    assert apply_pi_edits("a\nb\nc\n", [("b", "B")]) == "a\nB\nc\n"


def test_pi_edit_keeps_crlf_line_endings_and_the_bom() -> None:
    raw = "\ufeffone\r\ntwo\r\nthree\r\n"
    assert apply_pi_edits(raw, [("two\nthree", "2\n3")]) == "\ufeffone\r\n2\r\n3\r\n"


def test_pi_edits_are_all_matched_against_the_original() -> None:
    assert apply_pi_edits("x y z", [("x", "y"), ("y", "Y")]) == "y Y z"


@pytest.mark.parametrize(
    ("raw", "edits", "why"),
    [
        ("a a", [("a", "b")], "not unique"),
        ("abc", [("zz", "y")], "not found"),
        ("abc", [("", "y")], "empty"),
        ("abc", [("ab", "x"), ("bc", "y")], "overlap"),
        ("abc", [("b", "b")], "no change"),
    ],
)
def test_pi_edit_fails_where_pi_fails(raw: str, edits: list[tuple[str, str]], why: str) -> None:
    with pytest.raises(EditFailed, match=why):
        apply_pi_edits(raw, edits)


def test_pi_edit_falls_back_to_the_fuzzy_match_and_rewrites_only_the_lines_it_touches() -> None:
    raw = "keep \u201cquoted\u201d   \nsay \u201chi\u201d  \nlast\n"
    # the model wrote plain quotes and no trailing spaces
    assert (
        apply_pi_edits(raw, [('say "hi"', 'say "hello"')])
        == 'keep \u201cquoted\u201d   \nsay "hello"\nlast\n'
    )


def test_claude_edit_replace_all_and_the_line_break_of_a_deleted_string() -> None:
    assert apply_claude_edits("a\nb\na\n", [("a", "c", True)]) == "c\nb\nc\n"
    assert apply_claude_edits("keep\ndrop\nkeep2\n", [("drop", "", False)]) == "keep\nkeep2\n"
    with pytest.raises(EditFailed):
        apply_claude_edits("a a", [("a", "b", False)])


def test_codex_patch_add_update_move_delete() -> None:
    patch = (
        "*** Begin Patch\n*** Add File: new.txt\n+hello\n+world\n"
        "*** Update File: app.py\n*** Move to: main.py\n@@ def greet():\n-    print('Hi')\n+    print('Hello')\n"
        "*** Delete File: old.txt\n*** End Patch"
    )
    ops = parse_patch(patch)
    assert [(o.kind, o.path, o.move_to) for o in ops] == [
        ("add", "new.txt", None),
        ("update", "app.py", "main.py"),
        ("delete", "old.txt", None),
    ]
    assert ops[0].added == "hello\nworld\n"
    src = "import os\n\ndef greet():\n    print('Hi')\n"
    assert apply_update(src, ops[1].chunks) == "import os\n\ndef greet():\n    print('Hello')\n"
    with pytest.raises(EditFailed):
        apply_update("nothing here\n", ops[1].chunks)


def test_omp_numbered_diff_checks_every_line_it_names() -> None:
    old = "\n".join(f"line {i}" for i in range(1, 11)) + "\n"
    # oh-my-pi's display diff: context and removed lines by old number, added by new number
    diff = " 1|line 1\n 2|...\n 4|line 4\n-5|line 5\n+5|five\n+6|five and a half\n 6|line 6\n 7|..."
    new = apply_numbered_diff(old, diff)
    assert new.splitlines()[3:7] == ["line 4", "five", "five and a half", "line 6"]
    assert new.endswith("line 10\n")
    with pytest.raises(EditFailed):
        apply_numbered_diff(old.replace("line 5", "other"), diff)
