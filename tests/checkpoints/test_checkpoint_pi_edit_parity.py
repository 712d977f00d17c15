"""pi's own edit code (pi 1.6's `edit-diff.js`, installed by tests/compat/setup.sh) and the
replay's port of it (textedit.apply_pi_edits) give the same file, or both fail, on many
generated cases: CRLF and LF, a BOM, smart quotes, Unicode dashes and spaces, trailing white
space (pi's fuzzy match), several edits, missing and repeated texts."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
from pathlib import Path

import pytest
from sessiontree.core.checkpoints.textedit import EditFailed, apply_pi_edits

REPO = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get("SESSIONTREE_COMPAT_CACHE") or REPO / ".cache" / "compat")
PI_TOOLS = CACHE / "node_modules" / "@earendil-works" / "pi-coding-agent" / "dist" / "core" / "tools"

_SCRIPT = """
import { applyEditsToNormalizedContent, applyReplacementsToOriginal, normalizeToLF } from "%s";
import { splitBom } from "%s";
let input = "";
process.stdin.on("data", (d) => (input += d));
process.stdin.on("end", () => {
  const out = JSON.parse(input).map(([raw, edits]) => {
    try {
      // edit.js execute(): the BOM set aside, LF-normalized matching, spliced into the original
      const { bom, text: content } = splitBom(raw);
      const normalized = normalizeToLF(content);
      const { newContent, replacements } = applyEditsToNormalizedContent(
        normalized, edits.map(([oldText, newText]) => ({ oldText, newText })), "f");
      return { text: bom + (content === normalized ? newContent : applyReplacementsToOriginal(content, replacements)) };
    } catch (e) {
      return { error: String(e.message) };
    }
  });
  process.stdout.write(JSON.stringify(out));
});
"""

_PIECES = [
    "alpha",
    "beta",
    "gamma",
    "x = 1",
    "\u201cq\u201d",
    "it\u2019s",
    "a\u2014b",
    "n\u00a0b",
    "  ",
    "\t",
    "()",
    "é",
]


def _line(rng: random.Random) -> str:
    return " ".join(rng.choice(_PIECES) for _ in range(rng.randint(0, 4))) + rng.choice(["", " ", "  "])


def _case(rng: random.Random) -> tuple[str, list[tuple[str, str]]]:
    lines = [_line(rng) for _ in range(rng.randint(1, 8))]
    eol = rng.choice(["\n", "\r\n", "mixed"])
    text = "".join(line + (rng.choice(["\n", "\r\n"]) if eol == "mixed" else eol) for line in lines)
    if rng.random() < 0.2:
        text = "\ufeff" + text
    edits = []
    for _ in range(rng.randint(1, 3)):
        i = rng.randrange(len(lines))
        old = lines[i] if rng.random() < 0.7 else lines[i].strip()
        if rng.random() < 0.3:  # as a model writes it: plain quotes and dashes, no trailing space
            old = (
                old.replace("\u201c", '"')
                .replace("\u201d", '"')
                .replace("\u2019", "'")
                .replace("\u2014", "-")
                .rstrip()
            )
        if rng.random() < 0.2 and i + 1 < len(lines):
            old = old + "\n" + lines[i + 1]
        edits.append((old, rng.choice(["NEW", "new\nline", "", old + "!", "\u201cz\u201d"])))
    return text, edits


@pytest.mark.skipif(
    not PI_TOOLS.is_dir() or shutil.which("node") is None,
    reason="pi 1.6 not installed (tests/compat/setup.sh)",
)
def test_the_port_matches_pi_on_generated_cases(tmp_path: Path) -> None:
    rng = random.Random(33)
    cases = [_case(rng) for _ in range(600)]
    script = tmp_path / "run.mjs"
    script.write_text(
        _SCRIPT % ((PI_TOOLS / "edit-diff.js").as_uri(), (PI_TOOLS.parents[1] / "utils" / "text.js").as_uri())
    )
    out = subprocess.run(
        ["node", str(script)], input=json.dumps(cases), capture_output=True, text=True, check=True
    ).stdout
    theirs = json.loads(out)
    oks = 0
    for (raw, edits), pi in zip(cases, theirs, strict=True):
        try:
            mine: dict[str, str] = {"text": apply_pi_edits(raw, edits)}
        except EditFailed:
            mine = {"error": "failed"}
        if "error" in pi:
            assert "error" in mine, (raw, edits, pi, mine)
        else:
            oks += 1
            assert mine == pi, (raw, edits)
    assert oks > 150  # not a vacuous pass: many cases apply
