"""The real home's sessiontree and code-server dirs, before and after a test run (CONVENTIONS 16).

tests/conftest.py points HOME and the XDG dirs into a temporary directory for every test, and
checks at the end of the session, with these functions, that nothing under the real home's
(the HOME the pytest process started with) sessiontree cache and state dirs and code-server
data dir was created, changed or removed. The same dirs under the XDG variables the process
started with are watched too.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Mapping

# Under HOME, and the same app dirs under each XDG variable when it was set.
WATCHED_IN_HOME = (".cache/sessiontree", ".local/state/sessiontree", ".local/share/code-server")
WATCHED_IN_XDG = (
    ("XDG_CACHE_HOME", "sessiontree"),
    ("XDG_STATE_HOME", "sessiontree"),
    ("XDG_DATA_HOME", "code-server"),
)

Snapshot = dict[str, tuple[int, int, int]]


def watched_dirs(env: Mapping[str, str]) -> list[str]:
    """The dirs to watch for a process whose environment is ``env``."""
    home = env.get("HOME") or os.path.expanduser("~")
    dirs = [os.path.join(home, d) for d in WATCHED_IN_HOME]
    dirs += [os.path.join(env[var], sub) for var, sub in WATCHED_IN_XDG if env.get(var)]
    return list(dict.fromkeys(os.path.abspath(d) for d in dirs))


def snapshot(dirs: Iterable[str]) -> Snapshot:
    """Every path under ``dirs`` (the dirs included) with its type, size and mtime."""
    out: Snapshot = {}

    def add(path: str) -> None:
        try:
            st = os.lstat(path)
        except OSError:
            return
        out[path] = (stat.S_IFMT(st.st_mode), st.st_size, st.st_mtime_ns)

    for top in dirs:
        add(top)
        if not os.path.isdir(top) or os.path.islink(top):
            continue
        for root, subdirs, files in os.walk(top, onerror=lambda _e: None):
            for name in (*subdirs, *files):
                add(os.path.join(root, name))
    return out


def changes(before: Snapshot, after: Snapshot) -> list[str]:
    """What differs: ``created P``, ``removed P``, ``changed P``, sorted by path."""
    out = []
    for path in sorted(before.keys() | after.keys()):
        if path not in before:
            out.append(f"created {path}")
        elif path not in after:
            out.append(f"removed {path}")
        elif before[path] != after[path]:
            out.append(f"changed {path}")
    return out
