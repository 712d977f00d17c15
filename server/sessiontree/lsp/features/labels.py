"""Labels: setLabel (appends a label entry) and labels."""

from __future__ import annotations

from sessiontree_protocol import methods as m
from sessiontree_protocol import types as t

from sessiontree.lsp import mapping, notify
from sessiontree.lsp.features._common import call_write
from sessiontree.lsp.handlers import register
from sessiontree.lsp.server import SessionTreeServer


async def set_label(ls: SessionTreeServer, p: t.SetLabelParams) -> t.EntryIdResult:
    session = ls.registry.get(p.session)
    label = p.label if p.label else None

    def work() -> tuple[str, str | None, t.EntrySummary]:
        manager = session.manager
        mapping.require_entry(manager, p.target_id)
        old = manager.get_leaf_id()
        eid = manager.append_label_change(p.target_id, label)
        return eid, old, mapping.summary(manager, eid)

    eid, old, summ = await call_write(ls, session, work)
    notify.did_change(ls, session, [summ], session.manager.get_leaf_id(), old)
    notify.did_change_label(ls, session, p.target_id, label)
    return t.EntryIdResult(entry_id=eid)


async def labels(ls: SessionTreeServer, p: t.SessionParams) -> t.LabelsResult:
    session = ls.registry.get(p.session)

    def work() -> t.LabelsResult:
        return mapping.labels_result(list(session.manager.index.labels.items()))

    return await ls.registry.call(session, work)


def setup(server: SessionTreeServer) -> None:
    """Register setLabel and labels."""
    register(server, m.SESSION_SET_LABEL, set_label)
    register(server, m.SESSION_LABELS, labels)
