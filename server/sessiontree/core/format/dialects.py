"""Which agent's dialect a session file speaks: xcsh, pi (1.6) or oh-my-pi (18).

The three agents share the file format (a header line, then entries linked by
``id``/``parentId``) but not every word of it (docs/storage-format.md, "Dialects"):

* **pi** names a session by its latest ``session_info {name}`` entry and ignores the
  header's ``title``; writes ``model_change {provider, modelId}``; has ``context_edit``,
  ``usage`` and ``system`` messages; keeps images inline (it has no blob store);
* **oh-my-pi** starts the file with a fixed-width title slot line (`title_slot`) holding the
  title, appends ``title_change`` audit entries, writes ``model_change {model, role?}``,
  has ``reset_boundary``, ``model_usage`` and ``credential_pin`` entries and a blob store
  under its agent dir;
* **xcsh** (sessiontree's reference) keeps the title in the header, rewriting the file to
  change it, and writes ``model_change {model, role?}``.

A file's dialect is detected from what it holds (`Evidence`); only a file that holds
nothing any one agent alone writes takes the dialect of the agent directory it lives in
(`home_dialect`), and a fresh file is written in that one. This module is the one home of
these rules; the readers (the manager, listings, the index of searches) feed it what they
see and ask it.
"""

from __future__ import annotations

import enum
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = [
    "EVIDENCE_TYPES",
    "OMP_ONLY_TYPES",
    "PI_ONLY_TYPES",
    "Dialect",
    "Evidence",
    "home_dialect",
    "id_dialect",
    "session_info_name",
]


class Dialect(enum.StrEnum):
    """The agent whose words a session file uses."""

    XCSH = "xcsh"
    PI = "pi"
    OMP = "omp"


#: Entry types only pi writes.
PI_ONLY_TYPES = frozenset({"session_info", "context_edit", "usage"})
#: Entry types only oh-my-pi writes.
OMP_ONLY_TYPES = frozenset({"title_change", "model_usage", "credential_pin", "reset_boundary"})
#: Entry types of oh-my-pi and xcsh that pi never writes.
OMP_XCSH_TYPES = frozenset(
    {
        "ttsr_injection",
        "session_init",
        "mode_change",
        "service_tier_change",
        "context_change",
        "mcp_tool_selection",
    }
)

#: Entry types whose fields tell a file's dialect (`Evidence.see`); a reader that holds only
#: entry types reads these few whole.
EVIDENCE_TYPES = frozenset({"model_change", "session_info", "compaction", "branch_summary"})

#: The agent directory names under the home directory, by dialect.
_HOME_DIRS = {".pi": Dialect.PI, ".omp": Dialect.OMP, ".xcsh": Dialect.XCSH}


def session_info_name(entry: Mapping[str, Any]) -> str | None:
    """The name a ``session_info`` entry sets (pi: trimmed; empty or missing clears it)."""
    name = entry.get("name")
    if not isinstance(name, str):
        return None
    # pi: `entry.name?.trim() || undefined` (JavaScript's trim: whitespace and line ends)
    from .jscompat import js_trim

    return js_trim(name) or None


_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\Z")
_SNOWFLAKE = re.compile(r"[0-9a-f]{16}\Z")


def id_dialect(session_id: Any) -> Dialect | None:
    """What a header's session id hints at: pi names sessions by a UUID (oh-my-pi 18 too, but
    its files have a title slot), xcsh by a 16-hex-digit snowflake; None otherwise."""
    if not isinstance(session_id, str):
        return None
    if _UUID.match(session_id):
        return Dialect.PI
    if _SNOWFLAKE.match(session_id):
        return Dialect.XCSH
    return None


