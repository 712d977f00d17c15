"""A PostgreSQL server of the tests' own: the system's server binaries, a temporary data
directory, a Unix socket only (no TCP), stopped at the end.

``initdb`` and ``pg_ctl`` refuse to run as root; when the tests run as root (CI does) they
run as the ``postgres`` system user on a directory it may write (notes: ecosystem.md).
A missing server package or psycopg skips the tests that need the server, with the reason.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["PgServer", "find_bin_dir", "pg_unavailable"]


def find_bin_dir() -> str | None:
    """The newest ``/usr/lib/postgresql/<major>/bin`` holding ``initdb`` (or ``$SESSIONTREE_PG_BIN``)."""
    env = os.environ.get("SESSIONTREE_PG_BIN")
    if env and os.path.exists(os.path.join(env, "initdb")):
        return env
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    return os.path.dirname(found[-1]) if found else None


def pg_unavailable() -> str | None:
    """Why a server cannot be started here, or ``None``."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return "psycopg is not installed (pip install 'psycopg[binary]')"
    if find_bin_dir() is None:
        return "no PostgreSQL server binaries (apt-get install postgresql; scripts/setup-system.sh)"
    return None


class PgServer:
    """One running server; :meth:`new_database` gives each test a database of its own."""

    def __init__(self) -> None:
        bin_dir = find_bin_dir()
        if bin_dir is None:
            raise RuntimeError("no PostgreSQL server binaries")
        self.bin = bin_dir
        # A short path: the socket name must fit in sun_path (107 bytes).
        self.base = tempfile.mkdtemp(prefix="st-pg-", dir="/tmp")
        os.chmod(self.base, 0o777)
        self.data = os.path.join(self.base, "data")
        self.log = os.path.join(self.base, "pg.log")
        self.as_root = os.geteuid() == 0
        self.running = False

    def _run(self, *argv: str) -> None:
        cmd = [os.path.join(self.bin, argv[0]), *argv[1:]]
        if self.as_root:
            cmd = ["su", "postgres", "-s", "/bin/sh", "-c", " ".join(_quote(a) for a in cmd)]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=self.base)
        if out.returncode != 0:
            log = _tail(self.log)
            raise RuntimeError(f"{argv[0]} failed ({out.returncode}): {out.stderr.strip()}\n{log}")

    def init(self) -> None:
        self._run("initdb", "-D", self.data, "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8")
        self.start()

    def start(self) -> None:
        opts = f"-k {self.base} -c listen_addresses='' -c fsync=off -c max_connections=200"
        self._run("pg_ctl", "-D", self.data, "-l", self.log, "-w", "-o", opts, "start")
        self.running = True

    def stop(self, mode: str = "fast") -> None:
        if self.running:
            self._run("pg_ctl", "-D", self.data, "-w", "-m", mode, "stop")
            self.running = False

    def pids(self) -> list[int]:
        """The server's processes: the postmaster (first) and its children."""
        with open(os.path.join(self.data, "postmaster.pid"), encoding="ascii") as f:
            main = int(f.readline())
        pids = [main]
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            if ppid == main:
                pids.append(int(entry))
        return pids

    @contextmanager
    def frozen(self) -> Iterator[None]:
        """The whole server stopped (SIGSTOP) for the block, continued (SIGCONT) after it: a
        store that answers nothing (a frozen VM, a network path dropping packets)."""
        import signal

        pids = self.pids()
        for pid in pids:
            os.kill(pid, signal.SIGSTOP)
        try:
            yield
        finally:
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGCONT)
                except ProcessLookupError:
                    pass

    def url(self, dbname: str = "postgres", user: str = "postgres") -> str:
        return f"postgresql://{user}@/{dbname}?host={self.base}"

    def new_database(self) -> str:
        """A fresh, empty database; its URL."""
        import psycopg

        name = "t_" + uuid.uuid4().hex[:12]
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def destroy(self) -> None:
        try:
            self.stop("immediate")
        finally:
            shutil.rmtree(self.base, ignore_errors=True)


def _quote(arg: str) -> str:
    import shlex

    return shlex.quote(arg)


@contextmanager
def running_server() -> Iterator[PgServer]:
    """A started server for the duration of the block."""
    server = PgServer()
    try:
        server.init()
        yield server
    finally:
        server.destroy()


def _tail(path: str, n: int = 2000) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()[-n:]
    except OSError:
        return ""
