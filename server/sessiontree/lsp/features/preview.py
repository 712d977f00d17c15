"""`session/preview`: the rows around a session's leaf from the end of its file, while its
open is still indexing (docs/preview.md).

A client that opens a big file sends this beside `session/open` and draws the rows it gets
until the open's first page replaces them. It needs no handle, writes nothing, and runs in
the worker pool beside the open. A session open in the daemon, or one whose index cache was
written since the file last changed, is not drawn (`indexed`): its open answers at once. The leaf is the one the open would restore: the daemon's
remembered leaf when the file's last entry is still the one it saw, else the last entry.
"""

from __future__ import annotations

import os
from typing import Any, Final

from sessiontree_protocol import methods as m
from sessiontree_protocol import types as t

from sessiontree.core.index.cache import IndexCache
from sessiontree.core.session.sidecar import caches_on
from sessiontree.core.store import FileSessionStorage
from sessiontree.core.view.preview import Preview
from sessiontree.core.view.preview import preview as core_preview
from sessiontree.lsp import errors, mapping
from sessiontree.lsp.features._common import files_state
from sessiontree.lsp.features.sessions import refuse_under_other_agents, remembered_leaf
from sessiontree.lsp.handlers import register
from sessiontree.lsp.server import SessionTreeServer

#: The most rows a preview answers with.
PREVIEW_MAX_ROWS: Final = 2000


async def preview(ls: SessionTreeServer, p: t.PreviewParams) -> dict[str, Any]:
    if p.limit < 0:
        raise errors.InvalidParams("limit must be 0 or more", {"field": "limit", "reason": "negative"})
    path = str(ls.access.check_file(p.path))
    refuse_under_other_agents(path, file=True)
    limit = min(p.limit, PREVIEW_MAX_ROWS)
    restore = remembered_leaf(files_state(ls), path)
    storage = FileSessionStorage(guard=ls.access.guard)

    def work() -> dict[str, Any]:
        try:
            st = os.stat(path)
        except OSError:
            return mapping.preview_result_wire(Preview(reason="no file"))
        if ls.registry.by_path(path) is not None or (
            caches_on() and IndexCache().written_since_change(path, st)
        ):
            # its open answers at once: nothing to draw before it, and the open has the cores
            return mapping.preview_result_wire(Preview(reason="indexed"))
        try:
            found = core_preview(storage, path, filter=p.filter, limit=limit, restore=restore)
        except FileNotFoundError:
            found = Preview(reason="no file")  # removed meanwhile: the open says what it finds
        return mapping.preview_result_wire(found)

    return await ls.registry.run(work)


def setup(server: SessionTreeServer) -> None:
    """Register `session/preview`."""
    register(server, m.SESSION_PREVIEW, preview)
