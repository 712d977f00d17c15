"""sessiontree.core.index: the entry index, built without materializing entries.

`skeleton` (the record kept per entry), `scan` (the fast decoding of clean files), `usage`
(the usage totals), `entry_index` (`EntryIndex`: file order, the tree, entries on demand),
`cache` (the sidecar cache of skeletons for warm reopens).
"""

from .cache import IndexCache, default_cache_dir
from .entry_index import EntryIndex, gc_paused
from .scan import CleanScan, scan_clean
from .skeleton import STATE_ENTRY_TYPES, Skeleton, compute_has_text, skeleton_from_dict
from .usage import UsageTotals

__all__ = [
    "STATE_ENTRY_TYPES",
    "CleanScan",
    "EntryIndex",
    "IndexCache",
    "Skeleton",
    "UsageTotals",
    "compute_has_text",
    "default_cache_dir",
    "gc_paused",
    "scan_clean",
    "skeleton_from_dict",
]
