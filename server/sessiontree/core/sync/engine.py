"""`Syncer`: one round of two-way sync for a local session file, and for many.

A round on a file (docs/shared-store.md, "The sync protocol"):

1. read the file from its confirmed ``offset`` to its last newline (a line still being
   written waits for the next round); each complete line is parsed; a line that is no entry
   (damaged, a torn-line breaker) is counted, reported and never pushed;
2. push the entries past ``pushed_to`` in batches, one transaction each, recording
   ``pushed_to`` after each: the store adds the ids it lacks and records a conflict for an id
   it holds with other content (never resolved by either side);
3. pull the entries that arrived in the store after ``pulled_seq`` and that this round did
   not see in the file, each checked line = id = column (`store.rows.refused_row`: a row
   that is not what its columns say is reported as a conflict and nothing of it is
   written), and append them to the file with the ordinary guarded append (whole lines,
   never glued onto a torn line, under the session's lock);
4. record ``offset`` = the end of step 1 and ``pulled_seq`` together (with the hash of the
   row at ``pulled_seq``: a next round that finds it gone or different knows the store's
   rows changed under it and reads the file whole again, which puts back what was deleted
   and reports what was changed as conflicts).

Every local file is read and written through an access guard over the agent's sessions
directory (`core/store/guard.py`), at the moment of each use: a link (symbolic or hard) to
a file elsewhere is neither pushed nor appended to, and a copy fetched from the store is
created only where `placement` allows.

Why nothing is lost or doubled after a crash at any point: the store ignores an id it holds
with the same content, so pushing again is harmless; and an entry is appended locally only
when it is neither in the part of the file read this round (which starts at the confirmed
``offset``, so it includes whatever a crashed round appended) nor at or below the confirmed
``pulled_seq`` (everything up to it is in the file before ``offset``). Seq order is commit
order in the store (the session row's lock), so a mark never skips a late commit.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ..errors import AccessDeniedError, BlobError, LockTimeoutError
from ..format.jsonl import dumps_line, is_session_header, loads_line
from ..format.title_slot import parse_slot_line
from ..paths import sessions_root
from ..store.blobs import BlobStore
from ..store.file import FileSessionStorage
from ..store.guard import RootsGuard
from ..store.postgres import (
    PgBlobs,
    PostgresSessionStorage,
    SessionMeta,
    StoreUnreachable,
    default_user,
    entry_hash,
)
from ..store.rows import refused_row
from .placement import RefusedRow, copy_dir, copy_path, create_copy
from .state import FileMark, SyncState, default_state_path

__all__ = ["FileResult", "SyncOptions", "Syncer"]


def paths_blobs_dir(agent_dir: str) -> str:
    """``<data dir of agent_dir>/blobs``, where the agent keeps its blobs."""
    from ..paths import blobs_dir

    return blobs_dir(agent_dir)


#: Entries per push transaction.
BATCH = 2000

#: Seconds a round waits for another sync's round on the same file.
LOCK_WAIT = 30.0

_BLOB_REF = re.compile(rb"blob:sha256:([0-9a-f]{64})")


@dataclass
class SyncOptions:
    """What the user chose to leave out or hide before pushing."""

    #: Directories (cwds or session dirs) whose sessions are never pushed or pulled.
    exclude: list[str] = field(default_factory=list)
    #: Regular expressions; each match in an entry's text is replaced before pushing.
    redact: list[str] = field(default_factory=list)
    #: The replacement for a redacted match.
    redaction: str = "[redacted]"
    #: The team a newly pushed session belongs to (row-level security).
    team: str | None = None


@dataclass
class FileResult:
    """What one round did to one file."""

    path: str
    session_id: str | None = None
    pushed: int = 0
    pulled: int = 0
    conflicts: list[str] = field(default_factory=list)
    damaged: int = 0
    skipped: str | None = None
    #: Store rows left out because they are not what their columns say: "row N (entry X): why".
    refused: list[str] = field(default_factory=list)
    #: The store's rows of this session changed under this machine (the file was read whole
    #: again: deleted entries pushed back, changed ones reported as conflicts).
    changed_under: bool = False


@dataclass
class _Line:
    end: int
    entry_id: str
    line: bytes
    digest: bytes


class Syncer:
    """Syncs local session files with one store, as machine ``storage.machine``."""

    def __init__(
        self,
        storage: PostgresSessionStorage,
        *,
        agent_dir: str | None = None,
        options: SyncOptions | None = None,
        state_path: str | None = None,
        progress: Callable[[str], None] | None = None,
        batch: int = BATCH,
    ) -> None:
        self.store = storage
        self.agent_dir = agent_dir
        self.options = options or SyncOptions()
        self.state = SyncState(state_path or default_state_path(storage.url, storage.machine))
        #: The agent's sessions directory: nothing outside it is read or written, checked at
        #: each use (a link to a file elsewhere is refused when it is opened).
        self.sessions_root = sessions_root(agent_dir)
        self.guard = RootsGuard([self.sessions_root])
        self.files = FileSessionStorage(guard=self.guard)
        self.progress = progress
        self.batch = max(1, batch)
        self._patterns = [re.compile(p) for p in self.options.redact]
        self.blobs = PgBlobs(storage)
        # The agent's blob directory: blobs referenced by pushed entries go to the store,
        # those of pulled entries come back here (without an agent dir, neither).
        self.local_blobs = BlobStore(paths_blobs_dir(agent_dir)) if agent_dir else None
        self._excluded = [os.path.realpath(d) for d in self.options.exclude]

    # ------------------------------------------------------------------ helpers

    def _say(self, text: str) -> None:
        if self.progress is not None:
            self.progress(text)

    def _is_excluded(self, *paths: str | None) -> bool:
        for p in paths:
            if not p:
                continue
            real = os.path.realpath(p)
            for d in self._excluded:
                if real == d or real.startswith(d.rstrip("/") + "/"):
                    return True
        return False

    def _redact_value(self, value: Any) -> Any:
        if isinstance(value, str):
            for pat in self._patterns:
                value = pat.sub(self.options.redaction, value)
            return value
        if isinstance(value, list):
            return [self._redact_value(v) for v in value]
        if isinstance(value, dict):
            return {k: self._redact_value(v) for k, v in value.items()}
        return value

    def _redacted(self, line: bytes, value: Any) -> bytes:
        if not self._patterns:
            return line
        text = line.decode("utf-8", "replace")
        if not any(p.search(text) for p in self._patterns):
            return line
        out = self._redact_value(value)
        return line if out == value else dumps_line(out).rstrip(b"\n") + b"\n"

    def _push_blobs(self, data: bytes) -> None:
        if self.local_blobs is None or b"blob:sha256:" not in data:
            return
        wanted = sorted({m.decode() for m in _BLOB_REF.findall(data)})
        for digest in sorted(set(wanted) - self.blobs.has(wanted)):
            try:
                blob = self.local_blobs.get(digest)
            except BlobError:
                continue  # a corrupted local blob is never shared
            if blob is not None:
                self.blobs.put(blob)

    def _pull_blobs(self, data: bytes) -> None:
        if self.local_blobs is None or b"blob:sha256:" not in data:
            return
        for digest in sorted({m.decode() for m in _BLOB_REF.findall(data)}):
            try:
                have = self.local_blobs.get(digest)
            except BlobError:
                have = None  # corrupted here: the store's verified copy replaces it
            if have is None:
                blob = self.blobs.get(digest)
                if blob is not None:
                    self.local_blobs.put(blob)

    def sessions_of(self, roots: Iterable[str]) -> list[str]:
        """The session files under ``roots`` (recursively), sorted."""
        out: list[str] = []
        for root in roots:
            for dirpath, _dirs, names in os.walk(root):
                out.extend(os.path.join(dirpath, n) for n in names if n.endswith(".jsonl"))
        return sorted(out)

    # ------------------------------------------------------------------ one file

    def sync_file(self, path: str) -> FileResult:
        """One round on ``path`` (push, then pull); raises ``StoreUnreachable`` when the store
        is lost (the marks stay where the last completed step left them).

        Rounds on one file are serialized across processes (a lock in sessiontree's own
        lock directory): two syncs on one machine must not both append the same pulled
        entry. A file another sync holds for longer than ``LOCK_WAIT`` is left for later."""
        path = os.path.abspath(path)
        try:
            with self.files.lock(path + ".sessiontree-sync", timeout=LOCK_WAIT):
                return self._sync_file_locked(path)
        except LockTimeoutError:
            return FileResult(path, skipped="busy (another sync holds it)")

    def _open(self, path: str) -> int:
        """A descriptor of the regular file ``path`` names now, inside the sessions dir."""
        return self.guard.open(path, os.O_RDONLY | os.O_NONBLOCK)

    def _stat(self, path: str) -> os.stat_result:
        fd = self._open(path)
        try:
            return os.fstat(fd)
        finally:
            os.close(fd)

    def _sync_file_locked(self, path: str) -> FileResult:
        result = FileResult(path)
        if self._is_excluded(path):
            result.skipped = "excluded"
            return result
        try:
            fd = self._open(path)
        except FileNotFoundError:
            result.skipped = "missing"
            self.state.drop(path)
            return result
        except AccessDeniedError as exc:
            # A FIFO or device named like a session would block or never end; a link leads
            # to a file outside the agent's sessions dir.
            result.skipped = (
                "not a regular file" if exc.reason == "is not a regular file" else f"refused: {exc}"
            )
            return result
        try:
            st = os.fstat(fd)
            mark = self.state.get(path)
            if mark is not None and (mark.inode != st.st_ino or st.st_size < mark.offset):
                # Rewritten or truncated: read it whole again (pushing again is harmless).
                mark = None
            start = mark.offset if mark is not None else 0
            data = _read_from(fd, start, max(0, st.st_size - start))
        finally:
            os.close(fd)
        cut = data.rfind(b"\n") + 1
        data = data[:cut]
        end = start + cut
        lines: list[_Line] = []
        pos = 0
        header: bytes | None = None
        header_value: Any = None
        while pos < len(data):
            nl = data.index(b"\n", pos)
            raw = data[pos : nl + 1]
            pos = nl + 1
            line_end = start + pos
            if not raw.strip():
                continue
            try:
                value = loads_line(raw)
            except ValueError:
                result.damaged += 1
                continue
            if start == 0 and header is None and not lines:
                if pos == len(raw) and parse_slot_line(raw.rstrip(b"\r\n")) is not None:
                    continue  # oh-my-pi's title slot, local to the file: the header follows
                if not is_session_header(value):
                    result.skipped = "not a session (no session header on the first line)"
                    return result
                header, header_value = raw, value
                continue
            if (
                not isinstance(value, dict)
                or not isinstance(value.get("id"), str)
                or is_session_header(value)
            ):
                result.damaged += 1
                continue
            out = self._redacted(raw, value)
            lines.append(_Line(line_end, value["id"], out, entry_hash(out)))
        if mark is None:
            if header is None:
                result.skipped = "empty" if not data else "not a session"
                return result
            cwd = header_value.get("cwd") if isinstance(header_value.get("cwd"), str) else None
            if self._is_excluded(cwd):
                result.skipped = "excluded"
                return result
            meta = SessionMeta(
                session_id=header_value["id"],
                machine=self.store.machine,
                os_user=self.store.user or default_user(),
                agent_dir=self.agent_dir,
                cwd=cwd,
                file_name=os.path.basename(path),
                local_path=path,
                team=self.options.team,
            )
            try:
                pk = self.store.ensure_session(meta, self._redacted(header, header_value))
            except PermissionError as exc:
                result.skipped = f"refused by the store: {exc.strerror or exc}"
                return result
            mark = FileMark(session_id=meta.session_id, pk=pk, inode=st.st_ino)
        result.session_id = mark.session_id
        if result.damaged:
            print(
                f"sessiontree sync: {path}: {result.damaged} damaged line(s) not pushed",
                file=sys.stderr,
            )
        # Push what this round has not pushed yet, batch by batch.
        todo = [ln for ln in lines if ln.end > mark.pushed_to]
        total = len(todo)
        step = self.batch
        for i in range(0, total, step):
            batch = todo[i : i + step]
            self._push_blobs(b"".join(ln.line for ln in batch))
            try:
                res = self.store.push_entries(
                    mark.pk, [(ln.entry_id, ln.line, ln.digest) for ln in batch], damaged=result.damaged
                )
            except FileNotFoundError:
                # The store lost the session (deleted by its admin): share it again from scratch.
                self.state.drop(path)
                return self._sync_file_locked(path)
            result.pushed += res.inserted
            result.conflicts.extend(res.conflicts)
            mark.pushed_to = batch[-1].end
            self.state.set(path, mark)
            if total > step:
                self._say(f"{os.path.basename(path)}: pushed {min(i + step, total)}/{total}")
        # Pull what other machines added.
        seen = {ln.entry_id: ln.digest for ln in lines}
        pulled_seq, pulled_hash = mark.pulled_seq, mark.pulled_hash
        # The row this machine pulled last is looked at again: gone or different, the
        # store's rows changed under this machine.
        check = pulled_seq > 0 and bool(pulled_hash)
        while True:
            rows = self.store.entries_after(mark.pk, pulled_seq, limit=self.batch, inclusive=check)
            if check:
                check = False
                last = rows[0] if rows and rows[0][0] == pulled_seq else None
                if last is None or entry_hash(last[2]).hex() != pulled_hash:
                    return self._changed_under(path, pulled_seq)
                rows = rows[1:]
            if not rows:
                break
            missing: list[bytes] = []
            for seq, ident, line, stored_hash in rows:
                why = refused_row(ident, line, stored_hash, first=False)
                if why is not None:
                    result.refused.append(f"row {seq} (entry {ident!r}): {why}")
                    continue
                # (the stored hash is the line's: refused_row checked it)
                digest = stored_hash if stored_hash is not None else entry_hash(line)
                have = seen.get(ident)
                if have is None:
                    missing.append(line)
                    seen[ident] = digest
                elif have != digest and ident not in result.conflicts:
                    result.conflicts.append(ident)
            if missing:
                payload = b"".join(missing)
                self._pull_blobs(payload)
                try:
                    with self.files.lock(path, timeout=5.0):
                        before = self._stat(path)
                        self.files.append(path, payload)
                        after = self._stat(path)
                    # Nobody else wrote between the two looks and the file held nothing
                    # unread: the appended lines need not be read back next round.
                    if (
                        before.st_ino == after.st_ino == st.st_ino
                        and before.st_size == end
                        and after.st_size == end + len(payload)
                    ):
                        end = after.st_size
                except LockTimeoutError:
                    # A writer holds the session: the next round pulls these again.
                    self._say(f"{os.path.basename(path)}: busy, pull postponed")
                    break
                except AccessDeniedError as exc:
                    # The path now leads outside the sessions dir: nothing appended, the
                    # marks stay where the push left them.
                    result.skipped = f"refused: {exc}"
                    return result
                result.pulled += len(missing)
                if len(rows) >= step:
                    self._say(f"{os.path.basename(path)}: pulled {result.pulled}")
            pulled_seq, pulled_hash = rows[-1][0], entry_hash(rows[-1][2]).hex()
        mark.offset = end
        mark.pushed_to = max(mark.pushed_to, end)
        mark.pulled_seq, mark.pulled_hash = pulled_seq, pulled_hash
        self.state.set(path, mark)
        for ident in result.conflicts:
            print(
                f"sessiontree sync: {path}: conflict: entry {ident!r} differs from the store's copy "
                "(kept as it is on both sides; see `sessiontree store conflicts`)",
                file=sys.stderr,
            )
        for what in result.refused:
            print(
                f"sessiontree sync: {path}: conflict: the store's {what}; nothing of it was written",
                file=sys.stderr,
            )
        return result

    def _changed_under(self, path: str, seq: int) -> FileResult:
        """The store's rows of ``path``'s session changed under this machine (its row ``seq``
        is gone or different): the file is read whole again, so what was deleted is pushed
        back and what was changed is reported as a conflict."""
        print(
            f"sessiontree sync: {path}: the store's rows of this session changed under this machine "
            f"(row {seq} is gone or different); reading the file whole again",
            file=sys.stderr,
        )
        self.state.drop(path)
        result = self._sync_file_locked(path)
        result.changed_under = True
        return result

    def sync_files(self, paths: Iterable[str]) -> list[FileResult]:
        """A round on each file; a file that cannot be read is reported and the others go on
        (a lost store stops the run: `StoreUnreachable`)."""
        out = []
        for p in paths:
            try:
                out.append(self.sync_file(p))
            except StoreUnreachable:
                raise
            except OSError as exc:
                out.append(FileResult(os.path.abspath(p), skipped=f"unreadable: {exc.strerror or exc}"))
        return out

    def fetch(self, session_id: str, sessions_dir: str | None = None) -> str:
        """Make a local copy of the shared session ``session_id`` (its header first, then a
        round pulls the entries); the file's path. The copy goes to ``sessions_dir``, else
        to the sessions dir of the session's cwd (`placement`: a plain ``*.jsonl`` name in a
        directory inside the agent's sessions dir, else `RefusedRow`). An existing local
        copy is synced instead."""
        for path, m in self.state.files.items():
            if m.session_id == session_id and os.path.exists(path):
                self.sync_file(path)
                return path
        shared = self.store.find_session(session_id)
        if shared is None:
            raise FileNotFoundError(
                f"no shared session {session_id} in the store (or not visible to this role)"
            )
        first = self.store.header_of(shared.pk)
        why = "the store holds no first line" if first is None else refused_row(*first, None, first=True)
        if first is None or why is not None:
            raise RefusedRow(f"the store's header of session {session_id} is refused: {why}")
        header = first[1]
        if loads_line(header).get("id") != session_id:
            raise RefusedRow(f"the store's header of session {session_id} is the header of another session")
        directory = (
            sessions_dir if sessions_dir is not None else copy_dir(shared.cwd, self.agent_dir, os.getcwd())
        )
        path = copy_path(shared.file_name, session_id, self.sessions_root, directory)
        try:
            create_copy(self.guard, path, header)
        except FileExistsError:
            raise FileExistsError(f"{path} exists and is not a copy of {session_id}") from None
        st = self._stat(path)
        self.state.set(
            path,
            FileMark(
                session_id=session_id,
                pk=shared.pk,
                inode=st.st_ino,
                offset=len(header),
                pushed_to=len(header),
            ),
        )
        self.sync_file(path)
        return path

    def path_of_pk(self, pk: int) -> list[str]:
        """The local files that hold the store's session ``pk``."""
        return [p for p, m in self.state.files.items() if m.pk == pk]


def _read_from(fd: int, offset: int, length: int) -> bytes:
    """``length`` bytes of ``fd`` from ``offset`` (fewer at its end)."""
    chunks: list[bytes] = []
    while length > 0:
        chunk = os.pread(fd, min(length, 1 << 24), offset)
        if not chunk:
            break
        chunks.append(chunk)
        offset += len(chunk)
        length -= len(chunk)
    return b"".join(chunks)
