"""Loading: a session file read into the index (`Loading`, a part of `SessionManager`).

A clean current-version file takes the fast path: its lines are scanned into skeletons
(`index.scan_clean`), a file over `CHUNKED_LOAD_MIN` a chunk at a time, and a file seen
before comes from the sidecar cache (`sidecar`). Anything else takes the lenient path: the
reference's parser, the migrations and the blob references, held in memory. Lines another
process appends are indexed from where the index ends (`ingest_appended_bytes`).

Deliberate divergences (DIVERGENCES.md): a non-empty file without a valid header is
refused (1); what the lenient loader dropped is reported in `load_report` (2); migrations
are written atomically when they run (4, 6).
"""

from __future__ import annotations

import os
import stat as _stat
from typing import Any

from .. import paths
from ..errors import InvalidSessionFileError
from ..format import jsonl
from ..format.dialects import Dialect, home_dialect
from ..format.migrations import (
    CURRENT_SESSION_VERSION,
    fill_missing_ids,
    is_current_version,
    migrate_session_entries,
)
from ..format.persistence import clean_openai_replay, has_blob_ref, resolve_blob_refs
from ..format.title_slot import TitleSlot, split_slot
from ..ids import session_file_name
from ..index import Skeleton, UsageTotals, scan_clean
from ..index.scan import CleanScan
from ..sources.sniff import not_a_session_reason
from .base import st_int, stat_of
from .context_walk import context_skeletons
from .records import LoadReport
from .split_scan import FORK_AVAILABLE, abandon_scan, collect_scan, fork_scan, join_scans, parallel_scan_min
from .writing import Writing

__all__ = ["CHUNKED_LOAD_MIN", "LOAD_CHUNK", "Loading", "is_current_version"]

#: Files larger than this are indexed chunk by chunk (never held whole in memory).
CHUNKED_LOAD_MIN = 32 << 20
LOAD_CHUNK = 16 << 20


#: The most bytes `keep_last_context` reads back to find the lines this process wrote.
_READ_BACK_MAX = 64 << 20


