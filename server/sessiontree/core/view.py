"""The tree view model: the rows the agent's ``/tree`` selector shows, exactly.

The rules are those of ``tree-view-rules.md`` (ordering with the active branch first,
indent, gutters, connector prefix, active-path marker, labels, display text, the five
filter modes, multi-token search, the selected row). See ``docs/tree-view.md``.

The view reads a *tree source* (`TreeSource`): skeletons, children in ``getTree()``
order, labels, full entries on demand, the current leaf and a version. A
`SessionManager` is adapted with `as_tree_source` (its ``index`` provides everything);
`EntriesTreeSource` builds one from a list of entry dicts.

Performance: the flattened order and the prefix structure come from skeletons only and
are cached per (version, leaf); the filtered row list per (version, leaf, filter,
search). Display text is built only for the rows of the requested page. The tool calls
a ``toolResult`` row may show are indexed by call id once per source (one bulk read) and
extended on appends; only a call id found in several messages consults the flattened
order (the later one wins).

Text is shown, never stored: the display text and labels of rows and summaries, and the
text a search matches, have each lone surrogate (a JSON ``\\udxxx`` escape without the
other half of its pair) as U+FFFD (`jsonl.scrub_text`), so it prints and encodes as UTF-8.
"""

from __future__ import annotations

import math
import os
import weakref
from bisect import bisect_left, bisect_right
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Protocol, runtime_checkable

from sessiontree.core.format.jsonl import scrub_text
from sessiontree.core.tree.context import LAST_ENTRY, _LastEntry
from sessiontree.core.tree_art import SHORT_ART_WIDTH as _SHORT_ART_WIDTH

__all__ = [
    "FILTER_MODES",
    "FILTER_SUFFIXES",
    "EntriesTreeSource",
    "EntrySummary",
    "Row",
    "TreeSource",
    "ViewPage",
    "active_path_ids",
    "as_tree_source",
    "build_view",
    "display_text",
    "entry_summaries_bulk",
    "entry_summary",
    "extract_content",
    "format_tool_call",
    "js_json_stringify",
    "js_round",
    "next_filter",
    "normalize",
    "searchable_text",
    "window_start",
]

FILTER_MODES: Final[tuple[str, ...]] = ("default", "no-tools", "user-only", "labeled-only", "all")
"""The filter modes in the selector's cycle order (Ctrl+O forward, Shift+Ctrl+O back)."""

FILTER_SUFFIXES: Final[Mapping[str, str]] = {
    "default": "",
    "no-tools": " [no-tools]",
    "user-only": " [user]",
    "labeled-only": " [labeled]",
    "all": " [all]",
}
"""The footer suffix of each filter mode."""

_SETTINGS_TYPES: Final = frozenset({"label", "custom", "model_change", "thinking_level_change"})
_EXTRACT_LIMIT: Final = 200
# JS String.prototype.trim / \s: WhiteSpace + LineTerminator.
_JS_WS: Final = "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"


def next_filter(mode: str, direction: int = 1) -> str:
    """The mode after ``mode`` in the cycle (``direction`` -1 goes back)."""
    i = FILTER_MODES.index(mode) if mode in FILTER_MODES else 0
    return FILTER_MODES[(i + (1 if direction >= 0 else -1)) % len(FILTER_MODES)]


# --- JS helpers ------------------------------------------------------------------------


def _u16len(s: str) -> int:
    if s.isascii():
        return len(s)
    return len(s) + sum(1 for ch in s if ord(ch) > 0xFFFF)


def _u16slice(s: str, n: int) -> str:
    """``s.slice(0, n)`` in UTF-16 code units (a cut surrogate pair drops the half)."""
    if len(s) <= n and (s.isascii() or _u16len(s) <= n):
        return s
    if s.isascii():
        return s[:n]
    units = 0
    for i, ch in enumerate(s):
        units += 2 if ord(ch) > 0xFFFF else 1
        if units > n:
            return s[:i]
    return s


def js_round(x: float) -> int | float:
    """JS ``Math.round``: halves round up (towards +infinity); NaN stays NaN."""
    if isinstance(x, float) and (math.isnan(x) or math.isinf(x)):
        return x
    r = math.floor(x)
    return r + 1 if x - r >= 0.5 else r


def _js_number(v: float | int) -> str:
    """``String(n)`` / ``JSON.stringify(n)`` of a number (shortest round-trip digits)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    if v == 0:
        return "0"
    sign = "-" if v < 0 else ""
    r = repr(abs(v))
    mant, _, exp_s = r.partition("e")
    exp = int(exp_s) if exp_s else 0
    int_part, _, frac_part = mant.partition(".")
    digits = (int_part + frac_part).lstrip("0")
    # position of the decimal point relative to the start of `digits`
    lead_zeros = len(int_part + frac_part) - len((int_part + frac_part).lstrip("0"))
    n = len(int_part) - lead_zeros + exp
    digits = digits.rstrip("0") or "0"
    k = len(digits)
    if k <= n <= 21:
        out = digits + "0" * (n - k)
    elif 0 < n <= 21:
        out = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        out = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        out = digits[0] + ("." + digits[1:] if k > 1 else "") + "e" + ("+" if e >= 0 else "-") + str(abs(e))
    return sign + out


def _json_str(s: str) -> str:
    out = ['"']
    for ch in s:
        o = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif o < 0x20:
            out.append(
                {"\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(ch, f"\\u{o:04x}")
            )
        elif 0xD800 <= o <= 0xDFFF:
            out.append(f"\\u{o:04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _is_array_index(k: str) -> bool:
    return k.isdigit() and (k == "0" or k[0] != "0") and int(k) < 4294967295


def js_json_stringify(value: Any) -> str:
    """``JSON.stringify(value)`` with no indentation, byte for byte as JS prints it.

    Integer-like keys come first in ascending order (JS property order), numbers use JS
    formatting (``5.0`` → ``5``, ``1e-7``), non-finite numbers become ``null``.
    """
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return _json_str(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return "null" if math.isnan(value) or math.isinf(value) else _js_number(value)
    if isinstance(value, Mapping):
        keys = [str(k) for k in value]
        idx = sorted((k for k in keys if _is_array_index(k)), key=int)
        rest = [k for k in keys if not _is_array_index(k)]
        items = {str(k): v for k, v in value.items()}
        return "{" + ",".join(_json_str(k) + ":" + js_json_stringify(items[k]) for k in idx + rest) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(js_json_stringify(v) for v in value) + "]"
    return _json_str(str(value))


def _js_string(v: Any) -> str:
    """``String(v)`` for JSON values."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float):
        return _js_number(v)
    if isinstance(v, str):
        return v
    if isinstance(v, list):
        return ",".join("" if x is None else _js_string(x) for x in v)
    if isinstance(v, Mapping):
        return "[object Object]"
    return str(v)


def _truthy(v: Any) -> bool:
    if isinstance(v, float) and math.isnan(v):
        return False
    if isinstance(v, Mapping | list):
        return True
    return bool(v)


def _or(*values: Any) -> Any:
    """JS ``a || b || c``."""
    for v in values[:-1]:
        if _truthy(v):
            return v
    return values[-1]


# --- display text ----------------------------------------------------------------------


def normalize(s: Any) -> str:
    """Newlines and tabs to spaces, then JS ``trim()``."""
    if not isinstance(s, str):
        s = "" if s is None else _js_string(s)
    return s.replace("\n", " ").replace("\t", " ").strip(_JS_WS)


def extract_content(content: Any) -> str:
    """The first 200 characters of a string, or of the concatenated text blocks."""
    if isinstance(content, str):
        return _u16slice(content, _EXTRACT_LIMIT)
    if isinstance(content, list):
        out = ""
        for block in content:
            if isinstance(block, Mapping) and block.get("type") == "text":
                text = block.get("text")
                if isinstance(text, str):
                    out += text
                    if _u16len(out) >= _EXTRACT_LIMIT:
                        return _u16slice(out, _EXTRACT_LIMIT)
        return out
    return ""


def _join_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            b["text"]
            for b in content
            if isinstance(b, Mapping) and b.get("type") == "text" and isinstance(b.get("text"), str)
        )
    return ""


