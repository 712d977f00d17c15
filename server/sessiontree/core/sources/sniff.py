"""Which agent wrote a file: a pi session, another agent's transcript, or no session at all.

Other agents keep JSONL transcripts too (Claude Code, Codex); such a file is called what it
is, rather than reported as a damaged session (by the loader, `doctor` and the CLI).
"""

from __future__ import annotations

from typing import Any

from ..format.jsonl import parse_jsonl_lenient

__all__ = ["foreign_format_of", "not_a_session_reason"]

# Top-level keys and entry types of other agents' transcripts, which also are JSONL: named
# so that such a file is called what it is rather than a damaged session.
_CLAUDE_CODE_KEYS = frozenset({"parentUuid", "uuid", "leafUuid"})
_CODEX_TYPES = frozenset({"session_meta", "response_item", "event_msg", "turn_context", "compacted"})
_SNIFF_VALUES = 50


def _foreign_format(values: list[Any]) -> str | None:
    for v in values[:_SNIFF_VALUES]:
        if not isinstance(v, dict):
            continue
        if v.get("type") == "session":
            return None
        if _CLAUDE_CODE_KEYS & v.keys() or ("sessionId" in v and "id" not in v):
            return "a Claude Code transcript"
        kind = v.get("type")
        if isinstance(v.get("payload"), dict) and isinstance(kind, str) and kind in _CODEX_TYPES:
            return "a Codex rollout"
    return None


def _is_text(data: bytes) -> bool:
    if b"\x00" in data:
        return False
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        # A multi-byte character cut by the end of a prefix is still text.
        return exc.start >= len(data) - 3 and exc.reason == "unexpected end of data"
    return True


def not_a_session_reason(data: bytes, values: list[Any] | None = None) -> str | None:
    """Why ``data`` (a whole file or its first bytes) is no pi session at all, or None.

    None when it has a session header anywhere, or holds JSON objects that may be pi
    entries (a headerless pi file is a damaged session, not a foreign one). Otherwise one
    sentence: an empty file, a Claude Code or Codex transcript, binary data, or text
    without a JSON object line. ``values`` are the parsed values of ``data`` when the
    caller has them.
    """
    if not data.strip():
        return "empty file: no session header (no session has been written to it yet)"
    if values is None:
        values = parse_jsonl_lenient(data).values
    if any(isinstance(v, dict) and v.get("type") == "session" for v in values):
        return None
    foreign = _foreign_format(values)
    if foreign is not None:
        return f"not a pi session: it looks like {foreign} (no session header)"
    if any(isinstance(v, dict) for v in values):
        return None
    if not _is_text(data):
        return f"not a session file: binary data ({len(data)} bytes, no JSON object line)"
    return f"not a session file: no line is a JSON object ({len(data)} bytes)"


def foreign_format_of(data: bytes, values: list[Any] | None = None) -> str | None:
    """ "claude" or "codex" when ``data`` (a whole file or its first bytes) is another
    agent's transcript that `core.sources` reads, else None (a pi session, or no session)."""
    if not data.strip():
        return None
    if values is None:
        values = parse_jsonl_lenient(data).values
    kind = _foreign_format(values)
    if kind == "a Claude Code transcript":
        return "claude"
    if kind == "a Codex rollout":
        return "codex"
    return None
