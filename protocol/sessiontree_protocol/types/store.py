"""Types of the shared session store (docs/shared-store.md): its state in `session/list`,
and `session/openShared`."""

from __future__ import annotations

import attrs

from sessiontree_protocol.types.base import _opt, _req


@attrs.define(kw_only=True)
class StoreStatus:
    """The shared store as the daemon last reached it."""

    reachable: bool = _req("True when the store answered; false: only local sessions are listed.")
    machine: str = _req("This machine's name in the store.")
    error: str | None = _opt("Why the store could not be used (when not reachable).")


@attrs.define(kw_only=True)
class OpenSharedParams:
    """Params of `session/openShared`: a shared session opened from the store by its id."""

    session_id: str = _req("The session id (`SessionInfo.id` of a listed shared session).")