def _home_dir() -> str:
    return os.environ.get("HOME") or os.environ.get("USERPROFILE") or ""


def format_tool_call(name: Any, args: Any, home: str | None = None) -> str:
    """The tree selector's one-line display of a tool call (tree-view-rules.md)."""
    home = _home_dir() if home is None else home
    a: Mapping[str, Any] = args if isinstance(args, Mapping) else {}

    def shorten(p: str) -> str:
        return "~" + p[len(home) :] if home and p.startswith(home) else p

    if name == "read":
        display = shorten(_js_string(_or(a.get("path"), a.get("file_path"), "")))
        if "offset" in a or "limit" in a:
            offset = a.get("offset")
            start: Any = offset if offset is not None else 1
            end: Any = ""
            if "limit" in a:
                limit = a.get("limit")
                lim = 0 if limit is None else limit
                if isinstance(start, int | float) and isinstance(lim, int | float):
                    end = start + lim - 1
                else:
                    end = math.nan
            display += ":" + _js_string(start) + (f"-{_js_string(end)}" if _truthy(end) else "")
        return f"[read: {display}]"
    if name in ("write", "edit"):
        return f"[{name}: {shorten(_js_string(_or(a.get('path'), a.get('file_path'), '')))}]"
    if name == "bash":
        raw = a.get("command")
        cmd = _js_string(_or(raw, ""))
        cmd = _u16slice(cmd.replace("\n", " ").replace("\t", " ").strip(_JS_WS), 50)
        more = isinstance(raw, str) and _u16len(raw) > 50
        return f"[bash: {cmd}{'...' if more else ''}]"
    if name == "grep":
        pattern = _js_string(_or(a.get("pattern"), ""))
        return f"[grep: /{pattern}/ in {shorten(_js_string(_or(a.get('path'), '.')))}]"
    if name == "find":
        pattern = _js_string(_or(a.get("pattern"), ""))
        return f"[find: {pattern} in {shorten(_js_string(_or(a.get('path'), '.')))}]"
    if name == "ls":
        return f"[ls: {shorten(_js_string(_or(a.get('path'), '.')))}]"
    raw_json = js_json_stringify(args if args is not None else {})
    cut = _u16slice(raw_json, 40)
    return f"[{'undefined' if name is None else _js_string(name)}: {cut}{'...' if _u16len(raw_json) > 40 else ''}]"


def _model_change_name(entry: Mapping[str, Any]) -> str:
    # DIVERGENCE 8: older pi writes `provider` and `modelId` instead of `model`; the
    # reference prints `undefined` for those, sessiontree names the model.
    if "model" not in entry:
        model_id = entry.get("modelId")
        provider = entry.get("provider")
        if isinstance(model_id, str) and model_id:
            return f"{provider}/{model_id}" if isinstance(provider, str) and provider else model_id
    return _js_string(entry.get("model"))


class _ToolCallMap(Protocol):
    def get(self, key: Any, /) -> Any: ...


def display_text(
    entry: Mapping[str, Any], tool_calls: _ToolCallMap | None = None, home: str | None = None
) -> str:
    """The one-line text of an entry as the tree selector shows it (without label/marker).

    ``tool_calls`` maps a toolCallId to ``{"name", "arguments"}`` (the selector's tool-call
    map); ``home`` overrides ``$HOME`` for path shortening.
    """
    etype = entry.get("type")
    if etype == "message":
        msg = entry.get("message")
        if not isinstance(msg, Mapping):
            msg = {}
        role = msg.get("role")
        if role == "user":
            return "user: " + normalize(extract_content(msg.get("content")))
        if role == "assistant":
            text = normalize(extract_content(msg.get("content")))
            if text:
                return "assistant: " + text
            if msg.get("stopReason") == "aborted":
                return "assistant: (aborted)"
            err = msg.get("errorMessage")
            if _truthy(err):
                return "assistant: " + _u16slice(normalize(err), 80)
            return "assistant: (no content)"
        if role == "toolResult":
            call_id = msg.get("toolCallId")
            tc = tool_calls.get(call_id) if tool_calls is not None and isinstance(call_id, Hashable) else None
            if tc:
                return format_tool_call(tc.get("name"), tc.get("arguments"), home)
            tool_name = msg.get("toolName")
            return f"[{_js_string(tool_name)}]" if _truthy(tool_name) else "[tool]"
        if role == "bashExecution":
            return "[bash]: " + normalize(msg.get("command"))
        return f"[{'undefined' if role is None else _js_string(role)}]"
    if etype == "custom_message":
        return f"[{_js_string(entry.get('customType'))}]: " + normalize(_join_text(entry.get("content")))
    if etype == "compaction":
        tokens = entry.get("tokensBefore")
        if isinstance(tokens, int | float) and not isinstance(tokens, bool):
            n = _js_number(js_round(tokens / 1000))
        else:
            n = "NaN"  # Math.round(undefined / 1000)
        return f"[compaction: {n}k tokens]"
    if etype == "branch_summary":
        return "[branch summary]: " + normalize(entry.get("summary"))
    if etype == "model_change":
        return f"[model: {_model_change_name(entry)}]"
    if etype == "thinking_level_change":
        level = entry.get("thinkingLevel")
        return f"[thinking: {'off' if level is None else _js_string(level)}]"
    if etype == "custom":
        return f"[custom: {_js_string(entry.get('customType'))}]"
    if etype == "label":
        label = entry.get("label")
        return f"[label: {_js_string(label) if _truthy(label) else '(cleared)'}]"
    return ""


def _searchable_body(entry: Mapping[str, Any]) -> list[str]:
    etype = entry.get("type")
    parts: list[str] = []
    if etype == "message":
        msg = entry.get("message")
        if not isinstance(msg, Mapping):
            return parts
        role = msg.get("role")
        parts.append("" if role is None else _js_string(role))
        content = msg.get("content")
        if _truthy(content):
            parts.append(extract_content(content))
        if role == "bashExecution" and _truthy(msg.get("command")):
            parts.append(_js_string(msg.get("command")))
    elif etype == "custom_message":
        parts.append(_js_string(entry.get("customType")))
        content = entry.get("content")
        parts.append(content if isinstance(content, str) else extract_content(content))
    elif etype == "compaction":
        parts.append("compaction")
    elif etype == "branch_summary":
        parts += ["branch summary", _js_string(entry.get("summary") or "")]
    elif etype == "model_change":
        parts += ["model", _js_string(entry.get("model") or "")]
    elif etype == "thinking_level_change":
        level = entry.get("thinkingLevel")
        parts += ["thinking", "off" if level is None else _js_string(level)]
    elif etype == "custom":
        parts += ["custom", _js_string(entry.get("customType") or "")]
    elif etype == "label":
        label = entry.get("label")
        parts += ["label", "" if label is None else _js_string(label)]
    return parts


def _search_display(entry: Mapping[str, Any]) -> str:
    """What of the display text a search must also match, but for a toolResult's call.

    The tool-call display of a ``toolResult`` depends on which assistant message holds the
    call (`_CallIndex`), so it is added at query time; its fallback (``[toolName]``) only
    when no call is found.

    A query token holds no whitespace, and the display of a user message, an assistant
    message with text and a bashExecution is a prefix (``user: ``) and then text the
    searchable parts already hold (`extract_content` of the content, the command) with
    newlines and tabs made spaces: a token found in that display is found in the prefix
    or in those parts. So for those only the prefix is kept, which matches alike and
    spares building the display of every entry at the first search.
    """
    if entry.get("type") == "message":
        msg = entry.get("message")
        if isinstance(msg, Mapping):
            role = msg.get("role")
            if role == "toolResult":
                if isinstance(msg.get("toolCallId"), Hashable):
                    return ""
            elif role == "user":
                return "user:"
            elif role == "assistant":
                if extract_content(msg.get("content")).strip(_JS_WS):
                    return "assistant:"
            elif role == "bashExecution":
                command = msg.get("command")
                if command is None or command == "" or _truthy(command):
                    return "[bash]:"
    return display_text(entry)


