"""Session lifecycle: list, recent, open, create, continueRecent, openInMemory, forkFrom,
fork, close, flush, setName."""

from __future__ import annotations

import asyncio
import os
from typing import Any

from sessiontree_protocol import methods as m
from sessiontree_protocol import types as t

from sessiontree.core import discovery
from sessiontree.core import view as core_view
from sessiontree.core.session import SessionManager
from sessiontree.lsp import errors, mapping
from sessiontree.lsp.features import preindex
from sessiontree.lsp.features._common import (
    Progress,
    call_write,
    file_size,
    files_state,
    log,
    manager_kwargs,
    remember_leaf,
    run_cancel_safe,
    state_for,
)
from sessiontree.lsp.handlers import register
from sessiontree.lsp.registry import OpenSession
from sessiontree.lsp.server import SessionTreeServer
from sessiontree.lsp.state import NavigationState


def _close_quietly(manager: Any) -> None:
    try:
        manager.close_quietly()
    except Exception:
        log.exception("closing an unused manager failed")


def _restore_leaf(ls: SessionTreeServer, session: OpenSession) -> str | None:
    """Put the leaf back where the daemon left it, if the file has not moved on since."""
    if session.path is None:
        return None
    store, key = state_for(ls, session)
    return _restore_from(store, key, session.manager)


def restore_leaf_of(ls: SessionTreeServer, path: str, manager: Any) -> str | None:
    """`_restore_leaf` for a manager of `path` that is not registered (features/preindex.py)."""
    return _restore_from(files_state(ls), path, manager)


def remembered_leaf(store: NavigationState, key: str) -> tuple[Any, Any] | None:
    """(leaf id, the file's last entry id then) the store remembers for `key`, or None. The
    leaf is put back only while the file's last entry is still that one."""
    rec = store.get(key)
    if not rec or "leafId" not in rec:
        return None
    return rec.get("leafId"), rec.get("lastEntryId")


def _restore_from(store: NavigationState, key: str, manager: Any) -> str | None:
    remembered = remembered_leaf(store, key)
    if remembered is None:
        return None
    leaf, last = remembered
    if last != mapping.last_entry_id(manager):
        return None
    if leaf == manager.get_leaf_id():
        return None
    if leaf is None:
        manager.reset_leaf()
    elif core_view.kept_leaf_is(manager, leaf) or mapping.has_entry(manager, leaf):
        manager.branch(leaf)
    else:
        return None
    return leaf  # type: ignore[no-any-return]


async def _register_new(ls: SessionTreeServer, manager: Any) -> OpenSession:
    """Register a manager created by create/forkFrom/openInMemory/continueRecent.

    When its file is already open here, the existing session wins and the new manager is
    dropped (it has written nothing), so that one file never has two writers.
    """
    path = manager.get_session_file() if manager.is_persisted() else None
    resolved = os.path.realpath(path) if path else None
    if resolved is not None:
        existing = ls.registry.by_path(resolved)
        if existing is not None:
            await ls.registry.run(_close_quietly, manager)
            return existing
    return ls.registry.add(manager, resolved)


def _listed_homes(ls: SessionTreeServer, every: bool) -> list[Any]:
    """The agent dirs to list (`SessionTreeServer.agent_homes`) that the client may read;
    for every project (``every``) each sessions root must be allowed, and when none is the
    first one's refusal is raised (-32005)."""
    homes = ls.agent_homes()
    allowed = [h for h in homes if ls.access.guard.accept(h.sessions_root if every else h.data_dir)]
    if every and not allowed:
        ls.access.check_dir(homes[0].sessions_root)
    return allowed


def _session_dir(ls: SessionTreeServer, session_dir: str | None) -> str | None:
    if session_dir is not None:
        refuse_under_other_agents(session_dir, file=False)
    return str(ls.access.check_dir(session_dir)) if session_dir is not None else None


def _cwd(ls: SessionTreeServer, cwd: str | None) -> str:
    if cwd is None:
        return ls.cwd
    if not os.path.isabs(os.path.expanduser(cwd)):
        raise errors.InvalidParams(
            f"cwd must be an absolute path: {cwd!r}", {"field": "cwd", "reason": "not absolute"}
        )
    return os.path.expanduser(cwd)


def _default_dir_checked(ls: SessionTreeServer, cwd: str, session_dir: str | None) -> str | None:
    """The session dir to use; the default per-cwd dir is checked against the roots too."""
    if session_dir is not None:
        return _session_dir(ls, session_dir)
    default = SessionManager.get_default_session_dir(cwd, ls.config.agent_dir)
    ls.access.check_dir(default)
    return None


