"""The shared Python side of the compatibility suite (issue 31): run an agent's harness, read
a file with sessiontree into the same NORMALIZED STATE, and compare the two.

An agent's harness (`tests/compat/pi/harness.mjs`, `tests/compat/omp/harness.ts`) runs the
agent's own SessionManager from its pinned package in the compat cache and answers one JSON
request (their headers list the requests and the step vocabulary). `agent_load` gives the
state as the agent sees a file; `our_state` gives it as sessiontree sees the same file,
through the core API the daemon uses (`SessionManager.open(path, read_only=True)`,
`get_header`, `get_entries`, `get_tree`, `get_leaf_id`, `get_label`,
`build_session_context`, and the listing's title for the name):

    header         the session header as held after the open
    entries        every entry in file order
    tree           the tree flat, depth-first in tree order (roots, then each node's children
                   in order): [{"id", "depth"}], a root at depth 0. Flat, not nested
                   [{"id", "children"}]: a long session nests a thousand levels and more, past
                   what Python's JSON parsers read (both harnesses answer it so)
    leafId         the leaf after the open (or after moving it to the leaf asked for)
    labels         {target id: label} for every entry that has one
    name           the session's name by the reader's own rule (None when it has none)
    model          {"provider", "modelId"} of the context (None when none)
    thinkingLevel  the context's thinking level
    context        the messages the context rebuild gives (before the LLM conversion)
    bytesUnchanged the file's bytes are the same after the reader's open
    contextAt      (with every_leaf, or leaves) {entry id: {model, thinkingLevel, context}}
                   with the leaf moved to each entry (each id of leaves)

`differences(ours, theirs, agent)` lists every difference after the normalizations below,
and whether either open changed the file; a test asserts that the list is empty and shows
it when not. Each normalization is written down with its reason; none may hide a difference
in meaning.

NORMALIZATIONS
  N1 key order: objects compare as mappings. JSON objects are unordered to every reader
     here (both agents and sessiontree look keys up by name); the order the agent writes its
     keys in matters for byte-identical files only, which no test asks for.
  N2 JSON values: both states are compared as the JSON they serialize to. The agent's
     harness prints `JSON.stringify` of its objects, which leaves out keys whose value is
     `undefined`; the agents read an absent key and an undefined one alike (`?.`, `??`), and
     a file cannot hold `undefined`. An integer and the equal float (1 and 1.0) are the same
     JSON number to JavaScript.
  N3 model: sessiontree keeps the context's model as the string "provider/modelId" in
     `models["default"]`; the agents give `{provider, modelId}`. Ours is split at the first
     "/" (the provider names of the pi family hold no "/"; a model id may). A part that
     reads "undefined" is left out: sessiontree builds the string as JavaScript's template
     `${provider}/${model}` does, which spells a missing part "undefined", where the agents
     hold an undefined member (an assistant message without `provider`/`model`: both mean
     "no model known"). A model the agent holds with undefined members where sessiontree has
     a real one (pi reading `{"model": "openai/gpt-5"}`) prints as `{}` and stays a
     difference.
  N4 thinkingLevel: the harness prints an undefined level as null (a file whose
     thinking_level_change has no `thinkingLevel` key; JSON cannot say undefined at the top
     level). A written null stays null on both sides and sessiontree's "off" for it is a
     real difference.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from sessiontree.core.discovery.summary import summarize_file
from sessiontree.core.session import SessionManager

__all__ = [
    "AGENTS",
    "OMP",
    "PI",
    "UNSET",
    "Agent",
    "HarnessError",
    "agent_load",
    "agent_write",
    "assert_read_alike",
    "assert_same_shape",
    "assert_same_state",
    "compat_cache",
    "differences",
    "fingerprint",
    "normalize",
    "our_state",
    "run_harness",
    "sample_leaves",
    "written_shape",
]

COMPAT_DIR = Path(__file__).resolve().parent
REPO = COMPAT_DIR.parents[1]

#: How long one harness call may take (an agent's open of a 3 MB file takes about a second).
HARNESS_TIMEOUT = 300


def compat_cache() -> Path:
    """Where tests/compat/setup.sh installed the agents: ``$SESSIONTREE_COMPAT_CACHE``, else
    the repository's ``.cache/compat`` (worktrees share one install through the variable)."""
    env = os.environ.get("SESSIONTREE_COMPAT_CACHE")
    return Path(env).resolve() if env else REPO / ".cache" / "compat"


