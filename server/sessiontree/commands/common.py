"""What the verbs of the command line share: the exit codes, error lines, readable values,
and opening a session file for viewing."""

from __future__ import annotations

import json
import os
import stat
import sys
from typing import Any

from sessiontree.core.format.jsonl import scrub_text

# One scheme for every verb but `serve` (README "Command line", `sessiontree --help`).
EXIT_OK = 0
EXIT_PROBLEMS = 1
EXIT_UNUSABLE = 2

EXIT_CODES_HELP = """\
exit codes (every command but serve):
  0  done; nothing wrong found
  1  problems found: doctor found damage in a file (notes, such as an old version that
     the next write migrates, do not count); the other commands never exit 1
  2  unusable input or usage: a missing, unreadable or empty file, a file that is no pi
     session (a Claude Code or Codex transcript, binary data, no session header; doctor
     counts a headerless file of pi entries as damage, 1), a bad argument, an entry id
     that is not in the file, a missing directory, an unexpected error
errors go to stderr, one line each (SESSIONTREE_DEBUG=1 adds the traceback of an
unexpected error)"""

# The head of a file that is enough to tell what kind of file it is.
_SNIFF_BYTES = 1 << 16


def fail(verb: str, message: str) -> int:
    """Print one error line for ``verb`` to stderr; the exit code for unusable input."""
    print(f"sessiontree {verb}: {message}", file=sys.stderr)
    return EXIT_UNUSABLE


def text(value: Any, missing: str = "") -> str:
    """A JSON value as a person reads it on a terminal: strings as they are (`terminal_safe`,
    lines kept), other values as JSON, and ``missing`` for an absent one (never Python's
    ``None`` or a dict's repr)."""
    if value is None:
        return missing
    if isinstance(value, str):
        return terminal_safe(value, lines=True)
    return terminal_safe(json.dumps(value, ensure_ascii=False), lines=True)


def terminal_safe(value: Any, *, lines: bool = False) -> str:
    """Text someone else wrote (a teammate's row in the shared store: machine, user, cwd,
    ids; a session's text, which a sync may have brought from a teammate) as a terminal may
    show it: every character that is not printable (C0 and C1 controls such as ESC and BEL,
    DEL, bidi and other format controls, line and paragraph separators) as its escape
    (``\\x1b``), the rest as it is; with ``lines``, newlines and tabs stay (text of several
    lines). The one rule for everything the command line prints that it did not make itself."""
    # a lone surrogate is shown as U+FFFD, as every output shows it (`jsonl.scrub_text`)
    s = scrub_text(value if isinstance(value, str) else str(value))
    if s.isprintable():
        return s
    keep = "\n\t" if lines else ""
    return "".join(c if c.isprintable() or c in keep else _escape(ord(c)) for c in s)


def _escape(code: int) -> str:
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def _mode_kind(mode: int) -> str:
    from sessiontree.core.paths import file_kind

    kind = file_kind(mode)
    if kind == "a directory":
        return "is a directory"
    return kind if kind == "not a regular file" else f"not a regular file ({kind})"


def _os_reason(exc: OSError) -> str:
    if isinstance(exc, FileNotFoundError):
        return "no such file"
    if isinstance(exc, PermissionError):
        return "permission denied"
    return (exc.strerror or str(exc)).lower()


def _why_not_a_session(path: str, fallback: str) -> str:
    from sessiontree.core.sources.sniff import not_a_session_reason

    try:
        with open(path, "rb") as f:
            head = f.read(_SNIFF_BYTES)
    except OSError:
        return fallback
    return not_a_session_reason(head) or fallback


def unusable_file(path: str) -> str | None:
    """Why ``path`` cannot be viewed before even opening it (missing, not a regular file,
    empty), or None. Viewing never creates a session, so an empty file is not one."""
    try:
        st = os.stat(path)
    except OSError as exc:
        return _os_reason(exc)
    if not stat.S_ISREG(st.st_mode):
        return _mode_kind(st.st_mode)
    if st.st_size == 0:
        from sessiontree.core.sources.sniff import not_a_session_reason

        return not_a_session_reason(b"")
    return None


def open_for_viewing(verb: str, path: str) -> Any:
    """A read-only `SessionManager` on ``path``, or None after printing why it cannot be
    opened (the caller then exits with `EXIT_UNUSABLE`)."""
    from sessiontree.core.errors import InvalidSessionFileError, SessionTreeError
    from sessiontree.core.session import SessionManager

    reason = unusable_file(path)
    if reason is not None:
        fail(verb, f"{path}: {reason}")
        return None
    try:
        return SessionManager.open(path, read_only=True)
    except InvalidSessionFileError as exc:
        fail(verb, f"{path}: {_why_not_a_session(path, exc.reason)}")
    except OSError as exc:
        fail(verb, f"{path}: {_os_reason(exc)}")
    except SessionTreeError as exc:
        fail(verb, f"{path}: {exc}")
    return None


def entry_not_found(verb: str, entry_id: str) -> int:
    """The error for a ``--leaf`` that is not in the file."""
    return fail(verb, f"Entry {entry_id} not found")


def missing_agent_dir(agent_dir: str | None) -> str | None:
    """A one-line error when no agent dir to list exists, else ``None`` (the core's rule,
    `core.discovery.homes.missing_agent_dir`); nothing is created to look."""
    from sessiontree.core.discovery.homes import missing_agent_dir as missing

    return missing(agent_dir)