async def list_sessions(ls: SessionTreeServer, p: t.ListParams) -> t.ListResult:
    kw = manager_kwargs(ls)
    # Files are read through the guard: a symlink to a session outside the roots is
    # skipped unread (its id, title and text never reach the answer or the query).
    guard = ls.access.guard
    # Every project of an agent dir only when its sessions root is allowed.
    homes = _listed_homes(ls, p.all)
    hint = discovery.missing_agent_dir(ls.config.agent_dir, given_by="the agentDir setting")

    agent = p.agent or "all"

    def work() -> list[Any]:
        if agent not in ("all", "pi"):
            return []
        if p.all:
            return discovery.list_all_sessions_of_homes(homes, guard=guard)
        dirs = discovery.session_dirs_of_homes(_cwd(ls, p.cwd), homes)
        return discovery.list_sessions_of_dirs(dirs, guard=guard, **kw)

    infos = await ls.registry.run(work)
    if agent != "pi":
        others = await ls.registry.run(other_agents, ls, agent, None if p.all else _cwd(ls, p.cwd))
        if others:
            infos = sorted([*infos, *others], key=lambda i: i.modified, reverse=True)
    if p.query:
        tokens = p.query.lower().split()

        def matches(info: Any) -> bool:
            hay = " ".join(
                str(x or "")
                for x in (
                    info.title,
                    info.first_message,
                    info.all_messages_text,
                    info.path,
                    info.id,
                )
            ).lower()
            return all(tok in hay for tok in tokens)

        infos = [i for i in infos if matches(i)]
    if p.limit is not None:
        infos = infos[: max(0, p.limit)]
    preindex.offer(ls, infos)  # the newest big ones, indexed ahead of a click in idle time
    result = t.ListResult(
        sessions=[mapping.session_info(i) for i in infos],
        agent_dirs=[h.data_dir for h in homes],
        hint=hint if agent in ("all", "pi") else None,
    )
    # With a shared store: who and where, and the other machines' sessions (shared_store.py).
    from sessiontree.lsp.features.shared_store import extend_list

    return await extend_list(ls, p, result)


async def recent_sessions(ls: SessionTreeServer, p: t.RecentParams) -> t.RecentResult:
    cwd = _cwd(ls, p.cwd)
    sdir = _session_dir(ls, p.session_dir)
    # Without a session dir: the cwd's dirs under every encoding (nothing renamed), in every
    # agent dir listed.
    dirs = [sdir] if sdir is not None else discovery.session_dirs_of_homes(cwd, _listed_homes(ls, False))
    limit = max(0, p.limit)

    def work() -> list[Any]:
        found = [info for d in dirs for info in discovery.get_recent_sessions(d, limit, ls.access.guard)]
        found.sort(key=lambda i: i.mtime, reverse=True)
        return found[:limit]

    infos = await ls.registry.run(work)
    preindex.offer(ls, infos)
    return t.RecentResult(sessions=[mapping.recent_session(i) for i in infos])


async def open_session(ls: SessionTreeServer, p: t.OpenParams) -> t.OpenResult:
    path = str(ls.access.check_file(p.path))
    refuse_under_other_agents(path, file=True)
    existing = ls.registry.by_path(path)
    if existing is not None:
        return await ls.registry.call(
            existing, lambda: mapping.open_result(existing.handle, existing.manager)
        )
    preindex.stop_for_open(ls, path)  # the open has both cores
    progress = Progress(ls, p.work_done_token)
    size = file_size(path)
    await progress.begin(f"Opening {os.path.basename(path)}", size)
    kw = manager_kwargs(ls)

    async def load() -> Any:
        return await run_cancel_safe(ls, lambda: SessionManager.open(path, **kw), _close_quietly)

    ticker = asyncio.ensure_future(progress.tick()) if progress.active else None
    try:
        session, new = await ls.registry.open_path(path, load)
    finally:
        if ticker is not None:
            ticker.cancel()
        progress.end("done")

    def finish() -> t.OpenResult:
        restored = _restore_leaf(ls, session) if new else None
        return mapping.open_result(session.handle, session.manager, restored)

    return await ls.registry.call(session, finish)


async def create_session(ls: SessionTreeServer, p: t.CreateParams) -> t.OpenResult:
    cwd = _cwd(ls, p.cwd)
    sdir = _default_dir_checked(ls, cwd, p.session_dir)
    kw = manager_kwargs(ls)

    def work() -> Any:
        mgr = SessionManager.create(cwd, sdir, **kw)
        if p.parent_session:
            mgr.new_session(p.parent_session)
        return mgr

    manager = await ls.registry.run(work)
    session = await _register_new(ls, manager)
    return await ls.registry.call(session, lambda: mapping.open_result(session.handle, session.manager))


async def continue_recent(ls: SessionTreeServer, p: t.ContinueRecentParams) -> t.OpenResult:
    cwd = _cwd(ls, p.cwd)
    sdir = _default_dir_checked(ls, cwd, p.session_dir)
    kw = manager_kwargs(ls)
    if p.terminal_id:
        kw["terminal_id"] = p.terminal_id
    preindex.stop_for_open(ls, None)

    def work() -> Any:
        return SessionManager.continue_recent(cwd, sdir, **kw)

    manager = await run_cancel_safe(ls, work, _close_quietly)
    path = manager.get_session_file() if manager.is_persisted() else None
    if path:
        ls.access.check_file(path) if os.path.exists(path) else ls.access.check_dir(os.path.dirname(path))
    session = await _register_new(ls, manager)

    def finish() -> t.OpenResult:
        restored = _restore_leaf(ls, session) if session.manager is manager else None
        return mapping.open_result(session.handle, session.manager, restored)

    return await ls.registry.call(session, finish)


