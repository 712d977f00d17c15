"""The reference renderer's post-render formatting of the summary texts the model receives.

The expected strings are what the reference's ``format(text, {renderPhase: "post-render"})``
returns for each input (its JavaScript run under Node on the same inputs).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from sessiontree.cli import main
from sessiontree.core.tree.messages import (
    BRANCH_SUMMARY_TEMPLATE,
    COMPACTION_SUMMARY_TEMPLATE,
    branch_summary_text,
    compaction_summary_text,
    convert_to_llm,
)
from sessiontree.core.tree.prompt_format import format_prompt

REAL = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "real"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a  \n  b\t", "a\n  b"),
        ("a\u00a0\u3000", "a"),
        # JavaScript's trimEnd keeps U+0085 (Python's rstrip would not).
        ("a\x85", "a\x85"),
        ("a\ufeff", "a"),
    ],
)
def test_trailing_whitespace_is_trimmed(text: str, expected: str) -> None:
    assert format_prompt(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Intro:\n\n- a\n\n* b\n\n1. c\n\n10. d", "Intro:\n- a\n* b\n1. c\n10. d"),
        ("Intro:\n\n   - indented", "Intro:\n   - indented"),
        ("Intro:\n\n-\u00a0nbsp is JS whitespace", "Intro:\n-\u00a0nbsp is JS whitespace"),
        # Not list items: no whitespace after the marker, "+", a non-ASCII digit, and a
        # separator character that Python (not JavaScript) counts as whitespace.
        ("a\n\n-x", "a\n\n-x"),
        ("a\n\n1.x", "a\n\n1.x"),
        ("a\n\n+ b", "a\n\n+ b"),
        ("a\n\n\uff11. b", "a\n\n\uff11. b"),
        ("a\n\n-\x1cb", "a\n\n-\x1cb"),
    ],
)
def test_blank_line_before_a_list_item_is_dropped(text: str, expected: str) -> None:
    assert format_prompt(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a\n\n\n\nb", "a\n\nb"),
        ("a\n  \n\t\nb", "a\n\nb"),
        ("\n\n a\n\n", " a"),
        ("", ""),
        # U+001C is not whitespace to JavaScript: the line is content, not blank.
        ("a\n\x1c\n\n- b", "a\n\x1c\n- b"),
    ],
)
def test_blank_lines_collapse_and_leading_and_trailing_ones_go(text: str, expected: str) -> None:
    assert format_prompt(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("<summary>\n\nx\n\n</summary>", "<summary>\nx\n</summary>"),
        ('<file path="a.py">\n\nx', '<file path="a.py">\nx'),
        ("x\n\n   </summary>   ", "x\n   </summary>"),
        # Two blank lines: the first is kept at first, then removed by the closing tag.
        ("a\n\n\n</b>", "a\n</b>"),
        # `<x />` matches the opening-tag pattern; `<br/>`, `<A>` and `</b> x` do not.
        ("<x />\n\ny", "<x />\ny"),
        ("<br/>\n\ny", "<br/>\n\ny"),
        ("<A>\n\ny", "<A>\n\ny"),
        ("a\n\n</b> x", "a\n\n</b> x"),
    ],
)
def test_blank_lines_around_xml_tags(text: str, expected: str) -> None:
    assert format_prompt(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("| a |  b |\n|:-- | :-: | --:|---|", "|a|b|\n|:---|:---:|---:|---|"),
        ("  |  x | y |  ", "  |x|y|"),
        ("|---||---|", "|---|---|"),
        ("|||", "||"),
        ("| a | b", "| a | b"),
        ("|\ufeffa\ufeff|", "|a|"),
        ("|\x85a|", "|\x85a|"),
        # A regex `.` in JavaScript stops at U+2028: not a table row.
        ("| a\u2028 b |", "| a\u2028 b |"),
    ],
)
def test_table_rows_are_compacted(text: str, expected: str) -> None:
    assert format_prompt(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Inside a fence only trailing whitespace goes; blank lines, lists, tables stay.
        ("```\nx  \n\n\n- y\n| a |  b |\n```\n\n\nz", "```\nx\n\n\n- y\n| a |  b |\n```\n\nz"),
        ("  ~~~py\n\n\n  ~~~", "  ~~~py\n\n\n  ~~~"),
        # Any fence closes any other, as in the reference.
        ("```\n~~~\n\n- a", "```\n~~~\n- a"),
        # An unclosed fence covers the rest, closing tag included.
        ("```\n\n\n</summary>", "```\n\n\n</summary>"),
    ],
)
def test_code_fences(text: str, expected: str) -> None:
    assert format_prompt(text) == expected


def test_summary_texts_are_formatted_as_a_whole() -> None:
    summary = "## Done\n\n- one  \n\n\n| k |  v |\n\n"
    assert branch_summary_text(summary) == (
        "The following is a summary of a branch that this conversation came back from:\n\n"
        "<summary>\n## Done\n- one\n\n|k|v|\n</summary>"
    )
    assert compaction_summary_text(summary).endswith(
        "your own analysis:\n\n<summary>\n## Done\n- one\n\n|k|v|\n</summary>"
    )
    assert branch_summary_text(None) == (
        "The following is a summary of a branch that this conversation came back from:\n\n"
        "<summary>\n</summary>"
    )


def test_convert_to_llm_formats_summaries_and_leaves_the_messages_alone() -> None:
    summary = "Intro\n\n- a\n\n- b  "
    branch = {"role": "branchSummary", "summary": summary, "fromId": "x", "timestamp": 1}
    compaction = {"role": "compactionSummary", "summary": summary, "tokensBefore": 5, "timestamp": 2}
    [out] = convert_to_llm([branch, compaction])
    texts = [b["text"] for b in out["content"]]
    assert texts == [branch_summary_text(summary), compaction_summary_text(summary)]
    assert all("<summary>\nIntro\n- a\n- b\n</summary>" in t for t in texts)
    assert branch["summary"] == compaction["summary"] == summary


# sha256 of the reference's format() output (its JavaScript under Node) for each compaction
# summary of the two files, wrapped in the compaction and in the branch template.
REAL_EXPECTED = {
    "welpy-session.jsonl": [
        (
            "f87e2ed94863659d217014b6f15020726e10a0f761102124a2a48880af385cde",
            "53415c3e19c29bd89d711cb3de9ac743cd27b2607358d374c8173742168b3560",
        ),
        (
            "04f3f7afc050da197eb1172ccee274bc56c245e7cc861772ddf46d6219a54914",
            "bbdaf06d72e87d1ee8c7aef24341737211b7d4fd40e832988e742e0ded80c8ad",
        ),
    ],
    "pimono-d5dde00d-root-session.jsonl": [
        (
            "53a15bb6b36777162d7538adab994bec785eb148942490f2acc2a87aff095c83",
            "8e716895fa898de7b48d035ee184cf777dc05842da4e3c0c436e3061abf8354d",
        ),
    ],
}


def _real_file(name: str) -> Path:
    path = REAL / name
    if not path.is_file():
        pytest.skip(
            f"{path} is missing: the real session corpus is read from ../shared/fixtures/real "
            "beside the repository and never copied into it"
        )
    return path


def _compaction_summaries(path: Path) -> list[str]:
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and entry.get("type") == "compaction":
            out.append(entry["summary"])
    return out


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@pytest.mark.parametrize("name", sorted(REAL_EXPECTED))
def test_real_summaries_render_as_the_reference_renders_them(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _real_file(name)
    before = path.read_bytes()
    summaries = _compaction_summaries(path)
    assert len(summaries) == len(REAL_EXPECTED[name])
    for summary, (compaction_sha, branch_sha) in zip(summaries, REAL_EXPECTED[name], strict=True):
        plain = COMPACTION_SUMMARY_TEMPLATE.replace("{summary}", summary)
        rendered = compaction_summary_text(summary)
        assert rendered != plain  # the summaries have blank lines before list items
        assert _sha(rendered) == compaction_sha
        assert _sha(branch_summary_text(summary)) == branch_sha
        assert "\n\n- " not in rendered.split("```")[0]
        assert BRANCH_SUMMARY_TEMPLATE.replace("{summary}", summary) != branch_summary_text(summary)

    # `context --llm` shows the model the last compaction's rendered text, and reads only.
    assert main(["context", str(path), "--llm", "--json"]) == 0
    data: dict[str, Any] = json.loads(capsys.readouterr().out)
    first = data["llmMessages"][0]["content"][0]["text"]
    assert first == compaction_summary_text(summaries[-1])
    assert data["messages"][0]["summary"] == summaries[-1]
    assert path.read_bytes() == before
