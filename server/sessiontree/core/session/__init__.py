"""sessiontree.core.session: the `SessionManager`, put together from parts by job.

`manager` (constructors, reading, the leaf), `loading`, `writing`, `entries` (the entry
constructors), `moves` (fork, branch into a new session, move), `context_walk`, with the
shared state in `base`, the file-backed reads in `reader` and the index cache in `sidecar`;
`foreign` opens other agents' transcripts (Claude Code, Codex) read-only.
"""

# Registers the reader of other agents' transcripts with `SessionManager.open` (`foreign`).
from . import foreign as _foreign  # noqa: F401
from .manager import LoadReport, SessionManager, SessionTreeNode

__all__ = ["LoadReport", "SessionManager", "SessionTreeNode"]
