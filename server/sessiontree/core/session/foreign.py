"""Another agent's transcript as a read-only `SessionManager` (`ForeignSession`).

The transcript is read through the caller's storage (the daemon's guarded one), mapped to
pi entries by its reader (`core.sources`), and the pi JSONL of that mapping is held in
memory at the same path (`_Translated`): loading, the index, the view, the context and
search then run exactly as for a pi session. Nothing is ever written: every change raises
`ReadOnlySessionError`; following the file (`sync_with_file`) reads the appended lines of
the real file, maps them with the same reader and adds their entries.
"""

from __future__ import annotations

import errno
import os
from datetime import UTC, datetime
from typing import Any

from ..discovery.records import SessionInfo
from ..errors import ReadOnlySessionError, SessionTreeError
from ..format.dialects import Dialect
from ..format.jsonl import dumps_line
from ..live import ChangeKind, SyncResult
from ..sources import foreign
from ..sources.claude import feed_lines
from ..sources.model import Translation
from ..store import FileSessionStorage
from ..store.protocol import FileStat
from .manager import FOREIGN_OPENERS, SessionManager

__all__ = ["ForeignSession", "foreign_agent_of_file", "foreign_session_info", "list_foreign_sessions"]

#: A translation is never cached beside the agent's files nor in the index cache.
_NO_CACHE = 1 << 62
_PI_HEADER = b'{"type":"session"'


def foreign_agent_of_file(path: str, storage: Any = None) -> str | None:
    """ "claude" / "codex" when the file at ``path`` is such a transcript (None otherwise,
    also when it cannot be read: the caller's open reports that)."""
    st = storage if storage is not None else FileSessionStorage()
    try:
        fs = st.stat(path)
        # Only a regular file is looked into: a FIFO named *.jsonl must not block the open
        # (which then refuses it as not a regular file).
        if not fs.is_file or fs.size == 0:
            return None
        head = bytes(st.read_prefix(path, foreign.SNIFF_BYTES))
    except (OSError, ValueError, SessionTreeError):
        return None
    if head.lstrip().startswith(_PI_HEADER):
        return None
    return foreign.agent_of(head)


class _Translated:
    """The pi JSONL of one transcript, served read-only at the transcript's path.

    The header line and the entry lines are kept apart (the header, which names the title,
    is known only once every line is read) and never copied into one buffer: a 100 MB
    transcript costs its pi lines once. Every write raises `ReadOnlySessionError`.
    """

    is_real_fs = False

    def __init__(self, path: str, agent: str) -> None:
        self.path = path
        self.agent = agent
        self.head = b""
        self.body = bytearray()
        self.mtime_ns = 0

    def _check(self, path: str) -> None:
        if os.path.normpath(path) != self.path:
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), path)

    def exists(self, path: str) -> bool:
        return os.path.normpath(path) == self.path

    def stat(self, path: str) -> FileStat:
        self._check(path)
        size = len(self.head) + len(self.body)
        return FileStat(size, self.mtime_ns / 1e9, self.mtime_ns, True, False)

    def read_range(self, path: str, offset: int, length: int) -> bytes:
        self._check(path)
        head = self.head
        end = offset + length
        if end <= len(head):
            return head[offset:end]
        if offset >= len(head):
            return bytes(self.body[offset - len(head) : end - len(head)])
        return head[offset:] + bytes(self.body[: end - len(head)])

    def read_prefix(self, path: str, n: int) -> bytes:
        return self.read_range(path, 0, n)

    def read_bytes(self, path: str) -> bytes:
        self._check(path)
        return self.head + bytes(self.body)

    def list_files(self, directory: str, recursive: bool = False) -> list[str]:
        return [self.path] if os.path.dirname(self.path) == os.path.normpath(directory) else []

    def _refuse(self, *args: Any, **kw: Any) -> Any:
        raise ReadOnlySessionError(self.path, self.agent)

    ensure_dir = write_atomic = append = open_writer = rename = unlink = remove_tree = lock = _refuse