def searchable_text(
    entry: Mapping[str, Any],
    label: str | None = None,
    tool_calls: _ToolCallMap | None = None,
    home: str | None = None,
) -> str:
    """The text a search query is matched against (not lowercased).

    The reference's parts (the label, then the parts of ``tree-view-rules.md`` by entry
    type), then the row's display text (DIVERGENCES 9: search finds what rows show, e.g. a
    path shown as ``[read: src/x.py]``), so the matches are a superset of the reference's.
    ``tool_calls`` and ``home`` are those of `display_text`.
    """
    parts = [label] if label else []
    parts += _searchable_body(entry)
    shown = display_text(entry, tool_calls, home)
    if shown:
        parts.append(shown)
    return " ".join(parts)


# --- tree sources ----------------------------------------------------------------------


@runtime_checkable
class TreeSource(Protocol):
    """What the view reads. ``SessionManager`` is adapted by `as_tree_source`.

    ``skeleton(id)`` returns an object with the attributes of ``core.index.Skeleton``
    (``id, parent_id, type, timestamp, role, stop_reason, has_text, tool_call_id``...);
    ``children(None)`` gives the roots. ``version()`` changes whenever the tree or the
    labels change (the leaf is passed separately).
    """

    @property
    def labels(self) -> Mapping[str, str]: ...

    def skeleton(self, entry_id: str) -> Any: ...

    def children(self, parent_id: str | None) -> Sequence[str]: ...

    def get_entry(self, entry_id: str) -> Mapping[str, Any] | None: ...

    def get_leaf_id(self) -> str | None: ...

    def version(self) -> Hashable: ...


class _Cache:
    """Per-source caches of flattened trees, filtered lists and searchable text."""

    def __init__(self) -> None:
        self.flat: OrderedDict[Hashable, _Flat] = OrderedDict()
        self.filtered: OrderedDict[Hashable, _Filtered] = OrderedDict()
        self.search_version: Hashable = None
        self.search_text: dict[str, str] = {}  # lowercased, without label and tool-call display
        self.search_order: dict[str, Any] = {}  # the file order of the entry each text is of
        # toolResult entries: the call id whose display their searchable text also holds
        # (resolved at query time), the fallback display (no call found, lowercased) and
        # the length of the text without it
        self.search_call: dict[str, tuple[Hashable, str, int]] = {}
        # toolResult entries whose text holds their call's display (an id one message has),
        # valid for `search_tool_key`: (the call index, its generation, the home)
        self.search_folded: dict[str, tuple[Hashable, str, int]] = {}
        self.search_tool_key: Hashable = None
        self.call_index: _CallIndex | None = None


class _SourceBase:
    _view_cache: _Cache

    def _cache(self) -> _Cache:
        c = getattr(self, "_view_cache", None)
        if c is None:
            c = _Cache()
            self._view_cache = c
        return c

    def get_entry(self, entry_id: str) -> Mapping[str, Any] | None:  # pragma: no cover - overridden
        raise NotImplementedError

    def get_entries(self, ids: Sequence[str]) -> list[Mapping[str, Any] | None]:
        """Many entries at once (a source may read them in batches)."""
        return [self.get_entry(i) for i in ids]


class ManagerTreeSource(_SourceBase):
    """A `TreeSource` over a ``SessionManager`` (through ``manager.index``).

    With ``weak=True`` (the adapters `as_tree_source` keeps) the source refers to its
    manager and index only weakly: the cache maps manager -> source weakly, and a source
    that held its manager (or the index, whose loaders are the manager's bound methods)
    would keep every closed session alive for good.
    """

    def __init__(self, manager: Any, *, weak: bool = False) -> None:
        self._strong: Any = None if weak else manager
        self._ref: weakref.ReferenceType[Any] | None = weakref.ref(manager) if weak else None
        self._index_seen: Callable[[], Any] | None = None
        self._generation = 0

    @property
    def manager(self) -> Any:
        """The adapted manager (``ReferenceError`` once a weakly held one was freed)."""
        m = self._strong
        if m is None:
            m = self._ref() if self._ref is not None else None
            if m is None:
                raise ReferenceError("the session manager of this tree source was freed")
        return m

    @property
    def labels(self) -> Mapping[str, str]:
        return self.manager.index.labels  # type: ignore[no-any-return]

    def skeleton(self, entry_id: str) -> Any:
        return self.manager.index.skeleton(entry_id)

    def children(self, parent_id: str | None) -> Sequence[str]:
        return self.manager.index.children(parent_id)  # type: ignore[no-any-return]

    def lookups(self) -> tuple[Callable[[str], Any], Callable[[str | None], Sequence[str]]]:
        """`skeleton` and `children` bound to the current index, for one pass over a version."""
        index = self.manager.index
        child_map = getattr(index, "child_map", None)
        if child_map is None:
            return self.skeleton, self.children
        roots, kids = child_map()
        kids_get = kids.get
        empty: tuple[str, ...] = ()

        def children(parent_id: str | None) -> Sequence[str]:
            return roots if parent_id is None else kids_get(parent_id, empty)

        return index.ids().get, children

    def get_entry(self, entry_id: str) -> Mapping[str, Any] | None:
        return self.manager.get_entry(entry_id)  # type: ignore[no-any-return]

    def get_leaf_id(self) -> str | None:
        return self.manager.get_leaf_id()  # type: ignore[no-any-return]

    def get_entries(self, ids: Sequence[str]) -> list[Mapping[str, Any] | None]:
        index = self.manager.index
        entries_of = getattr(index, "entries_of", None)
        if entries_of is None:
            return super().get_entries(ids)
        sks = [index.skeleton(i) for i in ids]
        found = entries_of([sk for sk in sks if sk is not None])
        it = iter(found)
        return [next(it) if sk is not None else None for sk in sks]

    def version(self) -> Hashable:
        index = self.manager.index
        seen = self._index_seen
        if seen is None or seen() is not index:
            # A rebuilt index (new session, branched session, reload) is a new tree. The
            # identity check goes through a weak reference: comparing ids could mistake a
            # new index for a freed old one, and a strong one would keep the manager alive.
            try:
                self._index_seen = weakref.ref(index)
            except TypeError:  # an index type without weak references: hold it
                self._index_seen = lambda: index
            self._generation += 1
        v = getattr(index, "version", None)
        if callable(v):
            v = v()
        # Labels and entries only change by appending, which changes the length.
        return (self._generation, v, len(index), len(index.labels))

    def content_version(self) -> Hashable:
        """Changes when stored entries may have changed (not on appends)."""
        self.version()
        return self._generation

    def entry_count(self) -> int:
        """Entries in file order (duplicated ids counted each time)."""
        return len(self.manager.index)

    def distinct_count(self) -> int:
        """Distinct entry ids."""
        return len(self.manager.index.ids())

    def appended_since(self, count: int) -> list[str]:
        """Ids of the entries after the first ``count`` (file order)."""
        return [sk.id for sk in self.manager.index.skeletons()[count:]]


class EntriesTreeSource(_SourceBase):
    """A `TreeSource` built from a list of entry dicts (a header dict is skipped).

    ``leaf_id`` defaults to the last entry, like a freshly opened session.
    """

    def __init__(
        self, entries: Iterable[Mapping[str, Any]], leaf_id: str | _LastEntry | None = LAST_ENTRY
    ) -> None:
        from sessiontree.core.index import EntryIndex

        self.index = EntryIndex()
        last: str | None = None
        for e in entries:
            if not isinstance(e, Mapping) or e.get("type") == "session":
                continue
            self.index.add_held(e)  # type: ignore[arg-type]
            eid = e.get("id")
            last = eid if isinstance(eid, str) else last
        self.leaf_id: str | None = last if isinstance(leaf_id, _LastEntry) else leaf_id
        self._version = 0

    @property
    def labels(self) -> Mapping[str, str]:
        return self.index.labels

    def skeleton(self, entry_id: str) -> Any:
        return self.index.skeleton(entry_id)

    def children(self, parent_id: str | None) -> Sequence[str]:
        return self.index.children(parent_id)

    def get_entry(self, entry_id: str) -> Mapping[str, Any] | None:
        return self.index.get(entry_id)

    def get_leaf_id(self) -> str | None:
        return self.leaf_id

    def version(self) -> Hashable:
        return (len(self.index), len(self.index.labels))

    def content_version(self) -> Hashable:
        """Entries are only ever added to this source."""
        return 0

    def entry_count(self) -> int:
        """Entries in file order (duplicated ids counted each time)."""
        return len(self.index)

    def distinct_count(self) -> int:
        """Distinct entry ids."""
        return len(self.index.ids())

    def appended_since(self, count: int) -> list[str]:
        """Ids of the entries after the first ``count`` (file order)."""
        return [sk.id for sk in self.index.skeletons()[count:]]

    def append(self, entry: Mapping[str, Any], move_leaf: bool = True) -> None:
        """Add an entry (and by default make it the leaf)."""
        self.index.add_held(entry)  # type: ignore[arg-type]
        if move_leaf and isinstance(entry.get("id"), str):
            self.leaf_id = entry["id"]