@dataclass(frozen=True)
class Agent:
    """One agent of the suite: its pinned package, the runtime its harness runs under."""

    #: short name, used in test ids and messages ("pi", "omp")
    name: str
    #: what the messages call it ("pi 1.6.0")
    label: str
    #: the runtime's executable name in ``<cache>/node_modules/.bin``
    runtime: str
    #: the harness script
    harness: Path
    #: the agent's package directory under ``<cache>/node_modules``
    package: str

    def runtime_path(self) -> Path:
        return compat_cache() / "node_modules" / ".bin" / self.runtime

    def package_path(self) -> Path:
        return compat_cache() / "node_modules" / self.package

    def missing(self) -> str | None:
        """What of the install this agent needs is missing (None when nothing is)."""
        for path in (self.runtime_path(), self.package_path() / "package.json", self.harness):
            if not path.exists():
                return str(path)
        return None


PI = Agent("pi", "pi 1.6.0", "node", COMPAT_DIR / "pi" / "harness.mjs", "@earendil-works/pi-coding-agent")
OMP = Agent("omp", "oh-my-pi 18.2.3", "bun", COMPAT_DIR / "omp" / "harness.ts", "@oh-my-pi/pi-coding-agent")
AGENTS = {a.name: a for a in (PI, OMP)}


class HarnessError(RuntimeError):
    """The harness refused the request or failed: its error (the agent's stack) is the message."""


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()
"""`leaf_id` not given: the leaf stays where the open put it."""


def agent_dir_of(path: Any) -> str | None:
    """The agent directory a session file lives in: the parent of the ``sessions``
    directory above it (``<agent dir>/sessions/<cwd>/<file>``), or None."""
    if not isinstance(path, str):
        return None
    p = Path(path).resolve()
    for parent in p.parents:
        if parent.name == "sessions":
            return str(parent.parent)
    return None


def run_harness(agent: Agent, request: Mapping[str, Any]) -> dict[str, Any]:
    """One request to the agent's harness; its JSON answer. Raises `HarnessError`."""
    env = dict(os.environ)
    env["SESSIONTREE_COMPAT_CACHE"] = str(compat_cache())
    agent_dir = agent_dir_of(request.get("path"))
    if agent_dir is not None:
        # The agent runs with the agent directory the file lives in, as it does for a file
        # of its own (its blobs, settings and indexes there, never the real home's).
        env["PI_CODING_AGENT_DIR"] = agent_dir
    proc = subprocess.run(
        [str(agent.runtime_path()), str(agent.harness)],
        input=json.dumps(request).encode(),
        capture_output=True,
        env=env,
        timeout=HARNESS_TIMEOUT,
        check=False,
    )
    out = proc.stdout.decode("utf-8", "replace").strip().splitlines()
    try:
        answer = json.loads(out[-1]) if out else None
    except json.JSONDecodeError:
        answer = None
    if not isinstance(answer, dict) or proc.returncode != 0 or "error" in answer:
        detail = answer.get("error") if isinstance(answer, dict) else proc.stdout.decode("utf-8", "replace")
        stderr = proc.stderr.decode("utf-8", "replace").strip()
        raise HarnessError(
            f"{agent.label} harness ({request.get('op')}) failed, exit {proc.returncode}: {detail}"
            + (f"\nstderr: {stderr}" if stderr else "")
        )
    return answer


def agent_load(
    agent: Agent,
    path: str | Path,
    leaf_id: Any = UNSET,
    every_leaf: bool = False,
    leaves: list[str] | None = None,
) -> dict[str, Any]:
    """The NORMALIZED STATE of `path` as the agent's own SessionManager opens it; with
    `every_leaf` (or `leaves`) also `contextAt` for every entry (for those ids)."""
    request: dict[str, Any] = {"op": "load", "path": str(path)}
    if leaf_id is not UNSET:
        request["leafId"] = leaf_id
    if every_leaf:
        request["everyLeaf"] = True
    elif leaves is not None:
        request["leaves"] = leaves
    return run_harness(agent, request)


