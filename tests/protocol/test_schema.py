"""The checked-in JSON Schema matches the attrs types."""

from __future__ import annotations

import json

from sessiontree_protocol import methods
from sessiontree_protocol.schema import SCHEMA_PATH, build_schema, render
from sessiontree_protocol.types import METHOD_TO_TYPES


def test_checked_in_schema_is_fresh() -> None:
    assert SCHEMA_PATH.exists(), "run: python -m sessiontree_protocol.schema"
    assert SCHEMA_PATH.read_text(encoding="utf-8") == render(), (
        "protocol schema is stale: run python -m sessiontree_protocol.schema"
    )


def test_schema_lists_every_method_and_notification() -> None:
    schema = build_schema()
    table = schema["x-methods"]
    assert set(table) == set(methods.REQUESTS) | set(methods.NOTIFICATIONS)
    for name in methods.NOTIFICATIONS:
        assert table[name]["kind"] == "notification"
        assert "result" not in table[name]
    for name in methods.ADDITIONS:
        assert table[name].get("addition") is True
    assert table[methods.SESSION_CLOSE]["result"] == {"type": "null"}


def test_every_field_is_documented_and_every_ref_resolves() -> None:
    schema = build_schema()
    defs = schema["definitions"]
    text = json.dumps(schema)
    for name in set(text.split('"#/definitions/')[1:]):
        assert name.split('"')[0] in defs
    for cls_name, d in defs.items():
        assert d["description"], cls_name
        for prop, p in d["properties"].items():
            assert p.get("description"), f"{cls_name}.{prop} has no doc"


def test_required_fields_follow_attrs_defaults() -> None:
    defs = build_schema()["definitions"]
    assert defs["OpenParams"]["required"] == ["path"]
    assert defs["ViewParams"]["required"] == ["session"]
    assert "leafId" in defs["OpenResult"]["required"]
    assert set(defs["BranchWithSummaryParams"]["required"]) == {"session", "branchFromId", "summary"}
    assert len(METHOD_TO_TYPES) == len(methods.REQUESTS) + len(methods.NOTIFICATIONS)


def test_protocol_reference_documents_every_method_and_type() -> None:
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "protocol.md").read_text(encoding="utf-8")
    for name in (*methods.REQUESTS, *methods.NOTIFICATIONS):
        assert f"`{name}`" in doc, name
    for cls_name in build_schema()["definitions"]:
        assert f"### {cls_name}\n" in doc, cls_name
    for code in ("-32602", "-32800", "-32001", "-32002", "-32003", "-32004", "-32005", "-32006", "-32007"):
        assert f"| {code} |" in doc, code


def test_protocol_reference_type_tables_are_fresh() -> None:
    from pathlib import Path

    from sessiontree_protocol.schema import render_markdown

    doc = (Path(__file__).resolve().parents[2] / "docs" / "protocol.md").read_text(encoding="utf-8")
    assert doc.rstrip().endswith(render_markdown().rstrip()), (
        "docs/protocol.md types are stale: replace its '## Types' tables with "
        "`python -m sessiontree_protocol.schema --markdown`"
    )
