/**
 * What a restore preview (`session/restorePreview`, docs/checkpoints.md) looks like in VS Code:
 * the quick pick's items (the files with their statuses, each conflict and unknown file
 * explained, the commands run on the way, the actions), the confirmation, and the lines said
 * after a restore or its undo. Plain data: `restore.ts` shows it.
 */
import type { RestoreFile, RestorePreviewResult, RestoreResult, RestoreUndoResult } from '../protocol.generated';

/** The statuses a restore writes (the others are left as they are). */
export const WRITTEN_STATUSES: readonly string[] = ['change', 'create', 'delete'];

/** How each status of a file reads in the preview: a codicon, a word, and what happens to it. */
export const STATUS_TEXT: Record<string, { icon: string; word: string; fate: string }> = {
  change: { icon: 'diff-modified', word: 'change', fate: 'brought to the target, your edits since kept' },
  create: { icon: 'diff-added', word: 'create', fate: 'created as at the target' },
  delete: { icon: 'diff-removed', word: 'delete', fate: 'deleted: the target has no such file' },
  unchanged: { icon: 'check', word: 'unchanged', fate: 'already as the restore would leave it' },
  conflict: { icon: 'warning', word: 'conflict', fate: 'not written: your changes and the restore meet; the diff shows the markers' },
  unknown: { icon: 'question', word: 'unknown', fate: 'left alone: the session does not tell its content' },
  'outside-workspace': { icon: 'circle-slash', word: 'outside the workspace', fate: 'never written: outside the workspace folders' },
};

function statusText(status: string): { icon: string; word: string; fate: string } {
  return STATUS_TEXT[status] ?? { icon: 'file', word: status, fate: 'left as it is' };
}

/** Whether a restore writes this file. */
export function writes(f: Pick<RestoreFile, 'status'>): boolean {
  return WRITTEN_STATUSES.includes(f.status);
}

/** The files a preview writes, and those it leaves (counted by status). */
export function tally(files: readonly RestoreFile[]): { written: RestoreFile[]; left: RestoreFile[]; byStatus: Record<string, number> } {
  const written = files.filter(writes);
  const left = files.filter((f) => !writes(f) && f.status !== 'unchanged');
  const byStatus: Record<string, number> = {};
  for (const f of files) {
    byStatus[f.status] = (byStatus[f.status] ?? 0) + 1;
  }
  return { written, left, byStatus };
}

function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

/** "1 conflict, 2 unknown" for the files a restore leaves. */
export function leftSummary(files: readonly RestoreFile[]): string {
  const { left } = tally(files);
  const counts = new Map<string, number>();
  for (const f of left) {
    counts.set(f.status, (counts.get(f.status) ?? 0) + 1);
  }
  return [...counts].map(([s, n]) => (s === 'conflict' ? plural(n, 'conflict') : `${n} ${statusText(s).word}`)).join(', ');
}

/** Why a file has its status, in a line (the daemon's reason, or the status's fate). */
export function explain(f: RestoreFile, includeUnknown: boolean): string {
  const fate = statusText(f.status).fate;
  const why = f.reason ? `${f.reason}` : '';
  if (f.status === 'unknown') {
    // still unknown with the unknown files included: its target is not known, nothing to write
    const choice = includeUnknown ? ' · nothing to write' : ' · left alone; "Include the unknown files" may write it (a backup is kept)';
    return `${why || fate}${choice}`;
  }
  if (f.status === 'conflict') {
    return `${why || fate} · not written; the diff shows ${f.conflicts > 1 ? `${f.conflicts} conflicting regions` : 'the markers'}`;
  }
  return why ? `${why}` : fate;
}

/** An item of the restore quick pick. */
export type PickItem =
  | { kind: 'apply'; label: string; description?: string; detail?: string; alwaysShow: true }
  | { kind: 'includeUnknown'; label: string; description?: string; detail?: string; alwaysShow: true }
  | { kind: 'file'; label: string; description: string; detail: string; file: RestoreFile }
  | { kind: 'command'; label: string; description: string; command: string }
  | { kind: 'separator'; label: string };

/** The label of the apply item (also what a person types to pick it). */
export function applyLabel(pv: Pick<RestorePreviewResult, 'files' | 'conversation'>): string {
  const n = tally(pv.files).written.length;
  if (n === 0) {
    return pv.conversation ? 'Restore the conversation only' : 'Nothing to write';
  }
  return `Restore ${plural(n, 'file')}${pv.conversation ? ' and the conversation' : ''}`;
}

