"""The one converter between wire JSON and the attrs types of `types/`.

- Field names are camelCase on the wire (`leaf_id` <-> `leafId`).
- On unstructure, an optional field that is `None` is left out, unless its metadata says
  `nullable` (then `null` is sent: `leafId: null`, `parentId: null`). `ABSENT` is never sent.
  Defaults that are not `None` (`false`, `0`, `[]`) are sent.
- On structure, types are checked strictly (no `"5"` -> 5, no `1` -> True, no string taken
  as a list); a missing required field or a wrong type raises `ParamsError` naming the field
  (`entry.type`, `rows[3].id`). Unknown keys are ignored so that newer clients can send
  newer optional fields to older daemons.
- A union of classes with a `tag` field (the entry kinds of `session/append`) is a tagged
  union: the tag's value picks the class, an unknown one is refused naming the tag field.
- An `as_sent` field gets the whole object as sent (minus the keys its metadata lists), and
  is written back the same way; a field with `aliases` is also read from its older names.
"""

from __future__ import annotations

import functools
import types as pytypes
import typing
from collections.abc import Callable
from typing import Any, Literal, TypeVar, get_args, get_origin

import attrs
import cattrs

from sessiontree_protocol.types import ABSENT, _Absent

T = TypeVar("T")

__all__ = [
    "ParamsError",
    "camel",
    "converter",
    "structure",
    "tag_field",
    "tagged_kinds",
    "unstructure",
    "wire_name",
]


