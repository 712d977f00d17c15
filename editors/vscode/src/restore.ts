/**
 * Restoring the workspace's files (and, as a separate choice, the conversation) to a node of
 * any branch (docs/checkpoints.md): "Restore Files to Here…" and "Restore Conversation and
 * Files…" on a Session Tree row, "Undo Last Restore". The daemon's preview
 * (`session/restorePreview`) is shown as a diff editor per file (the file on disk beside a
 * `sessiontree-restore:` document of what the restore leaves) and a quick pick of the files
 * with their statuses; a confirmation, then `session/restore` with the preview's token; a
 * notification with Undo (`session/restoreUndo`).
 */
import * as vscode from 'vscode';
import { errorText } from './client';
import { Command, ErrorCode, Method, Scheme } from './constants';
import type { Daemon } from './protocol';
import type { RestoreFile, RestorePreviewResult, RestoreResult, RestoreUndoResult } from './protocol.generated';
import { type CurrentSession, requireOpen } from './session';
import { offerResumeInstead } from './agents';
import { guarded } from './guard';
import { entryOfArg } from './views/preview';
import {
  confirmation,
  diffTitle,
  type PickItem,
  pickItems,
  restoredMessage,
  undoneMessage,
  writes,
} from './views/restorePreview';

/** Options of a scripted restore (tests, keybindings); a person is asked instead. */
export interface RestoreOptions {
  /** Write files whose state at the current node is not known (see the protocol). */
  includeUnknown?: boolean;
  /** Apply the preview without the quick pick and the confirmation. */
  apply?: boolean;
}

/** What a restore command did (its return value, for tests and scripts). */
export interface RestoreOutcome {
  preview: RestorePreviewResult;
  /** Absent when the person cancelled (or there was nothing to do). */
  result?: RestoreResult;
}

/** How many previews keep their texts for the diff editors (older ones are let go). */
const KEPT_PREVIEWS = 4;

/**
 * The second side of a preview's diff editors: what the restore leaves of each file
 * (`after`), read from the previews held here, and an empty document for a side without file.
 */
export class RestoreDocuments implements vscode.TextDocumentContentProvider {
  private readonly previews = new Map<string, Map<string, string>>();

  /** Keeps a preview's texts (its token names them). */
  hold(pv: RestorePreviewResult): void {
    const texts = new Map<string, string>();
    for (const f of pv.files) {
      if (f.after !== undefined) {
        texts.set(f.path, f.after);
      }
    }
    this.previews.delete(pv.previewToken);
    this.previews.set(pv.previewToken, texts);
    while (this.previews.size > KEPT_PREVIEWS) {
      const oldest = this.previews.keys().next().value as string;
      this.previews.delete(oldest);
    }
  }