async def open_in_memory(ls: SessionTreeServer, p: t.OpenInMemoryParams) -> t.OpenResult:
    manager = await ls.registry.run(lambda: SessionManager.in_memory(p.cwd))
    session = ls.registry.add(manager, None)
    return mapping.open_result(session.handle, manager)


async def fork_from(ls: SessionTreeServer, p: t.ForkFromParams) -> t.OpenResult:
    source = str(ls.access.check_file(p.source_path))
    if not os.path.exists(source):
        raise errors.InvalidParams(
            f"No such session file: {p.source_path}", {"field": "sourcePath", "reason": "no such file"}
        )
    cwd = _cwd(ls, p.cwd)
    sdir = _default_dir_checked(ls, cwd, p.session_dir)
    kw = manager_kwargs(ls)
    manager = await run_cancel_safe(
        ls, lambda: SessionManager.fork_from(source, cwd, sdir, **kw), _close_quietly
    )
    session = await _register_new(ls, manager)
    return await ls.registry.call(session, lambda: mapping.open_result(session.handle, session.manager))


async def fork(ls: SessionTreeServer, p: t.SessionParams) -> t.ForkResult:
    session = ls.registry.get(p.session)
    res = await call_write(ls, session, session.manager.fork)
    if res is None:
        raise errors.InvalidParams(
            "session/fork needs a session with a file (in-memory sessions cannot be forked)",
            {"field": "session", "reason": "not persisted"},
        )
    old, new = res
    ls.registry.rekey(session, os.path.realpath(new))
    await ls.registry.call(session, lambda: remember_leaf(ls, session))
    return t.ForkResult(old_path=str(old), new_path=str(new))


async def close_session(ls: SessionTreeServer, p: t.SessionParams) -> None:
    session = ls.registry.get(p.session)
    ls.registry.release_path(session)

    def close() -> None:
        ls.registry.emit("closing", session)
        session.manager.close()

    try:
        await ls.registry.call(session, close)
    finally:
        ls.registry.remove(session)
    return None


async def flush_session(ls: SessionTreeServer, p: t.SessionParams) -> None:
    session = ls.registry.get(p.session)
    await ls.registry.call(session, session.manager.flush)
    return None


async def set_name(ls: SessionTreeServer, p: t.SetNameParams) -> t.SetNameResult:
    session = ls.registry.get(p.session)
    changed = await call_write(ls, session, lambda: session.manager.set_session_name(p.name, p.source))
    return t.SetNameResult(changed=bool(changed))


def refuse_under_other_agents(path: str, *, file: bool) -> None:
    """-32008 for a path under Claude Code's or Codex's transcript root that is not one of
    that agent's transcripts (a new session there, or a pi file there): nothing is ever
    written under another agent's directories."""
    from sessiontree.core.session.foreign import foreign_agent_of_file
    from sessiontree.core.sources.foreign import agent_root_containing

    agent = agent_root_containing(path)
    if agent is None:
        return
    if file and os.path.isfile(path) and foreign_agent_of_file(path) is not None:
        return
    raise errors.ReadOnlySession(f"read-only: {agent} session", {"path": path, "agent": agent})


def other_agents(ls: SessionTreeServer, agent: str, cwd: str | None) -> list[Any]:
    """Claude Code and Codex transcripts (of ``cwd`` when given) inside the allowed roots."""
    import logging

    from sessiontree.core.session.foreign import list_foreign_sessions
    from sessiontree.core.sources.model import FOREIGN_AGENTS

    guard = ls.access.guard
    storage = manager_kwargs(ls)["storage"]
    out: list[Any] = []
    for a in FOREIGN_AGENTS if agent == "all" else (agent,):
        if a not in FOREIGN_AGENTS:
            continue
        try:
            out.extend(list_foreign_sessions(a, cwd, storage=storage, accept=guard.accept))
        except Exception:
            logging.getLogger("sessiontree.lsp").exception("listing %s sessions failed", a)
    return out


def setup(server: SessionTreeServer) -> None:
    """Register the session lifecycle methods."""
    register(server, m.SESSION_LIST, list_sessions)
    register(server, m.SESSION_RECENT, recent_sessions)
    register(server, m.SESSION_OPEN, open_session)
    register(server, m.SESSION_CREATE, create_session)
    register(server, m.SESSION_CONTINUE_RECENT, continue_recent)
    register(server, m.SESSION_OPEN_IN_MEMORY, open_in_memory)
    register(server, m.SESSION_FORK_FROM, fork_from)
    register(server, m.SESSION_FORK, fork)
    register(server, m.SESSION_CLOSE, close_session)
    register(server, m.SESSION_FLUSH, flush_session)
    register(server, m.SESSION_SET_NAME, set_name)