def agent_write(
    agent: Agent,
    path: str | Path,
    cwd: str | Path,
    steps: list[dict[str, Any]],
    fork_from: str | Path | None = None,
) -> dict[str, Any]:
    """The agent performs `steps` on `path` with its own API: {"path", "ids", "written"}."""
    request: dict[str, Any] = {"op": "write", "path": str(path), "cwd": str(cwd), "steps": steps}
    if fork_from is not None:
        request["forkFrom"] = str(fork_from)
    return run_harness(agent, request)


def sample_leaves(path: str | Path, count: int = 24) -> list[str]:
    """Entry ids of `path` to compare contexts at when every entry would cost too much (a
    context per entry is quadratic): `count` spread evenly over the file, the last three, and
    every entry that is not a message (model and thinking changes, compactions, summaries,
    edits, labels, names, custom entries: where the two rebuilds differ)."""
    ids: list[str] = []
    marked: dict[Any, list[str]] = {}
    for line in Path(path).read_bytes().splitlines():
        try:
            entry = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        eid = entry.get("id") if isinstance(entry, dict) else None
        # the header is no entry, nor is omp's title slot line before it
        if not isinstance(eid, str) or entry.get("type") in ("session", "title"):
            continue
        ids.append(eid)
        if entry.get("type") != "message":
            marked.setdefault(entry.get("type"), []).append(eid)
    chosen = _spread(ids, count) + ids[-3:]
    for same_type in marked.values():
        chosen += _spread(same_type, 6)  # the first, the last and some between, of each type
    return list(dict.fromkeys(chosen))


def _spread(items: list[str], count: int) -> list[str]:
    """Up to `count` of `items`, evenly spaced, the first and the last among them."""
    if len(items) <= count:
        return list(items)
    last = len(items) - 1
    return [items[round(i * last / (count - 1))] for i in range(count)]


def fingerprint(path: str | Path) -> str | None:
    """Size and SHA-256 of a file's bytes (None when it does not exist)."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        return None
    return f"{len(data)}:{hashlib.sha256(data).hexdigest()}"


def _json(value: Any) -> Any:
    """`value` as the JSON it serializes to (N2): plain dicts, lists and scalars, no shared objects."""
    return orjson.loads(orjson.dumps(value))


def _model(models: Mapping[str, Any]) -> dict[str, Any] | None:
    """N3: sessiontree's default model "provider/modelId" as {provider, modelId}."""
    value = models.get("default")
    if not isinstance(value, str):
        return None
    provider, sep, model_id = value.partition("/")
    parts = {"provider": provider, "modelId": model_id} if sep else {"provider": value}
    # sessiontree spells a missing provider or model as JavaScript's `${undefined}` does
    return {k: v for k, v in parts.items() if v != "undefined"}


def _context_state(ctx: Any) -> dict[str, Any]:
    # N3: the model the file's agent takes up (pi: its selected model, members it holds
    # undefined left out; omp: the first it restores), as {provider, modelId}
    model = ctx.model if ctx.dialect == "pi" else _model({"default": ctx.model_to_restore()})
    return {
        "model": model,
        "thinkingLevel": ctx.thinking_level,
        "context": _json(ctx.messages),
    }


def _tree(roots: list[Any]) -> list[dict[str, Any]]:
    """The tree flat, depth-first: [{"id", "depth"}] (see the module's docstring)."""
    out: list[dict[str, Any]] = []
    stack = [(node, 0) for node in reversed(roots)]
    while stack:
        node, depth = stack.pop()
        out.append({"id": node.entry.get("id"), "depth": depth})
        stack.extend((child, depth + 1) for child in reversed(node.children))
    return out