  /** The URI of a file's text after the restore (`after`), or of an empty side (`none`). */
  static uri(pv: Pick<RestorePreviewResult, 'previewToken' | 'targetId'>, f: Pick<RestoreFile, 'path' | 'displayPath'>, side: 'after' | 'none'): vscode.Uri {
    const query = new URLSearchParams({ token: pv.previewToken, path: f.path, side }).toString();
    const shown = f.displayPath.replace(/^[/\\]+/, '').replace(/[?#%]/g, '_');
    return vscode.Uri.from({ scheme: Scheme.restore, path: `/${pv.targetId}/${side}/${shown}`, query });
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    const q = new URLSearchParams(uri.query);
    if (q.get('side') !== 'after') {
      return '';
    }
    const text = this.previews.get(q.get('token') ?? '')?.get(q.get('path') ?? '');
    if (text === undefined) {
      return '(this preview is gone: restore again to see it)\n';
    }
    return text;
  }
}

function isConflictError(err: unknown): boolean {
  return !!err && typeof err === 'object' && (err as { code?: unknown }).code === ErrorCode.conflict;
}

/** What the restore commands work on. */
export interface RestoreContext {
  daemon: Daemon;
  current: CurrentSession;
  /** The Session Tree: its leaf, and a reload after the conversation moved. */
  tree: { readonly currentLeafId: string | null; refresh(): Promise<void> };
  treeView: vscode.TreeView<unknown>;
  docs: RestoreDocuments;
  log?: (message: string) => void;
}

type QuickItem = vscode.QuickPickItem & { item?: PickItem };

/** Registers the restore commands and the `sessiontree-restore:` documents. */
export function registerRestore(ctx: RestoreContext): vscode.Disposable[] {
  const { daemon, current, tree, treeView, docs } = ctx;
  /** The last restore made here, per session handle: what its notification's Undo undoes. */
  const lastRestore = new Map<string, RestoreResult>();

  const session = () => requireOpen(current);
  /** A row from a menu argument or the view's selection (not a preview's); a string is an entry id. */
  const entryOf = (arg: unknown) => entryOfArg(arg, treeView.selection);

  /**
   * Asks before writing: a quick pick of the action and Cancel (not a modal dialog, so that
   * the question reads like the preview before it, and end-to-end tests can answer it).
   */
  const confirm = async (question: string, detail: string, action: string): Promise<boolean> => {
    const lines = detail.split('\n').filter(Boolean);
    const pick = await vscode.window.showQuickPick(
      [
        { label: `$(check) ${action}`, detail: lines.join(' '), yes: true },
        { label: '$(close) Cancel', yes: false },
      ],
      { title: question, placeHolder: question, ignoreFocusOut: true },
    );
    return !!pick?.yes;
  };

  /** Shows one file of a preview: its diff editor (disk ↔ after), or the file when nothing changes. */
  const showFile = async (pv: RestorePreviewResult, f: RestoreFile, pinned: boolean): Promise<void> => {
    const opts: vscode.TextDocumentShowOptions = { preview: !pinned, preserveFocus: true };
    const hasAfter = f.after !== undefined || f.status === 'delete';
    if (!hasAfter) {
      if (f.hashBefore !== null && f.status !== 'outside-workspace') {
        await vscode.window.showTextDocument(vscode.Uri.file(f.path), opts);
      }
      return;
    }
    const left = f.hashBefore === null ? RestoreDocuments.uri(pv, f, 'none') : vscode.Uri.file(f.path);
    const right = RestoreDocuments.uri(pv, f, f.status === 'delete' ? 'none' : 'after');
    await vscode.commands.executeCommand('vscode.diff', left, right, diffTitle(f, pv.targetId), opts);
  };

  /** Closes the diff editors of previews (after an apply, a cancel: they no longer hold). */
  const closePreviewTabs = async (): Promise<void> => {
    const tabs = vscode.window.tabGroups.all
      .flatMap((g) => g.tabs)
      .filter((t) => t.input instanceof vscode.TabInputTextDiff && t.input.modified.scheme === Scheme.restore);
    if (tabs.length > 0) {
      await vscode.window.tabGroups.close(tabs, true);
    }
  };

  /** The quick pick of a preview: 'apply', 'toggle' (include unknown files or not), or undefined (cancelled). */
  const choose = (pv: RestorePreviewResult, includeUnknown: boolean, title: string): Promise<'apply' | 'toggle' | undefined> =>
    new Promise((resolve) => {
      const qp = vscode.window.createQuickPick<QuickItem>();
      qp.title = title;
      qp.placeholder = 'A file shows its diff (Enter keeps it open); pick Restore to write, Esc to cancel';
      qp.ignoreFocusOut = true;
      qp.matchOnDescription = true;
      qp.items = pickItems(pv, includeUnknown).map((item): QuickItem =>
        item.kind === 'separator'
          ? { label: item.label, kind: vscode.QuickPickItemKind.Separator }
          : { label: item.label, description: item.description, detail: 'detail' in item ? item.detail : undefined, alwaysShow: 'alwaysShow' in item, item },
      );
      let answer: 'apply' | 'toggle' | undefined;
      const subs: vscode.Disposable[] = [
        qp.onDidChangeActive(([active]) => {
          if (active?.item?.kind === 'file') {
            showFile(pv, active.item.file, false).then(undefined, (err) => ctx.log?.(`restore: ${errorText(err)}`));
          }
        }),
        qp.onDidAccept(() => {
          const item = qp.activeItems[0]?.item;
          if (!item) {
            return;
          }
          if (item.kind === 'file') {
            showFile(pv, item.file, true).then(undefined, (err) => ctx.log?.(`restore: ${errorText(err)}`));
            return;
          }
          if (item.kind === 'command') {
            void vscode.window.showInformationMessage(`Session Tree: ran on the way (the files it changed are not known to the restore): ${item.command}`);
            return;
          }
          answer = item.kind === 'apply' ? 'apply' : 'toggle';
          qp.hide();
        }),
        qp.onDidHide(() => {
          subs.forEach((d) => d.dispose());
          qp.dispose();
          resolve(answer);
        }),
      ];
      qp.show();
    });

  /**
   * Undoes a restore: its files (`session/restoreUndo`, the session's last restore) and, when
   * it moved the conversation and the leaf is still where it put it, the conversation. From
   * the notification (`made` is that restore), a later restore since is refused rather than
   * undone in its place; from the command, `made` counts only when it is the last restore.
   */
  const undo = async (handle: string, made: RestoreResult | undefined, fromNotification: boolean): Promise<RestoreUndoResult | undefined> => {
    const dry = await daemon.request<RestoreUndoResult>(Method.restoreUndo, { session: handle, dryRun: true });
    if (fromNotification && made?.backupId && dry.backupId !== made.backupId) {
      throw new Error('A later restore was made since; "Undo Last Restore" undoes that one.');
    }
    if (!fromNotification && made && made.backupId !== dry.backupId) {
      made = undefined;
    }
    // a restore that wrote no file has nothing to put back: the last one's files are another's
    const files = dry.backupId !== null && (!fromNotification || !!made?.backupId);
    const back = made?.oldLeafId && made.newLeafId && tree.currentLeafId === made.newLeafId ? made.oldLeafId : undefined;
    if (!files && !back) {
      void vscode.window.showInformationMessage('Session Tree: there is no restore to undo.');
      return dry;
    }
    if (!fromNotification) {
      const names = files ? dry.written.map((f) => f.displayPath).join(', ') : '';
      const detail = [names ? `Put back: ${names}.` : '', back ? 'Move the conversation back.' : ''].filter(Boolean).join('\n');
      if (!(await confirm('Undo the last restore?', detail, 'Undo'))) {
        return undefined;
      }
    }
    let res: RestoreUndoResult = { undone: false, backupId: null, written: [], skipped: [] };
    if (files) {
      res = await daemon.request<RestoreUndoResult>(Method.restoreUndo, { session: handle });
    }
    if (back) {
      await daemon.request(Method.navigate, { session: handle, targetId: back });
      await tree.refresh();
    }
    lastRestore.delete(handle);
    const said = [files ? undoneMessage(res) : '', back ? 'The conversation is back where it was.' : ''].filter(Boolean).join(' ');
    void vscode.window.showInformationMessage(`Session Tree: ${said}`);
    return res;
  };

  const offerUndo = (handle: string, res: RestoreResult, message: string) => {
    const canUndo = !!res.backupId || !!res.newLeafId;
    const shown = canUndo ? vscode.window.showInformationMessage(`Session Tree: ${message}`, 'Undo') : vscode.window.showInformationMessage(`Session Tree: ${message}`);
    shown.then(
      (pick) => (pick === 'Undo' ? undo(handle, res, true) : undefined),
      () => undefined,
    ).then(undefined, (err) => void vscode.window.showErrorMessage(`Session Tree: ${errorText(err)}`));
  };

  const restore = async (arg: unknown, conversation: boolean, opts: RestoreOptions | undefined): Promise<RestoreOutcome | undefined> => {
    if (conversation && (await offerResumeInstead(current))) {
      return undefined; // another agent's session is read-only: its files can be restored, not its conversation
    }
    const s = session();
    const entry = entryOf(arg);
    let includeUnknown = opts?.includeUnknown ?? false;
    for (;;) {
      const pv = await daemon.request<RestorePreviewResult>(Method.restorePreview, {
        session: s.handle,
        targetId: entry.id,
        files: true,
        conversation,
        includeUnknown,
        contents: true,
      });
      docs.hold(pv);
      const toWrite = pv.files.filter(writes);
      if (!opts?.apply) {
        if (pv.files.length === 0 && pv.commands.length === 0 && !conversation) {
          void vscode.window.showInformationMessage(`Session Tree: no file the agent changed differs between the current node and "${entry.text.slice(0, 50)}".`);
          return { preview: pv };
        }
        const first = toWrite[0] ?? pv.files.find((f) => f.status === 'conflict');
        if (first) {
          await showFile(pv, first, false);
        }
        const title = `${conversation ? 'Restore the conversation and files' : 'Restore files'} to "${entry.text.slice(0, 50)}"`;
        const answer = await choose(pv, includeUnknown, title);
        if (answer === 'toggle') {
          includeUnknown = !includeUnknown;
          continue;
        }
        if (answer !== 'apply') {
          await closePreviewTabs();
          return { preview: pv };
        }
        const ask = confirmation(pv, entry.text);
        if (!(await confirm(ask.message, ask.detail, 'Restore'))) {
          await closePreviewTabs();
          return { preview: pv };
        }
      }
      let res: RestoreResult;
      try {
        res = await daemon.request<RestoreResult>(Method.restore, {
          session: s.handle,
          targetId: entry.id,
          files: toWrite.length > 0,
          conversation,
          includeUnknown,
          previewToken: pv.previewToken,
        });
      } catch (err) {
        if (!isConflictError(err) || opts?.apply) {
          throw err;
        }
        const again = await vscode.window.showWarningMessage(
          `Session Tree: the files or the session changed since the preview; nothing was written. (${errorText(err)})`,
          'Preview Again',
        );
        if (again === 'Preview Again') {
          continue;
        }
        await closePreviewTabs();
        return { preview: pv };
      }
      await closePreviewTabs();
      if (conversation) {
        await tree.refresh();
      }
      lastRestore.set(s.handle, res);
      offerUndo(s.handle, res, restoredMessage(res, entry.text));
      return { preview: pv, result: res };
    }
  };

  const reg = (id: string, fn: (...args: any[]) => unknown) => vscode.commands.registerCommand(id, guarded(fn, ctx.log));
  // a menu passes the selected rows as the second argument: only a plain object is options
  const scripted = (o: unknown): RestoreOptions | undefined => (o && typeof o === 'object' && !Array.isArray(o) ? (o as RestoreOptions) : undefined);

  return [
    vscode.workspace.registerTextDocumentContentProvider(Scheme.restore, docs),
    reg(Command.restoreFiles, (arg?: unknown, opts?: unknown) => restore(arg, false, scripted(opts))),
    reg(Command.restoreConversationAndFiles, (arg?: unknown, opts?: unknown) => restore(arg, true, scripted(opts))),
    reg(Command.restoreUndo, () => {
      const s = session();
      return undo(s.handle, lastRestore.get(s.handle), false);
    }),
  ];
}
