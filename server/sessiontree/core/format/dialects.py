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
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = [
    "OMP_ONLY_TYPES",
    "PI_ONLY_TYPES",
    "Dialect",
    "Evidence",
    "home_dialect",
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


class Evidence:
    """What a reader saw of a file that tells its dialect, fed entry by entry (or type by
    type, for a reader that holds only the types), and what it knows of pi's name."""

    __slots__ = ("_info_seen", "has_slot", "info_name", "model_change_model", "model_change_pi", "types")

    def __init__(self, has_slot: bool = False) -> None:
        self.has_slot = has_slot
        self.types: set[str] = set()
        self.model_change_pi = False
        self.model_change_model = False
        #: The latest ``session_info`` name in file order (pi's session name).
        self.info_name: str | None = None
        self._info_seen = False

    def see_types(self, types: Iterable[Any]) -> None:
        """Entry types seen, without their entries (model changes are then `see`n apart)."""
        self.types.update(t for t in types if isinstance(t, str))

    def see(self, entry: Mapping[str, Any]) -> None:
        """One entry, in file order."""
        t = entry.get("type")
        if not isinstance(t, str):
            return
        self.types.add(t)
        if t == "model_change":
            self.see_model_change(entry)
        elif t == "session_info":
            self._info_seen = True
            self.info_name = session_info_name(entry)

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

    def detected(self) -> Dialect | None:
        """The dialect the file's content shows, or None when nothing in it is one agent's."""
        if self.has_slot or self.types & OMP_ONLY_TYPES:
            return Dialect.OMP
        if self.types & PI_ONLY_TYPES or self.model_change_pi:
            return Dialect.PI
        if self.types & OMP_XCSH_TYPES or self.model_change_model:
            return Dialect.XCSH
        return None

    def dialect(self, home: Dialect | None = None) -> Dialect:
        """The file's dialect: what its content shows; else the agent dir's (``home``); else
        xcsh. A file of the omp/xcsh family in oh-my-pi's agent dir is oh-my-pi's."""
        found = self.detected()
        if found is Dialect.XCSH and home is Dialect.OMP:
            return Dialect.OMP
        if found is not None:
            return found
        return home if home is not None else Dialect.XCSH


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