_ADAPTERS: weakref.WeakKeyDictionary[Any, ManagerTreeSource] = weakref.WeakKeyDictionary()


def as_tree_source(obj: Any) -> TreeSource:
    """A `TreeSource` for a manager, a list of entry dicts, or a source (returned as is).

    The adapter of a manager is kept (weakly, and it holds the manager weakly) so that
    its caches live as long as the manager does, and no longer.
    """
    if isinstance(obj, _SourceBase):
        return obj  # type: ignore[return-value]
    if hasattr(obj, "index") and hasattr(obj, "get_entry"):
        try:
            src = _ADAPTERS.get(obj)
        except TypeError:
            return ManagerTreeSource(obj)  # type: ignore[return-value]
        if src is None:
            src = ManagerTreeSource(obj, weak=True)
            _ADAPTERS[obj] = src
        return src  # type: ignore[return-value]
    if isinstance(obj, TreeSource):
        return obj
    if isinstance(obj, list | tuple):
        return EntriesTreeSource(obj)  # type: ignore[return-value]
    raise TypeError(f"not a tree source: {type(obj).__name__}")


# --- flattening ------------------------------------------------------------------------


class _PathSet:
    """The active path's ids: a shared base plus what appends added (cheap to extend)."""

    __slots__ = ("base", "extra")

    def __init__(self, base: frozenset[str], extra: frozenset[str] = frozenset()) -> None:
        self.base = base
        self.extra = extra

    def __contains__(self, entry_id: object) -> bool:
        return entry_id in self.extra or entry_id in self.base

    def extended(self, ids: Iterable[str]) -> _PathSet:
        extra = self.extra | frozenset(ids)
        if len(extra) > 4096:
            return _PathSet(self.base | extra)
        return _PathSet(self.base, extra)


@dataclass(slots=True)
class _Flat:
    ids: list[str]
    indent: list[int]
    show_connector: list[bool]
    is_last: list[bool]
    gutters: list[tuple[tuple[int, bool], ...]]
    virtual_root: list[bool]
    just_branched: list[bool]
    multiple_roots: bool
    active_path: _PathSet
    leaf: str | None = None
    leaf_index: int | None = None
    version: Hashable = None
    content_version: Hashable = None
    count: int = -1  # source entry count when built (-1: unknown, no extension)
    distinct: int = -1
    # How this flat was made from a cached one: (previous version, previous leaf,
    # position of the previous leaf, number of rows inserted after it).
    extended_from: tuple[Hashable, str, int, int] | None = None
    index_of: dict[str, int] | None = None
    prefix_cache: dict[tuple[int, int, bool, bool], tuple[Any, str]] = field(default_factory=dict)

    def index(self, entry_id: str) -> int | None:
        """The flattened position of an entry."""
        if entry_id == self.leaf and self.leaf_index is not None:
            return self.leaf_index
        if self.index_of is None:
            self.index_of = {eid: i for i, eid in enumerate(self.ids)}
        return self.index_of.get(entry_id)


def _lookups(source: TreeSource) -> tuple[Callable[[str], Any], Callable[[str | None], Sequence[str]]]:
    """Fast `skeleton`/`children` for a loop over one version of `source` (read-only results)."""
    fast = getattr(source, "lookups", None)
    if fast is not None:
        return fast()  # type: ignore[no-any-return]
    return source.skeleton, source.children


def active_path_ids(source: TreeSource, leaf_id: str | None) -> list[str]:
    """The leaf and its ancestors by ``parentId`` (leaf first), stopping at a repeat."""
    return list(_iter_active_path(source, leaf_id))


def _iter_active_path(source: TreeSource, leaf_id: str | None) -> Iterator[str]:
    seen: set[str] = set()
    cur = leaf_id
    skeleton = _lookups(source)[0]
    while isinstance(cur, str) and cur not in seen:
        seen.add(cur)
        yield cur
        sk = skeleton(cur)
        if sk is None:
            break
        cur = sk.parent_id


def _flatten(source: TreeSource, leaf_id: str | None) -> _Flat:
    skeleton, children = _lookups(source)
    roots = list(children(None))
    root_set = set(roots)
    # Ancestors of the leaf in the tree (the subtrees that contain it).
    contains: set[str] = set()
    if leaf_id is not None and skeleton(leaf_id) is not None:
        cur: Any = leaf_id
        while isinstance(cur, str) and cur not in contains:
            contains.add(cur)
            if cur in root_set:
                break
            sk = skeleton(cur)
            if sk is None:
                break
            cur = sk.parent_id
    multi = len(roots) > 1
    if contains and multi:
        roots = [r for r in roots if r in contains] + [r for r in roots if r not in contains]
    ids: list[str] = []
    indent_l: list[int] = []
    conn_l: list[bool] = []
    last_l: list[bool] = []
    gut_l: list[tuple[tuple[int, bool], ...]] = []
    vr_l: list[bool] = []
    jb_l: list[bool] = []
    # (id, indent, just_branched, show_connector, is_last, gutters, is_virtual_root_child)
    stack: list[tuple[str, int, bool, bool, bool, tuple[tuple[int, bool], ...], bool]] = []
    n_roots = len(roots)
    base = 1 if multi else 0
    for i in range(n_roots - 1, -1, -1):
        stack.append((roots[i], base, multi, multi, i == n_roots - 1, (), multi))
    emitted: set[str] = set()
    while stack:
        nid, indent, jb, sc, last, gut, vr = stack.pop()
        if nid in emitted:
            continue  # a malformed source cannot make a row appear twice or loop
        emitted.add(nid)
        ids.append(nid)
        indent_l.append(indent)
        conn_l.append(sc)
        last_l.append(last)
        gut_l.append(gut)
        vr_l.append(vr)
        jb_l.append(jb)
        kids = children(nid)
        if not kids:
            continue
        nk = len(kids)
        if sc and not vr:
            disp = max(0, indent - 1) if multi else indent
            child_gut = (*gut, (max(0, disp - 1), not last))
        else:
            child_gut = gut
        if nk > 1:
            if contains:
                kids = [k for k in kids if k in contains] + [k for k in kids if k not in contains]
            ci = indent + 1
            for i in range(nk - 1, -1, -1):
                stack.append((kids[i], ci, True, True, i == nk - 1, child_gut, False))
        else:
            ci = indent + 1 if (jb and indent > 0) else indent
            stack.append((kids[0], ci, False, False, True, child_gut, False))
    flat = _Flat(
        ids,
        indent_l,
        conn_l,
        last_l,
        gut_l,
        vr_l,
        jb_l,
        multi,
        _PathSet(frozenset(active_path_ids(source, leaf_id))),
    )
    flat.leaf = leaf_id
    return flat