def our_state(
    path: str | Path,
    leaf_id: Any = UNSET,
    every_leaf: bool = False,
    leaves: list[str] | None = None,
    **open_kw: Any,
) -> dict[str, Any]:
    """The NORMALIZED STATE of `path` as sessiontree reads it (read-only open; `open_kw` go
    to `SessionManager.open`, e.g. the blob store a writer used); with `every_leaf` (or
    `leaves`) also `contextAt` for every entry (for those ids)."""
    path = str(path)
    before = fingerprint(path)
    mgr = SessionManager.open(path, read_only=True, **open_kw)
    try:
        if leaf_id is None:
            mgr.reset_leaf()
        elif leaf_id is not UNSET:
            mgr.branch(leaf_id)
        entries = mgr.get_entries()
        labels: dict[str, str] = {}
        for entry in entries:
            eid = entry.get("id")
            label = mgr.get_label(eid) if isinstance(eid, str) else None
            if label is not None:
                labels[eid] = label
        summary = summarize_file(path)
        name = mgr.get_session_name()
        assert summary is None or name is None or summary.title == name, (summary.title, name)
        state: dict[str, Any] = {
            "header": _json(mgr.get_header()),
            "entries": _json(entries),
            "tree": _tree(mgr.get_tree()),
            "leafId": mgr.get_leaf_id(),
            "labels": labels,
            # The session's name by the rule of the file's agent, the agents' getSessionName()
            # (pi: its latest session_info; omp: the title slot folded into the header). A
            # listing shows it too: `SessionInfo.title` is that name when there is one (it
            # falls back to a compaction's short summary, as omp's listing does, only without).
            "name": mgr.get_session_name(),
            **_context_state(mgr.build_session_context()),
        }
        state["bytesUnchanged"] = fingerprint(path) == before
        if every_leaf:
            leaves = [e["id"] for e in entries if isinstance(e.get("id"), str)]
        if leaves is not None:
            state["contextAt"] = {i: _context_state(mgr.build_session_context(i)) for i in leaves}
        return state
    finally:
        close = getattr(mgr, "close_quietly", None)
        if close is not None:
            close()


def normalize(state: Mapping[str, Any]) -> dict[str, Any]:
    """A state with the NORMALIZATIONS applied (N1 and N2 by the JSON form; N3 and N4 are
    made where each state is built), without `bytesUnchanged` (checked on its own)."""
    return {k: _json(v) for k, v in state.items() if k != "bytesUnchanged"}


_ORDER = [
    "header",
    "leafId",
    "labels",
    "name",
    "model",
    "thinkingLevel",
    "context",
    "tree",
    "entries",
    "contextAt",
]
_SHOWN = 160
_ABSENT = object()


def _show(value: Any) -> str:
    text = "<absent>" if value is _ABSENT else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…"


def _walk(ours: Any, theirs: Any, where: str, out: list[tuple[str, Any, Any]]) -> None:
    if isinstance(ours, dict) and isinstance(theirs, dict):
        for key in list(ours) + [k for k in theirs if k not in ours]:
            _walk(ours.get(key, _ABSENT), theirs.get(key, _ABSENT), f"{where}.{key}" if where else key, out)
    elif isinstance(ours, list) and isinstance(theirs, list):
        if len(ours) != len(theirs):
            out.append((f"{where} (length)", len(ours), len(theirs)))
        for i in range(max(len(ours), len(theirs))):
            a = ours[i] if i < len(ours) else _ABSENT
            b = theirs[i] if i < len(theirs) else _ABSENT
            _walk(a, b, f"{where}[{i}]", out)
    elif ours != theirs or isinstance(ours, bool) != isinstance(theirs, bool):
        # (JSON true is not 1, though Python's True == 1)
        out.append((where, ours, theirs))


