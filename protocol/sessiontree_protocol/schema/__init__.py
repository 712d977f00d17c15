"""JSON Schema of the sessiontree protocol, generated from the attrs classes of `types/`.

`python -m sessiontree_protocol.schema` rewrites `sessiontree-protocol.schema.json` next to
this file; `python -m sessiontree_protocol.schema --check` exits 1 when it is stale;
`--markdown` prints the field tables of the "Types" section of docs/protocol.md.
"""

from __future__ import annotations

import json
import types as pytypes
import typing
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

import attrs

from sessiontree_protocol import methods
from sessiontree_protocol.converters import wire_name
from sessiontree_protocol.types import METHOD_TO_TYPES, _Absent

SCHEMA_PATH = Path(__file__).with_name("sessiontree-protocol.schema.json")


def _type_schema(tp: Any, defs: dict[str, Any]) -> dict[str, Any]:
    if tp is Any:
        return {}
    if tp is str:
        return {"type": "string"}
    if tp is bool:
        return {"type": "boolean"}
    if tp is int:
        return {"type": "integer"}
    if tp is float:
        return {"type": "number"}
    if tp is dict or get_origin(tp) is dict:
        return {"type": "object"}
    if tp is list or get_origin(tp) is list:
        (item,) = get_args(tp) or (Any,)
        return {"type": "array", "items": _type_schema(item, defs)}
    if get_origin(tp) is Literal:
        return {"enum": list(get_args(tp))}
    if get_origin(tp) in (typing.Union, pytypes.UnionType):
        alts = [
            a
            for a in get_args(tp)
            if a is not _Absent and not (get_origin(a) is Literal and isinstance(get_args(a)[0], _Absent))
        ]
        return {"anyOf": [{"type": "null"} if a is type(None) else _type_schema(a, defs) for a in alts]}
    if attrs.has(tp):
        _class_schema(tp, defs)
        return {"$ref": f"#/definitions/{tp.__name__}"}
    raise TypeError(f"no schema for {tp!r}")


def _class_schema(cls: type, defs: dict[str, Any]) -> None:
    if cls.__name__ in defs:
        return
    defs[cls.__name__] = {}  # placeholder against recursion (TreeNode)
    attrs.resolve_types(cls)
    props: dict[str, Any] = {}
    required: list[str] = []
    open_ended = False
    for f in attrs.fields(cls):
        if "as_sent" in f.metadata:
            open_ended = True  # the object's other members are taken as sent
            continue
        wire = wire_name(f)
        schema = _type_schema(_sent_type(f), defs)
        doc = _field_doc(f)
        if f.metadata.get("addition") and not doc.startswith("Addition"):
            doc = "Addition: " + doc
        if doc:
            schema = {**schema, "description": doc}
        default = _default(f)
        if default is not None:
            schema = {**schema, "default": default}
        props[wire] = schema
        if f.default is attrs.NOTHING or f.metadata.get("tag"):
            required.append(wire)
    entry: dict[str, Any] = {
        "type": "object",
        "description": (cls.__doc__ or "").strip(),
        "properties": props,
    }
    if required:
        entry["required"] = required
    if open_ended:
        entry["additionalProperties"] = True
    defs[cls.__name__] = entry


def _default(f: Any) -> Any:
    """The JSON default of a field (sent when the field is not set), None when it has none."""
    d = f.default
    if isinstance(d, attrs.Factory):  # type: ignore[arg-type]
        d = d.factory()
    if d is attrs.NOTHING or d is None or isinstance(d, _Absent) or f.metadata.get("tag"):
        return None
    return d


def _sent_type(f: Any) -> Any:
    """The field's type as it appears on the wire: an optional field whose null means
    "absent" is left out rather than sent as null (docs/protocol.md "Conventions"), so
    its type there has no null; `nullable` fields and required ones keep it."""
    tp = f.type
    if f.default is attrs.NOTHING or f.metadata.get("nullable"):
        return tp
    if get_origin(tp) in (typing.Union, pytypes.UnionType) and type(None) in get_args(tp):
        alts = tuple(a for a in get_args(tp) if a is not type(None))
        return alts[0] if len(alts) == 1 else typing.Union[alts]  # noqa: UP007
    return tp


def named_enums() -> dict[str, list[str]]:
    """The protocol's named string enums (the `Literal` aliases of `types/`, e.g. `ViewFilter`)."""
    from sessiontree_protocol import types as t

    return {
        name: list(get_args(value))
        for name, value in vars(t).items()
        if get_origin(value) is Literal and all(isinstance(a, str) for a in get_args(value))
    }


def _field_doc(f: Any) -> str:
    doc: str = f.metadata.get("doc", "")
    aliases = f.metadata.get("aliases", ())
    if aliases:
        doc += " " + ", ".join(f"`{a}`" for a in aliases) + " (an older name) is read too."
    return doc