def _extend(source: TreeSource, prev: _Flat, leaf_id: str | None) -> _Flat | None:
    """The flat for ``leaf_id`` made from ``prev`` when only a chain was appended under its leaf.

    This is what an agent does all the time (append to the leaf, the leaf follows), and it
    spares a full flattening of a large session. Anything else returns None.
    """
    old_leaf = prev.leaf
    if old_leaf is None or leaf_id is None or prev.count < 0:
        return None
    counts = getattr(source, "entry_count", None)
    if counts is None:
        return None
    now = counts()
    k = now - prev.count
    if k <= 0 or source.distinct_count() - prev.distinct != k:  # type: ignore[attr-defined]
        return None  # nothing new, or a new entry reuses an existing id
    chain = source.appended_since(prev.count)  # type: ignore[attr-defined]
    if len(chain) != k or chain[-1] != leaf_id or len(set(chain)) != k:
        return None
    parent = old_leaf
    for eid in chain:
        sk = source.skeleton(eid)
        if sk is None or sk.parent_id != parent or list(source.children(parent)) != [eid]:
            return None
        parent = eid
    if source.children(leaf_id):
        return None
    p = prev.index(old_leaf)
    if p is None:
        return None
    indent = prev.indent[p]
    gut = prev.gutters[p]
    if prev.show_connector[p] and not prev.virtual_root[p]:
        disp = max(0, indent - 1) if prev.multiple_roots else indent
        child_gut = (*gut, (max(0, disp - 1), not prev.is_last[p]))
    else:
        child_gut = gut
    ci = indent + 1 if (prev.just_branched[p] and indent > 0) else indent
    at = p + 1
    flat = _Flat(
        prev.ids[:at] + chain + prev.ids[at:],
        prev.indent[:at] + [ci] * k + prev.indent[at:],
        prev.show_connector[:at] + [False] * k + prev.show_connector[at:],
        prev.is_last[:at] + [True] * k + prev.is_last[at:],
        prev.gutters[:at] + [child_gut] * k + prev.gutters[at:],
        prev.virtual_root[:at] + [False] * k + prev.virtual_root[at:],
        prev.just_branched[:at] + [False] * k + prev.just_branched[at:],
        prev.multiple_roots,
        prev.active_path.extended(chain),
    )
    flat.leaf = leaf_id
    flat.leaf_index = p + k
    flat.extended_from = (prev.version, old_leaf, p, k)
    flat.prefix_cache = prev.prefix_cache
    return flat


def _prefix(flat: _Flat, i: int) -> str:
    indent = flat.indent[i]
    disp = max(0, indent - 1) if flat.multiple_roots else indent
    if disp == 0:
        return ""
    has_conn = flat.show_connector[i] and not flat.virtual_root[i]
    gutters = flat.gutters[i]
    # Rows of one chain share their gutter tuple, so its id is a key; the entry holds the
    # tuple itself so that the id cannot be reused while the entry exists.
    key = (id(gutters), disp, has_conn, has_conn and flat.is_last[i])
    cached = flat.prefix_cache.get(key)
    if cached is not None and cached[0] is gutters:
        return cached[1]
    shows: dict[int, bool] = {}
    for pos, show in gutters:
        shows.setdefault(pos, show)  # the first gutter at a position wins (Array.find)
    cells = []
    last_level = disp - 1
    for level in range(disp):
        g = shows.get(level)
        if g is not None:
            cells.append("│  " if g else "   ")
        elif has_conn and level == last_level:
            cells.append("└─ " if flat.is_last[i] else "├─ ")
        else:
            cells.append("   ")
    text = "".join(cells)
    flat.prefix_cache[key] = (gutters, text)
    return text


def _display_indent(flat: _Flat, i: int) -> int:
    indent = flat.indent[i]
    return max(0, indent - 1) if flat.multiple_roots else indent


# --- filtering -------------------------------------------------------------------------


@dataclass(slots=True)
class _Filtered:
    flat: _Flat
    rows: list[int]  # indices into flat, ascending
    selected: int | None = -1  # -1: not computed yet

    def position(self, entry_id: str) -> int | None:
        fi = self.flat.index(entry_id)
        if fi is None:
            return None
        r = bisect_left(self.rows, fi)
        return r if r < len(self.rows) and self.rows[r] == fi else None


_SEARCH_BATCH = 4096


def _fill_search_text(source: TreeSource, cache: _Cache, ids: list[str]) -> None:
    texts = cache.search_text
    orders = cache.search_order
    calls = cache.search_call
    folded = cache.search_folded
    skeleton = source.skeleton
    missing = []
    for eid in ids:
        if eid in texts:
            sk = skeleton(eid)
            # a later entry with the same id replaces the earlier one
            if sk is None or getattr(sk, "order", None) == orders.get(eid):
                continue
        missing.append(eid)
    getter = getattr(source, "get_entries", None)
    for start in range(0, len(missing), _SEARCH_BATCH):
        chunk = missing[start : start + _SEARCH_BATCH]
        entries = getter(chunk) if getter is not None else [source.get_entry(i) for i in chunk]
        for eid, entry in zip(chunk, entries, strict=True):
            # Matched as shown: a lone surrogate is U+FFFD (docs/storage-format.md).
            if entry is None:
                texts[eid] = ""
            else:
                parts = _searchable_body(entry)
                # DIVERGENCE 9: the display text too, so a search finds what the row shows.
                shown = _search_display(entry)
                if shown:
                    parts.append(shown)
                text = texts[eid] = scrub_text(" ".join(parts)).lower()
                calls.pop(eid, None)
                folded.pop(eid, None)
                if not shown and entry.get("type") == "message":
                    fallback = scrub_text(display_text(entry)).lower()
                    calls[eid] = (entry["message"].get("toolCallId"), fallback, len(text))
            sk = skeleton(eid)
            orders[eid] = getattr(sk, "order", None) if sk is not None else None


def _keep(sk: Any, eid: str, leaf_id: str | None, mode: str, labels: Mapping[str, str]) -> bool:
    """The assistant rule and the filter mode (search is applied separately)."""
    etype = sk.type
    role = sk.role if etype == "message" else None
    if role == "assistant" and eid != leaf_id and not sk.has_text:
        stop = sk.stop_reason
        if not stop or stop in ("stop", "toolUse"):
            return False
    if mode == "default":
        return etype not in _SETTINGS_TYPES
    if mode == "no-tools":
        return etype not in _SETTINGS_TYPES and role != "toolResult"
    if mode == "user-only":
        return role == "user"
    if mode == "labeled-only":
        return eid in labels
    return True


def _search(
    source: TreeSource, cache: _Cache, flat: _Flat, indices: list[int], tokens: list[str], home: str
) -> list[int]:
    ids = flat.ids
    _fill_search_text(source, cache, [ids[i] for i in indices])
    labels = source.labels
    texts = cache.search_text
    calls = cache.search_call
    folded = cache.search_folded
    ci: _CallIndex | None = None
    if calls or folded:
        ci = _call_index(source, cache, flat, source.version())
        key = (ci, ci.gen, home)
        if cache.search_tool_key != key:
            # an owner changed (or the index or home): take the folded displays out again
            for eid, kept in folded.items():
                texts[eid] = texts[eid][: kept[2]]
                calls[eid] = kept
            folded.clear()
            cache.search_tool_key = key
    one = tokens[0] if len(tokens) == 1 else None
    matched: list[int] = []
    # A token holds no whitespace, so it is in the searchable text (parts joined by single
    # spaces) exactly when it is in one of the parts: the cached text (lowercased) or the
    # label; nothing is joined or lowercased per query but a row's label.
    for i in indices:
        eid = ids[i]
        text = texts[eid]
        call = calls.get(eid)
        if call is not None:
            # The tool call this toolResult row shows, as the page resolves it. The call of
            # an id only one message has is the same in every flattened order: it is
            # folded into the cached text until the call index says an owner changed.
            # An id several messages share is resolved for this order every time.
            assert ci is not None
            owner = ci.owner.get(call[0])
            if owner is not None:
                text = texts[eid] = f"{text} {ci.shown(owner, call[0], home)}"
                folded[eid] = call
                del calls[eid]
            else:
                shown = ci.display(call[0], flat, home)
                text = f"{text} {call[1] if shown is None else shown}"
        label = labels.get(eid)
        if label:
            low = scrub_text(label).lower()
            ok = all(t in text or t in low for t in tokens)
        elif one is not None:
            ok = one in text
        else:
            ok = all(t in text for t in tokens)
        if ok:
            matched.append(i)
    return matched


