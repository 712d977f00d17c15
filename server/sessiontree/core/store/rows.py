"""What a row of a shared session in the store must be before this machine believes it.

A teammate with an account on the store can write rows by hand. A row of ``entries`` says
three things about one line: its bytes (``line``), the entry id it carries (``entry_id``)
and the hash of those bytes (``hash``). Other machines take the row for what the columns
say: the sync leaves out ids it holds and appends the line to the local file, the daemon
reads the lines as the session file. So a row is used only when line, id and column agree
(`refused_row` says why not otherwise):

* the line is exactly one line: it ends with its one newline and holds no other;
* it is one JSON object; the first row of a session is its header, and no later row is a
  session header (a second header would make another session of the file for any reader);
* the line's own ``id`` is the row's ``entry_id`` (else alice's ``a1`` could be shadowed by
  a row that carries ``a1`` in its line under another id in its column);
* ``hash`` is the hash of the line (what the sync compares across machines).

The database refuses such rows at insert (migration 4, ``pg_schema``) where it can parse
the line; this is the rule every reader applies as well, for the rows the database could
not parse (a lone surrogate escape) and the rows written before that migration.
"""

from __future__ import annotations

import hashlib

from ..format.jsonl import is_session_header, loads_line

__all__ = ["entry_hash", "refused_row"]


def entry_hash(line: bytes) -> bytes:
    """The content of an entry line as compared across machines: SHA-256 of its bytes
    without the line ending (copies made by the sync are byte-identical)."""
    return hashlib.sha256(line.rstrip(b"\r\n")).digest()


def refused_row(entry_id: str | None, line: bytes, digest: bytes | None, *, first: bool) -> str | None:
    """Why the row ``(entry_id, line, hash)`` of a shared session is not used (``None``: it is
    what its columns say). ``first`` is the session's first row (its header)."""
    if not line.endswith(b"\n"):
        return "its line has no newline at its end"
    lines = line.count(b"\n")
    if lines > 1:
        return f"it holds {lines} lines, not one"
    try:
        value = loads_line(line)
    except ValueError:
        return "its line is not JSON"
    if not isinstance(value, dict):
        return "its line is not a JSON object"
    if first:
        if not is_session_header(value):
            return "the session's first line is not a session header"
        if entry_id is not None:
            return "the header row carries an entry id"
        return None
    if value.get("type") == "session":
        return "it is a second session header"
    own = value.get("id")
    if not isinstance(own, str) or own != entry_id:
        return f"its line's id is {own!r}, its entry_id column {entry_id!r}"
    if digest is not None and bytes(digest) != entry_hash(line):
        return "its hash is not the hash of its line"
    return None