def build_schema() -> dict[str, Any]:
    """The whole protocol as one JSON Schema document (definitions + a method table)."""
    defs: dict[str, Any] = {}
    table: dict[str, Any] = {}
    for method, (params, result) in METHOD_TO_TYPES.items():
        _class_schema(params, defs)
        row: dict[str, Any] = {
            "kind": "notification" if method in methods.NOTIFICATIONS else "request",
            "params": {"$ref": f"#/definitions/{params.__name__}"},
        }
        if method in methods.REQUESTS:
            if result is None:
                row["result"] = {"type": "null"}
            else:
                _class_schema(result, defs)
                row["result"] = {"$ref": f"#/definitions/{result.__name__}"}
        if method in methods.ADDITIONS:
            row["addition"] = True
        table[method] = row
    return {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "$id": "https://sessiontree.invalid/protocol/v1.schema.json",
        "title": f"sessiontree protocol, version {methods.PROTOCOL_VERSION}",
        "description": "Generated by `python -m sessiontree_protocol.schema`; do not edit.",
        "x-methods": table,
        "x-enums": named_enums(),
        "definitions": dict(sorted(defs.items())),
    }


def _md_type(tp: Any) -> str:
    if tp is Any:
        return "any"
    simple = {str: "string", int: "integer", bool: "boolean", float: "number", type(None): "null"}
    if tp in simple:
        return simple[tp]
    if tp is dict or get_origin(tp) is dict:
        return "object"
    if get_origin(tp) is list:
        (item,) = get_args(tp) or (Any,)
        return _md_type(item) + "[]"
    if get_origin(tp) is Literal:
        names = [a for a in get_args(tp) if isinstance(a, str)]
        return " \\| ".join(f'"{a}"' for a in names)
    if get_origin(tp) in (typing.Union, pytypes.UnionType):
        return " \\| ".join(p for p in (_md_type(a) for a in get_args(tp)) if p)
    if attrs.has(tp):
        return f"[`{tp.__name__}`](#{tp.__name__.lower()})"
    return str(tp)


def render_markdown() -> str:
    """The field tables of every type, as in the "Types" section of docs/protocol.md."""
    from sessiontree_protocol import types as t

    classes: list[type] = []
    for params, result in METHOD_TO_TYPES.values():
        for c in (params, result):
            if c is not None and c not in classes:
                classes.append(c)
    for extra in (
        t.AppendMessage,
        *get_args(t.AppendEntry),
        t.SessionInfo,
        t.RecentSession,
        t.Recovered,
        t.EntrySummary,
        t.TreeNode,
        t.Row,
        t.ViewWindow,
        t.LabelInfo,
        t.HistoryEntry,
        t.DoctorProblem,
        t.RedactionCount,
        t.RedactionFinding,
        t.DiffSide,
        t.FileChange,
        t.FileCall,
        t.EditHunk,
        t.CommandRun,
        t.StoreStatus,
        t.SearchHit,
        t.SearchPathLabel,
        t.RestoreFile,
        t.RestoreCommand,
        t.FileHash,
    ):
        if extra not in classes:
            classes.append(extra)
    out: list[str] = []
    for cls in classes:
        attrs.resolve_types(cls)
        rows = []
        for f in attrs.fields(cls):
            if "as_sent" in f.metadata:
                rows.append(f"| *(any other)* | any | no | {f.metadata['doc']} |")
                continue
            required = "yes" if f.default is attrs.NOTHING or f.metadata.get("tag") else "no"
            doc = _field_doc(f).replace("Addition: ", "**Addition.** ")
            if f.metadata.get("addition") and "Addition" not in doc:
                doc = "**Addition.** " + doc
            null = " (null sent)" if f.metadata.get("nullable") else ""
            rows.append(f"| `{wire_name(f)}` | {_md_type(f.type)}{null} | {required} | {doc} |")
        out.append(
            f"### {cls.__name__}\n{(cls.__doc__ or '').strip()}\n\n"
            "| field | type | required | meaning |\n|---|---|---|---|\n" + "\n".join(rows) + "\n"
        )
    return "\n".join(out)


def render() -> str:
    """The schema file's exact text."""
    return json.dumps(build_schema(), indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Write (or with --check, verify) the checked-in schema file."""
    import sys

    args = sys.argv[1:] if argv is None else argv
    text = render()
    if "--markdown" in args:
        print(render_markdown())
        return 0
    if "--check" in args:
        current = SCHEMA_PATH.read_text(encoding="utf-8") if SCHEMA_PATH.exists() else ""
        if current != text:
            print(f"{SCHEMA_PATH} is stale: run python -m sessiontree_protocol.schema", file=sys.stderr)
            return 1
        return 0
    SCHEMA_PATH.write_text(text, encoding="utf-8")
    print(f"wrote {SCHEMA_PATH}")
    return 0