def _visible(
    source: TreeSource,
    cache: _Cache,
    flat: _Flat,
    leaf_id: str | None,
    mode: str,
    tokens: list[str],
    home: str,
) -> list[int]:
    labels = source.labels
    skeleton = _lookups(source)[0]
    out: list[int] = []
    for i, eid in enumerate(flat.ids):
        sk = skeleton(eid)
        if sk is not None and _keep(sk, eid, leaf_id, mode, labels):
            out.append(i)
    return _search(source, cache, flat, out, tokens, home) if tokens else out


def _visible_extended(
    source: TreeSource,
    cache: _Cache,
    flat: _Flat,
    prev: _Filtered,
    mode: str,
    tokens: list[str],
    home: str,
) -> list[int] | None:
    """The rows of an extended flat from the previous rows (see `_extend`)."""
    if flat.extended_from is None:
        return None
    _, old_leaf, p, k = flat.extended_from
    chain = flat.ids[p + 1 : p + 1 + k]
    skeleton = source.skeleton
    labels = source.labels
    sks = [skeleton(eid) for eid in chain]
    if any(sk is None or sk.type == "label" for sk in sks):
        return None  # a label may change rows anywhere
    leaf = flat.leaf
    cut = bisect_right(prev.rows, p)
    head = prev.rows[:cut]
    if head and head[-1] == p:
        old_sk = skeleton(old_leaf)
        if old_sk is None or not _keep(old_sk, old_leaf, leaf, mode, labels):
            head.pop()  # the old leaf is no longer exempt from the assistant rule
    new = [
        p + 1 + j
        for j, (eid, sk) in enumerate(zip(chain, sks, strict=True))
        if _keep(sk, eid, leaf, mode, labels)
    ]
    if tokens and new:
        new = _search(source, cache, flat, new, tokens, home)
    return head + new + [i + k for i in prev.rows[cut:]]


# --- tool calls for toolResult rows ----------------------------------------------------


