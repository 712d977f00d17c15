"""Writing: the persistence pipeline of a session (`Writing`, a part of `SessionManager`).

Nothing is written until the session has an assistant message (or `ensure_on_disk()`),
then one atomic full rewrite, then appends of whole lines; every entry goes through the
persistence transform (`persistence.prepare_entry_for_persistence`). The first persistence
error is latched and re-raised by later writes as `PersistError`; memory is updated first,
like the reference. Before the first rewrite that changes the file's bytes, a quarantine
copy (after a lossy load) or a backup (before a migration) is kept beside it.

Every write first folds in what other processes wrote (the follower, `core/live/`) and
holds the session's lock: shared for an append, exclusive for a rewrite.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

from ..errors import AccessDeniedError, ConflictError, InvalidSessionFileError, PersistError, SessionTreeError
from ..format.backups import copy_path
from ..format.dialects import Dialect
from ..format.jsonl import dumps_line, loads_line
from ..format.persistence import prepare_entry_for_persistence
from ..format.title_slot import serialize_slot
from .base import SessionBase, stat_of

__all__ = ["Writing"]


class Writing(SessionBase):
    """Persisting entries: appends, full rewrites, the latch, flush and close."""

    def _close_writer(self) -> None:
        w = self._writer
        self._writer = None
        if w is not None:
            try:
                w.close()
            except Exception:
                pass

    def _latch(self, exc: BaseException) -> PersistError:
        err = exc if isinstance(exc, PersistError) else PersistError(self._session_file, exc)
        if self._persist_error is None:
            self._persist_error = err
        return self._persist_error

    def _persist_entry(self, entry: dict[str, Any]) -> None:
        if not self._persist or not self._session_file or self._read_only:
            return
        if self._persist_error is not None:
            raise self._persist_error
        if not self._ensured_on_disk and not self._index.has_assistant:
            self._flushed = False
            return
        if self._needs_full_rewrite or not self._flushed:
            self._rewrite_file_guarded()
        else:
            self._append_line(entry)

    def _prepare(self, entry: dict[str, Any]) -> dict[str, Any]:
        if self.dialect is Dialect.PI:
            # pi writes what it holds: images inline (it has no blob store), no truncation.
            return entry
        return prepare_entry_for_persistence(entry, self._blob_store())  # type: ignore[no-any-return]

    def _append_line(self, entry: dict[str, Any]) -> None:
        path = self._session_file
        assert path is not None
        try:
            line = dumps_line(self._prepare(entry)) + b"\n"
            with self._live_lock(shared=True):
                self._live_check_writer()
                self._follower.check_still_a_session(path)
                if self._writer is None:
                    self._writer = self._storage.open_writer(path)
                self._writer.write_line(line)
            err = self._writer.get_error()
            if err is not None:
                raise err
        except (ConflictError, AccessDeniedError):
            raise  # nothing was written: not a persistence failure, later writes may succeed
        except SessionTreeError as exc:
            if isinstance(exc, PersistError):
                raise self._latch(exc) from None
            raise self._latch(exc) from exc
        except Exception as exc:
            raise self._latch(exc) from exc
        self._follower.after_append(len(line))

    def _rewrite_file_guarded(self) -> None:
        if self._read_only:
            return  # opened for inspection: never write
        if self._persist_error is not None:
            raise self._persist_error
        with self._live_lock(shared=False):
            self._follower.guard_rewrite()  # may raise ConflictError (not latched: nothing was written)
            try:
                self._rewrite_file()
            except PersistError as exc:
                raise self._latch(exc) from None
            except InvalidSessionFileError:
                raise
            except Exception as exc:
                raise self._latch(exc) from exc

    def _rewrite_file(self) -> None:
        """Full atomic rewrite of header + entries through the persistence transform."""
        if not self._persist or not self._session_file:
            return
        path = self._session_file
        self._close_writer()
        self._quarantine_if_needed(path)
        prepare = self._prepare
        parts: list[bytes] = [dumps_line(prepare(self._header)) + b"\n"]
        slot = self._title_slot
        if slot is not None:
            # oh-my-pi's title slot stays the first line, in omp's own fixed width.
            parts.insert(0, serialize_slot(slot.title, slot.source, slot.updated_at))
        pos = sum(len(p) for p in parts)
        ranges: list[tuple[int, int] | None] = []
        idx = self._index
        for line in self._entry_lines():
            parts.append(line)
            parts.append(b"\n")
            ranges.append((pos, len(line)))
            pos += len(line) + 1
        data = b"".join(parts)
        del parts
        self._storage.write_atomic(path, data)
        idx.rebase(ranges)
        self._needs_full_rewrite = False
        self._flushed = True
        st = stat_of(self._storage, path)
        self._set_file_state(st, len(data))

    def _entry_lines(self) -> Iterator[bytes]:
        """Every entry's line for a full rewrite, in file order: an entry read from the file
        keeps its bytes exactly (an entry type of a newer version, a key order, a number's
        spelling: nothing of another writer's is changed by the rewrite); an entry held in
        memory (appended here, migrated) is written through the persistence transform."""
        idx = self._index
        sks = idx.skeletons()
        raw_loader = idx.raw_loader
        prepare = self._prepare
        for i in range(0, len(sks), 1000):
            chunk = sks[i : i + 1000]
            raw: dict[int, bytes] = {}
            backed = [sk for sk in chunk if sk.offset >= 0]
            if backed and raw_loader is not None:
                for sk, mv in raw_loader(sorted(backed, key=lambda k: k.offset)):
                    line = bytes(mv)
                    try:
                        value = loads_line(line)
                    except ValueError:
                        continue
                    if isinstance(value, dict) and value.get("id") == sk.id:
                        raw[sk.order] = line
            entries = idx.entries_of([sk for sk in chunk if sk.order not in raw])
            it = iter(entries)
            for sk in chunk:
                got = raw.get(sk.order)
                yield got if got is not None else dumps_line(prepare(next(it)))

    def _quarantine_if_needed(self, path: str) -> None:
        """Keep the original bytes beside the file before the first rewrite that changes
        them: a quarantine copy when the load dropped lines, a backup before a migration."""
        rep = self.load_report
        if rep.recovered:
            if rep.quarantined_copy:
                return
            kind = "quarantine"
        elif rep.migrated_from is not None or rep.ids_derived:
            if rep.backup_copy:
                return
            kind = f"backup-v{rep.migrated_from}" if rep.migrated_from is not None else "backup-ids"
        else:
            return
        if not self._storage.exists(path):
            return
        original = self._storage.read_bytes(path)
        qpath = copy_path(path, kind, self._clock.now_iso())
        self._storage.write_atomic(qpath, bytes(original))
        if kind == "quarantine":
            rep.quarantined_copy = qpath
        else:
            rep.backup_copy = qpath

    def flush(self) -> None:
        """Flush and fsync the append writer; re-raise a latched persistence error."""
        w = self._writer
        if w is not None:
            try:
                w.flush()
                w.fsync()
                err = w.get_error()
                if err is not None:
                    raise err
            except Exception as exc:
                raise self._latch(exc) from exc
        if self._persist_error is not None:
            raise self._persist_error

    def close(self) -> None:
        """Close the append writer; re-raise a latched persistence error."""
        w = self._writer
        if w is None:
            return
        self._writer = None
        try:
            w.flush()
            w.fsync()
            w.close()
        except Exception as exc:
            self._latch(exc)
        self._flushed = True
        if self._persist_error is not None:
            raise self._persist_error

    def close_quietly(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def ensure_on_disk(self) -> None:
        """Write the file now (full rewrite) unless it is already up to date."""
        if not self._persist or not self._session_file:
            return
        if self._flushed and not self._needs_full_rewrite and self._storage.exists(self._session_file):
            self._ensured_on_disk = True
            return
        self._rewrite_file_guarded()
        self._ensured_on_disk = True

    def rewrite_entries(self) -> None:
        """Unconditional full atomic rewrite (after in-place edits of entries)."""
        if not self._persist or not self._session_file:
            return
        self._rewrite_file_guarded()

    # -- other writers (core/live/)
    def _live_before_write(self) -> None:
        follower = self._follower
        if self._persist and self._session_file and follower.state is not None and not follower.guarding:
            follower.before_write()  # before the entry is added in memory

    def _live_lock(self, shared: bool) -> Any:
        path = self._session_file
        storage = self._storage
        if not (
            self._persist
            and path
            and getattr(storage, "is_real_fs", False)
            and os.path.isdir(os.path.dirname(path))
        ):
            return contextlib.nullcontext()
        return storage.lock(path, shared=shared)

    def _live_check_writer(self) -> None:
        """Reopen the append writer when another file now sits at the path (renamed over)."""
        w = self._writer
        fd = getattr(w, "_fd", None)
        if w is None or fd is None or not self._session_file:
            return
        try:
            same = os.path.samestat(os.fstat(fd), os.stat(self._session_file))
        except OSError:
            same = False
        if not same:
            self._close_writer()
