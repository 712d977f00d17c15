"""sessiontree.core.store: where session files are kept, behind one protocol.

`protocol.SessionStorage` is what the session store needs; `file` (the real file system)
and `memory` implement it, `faults` wraps either to fail on purpose, `guard` checks every
path at the moment it is used, `locks` and `torn` hold the rules every backend shares. A
new backend (a shared store on PostgreSQL, say) is a new module here that passes
``tests/core/test_storage_contract.py``.
"""

from .blobs import BlobPut, BlobStore
from .faults import Fault, FaultInjectingStorage
from .file import FileSessionStorage, FileSessionWriter
from .locks import lock_dir, lock_file_path
from .memory import MemorySessionStorage, MemorySessionWriter
from .protocol import FileStat, SessionStorage, SessionStorageWriter
from .torn import TORN_LINE_BREAKER, separator_after, settled_tail

__all__ = [
    "TORN_LINE_BREAKER",
    "BlobPut",
    "BlobStore",
    "Fault",
    "FaultInjectingStorage",
    "FileSessionStorage",
    "FileSessionWriter",
    "FileStat",
    "MemorySessionStorage",
    "MemorySessionWriter",
    "SessionStorage",
    "SessionStorageWriter",
    "lock_dir",
    "lock_file_path",
    "separator_after",
    "settled_tail",
]
