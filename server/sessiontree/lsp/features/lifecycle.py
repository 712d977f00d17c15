"""initialize: options, allowed roots, navigation state.

The wire-level rules of initialize (once per connection, the TCP token) are checked
before this handler runs, in `SessionTreeProtocol.receive`.
"""

from __future__ import annotations

import logging

from lsprotocol import types as lsp
from pygls.uris import to_fs_path

from sessiontree.lsp.access import AccessPolicy
from sessiontree.lsp.config import parse_options
from sessiontree.lsp.features import checkpoints
from sessiontree.lsp.server import SessionTreeServer
from sessiontree.lsp.state import NavigationState

log = logging.getLogger("sessiontree.lsp")

_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}


def on_initialize(ls: SessionTreeServer, params: lsp.InitializeParams) -> None:
    """Read the options, the allowed roots and the navigation state of this connection."""
    cfg, warnings = parse_options(params.initialization_options)
    ls.config = cfg
    logging.getLogger("sessiontree").setLevel(_LEVELS.get(cfg.log_level, logging.INFO))
    roots: list[str] = []
    for folder in params.workspace_folders or []:
        path = to_fs_path(folder.uri)
        if path:
            roots.append(path)
    if not roots:
        if params.root_uri:
            path = to_fs_path(params.root_uri)
            if path:
                roots.append(path)
        elif params.root_path:
            roots.append(params.root_path)
    if any("\x00" in r for r in roots):
        warnings.append("a workspace folder path contains a NUL byte; it is not an allowed root")
        roots = [r for r in roots if "\x00" not in r]
    ls.workspace_roots = roots
    if cfg.allowed_roots is not None:
        ls.access = AccessPolicy(cfg.allowed_roots)
    else:
        ls.access = AccessPolicy(ls.default_roots())
    try:
        ls.state = NavigationState(cfg.resolved_state_dir())
    except OSError as exc:
        warnings.append(f"navigation state unavailable ({exc}); leaves will not be remembered")
        ls.state = NavigationState(None)
    for w in warnings:
        log.warning("%s", w)
        ls.show_warning(f"sessiontree: {w}")
    log.info("allowed roots: %s", ", ".join(str(r) for r in ls.access.roots))
    checkpoints.recover_at_start(ls)


def setup(server: SessionTreeServer) -> None:
    """Register initialize."""
    server.feature(lsp.INITIALIZE)(on_initialize)
