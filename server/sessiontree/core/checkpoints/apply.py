"""Writing a restore: re-checked, backed up, journaled, undoable.

An apply takes a plan made just now and the hashes a preview showed (or its token): any
file whose disk bytes differ from them refuses the whole restore (`ConflictError`), before
anything is written. Then:

1. every file's bytes before and after go into the content-addressed store (the backups);
2. a journal (``checkpoints/restores/<id>.json``, state ``applying``) names each file with
   the hashes of its old and new bytes, and is fsynced;
3. each file is written atomically (`atomic.write_atomic`: a temporary file beside it,
   fsync, rename) or removed;
4. the journal's state becomes ``done``.

A crash between 2 and 4 leaves each file old or new; `recover` (run before every restore
and when the daemon starts) rolls such a journal back: every file that holds its new bytes
gets its old ones again (a file changed since by someone else is left and reported).
`undo_last` reverses a session's last restore the same way, journaled too, and only for the
files that still hold what the restore wrote. Nothing is written outside the roots the
plan resolved: each path is resolved and checked again just before its write.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from ..errors import ConflictError
from .atomic import NEW_FILE_MODE, fsync_dir, fsync_dirs, prepare_many, tmp_prefix, write_atomic
from .restore import FilePlan, RestorePlan, inside_roots, unified_diff
from .snapshots import SnapshotStore, sha256

__all__ = ["Applied", "RestoreRecord", "apply_plan", "files_at", "last_restore", "recover", "undo_last"]


@dataclass
class RestoreRecord:
    """One restore (or undo) as its journal keeps it."""

    id: str
    session_file: str | None
    target_id: str | None
    base_id: str | None
    leaf_id: str | None
    kind: str
    """``restore`` or ``undo``."""
    state: str
    """``applying``, ``done``, ``undone``, ``rolled-back``."""
    created: float
    files: list[dict[str, Any]] = field(default_factory=list)
    """``{path, real, display, before, after, status}``: hashes of the old and new bytes
    (None: no file)."""
    undoes: str | None = None

    def to_json(self) -> bytes:
        """The journal's bytes."""
        return orjson.dumps(self.__dict__, option=orjson.OPT_INDENT_2)


@dataclass
class Applied:
    """What an apply or an undo wrote."""

    record: RestoreRecord
    written: list[FilePlan]
    skipped: list[FilePlan]


def _dir(store: SnapshotStore) -> str:
    return os.path.join(store.root, "restores")


def _save(store: SnapshotStore, rec: RestoreRecord) -> None:
    d = _dir(store)
    os.makedirs(d, mode=0o700, exist_ok=True)
    write_atomic(os.path.join(d, rec.id + ".json"), rec.to_json())


def _records(store: SnapshotStore) -> list[RestoreRecord]:
    out = []
    try:
        names = sorted(os.listdir(_dir(store)))
    except OSError:
        return []
    for name in names:
        if not name.endswith(".json") or name.startswith("."):
            continue
        try:
            with open(os.path.join(_dir(store), name), "rb") as f:
                raw = orjson.loads(f.read())
            out.append(RestoreRecord(**raw))
        except (OSError, orjson.JSONDecodeError, TypeError):
            continue
    out.sort(key=lambda r: (r.created, r.id))
    return out


def _new_id() -> str:
    return time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + "-" + os.urandom(4).hex()


def _disk_hash(real: str) -> str | None:
    try:
        with open(real, "rb") as f:
            return sha256(f.read())
    except FileNotFoundError:
        return None


def _mode(real: str) -> int:
    try:
        return os.stat(real).st_mode & 0o7777
    except OSError:
        return NEW_FILE_MODE


def apply_plan(
    plan: RestorePlan,
    store: SnapshotStore,
    roots: Sequence[str],
    *,
    expected: Mapping[str, str | None] | None = None,
    token: str | None = None,
    excluded: Sequence[str] = (),
    after_each: Callable[[int], None] | None = None,
) -> Applied:
    """Write ``plan``'s files, refusing if the disk is not what the preview showed."""
    if token is not None and token != plan.token:
        raise ConflictError("The files or the session changed since the preview; preview again")
    if expected is not None:
        by_path = {f.path: f for f in plan.files}
        for path, h in expected.items():
            f = by_path.get(path)
            if f is None or f.hash_before != h:
                raise ConflictError(f"{path} changed since the preview; preview again")
        for f in plan.files:
            if f.writes and f.path not in expected:
                raise ConflictError(f"{f.display} would be written but was not in the preview; preview again")
    recover(store)
    todo = [f for f in plan.files if f.writes and f.real is not None]
    for f in todo:
        if _disk_hash(f.real) != f.hash_before:  # type: ignore[arg-type]
            raise ConflictError(f"{f.display} changed since the preview; preview again")
    rec = RestoreRecord(
        _new_id(),
        plan.session_file,
        plan.target_id,
        plan.base_id,
        plan.leaf_id,
        "restore",
        "applying",
        time.time(),
    )
    befores = [_read(f.real) for f in todo]  # type: ignore[arg-type]
    store.put_many([b for b in befores if b is not None] + [f.new for f in todo if f.new is not None])
    for f in todo:
        rec.files.append(
            {
                "path": f.path,
                "real": f.real,
                "display": f.display,
                "before": f.hash_before,
                "after": f.hash_after,
                "status": f.status,
            }
        )
    _run(store, rec, todo_bytes=[f.new for f in todo], roots=roots, excluded=excluded, after_each=after_each)
    return Applied(rec, todo, [f for f in plan.files if f not in todo])