class Evidence:
    """What a reader saw of a file that tells its dialect, fed entry by entry (or type by
    type, for a reader that holds only the types), and what it knows of pi's name."""

    __slots__ = (
        "_info_seen",
        "has_slot",
        "header_hint",
        "info_name",
        "model_change_model",
        "model_change_pi",
        "pi_fields",
        "types",
    )

    def __init__(self, has_slot: bool = False, header: Mapping[str, Any] | None = None) -> None:
        self.has_slot = has_slot
        self.types: set[str] = set()
        self.model_change_pi = False
        self.model_change_model = False
        #: pi-only words inside entries: a ``system`` message, a compaction's
        #: ``systemMessage``, ``fromHook`` on a compaction or branch summary.
        self.pi_fields = False
        #: What the header's session id hints at (`id_dialect`): weaker than the entries.
        self.header_hint = id_dialect(header.get("id")) if header is not None else None
        #: The latest ``session_info`` name in file order (pi's session name).
        self.info_name: str | None = None
        self._info_seen = False

    def see_header(self, header: Mapping[str, Any]) -> None:
        """The session header (its id's shape is a hint)."""
        self.header_hint = id_dialect(header.get("id"))

    def see_types(self, types: Iterable[Any]) -> None:
        """Entry types seen, without their entries (model changes are then `see`n apart)."""
        self.types.update(t for t in types if isinstance(t, str))

    def see(self, entry: Mapping[str, Any]) -> None:
        """One entry, in file order."""
        t = entry.get("type")
        if not isinstance(t, str):
            return
        self.types.add(t)
        if t == "message":
            message = entry.get("message")
            if isinstance(message, Mapping) and message.get("role") == "system":
                self.pi_fields = True
        elif t == "model_change":
            self.see_model_change(entry)
        elif t == "session_info":
            self._info_seen = True
            self.info_name = session_info_name(entry)
        elif t in ("compaction", "branch_summary") and ("fromHook" in entry or "systemMessage" in entry):
            self.pi_fields = True

    def see_model_change(self, entry: Mapping[str, Any]) -> None:
        """A ``model_change`` entry: pi's ``{provider, modelId}`` or ``{model, role?}``."""
        if isinstance(entry.get("model"), str):
            self.model_change_model = True
        elif "provider" in entry or "modelId" in entry:
            self.model_change_pi = True

    def set_info_name(self, name: str | None) -> None:
        """The latest ``session_info`` name, for a reader that finds it by itself."""
        self._info_seen = True
        self.info_name = name

    def to_state(self) -> list[Any]:
        """What was seen, for an index cache to keep (`from_state`)."""
        return [
            sorted(self.types),
            self.model_change_pi,
            self.model_change_model,
            self.pi_fields,
            self._info_seen,
            self.info_name,
        ]

    @classmethod
    def from_state(cls, state: Any, has_slot: bool, header: Mapping[str, Any] | None) -> Evidence | None:
        """Evidence as `to_state` kept it (None when the state is not one)."""
        if not isinstance(state, list) or len(state) != 6 or not isinstance(state[0], list):
            return None
        ev = cls(has_slot, header)
        ev.types = {t for t in state[0] if isinstance(t, str)}
        ev.model_change_pi, ev.model_change_model, ev.pi_fields, ev._info_seen = (bool(x) for x in state[1:5])
        ev.info_name = state[5] if isinstance(state[5], str) else None
        return ev

    def see_skeletons(self, sks: Iterable[Any], entry_of: Any) -> None:
        """The index's skeletons (type, role), reading the few entries whose fields tell
        (`EVIDENCE_TYPES`) with ``entry_of(skeleton)``."""
        sks = list(sks)
        self.see_types(sk.type for sk in sks)
        for sk in sks:
            if sk.type in EVIDENCE_TYPES:
                self.see(entry_of(sk))
            elif sk.type == "message" and sk.role == "system":
                self.pi_fields = True

    def detected(self) -> Dialect | None:
        """The dialect the file's content proves (only one agent writes what it holds), or
        None: oh-my-pi's title slot and entry types, pi's entry types and fields."""
        if self.has_slot or self.types & OMP_ONLY_TYPES:
            return Dialect.OMP
        if self.types & PI_ONLY_TYPES or self.pi_fields:
            return Dialect.PI
        return None

    def dialect(self, home: Dialect | None = None) -> Dialect:
        """The file's dialect, from the strongest evidence there is:

        1. what its content proves (`detected`);
        2. the agent directory it lives in (``home``): that agent reads and writes it, even
           when another tool left its own words in it (sessiontree's ``model_change
           {model}`` in a pi session, the reason for all this);
        3. words of the omp/xcsh family (``model_change {model}``, xcsh's entry types):
           xcsh's with xcsh's snowflake session id, else oh-my-pi's;
        4. pi's ``model_change {provider, modelId}`` (which older files of every agent hold);
        5. what the session id hints at (`id_dialect`); else xcsh, sessiontree's reference.
        """
        found = self.detected()
        if found is not None:
            return found
        if home is not None:
            return home
        if self.types & OMP_XCSH_TYPES or self.model_change_model:
            return Dialect.XCSH if self.header_hint is Dialect.XCSH else Dialect.OMP
        if self.model_change_pi:
            return Dialect.PI
        return self.header_hint if self.header_hint is not None else Dialect.XCSH


def home_dialect(path: str | None, agent_dir: str | None = None) -> Dialect | None:
    """The dialect of the agent directory a session file (or directory) lives in, from the
    directory names the agents use (``~/.pi/agent``, ``~/.omp/agent`` or an omp profile,
    ``~/.xcsh/agent``, their XDG data dirs), or the given ``agent_dir``'s; None when unknown."""
    for candidate in (agent_dir, path):
        if not candidate:
            continue
        parts = os.path.normpath(os.path.abspath(candidate)).split(os.sep)
        for i in range(len(parts) - 1, -1, -1):
            name = parts[i]
            if name in _HOME_DIRS:
                return _HOME_DIRS[name]
            if name in ("omp", "xcsh") and i > 0 and parts[i - 1] in ("share", ".local"):
                return Dialect.OMP if name == "omp" else Dialect.XCSH
    return None