def differences(
    ours: Mapping[str, Any], theirs: Mapping[str, Any], agent: Agent, limit: int = 60
) -> list[str]:
    """Every difference between the two states (after `normalize`), one line each, and a
    line for each reader whose open changed the file; empty when they agree."""
    found: list[tuple[str, Any, Any]] = []
    a, b = normalize(ours), normalize(theirs)
    # The summary values first, the long lists after them: a cut list still shows the point.
    for key in sorted(set(a) | set(b), key=lambda k: (_ORDER.index(k) if k in _ORDER else len(_ORDER), k)):
        _walk(a.get(key, _ABSENT), b.get(key, _ABSENT), key, found)
    lines = [f"{where}: sessiontree {_show(x)} | {agent.name} {_show(y)}" for where, x, y in found[:limit]]
    if len(found) > limit:
        lines.append(f"... and {len(found) - limit} more differences")
    if ours.get("bytesUnchanged") is not True:
        lines.append("sessiontree's read-only open changed the file's bytes")
    if theirs.get("bytesUnchanged") is not True:
        lines.append(f"{agent.label}'s open changed the file's bytes")
    return lines


def assert_same_state(
    ours: Mapping[str, Any], theirs: Mapping[str, Any], agent: Agent, what: str = ""
) -> None:
    """Fail with every difference when the two states differ or either open changed the file."""
    found = differences(ours, theirs, agent)
    if found:
        head = f"sessiontree and {agent.label} read {what or 'the file'} differently:"
        raise AssertionError("\n".join([head, *(f"  {line}" for line in found)]))


#: Up to this many lines a file's contexts are compared at every entry; above, at `sample_leaves`.
EVERY_LEAF_MAX_LINES = 200


def assert_read_alike(agent: Agent, path: str | Path, what: str = "") -> None:
    """sessiontree (first: its open must not write) and `agent` read `path` alike, at its leaf
    and with the leaf moved to every entry (a sample of them for a long file)."""
    lines = Path(path).read_bytes().count(b"\n")
    if lines <= EVERY_LEAF_MAX_LINES:
        ours, theirs = our_state(path, every_leaf=True), agent_load(agent, path, every_leaf=True)
    else:
        leaves = sample_leaves(path)
        ours, theirs = our_state(path, leaves=leaves), agent_load(agent, path, leaves=leaves)
    assert_same_state(ours, theirs, agent, what)


#: Keys whose value is another entry's id, in the entries of the pi family.
_ID_KEYS = ("id", "parentId", "targetId", "fromId", "firstKeptEntryId")


def written_shape(path: str | Path, ignore_header: tuple[str, ...] = ()) -> dict[str, Any]:
    """What a file says, without what differs between two runs of the same operation: the
    header without its `id` and `timestamp`, each entry without its `timestamp` and with the
    ids it holds (`id`, `parentId`, `targetId`, `fromId`, `firstKeptEntryId`) replaced by the
    position ("#n", in file order) of the entry they name. Two writers that performed the same
    operation on the same input have the same shape (message timestamps are the caller's).
    `ignore_header` names more header keys to leave out."""
    values = [orjson.loads(line) for line in Path(path).read_bytes().splitlines() if line.strip()]
    header = next((v for v in values if v.get("type") == "session"), {})
    # (omp's title slot line, before the header, is no entry either)
    entries = [v for v in values if v.get("type") not in ("session", "title")]
    where = {e["id"]: f"#{i}" for i, e in enumerate(entries) if isinstance(e.get("id"), str)}
    shaped = []
    for entry in entries:
        out = {k: v for k, v in entry.items() if k != "timestamp"}
        for key in _ID_KEYS:
            if isinstance(out.get(key), str):
                out[key] = where.get(out[key], f"<not in the file: {out[key]}>")
        shaped.append(out)
    dropped = ("id", "timestamp", *ignore_header)
    return {"header": {k: v for k, v in header.items() if k not in dropped}, "entries": shaped}


def assert_same_shape(
    ours: str | Path, theirs: str | Path, agent: Agent, what: str, ignore_header: tuple[str, ...] = ()
) -> None:
    """sessiontree's file and the agent's, written by the same operation, say the same."""
    found: list[tuple[str, Any, Any]] = []
    _walk(written_shape(ours, ignore_header), written_shape(theirs, ignore_header), "", found)
    if found:
        lines = [f"  {w}: sessiontree {_show(a)} | {agent.name} {_show(b)}" for w, a, b in found[:40]]
        raise AssertionError("\n".join([f"sessiontree and {agent.label} write {what} differently:", *lines]))
