"""Handlers are module-level typed functions of the feature modules (CONVENTIONS 3).

Every request of the protocol is handled by a function that tests can import by name,
whose params annotation is the method's params class of `METHOD_TO_TYPES`; such a
function can be called directly with a real server object and typed params.
"""

from __future__ import annotations

import importlib
import inspect
from typing import Any, get_type_hints

import pytest
from sessiontree.lsp.features import append, labels, sessions, tree
from sessiontree.lsp.server import SessionTreeServer
from sessiontree.lsp.setup import create_server
from sessiontree_protocol import methods
from sessiontree_protocol import types as t
from sessiontree_protocol.types import METHOD_TO_TYPES


def _registered(server: SessionTreeServer, method: str) -> Any:
    return server.protocol.fm.features[method]


@pytest.mark.parametrize("method", methods.REQUESTS)
def test_each_request_is_a_module_level_typed_function(method: str) -> None:
    typed = _registered(create_server(), method).func  # pygls binds the server in front
    fn = inspect.unwrap(typed)
    assert fn is not typed, "registered without the typed wrapper"
    module = importlib.import_module(fn.__module__)
    assert fn.__module__.startswith("sessiontree.lsp.features.")
    assert getattr(module, fn.__name__) is fn, f"{fn.__qualname__} is not importable from {fn.__module__}"
    assert "<locals>" not in fn.__qualname__
    params_cls, result_cls = METHOD_TO_TYPES[method]
    hints = get_type_hints(fn)
    ls_name, params_name = list(inspect.signature(fn).parameters)
    assert hints[ls_name] is SessionTreeServer
    assert hints[params_name] is params_cls
    if method == methods.SESSION_TREE:
        assert hints["return"] is Any  # pre-serialized JSON, see tree_json
    elif method in (methods.SESSION_VIEW, methods.SESSION_PREVIEW):
        # the result's wire dict, built directly (mapping.view_result_wire and
        # preview_result_wire; their shape is checked against cattrs's unstructuring of the
        # typed result in tests/core/test_view_wire.py)
        assert hints["return"] == dict[str, Any]
    else:
        assert hints["return"] is (type(None) if result_cls is None else result_cls)


async def test_a_handler_can_be_called_directly() -> None:
    server = create_server()
    try:
        opened = await sessions.open_in_memory(server, t.OpenInMemoryParams())
        got = await tree.entries(server, t.EntriesParams(session=opened.session))
        assert (got.entries, got.total) == ([], 0)
        assert (await labels.labels(server, t.SessionParams(session=opened.session))).labels == []
        entry = t.CustomEntry(custom_type="x", data={"k": 1})
        res = await append.append(server, t.AppendParams(session=opened.session, entry=entry))
        got = await tree.entries(server, t.EntriesParams(session=opened.session))
        assert [(e["id"], e["type"], e["data"]) for e in got.entries] == [(res.id, "custom", {"k": 1})]
    finally:
        server.end_connection()