/** The quick pick's items for a preview, actions first, then the files, then the commands. */
export function pickItems(pv: RestorePreviewResult, includeUnknown: boolean): PickItem[] {
  const items: PickItem[] = [];
  const { written } = tally(pv.files);
  const left = leftSummary(pv.files);
  if (written.length > 0 || pv.conversation) {
    items.push({
      kind: 'apply',
      label: `$(check) ${applyLabel(pv)}`,
      description: left ? `${left} left as they are` : undefined,
      detail: written.length > 0 ? 'A backup of every file is kept; Undo puts them back.' : undefined,
      alwaysShow: true,
    });
  }
  const unknown = pv.files.filter((f) => f.status === 'unknown').length;
  if (includeUnknown) {
    items.push({ kind: 'includeUnknown', label: '$(eye-closed) Leave the unknown files alone', description: 'preview again without them', alwaysShow: true });
  } else if (unknown > 0) {
    items.push({
      kind: 'includeUnknown',
      label: `$(question) Include the unknown files (${unknown})`,
      description: "preview again: the target's content written over them",
      alwaysShow: true,
    });
  }
  if (pv.files.length > 0) {
    items.push({ kind: 'separator', label: 'Files (a file shows its diff: disk ↔ after the restore)' });
  }
  for (const f of pv.files) {
    const t = statusText(f.status);
    items.push({ kind: 'file', label: `$(${t.icon}) ${f.displayPath}`, description: t.word, detail: explain(f, includeUnknown), file: f });
  }
  if (pv.commands.length > 0) {
    items.push({ kind: 'separator', label: 'Commands run on the way (files they changed are not known to the restore)' });
    for (const c of pv.commands) {
      items.push({ kind: 'command', label: `$(terminal) ${c.command.split('\n')[0].slice(0, 120)}`, description: c.entryId ? `at ${c.entryId}` : '', command: c.command });
    }
  }
  return items;
}

/** The confirmation asked before a restore writes: a question and its detail. */
export function confirmation(pv: RestorePreviewResult, targetText: string): { message: string; detail: string } {
  const { written, left } = tally(pv.files);
  const what = written.length > 0 ? `Restore ${plural(written.length, 'file')}` : 'Restore no file';
  const message = `${what}${pv.conversation ? ' and move the conversation' : ''} to "${targetText.slice(0, 60)}"?`;
  const lines: string[] = [];
  if (written.length > 0) {
    lines.push(`Written: ${written.map((f) => `${f.displayPath} (${f.status})`).join(', ')}.`);
  }
  if (left.length > 0) {
    lines.push(`Left as they are: ${left.map((f) => `${f.displayPath} (${statusText(f.status).word})`).join(', ')}.`);
  }
  if (written.length > 0) {
    lines.push('A backup of every file is kept; Undo puts them back.');
  }
  return { message, detail: lines.join('\n') };
}

/** The line said after a restore. */
export function restoredMessage(res: RestoreResult, targetText: string): string {
  const parts: string[] = [];
  const where = `"${targetText.slice(0, 50)}"`;
  if (res.written.length > 0) {
    parts.push(`Restored ${plural(res.written.length, 'file')} to ${where}.`);
  } else {
    parts.push(`No file written for ${where}.`);
  }
  if (res.newLeafId) {
    parts.push('The conversation moved there.');
  }
  const left = res.skipped.filter((f) => f.status !== 'unchanged');
  if (left.length > 0) {
    parts.push(`Left as they are: ${left.map((f) => `${f.displayPath} (${statusText(f.status).word})`).join(', ')}.`);
  }
  return parts.join(' ');
}

/** The line said after an undo. */
export function undoneMessage(res: RestoreUndoResult): string {
  if (!res.undone && res.written.length === 0 && res.skipped.length === 0) {
    return 'There is no restore to undo.';
  }
  const parts = [`Put back ${plural(res.written.length, 'file')}.`];
  if (res.skipped.length > 0) {
    parts.push(`Changed since the restore, left as they are: ${res.skipped.map((f) => f.displayPath).join(', ')}.`);
  }
  return parts.join(' ');
}

/** The title of a file's diff editor: the file on disk beside what the restore leaves. */
export function diffTitle(f: Pick<RestoreFile, 'displayPath' | 'status'>, targetId: string): string {
  const name = f.displayPath.split(/[\\/]/).pop() || f.displayPath;
  return `${name} (disk ↔ restore to ${targetId}: ${statusText(f.status).word})`;
}