class ParamsError(ValueError):
    """A value does not fit its declared type; `field` is the dotted path of the culprit."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}" if field else reason)
        self.field = field
        self.reason = reason


@functools.cache
def camel(name: str) -> str:
    """snake_case -> camelCase (`work_done_token` -> `workDoneToken`)."""
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def wire_name(f: Any) -> str:
    """The wire name of an attrs field: `metadata["wire"]`, else the camelCase name."""
    return f.metadata.get("wire") or camel(f.name)  # type: ignore[no-any-return]


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _join(prefix: str, field: str) -> str:
    if not field:
        return prefix
    if not prefix:
        return field
    if field.startswith("["):
        return prefix + field
    return f"{prefix}.{field}"


def _strip_optional(tp: Any) -> tuple[Any, bool]:
    """`X | None | Absent` -> (X, allows_none)."""
    origin = get_origin(tp)
    if origin is typing.Union or origin is pytypes.UnionType:
        args = [a for a in get_args(tp) if a is not type(None) and not _is_absent(a)]
        allows_none = any(a is type(None) for a in get_args(tp))
        if len(args) == 1:
            return args[0], allows_none
        return typing.Union[tuple(args)], allows_none  # noqa: UP007
    return tp, False


def _is_absent(tp: Any) -> bool:
    return tp is _Absent or (get_origin(tp) is Literal and get_args(tp) == (ABSENT,))


def tag_field(cls: Any) -> Any:
    """The `tag` field of an attrs class, or None."""
    if not attrs.has(cls):
        return None
    attrs.resolve_types(cls)
    return next((f for f in attrs.fields(cls) if f.metadata.get("tag")), None)


def tagged_kinds(tp: Any) -> dict[Any, type] | None:
    """Tag value -> class for a union of tagged attrs classes (None for any other type)."""
    if get_origin(tp) not in (typing.Union, pytypes.UnionType):
        return None
    kinds: dict[Any, type] = {}
    for alt in get_args(tp):
        tag = tag_field(alt)
        if tag is None:
            return None
        (value,) = get_args(tag.type)
        kinds[value] = alt
    return kinds


def _make_converter() -> cattrs.Converter:
    conv = cattrs.Converter()

    def strict(kind: type, label: str) -> Callable[[Any, Any], Any]:
        def hook(value: Any, _tp: Any) -> Any:
            ok = isinstance(value, kind) and not (kind is not bool and isinstance(value, bool))
            if kind is float:
                ok = isinstance(value, int | float) and not isinstance(value, bool)
            if not ok:
                raise ParamsError("", f"expected {label}, got {_type_name(value)}")
            return value

        return hook

    conv.register_structure_hook(str, strict(str, "string"))
    conv.register_structure_hook(int, strict(int, "integer"))
    conv.register_structure_hook(bool, strict(bool, "boolean"))
    conv.register_structure_hook(float, strict(float, "number"))
    conv.register_structure_hook(Any, lambda v, _t: v)

    def is_dict(tp: Any) -> bool:
        return tp is dict or get_origin(tp) is dict

    def dict_hook(value: Any, _tp: Any) -> Any:
        if not isinstance(value, dict):
            raise ParamsError("", f"expected object, got {_type_name(value)}")
        return value

    conv.register_structure_hook_func(is_dict, dict_hook)

    def is_list(tp: Any) -> bool:
        return tp is list or get_origin(tp) is list

    def list_factory(tp: Any) -> Callable[[Any, Any], Any]:
        (item_tp,) = get_args(tp) or (Any,)

        def hook(value: Any, _tp: Any) -> Any:
            if not isinstance(value, list):
                raise ParamsError("", f"expected array, got {_type_name(value)}")
            out = []
            for i, item in enumerate(value):
                try:
                    out.append(conv.structure(item, item_tp))
                except ParamsError as exc:
                    raise ParamsError(_join(f"[{i}]", exc.field), exc.reason) from None
            return out

        return hook

    conv.register_structure_hook_factory(is_list, list_factory)

    def is_literal(tp: Any) -> bool:
        return get_origin(tp) is Literal

    def literal_factory(tp: Any) -> Callable[[Any, Any], Any]:
        allowed = get_args(tp)

        def hook(value: Any, _tp: Any) -> Any:
            if value not in allowed or isinstance(value, bool) != any(isinstance(a, bool) for a in allowed):
                shown = ", ".join(repr(a) for a in allowed)
                raise ParamsError("", f"expected one of {shown}, got {value!r}")
            return value

        return hook

    conv.register_structure_hook_factory(is_literal, literal_factory)

    def is_union(tp: Any) -> bool:
        return get_origin(tp) in (typing.Union, pytypes.UnionType)

    def union_factory(tp: Any) -> Callable[[Any, Any], Any]:
        inner, allows_none = _strip_optional(tp)

        def hook(value: Any, _tp: Any) -> Any:
            if value is None:
                if allows_none:
                    return None
                raise ParamsError("", "must not be null")
            if get_origin(inner) in (typing.Union, pytypes.UnionType):
                errors = []
                for alt in get_args(inner):
                    try:
                        return conv.structure(value, alt)
                    except ParamsError as exc:
                        errors.append(exc.reason)
                raise ParamsError("", " or ".join(errors))
            return conv.structure(value, inner)

        return hook

    conv.register_structure_hook_factory(is_union, union_factory)

    def tagged_union_factory(tp: Any) -> Callable[[Any, Any], Any]:
        kinds = tagged_kinds(tp)
        assert kinds is not None
        tag = wire_name(tag_field(next(iter(kinds.values()))))
        shown = ", ".join(repr(k) for k in kinds)

        def hook(value: Any, _tp: Any) -> Any:
            if not isinstance(value, dict):
                raise ParamsError("", f"expected object, got {_type_name(value)}")
            if tag not in value:
                raise ParamsError(tag, "missing required field")
            kind = value[tag]
            cls = kinds.get(kind) if isinstance(kind, str) else None
            if cls is None:
                raise ParamsError(tag, f"expected one of {shown}, got {kind!r}")
            return conv.structure(value, cls)

        return hook

    # registered after the plain union: cattrs tries the later factory first
    conv.register_structure_hook_factory(lambda tp: tagged_kinds(tp) is not None, tagged_union_factory)

    def attrs_structure_factory(cls: type) -> Callable[[Any, Any], Any]:
        attrs.resolve_types(cls)
        plan = []
        whole: list[tuple[str, frozenset[str]]] = []
        for f in attrs.fields(cls):
            if "as_sent" in f.metadata:
                whole.append((f.name, frozenset(f.metadata["as_sent"])))
                continue
            inner, allows_none = _strip_optional(f.type)
            nullable = bool(f.metadata.get("nullable")) or allows_none
            required = f.default is attrs.NOTHING
            names = (wire_name(f), *f.metadata.get("aliases", ()))
            plan.append((f.name, names, inner, nullable, required))

        def hook(value: Any, _tp: Any) -> Any:
            if not isinstance(value, dict):
                raise ParamsError("", f"expected object, got {_type_name(value)}")
            kwargs: dict[str, Any] = {}
            for name, names, inner, nullable, required in plan:
                wire = next((n for n in names if n in value), None)
                if wire is None:
                    if required:
                        raise ParamsError(names[0], "missing required field")
                    continue
                raw = value[wire]
                if raw is None:
                    if not nullable:
                        raise ParamsError(wire, "must not be null")
                    kwargs[name] = None
                    continue
                try:
                    kwargs[name] = conv.structure(raw, inner)
                except ParamsError as exc:
                    raise ParamsError(_join(wire, exc.field), exc.reason) from None
            for name, without in whole:
                kwargs[name] = {k: v for k, v in value.items() if k not in without}
            return cls(**kwargs)

        return hook

    conv.register_structure_hook_factory(attrs.has, attrs_structure_factory)

    def attrs_unstructure_factory(cls: type) -> Callable[[Any], Any]:
        attrs.resolve_types(cls)
        plan = []
        whole: list[str] = []
        for f in attrs.fields(cls):
            if "as_sent" in f.metadata:
                whole.append(f.name)
                continue
            inner, _ = _strip_optional(f.type)
            plan.append((f.name, wire_name(f), bool(f.metadata.get("nullable")), _unstructure_fn(inner)))

        def hook(obj: Any) -> Any:
            out: dict[str, Any] = {}
            for name in whole:
                out.update(getattr(obj, name))
            for name, wire, nullable, fn in plan:
                v = getattr(obj, name)
                if v is None:
                    if nullable:
                        out[wire] = None
                    continue
                if v is ABSENT:
                    continue
                out[wire] = v if fn is None else fn(v)
            return out

        return hook

    def _unstructure_fn(tp: Any) -> Callable[[Any], Any] | None:
        """None when values of `tp` are already JSON (the common, fast case)."""
        if attrs.has(tp):
            return lambda v: conv.unstructure(v, tp)
        if get_origin(tp) is list:
            (item,) = get_args(tp) or (Any,)
            if attrs.has(item):
                return lambda v: [conv.unstructure(x, item) for x in v]
        if tagged_kinds(tp) is not None:
            return lambda v: conv.unstructure(v, type(v))
        return None

    conv.register_unstructure_hook_factory(attrs.has, attrs_unstructure_factory)
    return conv


converter: cattrs.Converter = _make_converter()
"""The protocol converter (a `cattrs.Converter` with the hooks described above)."""


def structure(value: Any, cls: type[T]) -> T:
    """Wire JSON -> attrs instance; raises `ParamsError` naming the offending field."""
    if value is None:
        value = {}
    try:
        return converter.structure(value, cls)
    except ParamsError:
        raise
    except cattrs.BaseValidationError as exc:  # pragma: no cover - our hooks raise ParamsError
        raise ParamsError("", str(exc)) from exc
    except (TypeError, ValueError, KeyError) as exc:
        raise ParamsError("", f"{type(exc).__name__}: {exc}") from exc


def unstructure(obj: Any) -> Any:
    """attrs instance (or list / plain JSON) -> wire JSON."""
    return converter.unstructure(obj)
