"""Export of a path or a subtree: goldens of the demo and of real sessions, the session file
the core loads back with every entry of the path, redaction on by default for reading."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from golden import GOLDEN, check_golden
from sessiontree.core.export import export_session
from sessiontree.core.export.redact import Redactor
from sessiontree.core.format.migrations import CURRENT_SESSION_VERSION
from sessiontree.core.ids import FixedClock, IdSource
from sessiontree.core.session import SessionManager
from sessiontree.core.view.tool_calls import calls_of
from shared_data import REAL_CORPUS

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "server" / "sessiontree" / "data" / "demo-session.jsonl"
GOLD = GOLDEN / "export"
FIXTURE_BRANCH_TIP = "1a2caaa9"  # the demo's abandoned "migrate the fixture" attempt
BRANCH_POINT = "1a2c4443"


def open_ro(path: Path) -> SessionManager:
    return SessionManager.open(str(path), read_only=True)


def real(name: str) -> Path:
    path = REAL_CORPUS / name
    if not path.is_file():
        pytest.skip(f"{path} is missing (../shared is read beside the repository)")
    return path


def fixed() -> dict[str, object]:
    return {"clock": FixedClock(), "ids": IdSource(seed=1, clock=FixedClock()), "redactor": Redactor()}


@pytest.mark.parametrize("fmt", ["md", "html", "jsonl"])
def test_demo_path_golden(fmt: str) -> None:
    r = export_session(open_ro(DEMO), fmt, **fixed())  # type: ignore[arg-type]
    text = r.content.replace(str(DEMO), "<source>")
    check_golden(GOLD / f"demo-path.{fmt}", text)


@pytest.mark.parametrize("fmt", ["md", "html"])
def test_demo_subtree_golden(fmt: str) -> None:
    r = export_session(open_ro(DEMO), fmt, subtree_id=BRANCH_POINT, **fixed())  # type: ignore[arg-type]
    check_golden(GOLD / f"demo-subtree-{BRANCH_POINT}.{fmt}", r.content)
    assert r.content.count("Branch from") == 2  # the two later children of the branch point


REAL_GOLDENS = ["twkrash-pi-0.85.1-branching.jsonl", "carlesba-pi-skill-memory-session.jsonl"]


@pytest.mark.parametrize("name", REAL_GOLDENS)
def test_real_session_markdown_golden(name: str) -> None:
    r = export_session(open_ro(real(name)), "md", **fixed())  # type: ignore[arg-type]
    check_golden(GOLD / f"real-{Path(name).stem}.md", r.content)


def _outline(md: str) -> str:
    keep = (
        "# ",
        "## User",
        "## Assistant",
        "## Tool result",
        "<summary>",
        "*model",
        "*thinking",
        "> **",
        "### ↳",
        "Redact",
    )
    return "\n".join(line for line in md.splitlines() if line.startswith(keep)) + "\n"


@pytest.mark.parametrize(
    "name", ["kimchi-dev-session.jsonl", "welpy-session.jsonl", "pimono-before-compaction.jsonl"]
)
def test_real_session_markdown_outline_golden(name: str) -> None:
    """Large real sessions: the outline (headings, tool-call lines, notes), not their whole text,
    which belongs to another project and stays in ../shared."""
    r = export_session(open_ro(real(name)), "md", **fixed())  # type: ignore[arg-type]
    check_golden(GOLD / f"real-{Path(name).stem}.outline.md", _outline(r.content))


def test_markdown_folds_every_tool_call_with_its_result() -> None:
    mgr = open_ro(DEMO)
    r = export_session(mgr, "md", **fixed())  # type: ignore[arg-type]
    path = mgr.get_branch()
    calls = sum(len(calls_of(e)) for e in path)
    assert r.content.count("<summary>🔧") == calls
    assert "(no result on this path)" not in r.content
    assert r.content.count("## User") == sum(
        1 for e in path if e.get("type") == "message" and e["message"].get("role") == "user"
    )


PI_FILES = [
    "carlesba-pi-skill-memory-session.jsonl",
    "dexter-v3-pi-session.jsonl",
    "kimchi-dev-session.jsonl",
    "omp-pinion05-03-raddit-dashboard-pr.jsonl",
    "paradocs-session.jsonl",
    "pimono-before-compaction.jsonl",
    "pimono-d5dde00d-root-session.jsonl",
    "pimono-large-session.jsonl",
    "twkrash-pi-0.85.1-branching.jsonl",
    "welpy-session.jsonl",
]


@pytest.mark.parametrize("name", [str(DEMO), *PI_FILES])
def test_jsonl_export_loads_in_the_core_with_every_path_entry(name: str, tmp_path: Path) -> None:
    src = Path(name) if name.startswith("/") else real(name)
    mgr = open_ro(src)
    r = export_session(mgr, "jsonl")
    out = tmp_path / "exported.jsonl"
    out.write_text(r.content, encoding="utf-8")
    header = json.loads(r.content.split("\n", 1)[0])
    assert header["type"] == "session" and header["version"] == CURRENT_SESSION_VERSION
    assert header["id"] != mgr.get_session_id()
    assert header["parentSession"] == str(src)
    assert header["cwd"] == mgr.get_cwd()
    back = SessionManager.open(str(out), read_only=True)
    path_ids = mgr.index.path_to_root(mgr.get_leaf_id())
    for eid in path_ids:
        assert back.get_entry(eid) == mgr.get_entry(eid), eid
    assert back.index.path_to_root(back.get_leaf_id())[: len(path_ids)] == path_ids
    assert back.load_report.skipped_lines == 0 and not back.load_report.dropped
    # what the model sees from the exported leaf is what it saw from the source's leaf
    assert back.build_session_context().messages == mgr.build_session_context().messages
    assert {k: v for k, v in back.index.labels.items() if k in path_ids} == {
        k: v for k, v in mgr.index.labels.items() if k in path_ids
    }


def test_jsonl_subtree_export_keeps_every_branch(tmp_path: Path) -> None:
    mgr = open_ro(DEMO)
    r = export_session(mgr, "jsonl", subtree_id=BRANCH_POINT)
    out = tmp_path / "sub.jsonl"
    out.write_text(r.content, encoding="utf-8")
    back = SessionManager.open(str(out), read_only=True)
    _, children = mgr.index.child_map()
    below, stack = [], [BRANCH_POINT]
    while stack:
        eid = stack.pop()
        below.append(eid)
        stack.extend(children.get(eid, []))
    for eid in mgr.index.path_to_root(BRANCH_POINT) + below:
        assert back.get_entry(eid) == mgr.get_entry(eid)
    assert len(back.index.child_map()[1][BRANCH_POINT]) == len(children[BRANCH_POINT])


def test_jsonl_of_another_leaf_and_labels_recreated(tmp_path: Path) -> None:
    mgr = open_ro(DEMO)
    r = export_session(mgr, "jsonl", leaf_id=FIXTURE_BRANCH_TIP)
    lines = [json.loads(x) for x in r.content.splitlines()]
    ids = [x.get("id") for x in lines[1:]]
    assert ids == mgr.index.path_to_root(FIXTURE_BRANCH_TIP)  # nothing else: no label targets this path
    out = tmp_path / "b.jsonl"
    out.write_text(r.content, encoding="utf-8")
    assert SessionManager.open(str(out), read_only=True).get_leaf_id() == FIXTURE_BRANCH_TIP


def test_redaction_is_on_for_reading_formats_and_off_for_the_session_file() -> None:
    path = real("dexter-v3-pi-session.jsonl")
    mgr = open_ro(path)
    md = export_session(mgr, "md", redactor=Redactor())
    assert md.redacted and md.counts == {"jwt": 2, "url-password": 6, "env-secret": 4}
    assert "[REDACTED:url-password]" in md.content and "neondb_owner:npg_" not in md.content
    assert "Redacted 12: env-secret 4, jwt 2, url-password 6." in md.content
    html = export_session(mgr, "html", redactor=Redactor())
    assert html.redacted and "neondb_owner:npg_" not in html.content
    raw = export_session(mgr, "jsonl", redactor=Redactor())
    assert not raw.redacted and "neondb_owner:npg_" in raw.content
    red = export_session(mgr, "jsonl", redact=True, redactor=Redactor())
    assert red.redacted and "neondb_owner:npg_" not in red.content and red.counts["url-password"] == 6
    plain = export_session(mgr, "md", redact=False, redactor=Redactor())
    assert not plain.redacted and "Not redacted." in plain.content


def test_dry_run_lists_and_exports_nothing() -> None:
    mgr = open_ro(real("dexter-v3-pi-session.jsonl"))
    r = export_session(mgr, "jsonl", dry_run=True, redactor=Redactor())
    assert r.content == ""
    assert len(r.findings) == 12
    assert {f.pattern for f in r.findings} == {"jwt", "url-password", "env-secret"}
    assert all("npg_h5" not in f.preview for f in r.findings)


def test_html_embeds_inline_images_and_is_self_contained() -> None:
    mgr = SessionManager.in_memory("/w")
    mgr.append_message(
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "look"},
                {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
            ],
            "timestamp": 1,
        }
    )
    page = export_session(mgr, "html", redactor=Redactor()).content
    assert '<img alt="image" src="data:image/png;base64,iVBORw0KGgo=">' in page
    assert "https://" not in page and "<script" not in page
    md = export_session(mgr, "md", redactor=Redactor()).content
    assert "*[image: image/png, 0 KB, not embedded]*" in md


def test_unknown_ids_raise() -> None:
    from sessiontree.core.errors import EntryNotFoundError

    mgr = open_ro(DEMO)
    with pytest.raises(EntryNotFoundError):
        export_session(mgr, "md", leaf_id="nope")
    with pytest.raises(EntryNotFoundError):
        export_session(mgr, "md", subtree_id="nope")
