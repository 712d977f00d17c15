"""Helpers of the real-corpus suites: the command line in forked processes, snapshots of
directory trees, and what a session file says according to the loader's rules.

`CliRunner` starts one Python process that imports sessiontree once and forks a child per
command: each command still runs in its own process (its own exit code, stdout, stderr,
and a traceback on stderr when it crashes, exactly as `python -m sessiontree` would), but
without paying the interpreter start and the imports every time. The children start from
a parent that has imported modules and read no session, so they share nothing a command
computes (ids come from the operating system's randomness, which fork does not copy).
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sessiontree.core.format.jsonl import parse_jsonl_lenient

_DRIVER = r"""
import json, os, sys, traceback
import sessiontree.cli
for _name in ("ls", "show", "tree", "context", "doctor"):
    try:
        __import__("sessiontree.commands." + _name)
    except ImportError:
        pass
import sessiontree.core.session, sessiontree.core.view, sessiontree.core.tree.messages
import sessiontree.core.discovery, sessiontree.core.doctor

control = sys.stdout
for raw in sys.stdin:
    req = json.loads(raw)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            import signal
            signal.alarm(req["timeout"])  # a hung command dies of SIGALRM (exit status -14)
            os.environ.clear()
            os.environ.update(req["env"])
            os.chdir(req["cwd"])
            nul = os.open(os.devnull, os.O_RDONLY)
            os.dup2(nul, 0)
            out = os.open(req["out"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            err = os.open(req["err"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(out, 1)
            os.dup2(err, 2)
            try:
                code = sessiontree.cli.main(req["argv"])
            except SystemExit as exc:
                if exc.code is None:
                    code = 0
                elif isinstance(exc.code, int):
                    code = exc.code
                else:
                    print(exc.code, file=sys.stderr)
                    code = 1
            except BaseException:
                traceback.print_exc()
                code = 1
        finally:
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            except BaseException:
                pass
            os._exit(code if isinstance(code, int) else 1)
    _, status = os.waitpid(pid, 0)
    control.write(json.dumps({"status": os.waitstatus_to_exitcode(status)}) + "\n")
    control.flush()
"""


@dataclass(frozen=True)
class CliResult:
    """One command's exit code and output."""

    argv: tuple[str, ...]
    rc: int
    out: str
    err: str

    def describe(self) -> str:
        killed = " (killed: over the time limit)" if self.rc == -14 else ""
        return f"sessiontree {' '.join(self.argv)} -> exit {self.rc}{killed}\nstderr: {self.err[-2000:]}"

    def json(self) -> Any:
        return json.loads(self.out)


class CliRunner:
    """`sessiontree ARGV...` as a separate (forked) process per call."""

    def __init__(self) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="sessiontree-cli-")
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _DRIVER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
        )
        self._n = 0

    def run(
        self, argv: Iterable[str], *, env: Mapping[str, str], cwd: str | Path, timeout: int = 60
    ) -> CliResult:
        argv = tuple(str(a) for a in argv)
        self._n += 1
        out = Path(self._tmp.name) / f"{self._n}.out"
        err = Path(self._tmp.name) / f"{self._n}.err"
        req = {
            "argv": list(argv),
            "env": dict(env),
            "cwd": str(cwd),
            "out": str(out),
            "err": str(err),
            "timeout": timeout,
        }
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("the command-line driver process died")
        rc = json.loads(line)["status"]
        return CliResult(
            argv,
            rc,
            out.read_text(encoding="utf-8", errors="replace"),
            err.read_text(encoding="utf-8", errors="replace"),
        )

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self._tmp.cleanup()


# ---------------------------------------------------------------------------- environment

_KEPT = ("PATH", "LANG", "LC_ALL", "PYTHONPATH", "TMPDIR")


def isolated_env(root: Path, **extra: str) -> dict[str, str]:
    """A minimal environment whose HOME and XDG dirs all lie under ``root`` (no
    PI_CODING_AGENT_DIR unless given): nothing of the real user's leaks in or out."""
    env = {k: v for k, v in os.environ.items() if k in _KEPT}
    env.update(
        HOME=str(root / "home"),
        XDG_CACHE_HOME=str(root / "xdg-cache"),
        XDG_STATE_HOME=str(root / "xdg-state"),
        XDG_DATA_HOME=str(root / "xdg-data"),
        XDG_CONFIG_HOME=str(root / "xdg-config"),
    )
    env.update(extra)
    return env


# ---------------------------------------------------------------------------- snapshots


def snapshot(root: Path, *, aside: Iterable[Path] = ()) -> dict[str, tuple[Any, ...]]:
    """Every name under ``root`` (not following symlinks) with its type, size, mtime and,
    for regular files, the sha256 of its content; directories in ``aside`` are left out."""
    skip = {os.path.abspath(p) for p in aside}
    out: dict[str, tuple[Any, ...]] = {}
    if not os.path.lexists(root):
        return out
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if os.path.join(dirpath, d) not in skip)
        for name in [*dirnames, *sorted(filenames)]:
            full = os.path.join(dirpath, name)
            st = os.lstat(full)
            rel = os.path.relpath(full, root)
            if stat.S_ISREG(st.st_mode):
                with open(full, "rb") as f:
                    digest = hashlib.sha256(f.read()).hexdigest()
                out[rel] = ("file", st.st_size, st.st_mtime_ns, digest)
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = ("dir", st.st_mtime_ns)
            elif stat.S_ISLNK(st.st_mode):
                out[rel] = ("symlink", os.readlink(full))
            else:
                out[rel] = ("other", stat.S_IFMT(st.st_mode))
    return out


def snapshot_diff(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """What changed between two snapshots, one line per name (empty: nothing)."""
    lines = []
    for name in sorted(set(before) | set(after)):
        a, b = before.get(name), after.get(name)
        if a == b:
            continue
        if a is None:
            assert b is not None
            lines.append(f"created {name} ({b[0]})")
        elif b is None:
            lines.append(f"removed {name} ({a[0]})")
        elif a[0] == "file" and b[0] == "file" and a[3] != b[3]:
            lines.append(f"rewrote {name} ({a[1]} -> {b[1]} bytes)")
        elif a[0] == "dir" and b[0] == "dir":
            lines.append(f"touched directory {name} (its entries changed)")
        else:
            lines.append(f"changed {name}: {a} -> {b}")
    return lines


# ---------------------------------------------------------------------------- the file


@dataclass(frozen=True)
class FileFacts:
    """What a session file holds by the lenient loader's reading (values in file order)."""

    name: str
    header: dict[str, Any] | None
    entries: list[Any]
    dropped: int

    @property
    def has_pi_header(self) -> bool:
        h = self.header
        return isinstance(h, dict) and h.get("type") == "session" and isinstance(h.get("id"), str)

    @property
    def all_have_ids(self) -> bool:
        return all(isinstance(e, dict) and isinstance(e.get("id"), str) for e in self.entries)

    @property
    def ids(self) -> list[str]:
        return [e["id"] for e in self.entries]


def file_facts(path: Path) -> FileFacts:
    values = parse_jsonl_lenient(path.read_bytes())
    vals = list(values.values)
    header = vals[0] if vals and isinstance(vals[0], dict) else None
    entries = vals[1:] if header is not None and header.get("type") == "session" else vals
    if header is not None and header.get("type") != "session":
        header = None
    return FileFacts(path.name, header, entries, len(values.dropped))


def expected_roots(entries: list[dict[str, Any]]) -> list[str]:
    """Entries whose parent is null, absent, the entry itself or not in the file, in file
    order (reference-behavior: getTree)."""
    ids = {e.get("id") for e in entries}
    return [
        e["id"]
        for e in entries
        if e.get("parentId") is None or e.get("parentId") == e.get("id") or e.get("parentId") not in ids
    ]


def expected_labels(entries: list[dict[str, Any]]) -> dict[str, Any]:
    """The label of each target after every label entry in file order: a truthy label sets
    it, a falsy one (missing, null, "") clears it (reference-behavior: #buildIndex)."""
    labels: dict[str, Any] = {}
    for e in entries:
        if e.get("type") != "label" or not isinstance(e.get("targetId"), str):
            continue
        if e.get("label"):
            labels[e["targetId"]] = e["label"]
        else:
            labels.pop(e["targetId"], None)
    return labels


def path_to_root(entries: list[dict[str, Any]], leaf: str | None) -> list[str]:
    """The ids from the root to ``leaf`` by parentId (stopping at a repeat)."""
    by_id = {e["id"]: e for e in entries}
    out: list[str] = []
    seen: set[str] = set()
    cur = leaf
    while cur is not None and cur in by_id and cur not in seen:
        seen.add(cur)
        out.append(cur)
        cur = by_id[cur].get("parentId")
    return out[::-1]
