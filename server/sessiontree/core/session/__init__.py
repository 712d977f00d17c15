"""sessiontree.core.session: the `SessionManager`, put together from parts by job.

`manager` (constructors, reading, the leaf), `loading`, `writing`, `entries` (the entry
constructors), `moves` (fork, branch into a new session, move), `context_walk`, with the
shared state in `base`, the file-backed reads in `reader` and the index cache in `sidecar`.
"""

from .manager import LoadReport, SessionManager, SessionTreeNode

__all__ = ["LoadReport", "SessionManager", "SessionTreeNode"]