class Loading(Writing):
    """Reading the session file into the index, and starting a new session."""

    def _new_session_state(self, parent_session: str | None, dialect: Dialect | None = None) -> None:
        self._close_writer()
        # A new session speaks the dialect of the agent dir it is made in (or `dialect`, the
        # session's it is made from): pi and oh-my-pi name sessions by a UUID v7, and
        # oh-my-pi starts the file with its title slot.
        home = (
            dialect if dialect is not None else home_dialect(self._session_dir or self._session_file or None)
        )
        sid = self._ids.uuid7() if home in (Dialect.PI, Dialect.OMP) else self._ids.new_session_id()
        header: dict[str, Any] = {
            "type": "session",
            "version": CURRENT_SESSION_VERSION,
            "id": sid,
            "timestamp": self._clock.now_iso(),
            "cwd": self._cwd,
        }
        if parent_session is not None:
            header["parentSession"] = parent_session
        self._header = header
        self._title_slot = TitleSlot("", None, header["timestamp"]) if home is Dialect.OMP else None
        self._index = self._make_index()
        self._leaf_id = None
        self._flushed = False
        self._needs_full_rewrite = False
        self._ensured_on_disk = False
        self._persist_error = None
        self.load_report = LoadReport()
        self._forget_file_state()
        if self._persist and self._session_dir:
            name = session_file_name(header["timestamp"], sid)
            self._session_file = os.path.join(self._session_dir, name)
            self._write_breadcrumb()
        else:
            self._session_file = None

    def _write_breadcrumb(self) -> None:
        if not self._persist or not self._session_file or self._read_only:
            return
        if self._viewing or not self._breadcrumbs:
            return
        try:
            paths.write_breadcrumb(self._cwd, self._session_file, agent_dir=self._agent_dir, penv=self._penv)
        except Exception:
            pass  # fire and forget, like the reference

    def _set_session_file(self, path: str, cwd_from_header: bool = False) -> None:
        self._close_writer()
        self._persist_error = None
        path = os.path.abspath(path)
        storage = self._storage
        st = stat_of(storage, path)
        mode = getattr(st, "st_mode", None)
        if isinstance(mode, int) and not _stat.S_ISREG(mode):
            # A FIFO or a device reports size 0: never mistake it for an empty file and
            # rename a new session over it (nor block reading it).
            raise InvalidSessionFileError(path, "not a regular file")
        size = st_int(st, "st_size") if st is not None else 0
        if self._read_only and st is None:
            raise FileNotFoundError(path)
        if st is None or size == 0:
            # A missing or empty file: a brand-new session at that path, header written now.
            self._new_session_state(None)
            self._session_file = path
            self._write_breadcrumb()
            self._flushed = True
            self._ensured_on_disk = True
            self._rewrite_file_guarded()
            return
        self._session_file = path
        self._index = self._make_index()
        self.load_report = LoadReport()
        loaded = self._load_from_cache(path, st)
        if not loaded and size >= CHUNKED_LOAD_MIN:
            loaded = self._load_chunked(path, st)
        if not loaded:
            self._index = self._make_index()
            self.load_report = LoadReport()
            data = storage.read_bytes(path)
            self._load_bytes(path, data, st)
        header = self._header
        if cwd_from_header and isinstance(header.get("cwd"), str) and header.get("cwd"):
            self._cwd = header["cwd"]
        last = self._index.last()
        self._leaf_id = last.id if last else None
        self._flushed = True
        self._ensured_on_disk = True
        self._write_breadcrumb()
        if self.load_report.migrated_from is not None:
            self._needs_full_rewrite = True
            if not self._viewing:
                self._rewrite_file_guarded()  # DIVERGENCE 4: written when it runs
        elif self.load_report.ids_derived:
            self._needs_full_rewrite = True  # the derived ids go in with the first write
        # A load that dropped lines does not make the next write a rewrite: a rename would
        # pull the file from under an agent that keeps it open, and its next line would be
        # lost. Appends go after the damage instead (the dropped lines stay dropped; a torn
        # tail gets a separator once it is certainly torn: `store.torn.settled_tail`).

    def _load_bytes(self, path: str, data: bytes, st: Any) -> None:
        # oh-my-pi's title slot, when the file has one, comes before the header.
        slot, start = split_slot(data)
        self._title_slot = slot
        nl = data.find(b"\n", start)
        header_line = data[start : nl if nl >= 0 else len(data)]
        header = None
        if header_line[:3] != b"\xef\xbb\xbf":
            try:
                header = jsonl.loads_line(header_line)  # a lone surrogate keeps the fast path
            except ValueError:
                header = None
        fast = None
        if (
            nl >= 0
            and isinstance(header, dict)
            and header.get("type") == "session"
            and isinstance(header.get("id"), str)
            and is_current_version(header.get("version"))
        ):
            fast = scan_clean(data, nl + 1, 0)
            if fast is not None and any(type(sk.id) is not str for sk in fast.skeletons):
                fast = None  # entries without ids get derived ones on the lenient path
        if fast is not None:
            self._header = header  # type: ignore[assignment]
            self._index.add_skeletons(fast.skeletons)
            self._index.usage = fast.usage
            self.load_report = LoadReport(torn_tail=fast.torn_tail, fast_path=True)
            if fast.torn_tail:
                self.load_report.dropped = [
                    jsonl.DroppedLine(
                        data.count(b"\n", 0, fast.end) + 1, fast.end, len(data) - fast.end, "torn"
                    )
                ]
            self._set_file_state(st, fast.end)
            if len(data) >= self._sidecar.min_bytes and not fast.torn_tail:
                self._sidecar.save(path, st, data, self._header, self._index)
            return
        # The lenient path: the reference's parser, migrations and blobs; held in memory.
        report = jsonl.parse_jsonl_lenient(data)
        values = report.values
        if slot is not None:
            values = values[1:]  # the slot is a complete line of its own: the first value
        if not values or not jsonl.is_session_header(values[0]):
            reason = "no valid session header: no line is parsable JSON"
            if values:
                first = values[0]
                if isinstance(first, dict) and first.get("type") == "session":
                    reason = "no valid session header: the header has no string id"
                else:
                    reason = "no valid session header: the first JSON line is not a session header"
            foreign = not_a_session_reason(bytes(data), values)
            if foreign is not None and foreign.startswith("not a pi session"):
                reason = foreign  # another agent's transcript: say so (one rule, doctor's)
            raise InvalidSessionFileError(path, reason)
        dropped = list(report.dropped)
        skipped = report.skipped_lines
        entries: list[Any] = [values[0]]
        for v in values[1:]:
            if isinstance(v, dict):
                entries.append(v)
            else:
                skipped += 1  # a non-object line cannot be an entry
        # No id source: ids of a v1 file are derived from the file (DIVERGENCES 10), so
        # every read, in every process, gives the ids the migration writes.
        migrated = migrate_session_entries(entries)
        # A current-version file whose entries have no ids (written by hand or by a
        # third-party tool): ids derived like a v1 file's; the first write puts them in the
        # file (neither agent can link entries without ids: pi and omp would see our
        # appends as orphan roots).
        derived = fill_missing_ids(entries) if migrated is None else 0
        header = entries[0]
        self._header = header
        resolve = resolve_blob_refs
        blobs = None
        for e in entries[1:]:
            if has_blob_ref(e):
                if blobs is None:
                    blobs = self._blob_store()
                resolve(e, blobs)
            clean_openai_replay(e)
            self._index.add_held(e)
        self.load_report = LoadReport(
            skipped_lines=skipped,
            torn_tail=report.torn_tail,
            dropped=dropped,
            migrated_from=migrated,
            ids_derived=derived,
        )
        # A torn last line is not in the index: the file state ends before it, so that it
        # is read (`Follower.sync`) once another writer completes it.
        self._set_file_state(st, data.rfind(b"\n") + 1 if report.torn_tail else len(data))

    def _load_chunked(self, path: str, st: Any) -> bool:
        """The fast path of `_load_bytes` for a big clean file, read `LOAD_CHUNK` at a time.

        Peak memory is one chunk plus the skeletons instead of the whole file. Returns
        False (nothing kept) when the file is not a clean current-version file, so the
        caller reads it whole through the lenient path.
        """
        storage = self._storage
        size = st_int(st, "st_size")
        first = bytes(storage.read_range(path, 0, min(size, LOAD_CHUNK)))
        slot, start = split_slot(first)
        nl = first.find(b"\n", start)
        if nl < 0 or first[:3] == b"\xef\xbb\xbf":
            return False
        try:
            header = jsonl.loads_line(first[start:nl])
        except ValueError:
            return False
        if not (
            isinstance(header, dict)
            and header.get("type") == "session"
            and isinstance(header.get("id"), str)
            and is_current_version(header.get("version"))
        ):
            return False
        split = self._split_point(path, size, nl + 1)
        helper = fork_scan(lambda: self._scan_range(path, split, size, size)) if split else None
        try:
            first_part = self._scan_range(path, nl + 1, split or size, size, first)
            del first
            if first_part is None:
                return False
            if split:
                rest = collect_scan(helper) if helper is not None else None
                helper = None
                if rest is None:
                    rest = self._scan_range(path, split, size, size)  # the helper failed: here
                if rest is None:
                    return False
                first_part = join_scans(first_part, rest)
        finally:
            if helper is not None:
                abandon_scan(helper)
        skeletons = first_part.skeletons
        end = first_part.end
        torn = first_part.torn_tail
        self._header = header
        self._title_slot = slot
        self._index.add_skeletons(skeletons)
        self._index.usage = first_part.usage
        self.load_report = LoadReport(torn_tail=torn, fast_path=True, split_scan=bool(split))
        if torn:
            self.load_report.dropped = [jsonl.DroppedLine(len(skeletons) + 2, end, size - end, "torn")]
        self._set_file_state(st, end)
        if not torn and end == size and size >= self._sidecar.min_bytes:
            self._sidecar.save_skeletons(path, st, self._header, self._index)
        return True

    def _split_point(self, path: str, size: int, body: int) -> int:
        """Where the helper's half of a big file begins (a line start past the middle), or
        0 when the file is scanned in one piece (`parallel_scan` off, a small file)."""
        if not self._parallel_scan or size < parallel_scan_min() or not FORK_AVAILABLE:
            return 0
        mid = body + (size - body) // 2
        window = bytes(self._storage.read_range(path, mid, min(size - mid, 1 << 20)))
        nl = window.find(b"\n")
        if nl < 0 or mid + nl + 1 >= size:
            return 0  # one enormous line around the middle: not worth splitting
        return mid + nl + 1

    def _scan_range(
        self, path: str, begin: int, limit: int, size: int, first: bytes | None = None
    ) -> CleanScan | None:
        """The skeletons of the whole lines of `[begin, limit)` (a line start, and the end of
        the file or a line start), read `LOAD_CHUNK` at a time; orders count from 0. A torn
        last line is allowed only at the end of the file. `first`: the file's first chunk,
        when already read (`begin` is then inside it). None when the bytes are not clean."""
        storage = self._storage
        skeletons: list[Skeleton] = []
        usage: UsageTotals | None = None
        # `buf` holds the file from offset `base`; lines are indexed from `buf[bstart:]`.
        # Each read starts at a line start, so chunks are never glued together.
        if first is not None:
            buf = first[:limit]
            base = 0
            bstart = begin
        else:
            buf = bytes(storage.read_range(path, begin, min(limit - begin, LOAD_CHUNK)))
            base = begin
            bstart = 0
        end = begin
        torn = False
        while True:
            blen = len(buf)
            if not blen and base + bstart >= limit:
                break  # nothing (left) to scan in this range
            last = base + blen >= limit
            stop = blen if last else buf.rfind(b"\n", bstart) + 1
            if stop <= bstart:
                # No complete line in this chunk: read a bigger one from the line start.
                if blen >= 4 * LOAD_CHUNK:
                    return None  # one enormous line: let the whole-file path decide
                base += bstart
                buf = bytes(storage.read_range(path, base, min(limit - base, 2 * max(blen, 1))))
                bstart = 0
                if not buf:
                    return None  # the file shrank underneath
                continue
            scan = scan_clean(
                buf, bstart, len(skeletons), allow_torn_tail=last and limit == size, stop=stop, base=base
            )
            if scan is None:
                return None
            skeletons.extend(scan.skeletons)
            if usage is None:
                usage = scan.usage
            else:
                usage.add_totals(scan.usage)
            end = base + scan.end
            if last:
                torn = scan.torn_tail
                break
            base += stop
            bstart = 0
            buf = b""  # free the chunk before reading the next
            buf = bytes(storage.read_range(path, base, min(limit - base, LOAD_CHUNK)))
            if not buf:
                return None  # the file shrank underneath
        if end != limit and not torn:
            return None  # the range did not end where a line ends
        return CleanScan(skeletons, usage or UsageTotals(), end, torn)

    # -- the sidecar cache
    def _load_from_cache(self, path: str, st: Any) -> bool:
        hit = self._sidecar.load(path, st)
        if hit is None:
            return False
        header, skeletons, usage, cached_size = hit
        self._header = header
        # The slot is rewritten in place (the file keeps its size): always read anew.
        self._title_slot = split_slot(self._first_bytes(path, cached_size))[0]
        self._index.add_cached(skeletons, lambda: self._rescan_cached(path, cached_size))
        self._take_cached_evidence(skeletons.evidence, skeletons.count)
        self._index.usage = usage
        self.load_report = LoadReport(fast_path=True, from_cache=True)
        size = st_int(st, "st_size")
        self._set_file_state(st, cached_size)
        if size > cached_size:
            # Appended since the cache was written: index only the new bytes.
            tail = bytes(self._storage.read_range(path, cached_size, size - cached_size))
            tail = tail[: tail.rfind(b"\n") + 1]  # a torn last line waits for its writer
            self._ingest_bytes(tail, cached_size)
            if self._sidecar.resave_due(cached_size, size):
                self._save_cache_after_ingest(path)
        fs = self.file_state
        if fs is not None and fs.end == size:
            known = self._sidecar.load_context(path, st, self._index)
            last = self._index.last()
            if known is not None and last is not None:
                self._index.know_context(last.id, known)
        return True

    def _first_bytes(self, path: str, size: int) -> bytes:
        """The file's first line, and more: enough to find a title slot and the header."""
        head = bytes(self._storage.read_range(path, 0, min(size, 4096)))
        if b"\n" not in head and len(head) < size:
            head = bytes(self._storage.read_range(path, 0, min(size, LOAD_CHUNK)))
        return head

    def _last_context(self) -> list[Skeleton]:
        last = self._index.last()
        return context_skeletons(self._index, last.id) if last is not None else []

    def keep_last_context(self) -> bool:
        """Keep the last entry's context skeletons beside the index cache for the file as it
        is (an agent resuming the session gets its context before the skeletons decode);
        False when the file is not exactly what was read."""
        fs = self.file_state
        path = self._session_file
        if fs is None or path is None or fs.end != fs.size or len(self._index) == 0:
            return False
        st = stat_of(self._storage, path)
        if st is None or (st_int(st, "st_size"), st_int(st, "st_mtime_ns")) != (fs.size, fs.mtime_ns):
            return False
        sks = self._file_backed(path, self._last_context())
        if sks is None:
            return False
        self._sidecar.save_context(path, st, self._index, lambda: sks)
        return True

    def _file_backed(self, path: str, sks: list[Skeleton]) -> list[Skeleton] | None:
        """`sks` with the entries this process wrote (held in memory) as the file holds
        them: their lines read back from where the last file-backed entry before them
        ends (a later process reads them from the file); None when they are not there."""
        held = [sk for sk in sks if sk.offset < 0]
        if not held:
            return sks
        first = min(sk.order for sk in held)
        before = self._index.skeletons()[:first]
        prev = next((sk for sk in reversed(before) if sk.offset >= 0), None)
        if prev is None:
            return None
        fs = self.file_state
        assert fs is not None
        start = prev.offset + prev.length
        if fs.end - start > _READ_BACK_MAX:
            return None
        data = bytes(self._storage.read_range(path, start, fs.end - start))
        nl = data.find(b"\n")
        if nl < 0:
            return None
        scan = scan_clean(data, nl + 1, prev.order + 1, allow_torn_tail=False)
        if scan is None:
            return None
        back = {sk.order: sk for sk in scan.skeletons}
        out: list[Skeleton] = []
        for sk in sks:
            if sk.offset < 0:
                got = back.get(sk.order)
                if got is None or got.id != sk.id or got.type != sk.type:
                    return None
                got.offset += start
                sk = got
            out.append(sk)
        return out

    def _rescan_cached(self, path: str, cached_size: int) -> list[Skeleton]:
        """The skeletons of the first `cached_size` bytes, scanned from the file: what a
        cache hit whose skeletons do not decode stands for (they are decoded on first use,
        after the open answered)."""
        first = bytes(self._storage.read_range(path, 0, min(cached_size, LOAD_CHUNK)))
        nl = first.find(b"\n", split_slot(first)[1])
        scan = self._scan_range(path, nl + 1, cached_size, cached_size, first) if nl >= 0 else None
        if scan is None or scan.torn_tail:
            raise InvalidSessionFileError(
                path, "the file changed under its index cache; open it again to read it anew"
            )
        return scan.skeletons

    def _save_cache_after_ingest(self, path: str, now: bool = False, background: bool = False) -> bool:
        fs = self.file_state
        if fs is None or fs.end != fs.size:
            return False
        st = stat_of(self._storage, path)
        if st is None or st_int(st, "st_size") != fs.end:
            return False
        sks: list[Skeleton] | None = None
        if now and self._index.held_entries():
            # entries this process wrote: cached as the file holds them (read back), so a
            # session the daemon labelled or appended to still opens from the cache
            sks = self._file_backed(path, self._index.skeletons())
            if sks is None:
                return False
        # the last entry's context is kept when there is time for it (a forked writer)
        self._sidecar.save_skeletons(
            path,
            st,
            self._header,
            self._index,
            now=now,
            background=background,
            context=self._last_context if background else None,
            skeletons=sks,
        )
        return True

    # -- lines appended since the last read
    def ingest_appended_bytes(self) -> list[str]:
        """Fold in whole lines that another process appended since the last read.

        Returns the ids of the new entries (the leaf moves to the last one). A partial last
        line stays unread until it is complete.
        """
        fs = self.file_state
        path = self._session_file
        if fs is None or path is None:
            return []
        st = stat_of(self._storage, path)
        if st is None:
            return []
        size = st_int(st, "st_size")
        if size <= fs.end:
            return []
        start = fs.end
        data = bytes(self._storage.read_range(path, start, size - start))
        cut = data.rfind(b"\n") + 1
        if cut <= 0:
            return []
        before = len(self._index)
        self._ingest_bytes(data[:cut], start)  # moves `fs.end` on (the same object)
        self._set_file_state(st, start + cut)
        new = self._index.skeletons_since(before)
        if new:
            self._leaf_id = new[-1].id
        return [sk.id for sk in new]

    def _ingest_bytes(self, data: bytes, base: int) -> None:
        """Index the whole lines of `data`, which start at file offset `base`."""
        order0 = len(self._index)
        scan = scan_clean(data, 0, order0, allow_torn_tail=False)
        if scan is not None:
            for sk in scan.skeletons:
                sk.offset += base
            self._index.add_skeletons(scan.skeletons)
            self._index.usage.add_totals(scan.usage)
        else:
            report = jsonl.parse_jsonl_lenient(data)
            for v in report.values:
                if isinstance(v, dict):
                    if has_blob_ref(v):
                        resolve_blob_refs(v, self._blob_store())
                    self._index.add_held(v)
            if report.recovered:
                self.load_report.skipped_lines += report.skipped_lines
                self.load_report.dropped.extend(report.dropped)
        if self.file_state is not None:
            self.file_state.end = base + len(data)