def _read(real: str) -> bytes | None:
    try:
        with open(real, "rb") as f:
            return f.read()
    except FileNotFoundError:
        return None


def _run(
    store: SnapshotStore,
    rec: RestoreRecord,
    todo_bytes: Sequence[bytes | None],
    roots: Sequence[str],
    excluded: Sequence[str],
    after_each: Callable[[int], None] | None,
) -> None:
    _save(store, rec)
    real_roots = [os.path.realpath(r) for r in roots]

    def check(real: str) -> bool:
        found = inside_roots(real, real_roots, excluded)
        return found is not None and found[0] == os.path.realpath(real)

    # every new content durable beside its file first, then one rename (or unlink) a file
    for f, data in zip(rec.files, todo_bytes, strict=True):
        if data is not None and check(f["real"]):
            os.makedirs(os.path.dirname(f["real"]), exist_ok=True)
    writes = [
        (f["real"], d, _mode(f["real"])) for f, d in zip(rec.files, todo_bytes, strict=True) if d is not None
    ]
    temps = iter(prepare_many(writes))
    try:
        for i, (f, data) in enumerate(zip(rec.files, todo_bytes, strict=True)):
            real = f["real"]
            if not check(real):
                raise ConflictError(f"{real} no longer resolves inside the workspace; nothing more written")
            if data is None:
                try:
                    os.unlink(real)
                except FileNotFoundError:
                    pass
            else:
                os.replace(next(temps), real)
            if after_each is not None:
                after_each(i)
    finally:
        for tmp in temps:  # the ones not renamed when a check stopped the loop
            try:
                os.unlink(tmp)
            except OSError:
                pass
    fsync_dirs([os.path.dirname(f["real"]) for f in rec.files])
    rec.state = "done"
    _save(store, rec)


def recover(store: SnapshotStore) -> list[str]:
    """Roll back every restore a crash left half done; the files it could not put back."""
    left: list[str] = []
    for rec in _records(store):
        if rec.state != "applying":
            continue
        for f in rec.files:
            real = f["real"]
            now = _disk_hash(real)
            if now == f["before"]:
                pass
            elif now == f["after"]:
                old = store.get(f["before"]) if f["before"] else None
                if f["before"] and old is None:
                    left.append(real)
                    continue
                if old is None:
                    os.unlink(real)
                    fsync_dir(os.path.dirname(real))
                else:
                    write_atomic(real, old, _mode(real))
            else:
                left.append(real)
            _sweep(real)
        rec.state = "rolled-back"
        _save(store, rec)
    return left


def _sweep(real: str) -> None:
    """Remove the temporary files a crash left beside ``real``."""
    d, prefix = os.path.dirname(real), tmp_prefix(real)
    try:
        names = os.listdir(d)
    except OSError:
        return
    for name in names:
        if name.startswith(prefix) and name.endswith(".tmp"):
            try:
                os.unlink(os.path.join(d, name))
            except OSError:
                pass


def last_restore(store: SnapshotStore, session_file: str | None) -> RestoreRecord | None:
    """The session's last restore still in effect (done, not undone)."""
    recs = [r for r in _records(store) if r.session_file == session_file and r.kind == "restore"]
    if not recs or recs[-1].state != "done":
        return None
    return recs[-1]


def files_at(store: SnapshotStore, session_file: str | None, leaf_id: str | None) -> str | None:
    """The node the workspace's files were last restored to, while the leaf is still the one
    they were restored from (or that node itself); None: take the leaf."""
    rec = last_restore(store, session_file)
    if rec is None or rec.target_id is None:
        return None
    return rec.target_id if leaf_id in (rec.leaf_id, rec.target_id) else None


def undo_last(
    store: SnapshotStore,
    session_file: str | None,
    roots: Sequence[str],
    *,
    excluded: Sequence[str] = (),
    dry_run: bool = False,
) -> Applied | None:
    """Put back the files of the session's last restore (those still as it left them);
    None when there is none to undo."""
    recover(store)
    last = last_restore(store, session_file)
    if last is None:
        return None
    rec = RestoreRecord(
        _new_id(),
        session_file,
        last.base_id,
        last.target_id,
        last.leaf_id,
        "undo",
        "applying",
        time.time(),
        undoes=last.id,
    )
    written: list[FilePlan] = []
    skipped: list[FilePlan] = []
    data: list[bytes | None] = []
    for f in last.files:
        now = _disk_hash(f["real"])
        fp = FilePlan(
            f["path"], f["display"], "change", hash_before=now, hash_after=f["before"], real=f["real"]
        )
        old = store.get(f["before"]) if f["before"] else None
        if now != f["after"]:
            fp.status, fp.reason, fp.hash_after = "conflict", "changed since the restore; left as it is", None
            skipped.append(fp)
            continue
        if f["before"] and old is None:
            fp.status, fp.reason = "unknown", "its backup is missing or damaged"
            skipped.append(fp)
            continue
        fp.status = "delete" if old is None else "create" if now is None else "change"
        fp.new = old
        cur = _read(f["real"])
        fp.diff = unified_diff(
            cur.decode("utf-8", "replace") if cur is not None else None,
            old.decode("utf-8", "replace") if old is not None else None,
            f["display"],
        )
        written.append(fp)
        data.append(old)
        rec.files.append({**f, "before": now, "after": f["before"]})
    if dry_run:
        return Applied(rec, written, skipped)
    _run(store, rec, data, roots, excluded, None)
    last.state = "undone"
    _save(store, last)
    return Applied(rec, written, skipped)
