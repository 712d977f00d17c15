"""The rest of a search answered in part, in idle time, then `session/didCompleteSearch`.

A `session/view` with `partial: true` on a big session answers with the rows its search
matched so far (`core.view.progressive`). The daemon then goes on with that search in
slices through the session's own queue (a request or a live change that arrives meanwhile
waits for one slice, about 20 to 40 ms, at most) until every row is known, and tells the
client. One task per session goes on with the session's newest search: a query typed
meanwhile replaces the one in progress, and the task carries on with the new one.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Final

from sessiontree.core import view as core_view
from sessiontree.lsp import notify
from sessiontree.lsp.registry import OpenSession
from sessiontree.lsp.server import SessionTreeServer

log = logging.getLogger(__name__)

SLICE_ROWS: Final = 1000  # visible rows a slice tests: about 20 ms without kept texts
PAUSE: Final = 0.002  # between slices, so a request takes the session's turn first

_TASK_KEY: Final = "search_steps"

# held here (the loop keeps only weak references to tasks); each refers to its session by
# handle only, so a session closed meanwhile is freed at once
_TASKS: set[asyncio.Task[None]] = set()


def go_on(ls: SessionTreeServer, session: OpenSession) -> None:
    """Go on with the session's search in progress, unless a task does already (on the loop)."""
    task = session.extra.get(_TASK_KEY)
    if task is not None and not task.done():
        return
    task = asyncio.get_running_loop().create_task(_run(ls, session.handle))
    session.extra[_TASK_KEY] = task
    _TASKS.add(task)
    task.add_done_callback(_TASKS.discard)


async def _run(ls: SessionTreeServer, handle: str) -> None:
    registry = ls.registry
    try:
        while True:
            session = registry.get(handle)  # -32001 once closed: the task ends
            more, done = await registry.call_in_idle_time(
                session, core_view.continue_search, session.manager, SLICE_ROWS
            )
            if done is not None:
                notify.did_complete_search(ls, session, done)
            del session
            if not more:
                # a query that came while the last slice ran may have left work behind
                session = registry.get(handle)
                more = await registry.call_in_idle_time(
                    session, core_view.search_in_progress, session.manager
                )
                del session
                if not more:
                    return
            await asyncio.sleep(PAUSE)
    except Exception as exc:  # a closed session, a changed file: the next request starts over
        log.debug("search of %s stopped: %s", handle, exc)
