"""session/doctor (addition): check a session file with `sessiontree.core.doctor`."""

from __future__ import annotations

import importlib
import os
from typing import Any

from pygls.exceptions import JsonRpcMethodNotFound
from sessiontree_protocol import methods as m
from sessiontree_protocol import types as t

from sessiontree.lsp import errors
from sessiontree.lsp.server import SessionTreeServer, request


def _core_doctor() -> Any:
    try:
        return importlib.import_module("sessiontree.core.doctor")
    except ModuleNotFoundError:
        return None


def setup(server: SessionTreeServer) -> None:
    """Register session/doctor."""

    @request(server, m.SESSION_DOCTOR)
    async def doctor(ls: SessionTreeServer, p: t.DoctorParams) -> t.DoctorResult:
        mod = _core_doctor()
        if mod is None or not hasattr(mod, "check_file"):
            raise JsonRpcMethodNotFound.of(m.SESSION_DOCTOR)
        if p.session is not None:
            session = ls.registry.get(p.session)
            if session.path is None:
                raise errors.InvalidParams(
                    "session/doctor: the session has no file", {"field": "session", "reason": "not persisted"}
                )
            path = session.path
        elif p.path is not None:
            path = str(ls.access.check_file(p.path))
        else:
            raise errors.InvalidParams(
                "session/doctor needs path or session", {"field": "path", "reason": "missing required field"}
            )
        open_here = ls.registry.by_path(os.path.realpath(path))
        if p.repair and (p.session is not None or (open_here is not None and not open_here.closed)):
            # A repair replaces the file by rename: under an open session (this client's or
            # another's) it would pull the file from under the session's index and writer.
            raise errors.Conflict(
                "session/doctor: the file is open in this daemon; close the session before repairing it",
                {"path": path},
            )

        def work() -> t.DoctorResult:
            try:
                report = mod.check_file(path)
            except getattr(mod, "DoctorError", OSError) as exc:
                raise errors.InvalidSessionFile(str(exc), {"path": path}) from exc
            problems = [
                t.DoctorProblem(kind=pr.kind, message=pr.message, line=pr.line, entry_id=pr.entry_id)
                for pr in report.problems
            ]
            if not p.repair:
                return t.DoctorResult(problems=problems)
            res = mod.repair_file(path)
            changed = bool(getattr(res, "changes", None))
            return t.DoctorResult(
                problems=problems, repaired=changed, quarantined_copy=getattr(res, "quarantined_copy", None)
            )

        return await ls.registry.run(work)
