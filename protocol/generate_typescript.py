"""TypeScript types of the protocol, generated from the checked-in JSON Schema.

    python protocol/generate_typescript.py           # rewrite editors/vscode/src/protocol.generated.ts
    python protocol/generate_typescript.py --check   # exit 1 when that file is stale

Reads `sessiontree_protocol/schema/sessiontree-protocol.schema.json` (itself generated from
`types.py`), so the VS Code extension and the daemon share one definition of every wire
shape and of every named enum (the filter modes among them). The output has one interface
per schema definition, a type and a constant list per named enum (`ViewFilter`,
`VIEW_FILTERS`), and the request and notification tables (`Requests`, `Notifications`).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = ROOT / "protocol" / "sessiontree_protocol" / "schema" / "sessiontree-protocol.schema.json"
OUTPUT = ROOT / "editors" / "vscode" / "src" / "protocol.generated.ts"

_IDENT = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*$")


def constant_name(enum_name: str) -> str:
    """`ViewFilter` -> `VIEW_FILTERS`: the constant listing an enum's values."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", enum_name).upper() + "S"


def _literal(value: Any) -> str:
    return (
        "'" + str(value).replace("\\", "\\\\").replace("'", "\\'") + "'"
        if isinstance(value, str)
        else json.dumps(value)
    )


def _union(parts: list[str]) -> str:
    out: list[str] = []
    for p in parts:
        if p not in out:
            out.append(p)
    if "unknown" in out:
        return "unknown"
    return " | ".join(out)


class Generator:
    """Turns one schema document into the text of the TypeScript module."""

    def __init__(self, schema: dict[str, Any]) -> None:
        self.schema = schema
        self.enums: dict[str, list[Any]] = schema.get("x-enums", {})
        self.sent = self._sent_by_daemon()

    def _reachable(self, roots: list[dict[str, Any]]) -> set[str]:
        names: set[str] = set()
        stack = [json.dumps(r) for r in roots]
        while stack:
            for ref in re.findall(r'"#/definitions/([^"]+)"', stack.pop()):
                if ref not in names:
                    names.add(ref)
                    stack.append(json.dumps(self.schema["definitions"][ref]))
        return names

    def _sent_by_daemon(self) -> set[str]:
        """Definitions only the daemon sends (results, notifications): a field with a
        default is always there. What clients send keeps such fields optional."""
        rows = self.schema["x-methods"].values()
        out = [r["result"] for r in rows if "result" in r]
        out += [r["params"] for r in rows if r["kind"] == "notification"]
        sent_by_clients = [r["params"] for r in rows if r["kind"] == "request"]
        return self._reachable(out) - self._reachable(sent_by_clients)

    def type_of(self, s: dict[str, Any]) -> str:
        """The TypeScript type of a schema."""
        if "$ref" in s:
            return str(s["$ref"]).rsplit("/", 1)[1]
        if "enum" in s:
            for name, values in self.enums.items():
                if values == s["enum"]:
                    return name
            return _union([_literal(v) for v in s["enum"]])
        if "anyOf" in s:
            return _union([self.type_of(a) for a in s["anyOf"]])
        kind = s.get("type")
        if kind == "string":
            return "string"
        if kind in ("integer", "number"):
            return "number"
        if kind == "boolean":
            return "boolean"
        if kind == "null":
            return "null"
        if kind == "array":
            item = self.type_of(s.get("items", {}))
            return f"({item})[]" if " | " in item else f"{item}[]"
        if kind == "object":
            return "Record<string, unknown>"
        return "unknown"

    @staticmethod
    def _doc(text: str, indent: str = "") -> list[str]:
        text = text.strip().replace("*/", "*\\/")
        if not text:
            return []
        lines = text.splitlines()
        if len(lines) == 1:
            return [f"{indent}/** {lines[0]} */"]
        return [f"{indent}/**", *(f"{indent} * {line}".rstrip() for line in lines), f"{indent} */"]

    def interface(self, name: str, d: dict[str, Any]) -> list[str]:
        """One definition as an interface."""
        required = set(d.get("required", []))
        out = [*self._doc(d.get("description", "")), f"export interface {name} {{"]
        for prop, s in d.get("properties", {}).items():
            key = prop if _IDENT.match(prop) else _literal(prop)
            present = prop in required or (name in self.sent and "default" in s)
            opt = "" if present else "?"
            out += self._doc(s.get("description", ""), "  ")
            out.append(f"  {key}{opt}: {self.type_of(s)};")
        if d.get("additionalProperties") is True:
            out.append("  [key: string]: unknown;")
        out.append("}")
        return out

    def render(self) -> str:
        """The module's text."""
        out = [
            "// Generated by protocol/generate_typescript.py from",
            "// protocol/sessiontree_protocol/schema/sessiontree-protocol.schema.json; do not edit.",
            "",
            *self._doc(self.schema.get("title", "")),
            "",
        ]
        for name, values in self.enums.items():
            const = constant_name(name)
            out.append(f"export const {const} = [{', '.join(_literal(v) for v in values)}] as const;")
            out.append(f"export type {name} = (typeof {const})[number];")
            out.append("")
        for name, d in self.schema["definitions"].items():
            out += self.interface(name, d)
            out.append("")
        methods = self.schema["x-methods"]
        out.append("/** Params and result of every request, by method name. */")
        out.append("export interface Requests {")
        for method, row in methods.items():
            if row["kind"] == "request":
                params, result = self.type_of(row["params"]), self.type_of(row["result"])
                out.append(f"  {_literal(method)}: {{ params: {params}; result: {result} }};")
        out.append("}")
        out.append("")
        out.append("/** Params of every notification the daemon sends, by method name. */")
        out.append("export interface Notifications {")
        for method, row in methods.items():
            if row["kind"] == "notification":
                out.append(f"  {_literal(method)}: {self.type_of(row['params'])};")
        out.append("}")
        return "\n".join(out) + "\n"


def render(schema_path: Path = SCHEMA) -> str:
    """The generated module for the schema at `schema_path`."""
    return Generator(json.loads(schema_path.read_text(encoding="utf-8"))).render()


def main(argv: list[str] | None = None) -> int:
    """Write (or with --check, verify) the generated TypeScript module."""
    args = sys.argv[1:] if argv is None else argv
    text = render()
    if "--check" in args:
        current = OUTPUT.read_text(encoding="utf-8") if OUTPUT.exists() else ""
        if current != text:
            print(f"{OUTPUT} is stale: run python protocol/generate_typescript.py", file=sys.stderr)
            return 1
        return 0
    OUTPUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUTPUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