class ForeignSession(SessionManager):
    """A read-only session over a Claude Code or Codex transcript."""

    agent: str
    translation: Translation
    _real: Any
    _mem: _Translated
    _reader_state: Any
    _known: tuple[int, int, int, int]
    _gone: bool
    _fresh: list[dict[str, Any]]
    #: Claude Code subagent transcripts read with the session (their lines are branches).
    subagent_files: list[str]

    @property
    def dialect(self) -> Dialect:
        """The pi-family words its reader maps the transcript into: sessiontree's own (the
        header's title is the name, the reference's context rules); the session ids these
        agents use look like pi's, which must not make the transcript pi's."""
        return Dialect.XCSH

    @classmethod
    def open_foreign(cls, path: str, agent: str, storage: Any = None, **kw: Any) -> ForeignSession:
        path = os.path.abspath(path)
        real = storage if storage is not None else FileSessionStorage()
        for k in ("read_only", "viewing", "breadcrumbs", "cache_min_bytes", "cache_dir"):
            kw.pop(k, None)
        mem = _Translated(path, agent)
        mgr = cls(
            os.getcwd(),
            os.path.dirname(path),
            None,
            False,
            mem,
            read_only=True,
            breadcrumbs=False,
            cache_min_bytes=_NO_CACHE,
            **kw,
        )
        mgr.agent = agent
        mgr._real = real
        mgr._mem = mem
        mgr._load_foreign(path)
        return mgr

    # -- loading ------------------------------------------------------------------------
    def _load_foreign(self, path: str) -> None:
        real = self._real
        st = real.stat(path)
        data = bytes(real.read_bytes(path))
        # The entries go straight to pi lines (no list of dicts for a big file); appended
        # ones later go to `_fresh`, to be added to the index.
        body = bytearray()
        dumps = dumps_line

        def sink(entry: dict[str, Any]) -> None:
            body.extend(dumps(entry))
            body.extend(b"\n")

        reader = foreign.new_reader(self.agent, sink)
        feed_lines(reader, data)
        del data
        t = reader.result()
        self.subagent_files = []
        if self.agent == "claude":
            self._load_subagents(path, sink, t)
        if self.agent == "codex" and t.title is None:
            t.title = foreign.codex_thread_names().get(t.session_id)
        if self.agent == "codex" and t.parent_id:
            t.parent_path = self._codex_file_of(t.parent_id)
        self._fresh = []
        reader.sink = self._fresh.append
        self._reader_state = reader
        self.translation = t
        self._known = (st.inode, st.dev, st.size, st.mtime_ns)
        mem = self._mem
        mem.head = dumps(t.header()) + b"\n"
        mem.body = body
        mem.mtime_ns = st.mtime_ns
        self._persist = True
        self._set_session_file(path, cwd_from_header=True)
        self._persist = True
        if t.leaf_id is not None and t.leaf_id in self._index:
            self._leaf_id = t.leaf_id
        self.load_report.skipped_lines = len(t.damage)
        self.load_report.torn_tail = t.torn_tail
        self._gone = False

    def _codex_file_of(self, thread_id: str) -> str | None:
        """The rollout of a Codex thread (its file name ends with the id), if it is kept."""
        try:
            files = self._real.list_files(foreign.codex_root(), recursive=True)
        except (OSError, SessionTreeError):
            return None
        return next((f for f in files if f.endswith(f"{thread_id}.jsonl")), None)

    def _load_subagents(self, path: str, sink: Any, t: Translation) -> None:
        """Claude Code's subagent transcripts (``<session>/subagents/agent-*.jsonl`` beside
        the file): their sidechain lines are branches of this session (read once, when the
        session is opened; appends to them are not followed)."""
        sub = os.path.join(path[: -len(".jsonl")] if path.endswith(".jsonl") else path, "subagents")
        real = self._real
        try:
            names = sorted(os.path.basename(p) for p in real.list_files(sub))
        except (OSError, SessionTreeError):
            return
        for name in names:
            if not (name.startswith("agent-") and name.endswith(".jsonl")):
                continue
            file = os.path.join(sub, name)
            try:
                data = bytes(real.read_bytes(file))
            except (OSError, SessionTreeError):
                continue
            r = foreign.new_reader("claude", sink)
            r.id_prefix = name[: -len(".jsonl")]
            feed_lines(r, data)
            self.subagent_files.append(file)
            t.damage.extend(r.t.damage)

    def reload_file(self) -> None:
        assert self._session_file is not None
        self._load_foreign(self._session_file)

    def sync_with_file(self) -> SyncResult:
        """Fold in what the agent appended to its transcript since it was read."""
        leaf = self._leaf_id
        path = self._session_file
        unchanged = SyncResult(ChangeKind.UNCHANGED, old_leaf_id=leaf, leaf_id=leaf)
        if path is None:
            return unchanged
        try:
            st = self._real.stat(path)
        except FileNotFoundError:
            if self._gone:
                return unchanged
            self._gone = True
            return SyncResult(ChangeKind.DELETED, old_leaf_id=leaf, leaf_id=leaf, reason="deleted")
        inode, dev, _size, _mtime = self._known
        if (st.inode, st.dev, st.size, st.mtime_ns) == self._known and not self._gone:
            return unchanged
        t = self.translation
        if self._gone or (st.inode, st.dev) != (inode, dev) or st.size < t.end:
            kind = (
                ChangeKind.REPLACED
                if self._gone or (st.inode, st.dev) != (inode, dev)
                else ChangeKind.TRUNCATED
            )
            self._load_foreign(path)
            return SyncResult(kind, old_leaf_id=leaf, leaf_id=self._leaf_id, reason=str(kind))
        data = bytes(self._real.read_range(path, t.end, st.size - t.end))
        t.torn_tail = False
        feed_lines(self._reader_state, data, base=t.end, lineno=t.lineno)
        self._reader_state.result()
        self._known = (st.inode, st.dev, st.size, st.mtime_ns)
        fresh = list(self._fresh)
        self._fresh.clear()
        appended: list[str] = []
        for e in fresh:
            if e["id"] in self._index:
                continue
            self._index.add_held(e)
            appended.append(e["id"])
        if t.title and t.title != self._header.get("title"):
            self._header = {**self._header, "title": t.title, "titleSource": "auto"}
        if appended and t.leaf_id is not None and t.leaf_id in self._index:
            self._leaf_id = t.leaf_id
        if not appended:
            return unchanged
        return SyncResult(ChangeKind.APPENDED, appended=appended, old_leaf_id=leaf, leaf_id=self._leaf_id)

    # -- nothing is ever written ------------------------------------------------------------
    def _refuse(self) -> ReadOnlySessionError:
        return ReadOnlySessionError(self._session_file, self.agent)

    def _live_before_write(self) -> None:
        raise self._refuse()

    def sync_before_write(self) -> None:
        raise self._refuse()

    def _persist_entry(self, entry: dict[str, Any]) -> None:
        raise self._refuse()

    def _rewrite_file_guarded(self) -> None:
        if getattr(self, "agent", None) is None:
            return  # during construction: nothing to write, nothing written
        raise self._refuse()

    def set_session_name(self, name: str, source: str = "auto") -> bool:
        raise self._refuse()

    def create_branched_session(self, leaf_id: str) -> str | None:
        raise self._refuse()

    def fork(self) -> tuple[str, str] | None:
        raise self._refuse()

    def new_session(self, parent_session: str | None = None) -> str | None:
        raise self._refuse()

    def move_to(self, new_cwd: str) -> None:
        raise self._refuse()

    def ensure_on_disk(self) -> None:
        raise self._refuse()

    def build_session_context(self, leaf_id: Any = ...) -> Any:
        """pi's context of the path, with Claude Code's split API messages joined again."""
        ctx = super().build_session_context(leaf_id)
        if self.agent == "claude":
            from ..sources.claude import merge_split_messages

            ctx.messages = merge_split_messages(ctx.messages)
        return ctx

    def get_agent(self) -> str:
        return self.agent

    def get_resume_command(self) -> str | None:
        return self.translation.resume