def _calls_of(entry: Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
    if entry is None or entry.get("type") != "message":
        return []
    msg = entry.get("message")
    if not isinstance(msg, Mapping) or msg.get("role") != "assistant":
        return []
    content = msg.get("content")
    if not isinstance(content, list):
        return []
    return [b for b in content if isinstance(b, Mapping) and b.get("type") == "toolCall"]


class _CallIndex:
    """Every assistant message's tool calls, keyed by call id, independent of the tree order.

    ``calls`` maps an assistant entry id to its calls (``{call id: (name, arguments)}``, a
    later call with the same id in one message winning); ``owner`` maps a call id to the
    one message that has it, and ``dups`` a call id that several messages have to all of
    them. Built once per source content (`key`) from one bulk read, then extended with the
    entries appended after the first ``count`` (file order); ``count == -1``: not
    extensible (rebuilt when ``key``, then the source version, changes).
    """

    __slots__ = ("calls", "count", "dups", "gen", "key", "memo", "memo_home", "owner")

    def __init__(self, key: Hashable, count: int) -> None:
        self.key = key
        self.count = count
        self.calls: dict[str, dict[Hashable, tuple[Any, Any]]] = {}
        self.owner: dict[Hashable, str] = {}
        self.dups: dict[Hashable, list[str]] = {}
        # format_tool_call of (message id, call id) for searches, for one home
        self.memo: dict[tuple[str, Hashable], str] = {}
        self.memo_home: str | None = None
        # Bumped when a call id loses its one owner (a removal, or a second message with
        # it), so that a call resolved through `owner` may now resolve otherwise.
        self.gen = 0

    def add(self, eid: str, entry: Mapping[str, Any] | None) -> None:
        """Record the calls of assistant entry ``eid`` (replacing what it had)."""
        self.remove(eid)
        found = _calls_of(entry)
        if not found:
            return
        mine: dict[Hashable, tuple[Any, Any]] = {}
        for call in found:
            cid = call.get("id")
            if type(cid) is str or isinstance(cid, Hashable):
                mine[cid] = (call.get("name"), call.get("arguments"))
        if not mine:
            return
        self.calls[eid] = mine
        owner = self.owner
        dups = self.dups
        for cid in mine:
            lst = dups.get(cid)
            if lst is not None:
                lst.append(eid)
                continue
            prev = owner.get(cid)
            if prev is None:
                owner[cid] = eid
            else:
                dups[cid] = [prev, eid]
                del owner[cid]
                self.gen += 1

    def remove(self, eid: str) -> None:
        """Forget the calls of entry ``eid`` (a later entry with its id replaced it)."""
        mine = self.calls.pop(eid, None)
        if not mine:
            return
        self.gen += 1
        owner = self.owner
        dups = self.dups
        memo = self.memo
        for cid in mine:
            memo.pop((eid, cid), None)
            lst = dups.get(cid)
            if lst is None:
                if owner.get(cid) == eid:
                    del owner[cid]
                continue
            if eid in lst:
                lst.remove(eid)
            if len(lst) == 1:
                owner[cid] = lst[0]
                del dups[cid]

    def display(self, call_id: Hashable, flat: _Flat, home: str) -> str | None:
        """`format_tool_call` of `lookup`, lowercased (None: no call), memoized for searches."""
        eid = self._owner(call_id, flat)
        if eid is None:
            return None
        return self.shown(eid, call_id, home)

    def shown(self, eid: str, call_id: Hashable, home: str) -> str:
        """`format_tool_call` of message ``eid``'s call ``call_id``, lowercased, memoized."""
        if self.memo_home != home:
            self.memo.clear()
            self.memo_home = home
        key = (eid, call_id)
        text = self.memo.get(key)
        if text is None:
            name, args = self.calls[eid][call_id]
            text = self.memo[key] = scrub_text(format_tool_call(name, args, home)).lower()
        return text

    def _owner(self, call_id: Hashable, flat: _Flat) -> str | None:
        eid = self.owner.get(call_id)
        if eid is None:
            lst = self.dups.get(call_id)
            if lst is None:
                return None
            # Several messages have this id: the one last in the flattened order wins.
            best = -1
            for cand in lst:
                pos = flat.index(cand)
                if pos is not None and pos > best:
                    best = pos
                    eid = cand
        return eid

    def lookup(self, call_id: Hashable, flat: _Flat) -> Mapping[str, Any] | None:
        """The call as the selector's map has it for the flattened order of ``flat``."""
        eid = self.owner.get(call_id)
        if eid is None:
            lst = self.dups.get(call_id)
            if lst is None:
                return None
            # Several messages have this id: the one last in the flattened order wins.
            best = -1
            for cand in lst:
                pos = flat.index(cand)
                if pos is not None and pos > best:
                    best = pos
                    eid = cand
            if eid is None:
                return None
        name, args = self.calls[eid][call_id]
        return {"name": name, "arguments": args}


def _is_assistant(sk: Any) -> bool:
    return sk is not None and sk.type == "message" and sk.role == "assistant"


def _source_index(source: TreeSource) -> Any:
    """The ``EntryIndex`` behind a source (with bulk reads), or None."""
    index = getattr(source, "index", None)
    if index is None:
        index = getattr(getattr(source, "manager", None), "index", None)
    return index if hasattr(index, "stream_entries") and hasattr(index, "ids") else None


def _call_index(source: TreeSource, cache: _Cache, flat: _Flat, version: Hashable) -> _CallIndex:
    """The source's `_CallIndex`: cached, extended after appends, rebuilt when content changed."""
    ci = cache.call_index
    counts = getattr(source, "entry_count", None)
    appended = getattr(source, "appended_since", None)
    content = getattr(source, "content_version", None)
    index = _source_index(source)
    if counts is None or appended is None or content is None or index is None:
        # A plain source: its assistants are those of the flattened order; per version.
        if ci is None or ci.count != -1 or ci.key != version:
            ci = _CallIndex(version, -1)
            ids = [eid for eid in flat.ids if _is_assistant(source.skeleton(eid))]
            getter = getattr(source, "get_entries", None)
            entries = getter(ids) if getter is not None else [source.get_entry(i) for i in ids]
            for eid, entry in zip(ids, entries, strict=True):
                ci.add(eid, entry)
            cache.call_index = ci
        return ci
    key = content()
    now = counts()
    if ci is not None and ci.key == key and 0 <= ci.count <= now:
        if ci.count < now:
            new = list(dict.fromkeys(appended(ci.count)))
            ci.count = now
            for eid in new:
                ci.remove(eid)
            skeleton = source.skeleton
            mine = [eid for eid in new if _is_assistant(skeleton(eid))]
            if mine:
                getter = getattr(source, "get_entries", None)
                entries = getter(mine) if getter is not None else [source.get_entry(i) for i in mine]
                for eid, entry in zip(mine, entries, strict=True):
                    ci.add(eid, entry)
        return ci
    from sessiontree.core.index import gc_paused

    ci = _CallIndex(key, now)
    sks = [sk for sk in index.ids().values() if sk.type == "message" and sk.role == "assistant"]
    with gc_paused():
        for sk, entry in index.stream_entries(sks):
            ci.add(sk.id, entry)
    cache.call_index = ci
    return ci


class _LazyToolCalls:
    """The selector's tool-call map, looked up lazily.

    The selector fills its map with the tool calls of every assistant message in flattened
    order, a later duplicate id overwriting an earlier one. So a call id that is
    duplicated across branches resolves to the call that comes last in the flattened
    order, which need not be the result's ancestor (tree-view-rules.md). The calls come
    from the source's `_CallIndex` (built once, extended on appends); only a duplicated
    id looks at the flattened order (``flat``) to pick its winner.
    """

    def __init__(
        self, source: TreeSource, cache: _Cache, flat: Callable[[], _Flat], version: Hashable
    ) -> None:
        self.source = source
        self.cache = cache
        self.flat = flat
        self.version = version
        self.start: str | None = None
        self._index: _CallIndex | None = None
        self._flat: _Flat | None = None

    def get(self, call_id: Any) -> Mapping[str, Any] | None:
        if self._index is None or self._flat is None:
            self._flat = self.flat()
            self._index = _call_index(self.source, self.cache, self._flat, self.version)
        return self._index.lookup(call_id, self._flat)


# --- public view API -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Row:
    """One line of the rendered tree (PROTOCOL.md ``Row``).

    ``depth`` is the display indent (the number of 3-character prefix cells).
    """

    id: str
    parent_id: str | None
    type: str
    role: str | None
    depth: int
    prefix: str
    on_active_path: bool
    is_leaf: bool
    label: str | None
    text: str
    timestamp: Any

    @property
    def short_prefix(self) -> str:
        """The art front ends show: `prefix`, cut behind a depth marker when deep (`tree_art`)."""
        from .tree_art import short_prefix

        return short_prefix(self.prefix)

    def line(self, full_art: bool = True) -> str:
        """The line: prefix (the full art, or the short form), active-path marker, label, text."""
        return (
            (self.prefix if full_art else self.short_prefix)
            + ("• " if self.on_active_path else "")
            + (f"[{self.label}] " if self.label else "")
            + self.text
        )

    def to_dict(self) -> dict[str, Any]:
        """The wire form (camelCase; absent optional fields left out)."""
        d: dict[str, Any] = {"id": self.id, "parentId": self.parent_id, "type": self.type}
        if self.role is not None:
            d["role"] = self.role
        d.update(depth=self.depth, prefix=self.prefix, onActivePath=self.on_active_path, isLeaf=self.is_leaf)
        if len(self.prefix) > _SHORT_ART_WIDTH:
            d["shortPrefix"] = self.short_prefix
        if self.label is not None:
            d["label"] = self.label
        d.update(text=self.text, timestamp=self.timestamp)
        return d


@dataclass(frozen=True, slots=True)
class ViewPage:
    """A page of the rendered tree.

    ``total`` counts all visible rows; ``selected_index`` is the absolute index (in the
    whole filtered list, not in this page) of the leaf's row or of its nearest visible
    ancestor, else of the last row; ``None`` when no row is visible.
    """

    rows: list[Row]
    total: int
    selected_index: int | None
    leaf_id: str | None
    offset: int = 0
    filter: str = "default"

    def footer_suffix(self) -> str:
        """The selector's footer suffix for this page's filter mode."""
        return FILTER_SUFFIXES.get(self.filter, "")


@dataclass(frozen=True, slots=True)
class EntrySummary:
    """One entry in a line (PROTOCOL.md ``EntrySummary``)."""

    id: str
    parent_id: str | None
    type: str
    timestamp: Any
    role: str | None
    custom_type: str | None
    text: str
    label: str | None

    def to_dict(self) -> dict[str, Any]:
        """The wire form (camelCase; absent optional fields left out)."""
        d: dict[str, Any] = {
            "id": self.id,
            "parentId": self.parent_id,
            "type": self.type,
            "timestamp": self.timestamp,
        }
        if self.role is not None:
            d["role"] = self.role
        if self.custom_type is not None:
            d["customType"] = self.custom_type
        d["text"] = self.text
        if self.label is not None:
            d["label"] = self.label
        return d


def window_start(selected: int, count: int, max_rows: int) -> int:
    """The selector's scroll window: ``max(0, min(sel - floor(max/2), count - max))``."""
    return max(0, min(selected - max_rows // 2, count - max_rows))


def _cache_put(od: OrderedDict[Hashable, Any], key: Hashable, value: Any, keep: int) -> None:
    od[key] = value
    od.move_to_end(key)
    while len(od) > keep:
        od.popitem(last=False)


def _filtered(
    source: TreeSource, leaf_id: str | None, mode: str, search: str | None, home: str | None = None
) -> tuple[_Filtered, _Cache, Hashable]:
    cache = source._cache() if isinstance(source, _SourceBase) else _Cache()
    version = source.version()
    # Searchable text (without the label) of an entry does not change when others are
    # appended: keep it until the source says stored entries may have changed.
    content_version = getattr(source, "content_version", source.version)()
    if cache.search_version != content_version:
        cache.search_text.clear()
        cache.search_order.clear()
        cache.search_call.clear()
        cache.search_folded.clear()
        cache.search_version = content_version
    fkey = (version, leaf_id)
    flat = cache.flat.get(fkey)
    if flat is None:
        prev = next(reversed(cache.flat.values()), None)
        if prev is not None and prev.content_version == content_version:
            flat = _extend(source, prev, leaf_id)
        if flat is None:
            flat = _flatten(source, leaf_id)
        flat.version = version
        flat.content_version = content_version
        counts = getattr(source, "entry_count", None)
        if counts is not None:
            flat.count = counts()
            flat.distinct = source.distinct_count()  # type: ignore[attr-defined]
        _cache_put(cache.flat, fkey, flat, 4)
    tokens = [t for t in scrub_text(search or "").lower().split() if t]
    # A search also matches tool-call displays, whose paths are shortened against home.
    shome = (_home_dir() if home is None else home) if tokens else ""
    key = (version, leaf_id, mode, tuple(tokens), shome)
    filt = cache.filtered.get(key)
    if filt is None:
        rows: list[int] | None = None
        if flat.extended_from is not None:
            prev_version, prev_leaf, _, _ = flat.extended_from
            prev_filt = cache.filtered.get((prev_version, prev_leaf, mode, tuple(tokens), shome))
            if prev_filt is not None:
                rows = _visible_extended(source, cache, flat, prev_filt, mode, tokens, shome)
        if rows is None:
            rows = _visible(source, cache, flat, leaf_id, mode, tokens, shome)
        filt = _Filtered(flat, rows)
        _cache_put(cache.filtered, key, filt, 8)
    return filt, cache, version


def _selected(filt: _Filtered, source: TreeSource, leaf_id: str | None) -> int | None:
    if filt.selected != -1:
        return filt.selected
    sel: int | None = None
    if filt.rows:
        sel = len(filt.rows) - 1
        for eid in _iter_active_path(source, leaf_id):
            pos = filt.position(eid)
            if pos is not None:
                sel = pos
                break
    filt.selected = sel
    return sel


_CURRENT: Final = LAST_ENTRY


def build_view(
    source: Any,
    *,
    filter: str = "default",
    search: str | None = None,
    offset: int = 0,
    limit: int | None = None,
    leaf_id: str | _LastEntry | None = _CURRENT,
    home: str | None = None,
) -> ViewPage:
    """The tree as the selector renders it, one page at a time.

    ``source`` is a `TreeSource`, a ``SessionManager`` or a list of entry dicts. The leaf
    defaults to the source's current leaf; pass ``leaf_id`` to view from another node
    (``None``: no leaf, nothing reordered). ``offset``/``limit`` select the page.
    """
    if filter not in FILTER_MODES:
        raise ValueError(f"unknown filter mode {filter!r}; expected one of {', '.join(FILTER_MODES)}")
    src = as_tree_source(source)
    leaf = src.get_leaf_id() if isinstance(leaf_id, _LastEntry) else leaf_id
    filt, cache, version = _filtered(src, leaf, filter, search, home)
    total = len(filt.rows)
    selected = _selected(filt, src, leaf)
    start = max(0, offset)
    end = total if limit is None else min(total, start + max(0, limit))
    flat = filt.flat
    labels = src.labels
    tool_calls = _LazyToolCalls(src, cache, lambda: flat, version)
    rows: list[Row] = []
    page_ids = [flat.ids[filt.rows[r]] for r in range(start, end)]
    getter = getattr(src, "get_entries", None)
    page_entries = getter(page_ids) if getter is not None else [src.get_entry(i) for i in page_ids]
    for r, entry_or_none in zip(range(start, end), page_entries, strict=True):
        fi = filt.rows[r]
        eid = flat.ids[fi]
        sk = src.skeleton(eid)
        entry = entry_or_none or {}
        tool_calls.start = sk.parent_id if sk is not None else None
        label = labels.get(eid)
        rows.append(
            Row(
                id=eid,
                parent_id=entry.get("parentId"),
                type=entry.get("type") or (sk.type if sk is not None else ""),
                role=(entry.get("message") or {}).get("role") if entry.get("type") == "message" else None,
                depth=_display_indent(flat, fi),
                prefix=_prefix(flat, fi),
                on_active_path=eid in flat.active_path,
                is_leaf=eid == leaf,
                label=scrub_text(label) if label else None,
                text=scrub_text(display_text(entry, tool_calls, home)),
                timestamp=entry.get("timestamp"),
            )
        )
    return ViewPage(rows, total, selected, leaf, start, filter)


def entry_summary(source: Any, entry_id: str, home: str | None = None) -> EntrySummary:
    """The one-line summary of an entry (raises ``EntryNotFoundError`` when unknown)."""
    src = as_tree_source(source)
    entry = src.get_entry(entry_id)
    if entry is None:
        from sessiontree.core.errors import EntryNotFoundError

        raise EntryNotFoundError(entry_id)
    sk = src.skeleton(entry_id)
    version = src.version()
    cache = src._cache() if isinstance(src, _SourceBase) else _Cache()

    def order() -> _Flat:
        leaf = src.get_leaf_id()
        flat = cache.flat.get((version, leaf))
        return flat or _flatten(src, leaf)

    tool_calls = _LazyToolCalls(src, cache, order, version)
    tool_calls.start = sk.parent_id if sk is not None else entry.get("parentId")
    msg = entry.get("message") if entry.get("type") == "message" else None
    label = src.labels.get(entry_id)
    return EntrySummary(
        id=entry_id,
        parent_id=entry.get("parentId"),
        type=entry.get("type"),  # type: ignore[arg-type]
        timestamp=entry.get("timestamp"),
        role=msg.get("role") if isinstance(msg, Mapping) else None,
        custom_type=entry.get("customType"),
        text=scrub_text(display_text(entry, tool_calls, home)),
        label=scrub_text(label) if label else None,
    )


def entry_summaries_bulk(source: Any, home: str | None = None) -> dict[str, EntrySummary]:
    """`entry_summary` of every entry of the tree, keyed by id, from one sequential read.

    Equal to ``{i: entry_summary(source, i, home) for i in every tree id}`` but without
    materializing entries one by one: a manager's entries are parsed in file order span by
    span (nothing is kept in its entry cache), each assistant message's tool calls are
    formatted once, and tool results are resolved afterwards exactly as `_LazyToolCalls`
    does (the map of every call in flattened order, later ones winning).
    """
    src = as_tree_source(source)
    index: Any = getattr(getattr(src, "manager", None), "index", None)
    if not isinstance(src, ManagerTreeSource) or not hasattr(index, "stream_entries"):
        roots, kids = _tree_ids(src)
        return {i: entry_summary(src, i, home) for i in _walk(roots, kids)}
    from sessiontree.core.index import gc_paused

    labels = src.labels
    by_id = index.ids()
    out: dict[str, EntrySummary] = {}
    calls: dict[str, dict[Hashable, str]] = {}  # assistant id -> {call id: formatted call}
    # tool results: (id, call id, text when the call is not found)
    results: list[tuple[str, Any, str]] = []
    with gc_paused():
        for sk, entry in index.stream_entries(list(by_id.values())):
            eid = sk.id
            etype = entry.get("type")
            msg = entry.get("message") if etype == "message" else None
            role = msg.get("role") if type(msg) is dict or isinstance(msg, Mapping) else None
            text: str | None = None
            if role == "toolResult":
                assert isinstance(msg, Mapping)
                call_id = msg.get("toolCallId")
                tool_name = msg.get("toolName")
                fallback = f"[{_js_string(tool_name)}]" if _truthy(tool_name) else "[tool]"
                if type(call_id) is str or isinstance(call_id, Hashable):
                    results.append((eid, call_id, fallback))
                else:
                    text = fallback
            else:
                if role == "assistant":
                    found = _calls_of(entry)
                    if found:
                        mine: dict[Hashable, str] = {}
                        for call in found:
                            cid = call.get("id")
                            if type(cid) is str or isinstance(cid, Hashable):
                                mine[cid] = format_tool_call(call.get("name"), call.get("arguments"), home)
                        calls[eid] = mine
                text = display_text(entry, None, home)
            label = labels.get(eid)
            out[eid] = EntrySummary(
                id=eid,
                parent_id=entry.get("parentId"),
                type=etype,
                timestamp=entry.get("timestamp"),
                role=role,
                custom_type=entry.get("customType"),
                text=scrub_text(text) if text is not None else "",
                label=scrub_text(label) if label else None,
            )
    if not results:
        return out
    # The selector's map: the calls of every assistant message in flattened order, a later
    # duplicate id overwriting an earlier one. Unless an id occurs in two messages the order
    # does not matter (every tree entry is in the flattened order), so the flattening is
    # only needed then.
    full: dict[Hashable, str] = {}
    duplicated = False
    for mine in calls.values():
        if not duplicated and not full.keys().isdisjoint(mine):
            duplicated = True
        full.update(mine)
    if duplicated:
        full = {}
        leaf = src.get_leaf_id()
        flat = src._cache().flat.get((src.version(), leaf))
        for i in (flat or _flatten(src, leaf)).ids:
            more = calls.get(i)
            if more:
                full.update(more)
    for eid, call_id, fallback in results:
        hit = full.get(call_id)
        out[eid] = _replace_text(out[eid], scrub_text(hit if hit is not None else fallback))
    return out


def _replace_text(s: EntrySummary, text: str) -> EntrySummary:
    return EntrySummary(
        id=s.id,
        parent_id=s.parent_id,
        type=s.type,
        timestamp=s.timestamp,
        role=s.role,
        custom_type=s.custom_type,
        text=text,
        label=s.label,
    )


def _tree_ids(src: TreeSource) -> tuple[Sequence[str], Callable[[str], Sequence[str]]]:
    return src.children(None), src.children


def _walk(roots: Sequence[str], kids: Callable[[str], Sequence[str]]) -> Iterator[str]:
    stack = list(reversed(roots))
    while stack:
        i = stack.pop()
        yield i
        stack.extend(reversed(kids(i)))
