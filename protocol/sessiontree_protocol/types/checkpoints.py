"""Additions: params and results of `session/restorePreview`, `session/restore` and
`session/restoreUndo` (docs/checkpoints.md): the workspace's files brought to a node."""

from __future__ import annotations

import attrs

from sessiontree_protocol.types.base import _list, _opt, _req


@attrs.define(kw_only=True)
class RestoreFile:
    """One file of a restore (or of an undo)."""

    path: str = _req("The file's absolute path, as the session names it (normalized).")
    display_path: str = _req(
        "The path relative to its workspace folder (absolute when outside every folder)."
    )
    status: str = _req(
        "What the restore does to it: `change`, `create`, `delete` (written), `unchanged`, `conflict` "
        "(your changes and the restore touch the same lines, or the file was changed, created or deleted "
        "on disk since; never written), `unknown` (its content at the current node or at the target is "
        "not known from the session; written only with `includeUnknown` and a known target), "
        "`outside-workspace` (resolves outside the workspace folders / allowedRoots; never written)."
    )
    diff: str = _req(
        "A unified diff from the disk to what the restore writes (`--- a/<displayPath>`, `+++ b/<displayPath>`, "
        "`/dev/null` for a side that does not exist); for a conflict, to the text with conflict markers "
        "(`<<<<<<< disk (your version)`, `||||||| session (current node)`, `=======`, "
        '`>>>>>>> restore target`); "" when nothing changes or nothing is known.'
    )
    hash_before: str | None = _req(
        "SHA-256 (hex) of the file's bytes on disk now; null: no such file.", nullable=True
    )
    hash_after: str | None = _req(
        "SHA-256 (hex) of the bytes the restore writes; null: deleted, or not written.", nullable=True
    )
    reason: str = _opt('Why this status (for conflict, unknown, outside-workspace; "" otherwise).', "")
    conflicts: int = _opt("Conflicting regions (for `conflict`).", 0)
    base: str = _opt(
        "How the file's content at the node the workspace is at is known (`known (edit)`, `absent`, "
        "`unknown: a command ran since ...`).",
        "",
    )
    target: str = _opt("How the file's content at the target is known, or why it is not.", "")
    after: str | None = _opt(
        "With the preview's `contents`: the whole text `diff` leads to (what the restore writes; for a "
        "conflict, the text with the markers), for a diff editor's second side; absent for a file the "
        "restore deletes or leaves alone, and without `contents`."
    )


@attrs.define(kw_only=True)
class RestoreCommand:
    """A command run on the way that may have changed files no call names."""

    entry_id: str | None = _req("The entry that ran it.", nullable=True)
    command: str = _req("The command line.")


@attrs.define(kw_only=True)
class RestorePreviewParams:
    """Addition: params of `session/restorePreview`: what restoring to a node would do; writes nothing."""

    session: str = _req("The session handle.")
    target_id: str = _req("The node to restore to (any branch).")
    files: bool = _opt("Restore the files (the file part of the preview is empty without it).", True)
    conversation: bool = _opt("Restore the conversation too (`session/navigate` to the target).", False)
    include_unknown: bool = _opt(
        "Write files whose state at the current node is not known (the target's content over them, with a "
        "backup), and take files no call on the target's path made as absent there.",
        False,
    )
    contents: bool = _opt(
        "Give each file its `after` text too (the editors' diff views); off by default, as it sends "
        "whole files.",
        False,
    )


@attrs.define(kw_only=True)
class RestorePreviewResult:
    """Addition: result of `session/restorePreview`."""

    target_id: str = _req("The node restored to.")
    base_id: str | None = _req(
        "The node the workspace's files are taken to be at: the leaf, or the target of the last restore "
        "while the leaf has not moved since.",
        nullable=True,
    )
    common_ancestor_id: str | None = _req("The common ancestor of base and target.", nullable=True)
    leaf_id: str | None = _req("The current leaf.", nullable=True)
    files: list[RestoreFile] = _list("The files the agent changed between base and target, by path.")
    commands: list[RestoreCommand] = _list(
        "Commands run between base and target (either side of the ancestor) that may have changed files "
        "no call names: such files are not in `files`."
    )
    conversation: bool = _req("Whether the conversation part is asked (the leaf moves to the target).")
    preview_token: str = _req("Pass to `session/restore` to apply exactly this preview.")


@attrs.define(kw_only=True)
class FileHash:
    """A file's bytes as a preview showed them."""

    path: str = _req("The file's `path` from the preview.")
    hash_before: str | None = _req("Its `hashBefore` from the preview (null: no such file).", nullable=True)


@attrs.define(kw_only=True)
class RestoreParams:
    """Addition: params of `session/restore`: apply a preview (re-checked against the disk)."""

    session: str = _req("The session handle.")
    target_id: str = _req("The node to restore to.")
    files: bool = _opt("Restore the files.", True)
    conversation: bool = _opt(
        "Restore the conversation (`session/navigate` to the target, no summary).", False
    )
    include_unknown: bool = _opt("As in the preview.", False)
    preview_token: str | None = _opt(
        "The preview's token: refused (-32004) when the files or the session changed since the preview."
    )
    hashes: list[FileHash] | None = _opt(
        "Instead of a token: the files' `hashBefore` as previewed, at least every file the restore writes; "
        "refused (-32004) when one differs on disk or a file to write is missing, -32005 when a path is outside "
        "the workspace folders / allowedRoots."
    )


@attrs.define(kw_only=True)
class RestoreResult:
    """Addition: result of `session/restore`."""

    written: list[RestoreFile] = _list("The files written (changed, created, deleted).")
    skipped: list[RestoreFile] = _list("The files left as they are, with their status.")
    backup_id: str | None = _req(
        "The restore's id (its journal and backups in sessiontree's data dir); null when nothing was written.",
        nullable=True,
    )
    old_leaf_id: str | None = _opt("With `conversation`: the leaf before.")
    new_leaf_id: str | None = _opt("With `conversation`: the leaf after (the target).")


@attrs.define(kw_only=True)
class RestoreUndoParams:
    """Addition: params of `session/restoreUndo`: put back the files of the session's last restore."""

    session: str = _req("The session handle.")
    dry_run: bool = _opt("Only say what the undo would write.", False)


@attrs.define(kw_only=True)
class RestoreUndoResult:
    """Addition: result of `session/restoreUndo`."""

    undone: bool = _req("False when there was no restore to undo (or with `dryRun`).")
    backup_id: str | None = _req("The undone restore's id; null when there was none.", nullable=True)
    written: list[RestoreFile] = _list("The files put back (or that would be, with `dryRun`).")
    skipped: list[RestoreFile] = _list(
        "The files left: changed since the restore (`conflict`), or whose backup is missing (`unknown`)."
    )
