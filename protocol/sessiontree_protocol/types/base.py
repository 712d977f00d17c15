"""The field specifiers of the protocol types, the `ABSENT` marker and the shared aliases."""

from __future__ import annotations

import enum
from typing import Any, Final, Literal

import attrs


class _Absent(enum.Enum):
    """Marker type of `ABSENT`."""

    ABSENT = "absent"

    def __repr__(self) -> str:
        return "ABSENT"

    def __bool__(self) -> bool:
        return False


ABSENT: Final = _Absent.ABSENT
"""Default of the few optional fields where an explicit ``null`` differs from leaving the
field out (e.g. ``expectedLeafId: null`` = "the leaf must be before the first entry")."""

Absent = Literal[_Absent.ABSENT]


def _req(doc: str, *, nullable: bool = False, addition: bool = False) -> Any:
    return attrs.field(metadata={"doc": doc, "nullable": nullable, "addition": addition})


def _opt(doc: str, default: Any = None, *, nullable: bool = False, addition: bool = False) -> Any:
    return attrs.field(default=default, metadata={"doc": doc, "nullable": nullable, "addition": addition})


def _list(doc: str, *, addition: bool = False) -> Any:
    return attrs.field(factory=list, metadata={"doc": doc, "nullable": False, "addition": addition})


def _tag(kind: str) -> Any:
    return attrs.field(
        default=kind, metadata={"doc": f"The entry kind, `{kind}`.", "nullable": False, "tag": True}
    )


def _as_sent(doc: str, without: tuple[str, ...] = ()) -> Any:
    return attrs.field(factory=dict, metadata={"doc": doc, "nullable": False, "as_sent": without})


JSON = Any
"""Any JSON value."""

JSONObject = dict[str, Any]
"""A JSON object (entries, headers and messages are sent exactly as stored)."""

ViewFilter = Literal["default", "no-tools", "user-only", "labeled-only", "all"]
NameSource = Literal["auto", "user"]
ChangeSource = Literal["local", "external"]