def _open_if_foreign(path: str, storage: Any, kw: dict[str, Any]) -> ForeignSession | None:
    agent = foreign_agent_of_file(path, storage)
    return ForeignSession.open_foreign(path, agent, storage, **kw) if agent is not None else None


FOREIGN_OPENERS.append(_open_if_foreign)


# --------------------------------------------------------------------------- listings


def _dt(ts: str | None) -> datetime | None:
    if not ts:
        return None
    try:
        return datetime.fromisoformat(ts.replace("Z", "+00:00"))
    except ValueError:
        return None


#: Listing summaries of transcripts by (path, inode, device, size, mtime): a file that did
#: not change is not read again (in memory only; never written anywhere).
_SUMMARIES: dict[tuple[str, int, int, int, int], Translation] = {}
_SUMMARIES_MAX = 4096


def foreign_session_info(path: str, agent: str, storage: Any = None) -> SessionInfo | None:
    """A listing's `SessionInfo` of one transcript (None when it cannot be read)."""
    st = storage if storage is not None else FileSessionStorage()
    try:
        stat = st.stat(path)
        key = (path, stat.inode, stat.dev, stat.size, stat.mtime_ns)
        t = _SUMMARIES.get(key)
        if t is None:
            t = foreign.summarize(agent, bytes(st.read_bytes(path)))
            if len(_SUMMARIES) >= _SUMMARIES_MAX:
                _SUMMARIES.clear()
            _SUMMARIES[key] = t
    except (OSError, SessionTreeError):
        return None
    except Exception:
        # The readers skip a line they cannot take (`sources.claude.feed_one`); should a
        # file still fail, it alone is left out: the listing goes on with the others.
        return None
    if not t.lines and not t.session_id:
        return None
    info = SessionInfo(
        path=path,
        id=t.session_id or os.path.basename(path)[: -len(".jsonl")],
        cwd=t.cwd,
        title=t.title,
        parent_session_path=None,
        created=_dt(t.created),
        modified=datetime.fromtimestamp(stat.mtime, tz=UTC),
        message_count=t.message_count,
        first_message=t.first_user_text or "(no messages)",
        agent=agent,
        resume=t.resume,
        parent_id=t.parent_id,
        parent_kind=t.parent_kind,
    )
    return info


def list_foreign_sessions(
    agent: str, cwd: str | None = None, env: Any = None, storage: Any = None, accept: Any = None
) -> list[SessionInfo]:
    """An agent's transcripts, newest first (of one cwd when ``cwd`` is given); a Codex
    fork or subagent thread names its parent's file in `parent_session_path`."""
    infos = []
    for p in foreign.transcripts(agent, env, cwd if agent == "claude" else None):
        if accept is not None and not accept(p):
            continue  # outside the allowed roots: not read at all
        info = foreign_session_info(p, agent, storage)
        if info is None:
            continue
        if cwd is not None and agent == "codex" and os.path.abspath(info.cwd or "/") != os.path.abspath(cwd):
            continue
        infos.append(info)
    if agent == "codex":
        names = foreign.codex_thread_names(env)
        for i in infos:
            if i.title is None and i.id in names:
                i.title = names[i.id]
    by_id = {i.id: i.path for i in infos}
    for i in infos:
        if i.parent_id and i.parent_id in by_id:
            i.parent_session_path = by_id[i.parent_id]
    infos.sort(key=lambda i: i.modified, reverse=True)
    return infos
