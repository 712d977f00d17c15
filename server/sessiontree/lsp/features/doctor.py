"""session/doctor (addition): check a session file with `sessiontree.core.doctor`."""

from __future__ import annotations

import os

from sessiontree_protocol import methods as m
from sessiontree_protocol import types as t

from sessiontree.core import doctor as core_doctor
from sessiontree.lsp import errors
from sessiontree.lsp.handlers import register
from sessiontree.lsp.server import SessionTreeServer


async def doctor(ls: SessionTreeServer, p: t.DoctorParams) -> t.DoctorResult:
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
            report = core_doctor.check_file(path)
        except core_doctor.DoctorError as exc:
            raise errors.InvalidSessionFile(str(exc), {"path": path}) from exc
        problems = [
            t.DoctorProblem(kind=pr.kind, message=pr.message, line=pr.line, entry_id=pr.entry_id)
            for pr in report.problems
        ]
        if not p.repair:
            return t.DoctorResult(problems=problems)
        res = core_doctor.repair_file(path)
        return t.DoctorResult(problems=problems, repaired=res.changed, quarantined_copy=res.quarantined_copy)

    return await ls.registry.run(work)


def setup(server: SessionTreeServer) -> None:
    """Register session/doctor."""
    register(server, m.SESSION_DOCTOR, doctor)
