/**
 * Export and compare from the Session Tree's context menu: a branch (the path to a row) or a
 * subtree saved as Markdown, HTML or a session file with secrets redacted by the daemon
 * (`session/export`), and two rows compared in a diff editor of their two sides
 * (`session/diff`: the messages since the common ancestor and the files each side changed).
 */
import * as path from 'node:path';
import * as vscode from 'vscode';
import { Command, ContextKey, Method, Scheme } from './constants';
import type { Daemon } from './protocol';
import { type CurrentSession, requireOpen } from './session';
import { guarded } from './guard';
import { entryOfArg } from './views/preview';
import { counted } from './words';

interface ExportReply {
  content: string;
  format: string;
  entries: number;
  redacted: boolean;
  redactions: { pattern: string; count: number }[];
  findings: { pattern: string; entryId: string | null; preview: string }[];
  suggestedName: string;
}

interface DiffSide {
  nodeId: string;
  text: string;
  document: string;
  files: { path: string; summary: string }[];
}

interface DiffReply {
  ancestorId: string | null;
  a: DiffSide;
  b: DiffSide;
}

/** Options of a scripted export (tests, keybindings); a person is asked instead. */
export interface ExportOptions {
  format?: 'md' | 'html' | 'jsonl';
  redact?: boolean;
  dryRun?: boolean;
  /** Where to save, without a dialog. */
  target?: string;
}

/**
 * Whether `name` is a plain file name: `[A-Za-z0-9._-]` only, not starting with a dot or a
 * dash, no `..`, at most 120 characters. The daemon only suggests such names
 * (`core/export/names.py`); the client checks again before it saves under one (a name from
 * another daemon, or a bug, must not reach outside the folder).
 */
export function isPlainFileName(name: unknown): name is string {
  return typeof name === 'string' && name.length > 0 && name.length <= 120 && /^[A-Za-z0-9_][A-Za-z0-9._-]*$/.test(name) && !name.includes('..');
}

/** The line the user reads after an export: entries, and what was redacted. */
export function exportReport(r: Pick<ExportReply, 'entries' | 'redacted' | 'redactions'>, where: string): string {
  const counts = r.redactions.map((c) => `${c.pattern} ${c.count}`).join(', ');
  const red = !r.redacted ? 'not redacted' : counts ? `redacted: ${counts}` : 'redaction found nothing';
  return `Exported ${counted(r.entries, 'entry')} to ${where} (${red}).`;
}

/** The two sides of a comparison as read-only documents (`sessiontree-diff:`). */
export class DiffDocuments implements vscode.TextDocumentContentProvider {
  private readonly cache = new Map<string, Promise<DiffReply>>();

  constructor(private readonly daemon: Daemon) {}

  static uri(session: string, a: string, b: string, side: 'a' | 'b', title: string): vscode.Uri {
    const query = new URLSearchParams({ session, a, b, side }).toString();
    const id = side === 'a' ? a : b;
    return vscode.Uri.from({ scheme: Scheme.diff, path: `/${title.replace(/[\\/?#%]/g, '_').slice(0, 60) || 'session'}/${side.toUpperCase()}-${id}.md`, query });
  }

  diff(session: string, a: string, b: string): Promise<DiffReply> {
    const key = `${session}\0${a}\0${b}`;
    let p = this.cache.get(key);
    if (!p) {
      p = this.daemon.request<DiffReply>(Method.diff, { session, a, b });
      this.cache.set(key, p);
      // both sides read it at once; a later comparison asks again (the session may have grown)
      setTimeout(() => this.cache.delete(key), 5000);
    }
    return p;
  }

  async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    const q = new URLSearchParams(uri.query);
    const d = await this.diff(q.get('session') ?? '', q.get('a') ?? '', q.get('b') ?? '');
    return q.get('side') === 'a' ? d.a.document : d.b.document;
  }
}

/** Registers the export and compare commands. */
export function registerPictures(ctx: {
  daemon: Daemon;
  current: CurrentSession;
  treeView: vscode.TreeView<unknown>;
  diffDocs: DiffDocuments;
}): vscode.Disposable[] {
  const { daemon, current, treeView, diffDocs } = ctx;
  let compareBase: { handle: string; id: string; text: string } | undefined;

  const session = () => requireOpen(current);
  /** A row from a menu argument or the view's selection (not a preview's); a string is an entry id. */
  const entryOf = (arg: unknown) => entryOfArg(arg, treeView.selection);

  const doExport = async (subtree: boolean, arg: unknown, opts?: ExportOptions) => {
    const s = session();
    const entry = entryOf(arg);
    let format = opts?.format;
    let redact = opts?.redact;
    let dryRun = opts?.dryRun ?? false;
    if (!format) {
      const items: (vscode.QuickPickItem & { f: 'md' | 'html' | 'jsonl'; r?: boolean; dry?: boolean })[] = [
        { label: 'Markdown', description: 'secrets redacted', f: 'md' },
        { label: 'HTML', description: 'one self-contained page, secrets redacted', f: 'html' },
        { label: 'Session file (JSONL)', description: 'the agent opens it; exact copy', f: 'jsonl' },
        { label: 'Session file (JSONL), redacted', f: 'jsonl', r: true },
        { label: 'List what would be redacted', description: 'writes nothing', f: 'md', dry: true },
      ];
      const pick = await vscode.window.showQuickPick(items, {
        placeHolder: subtree ? `Export the subtree of "${entry.text.slice(0, 50)}"` : `Export the path to "${entry.text.slice(0, 50)}"`,
      });
      if (!pick) {
        return undefined;
      }
      format = pick.f;
      redact = pick.r;
      dryRun = !!pick.dry;
    }
    const params: Record<string, unknown> = { session: s.handle, format, dryRun };
    params[subtree ? 'subtreeId' : 'leafId'] = entry.id;
    if (redact !== undefined) {
      params.redact = redact;
    }
    const res = await daemon.request<ExportReply>(Method.export, params);
    if (dryRun) {
      const doc = await vscode.workspace.openTextDocument({
        language: 'markdown',
        content:
          `# Would redact ${res.findings.length} in ${counted(res.entries, 'entry')}\n\n` +
          res.findings.map((f) => `- ${f.pattern} in entry ${f.entryId ?? '-'}: ${f.preview}`).join('\n') +
          '\n',
      });
      await vscode.window.showTextDocument(doc, { preview: true });
      return res;
    }
    let target = opts?.target ? vscode.Uri.file(opts.target) : undefined;
    if (!target) {
      if (!isPlainFileName(res.suggestedName)) {
        throw new Error(`The daemon suggested ${JSON.stringify(res.suggestedName)} for the export, which is not a plain file name; nothing was saved.`);
      }
      const folder = vscode.workspace.workspaceFolders?.[0]?.uri;
      const suggested = folder ? vscode.Uri.joinPath(folder, res.suggestedName) : vscode.Uri.file(path.join(path.dirname(s.path ?? '.'), res.suggestedName));
      target = await vscode.window.showSaveDialog({ defaultUri: suggested, saveLabel: 'Export' });
      if (!target) {
        return undefined;
      }
    }
    await vscode.workspace.fs.writeFile(target, Buffer.from(res.content, 'utf8'));
    void vscode.window.showInformationMessage(`Session Tree: ${exportReport(res, target.fsPath)}`);
    return { ...res, target: target.fsPath };
  };

  const reg = (id: string, fn: (...args: any[]) => unknown) => vscode.commands.registerCommand(id, guarded(fn));
  const scripted = (o: unknown): ExportOptions | undefined =>
    o && typeof o === 'object' && !Array.isArray(o) ? (o as ExportOptions) : undefined;

  return [
    vscode.workspace.registerTextDocumentContentProvider(Scheme.diff, diffDocs),
    reg(Command.treeExport, (arg?: unknown, opts?: unknown) => doExport(false, arg, scripted(opts))),
    reg(Command.treeExportSubtree, (arg?: unknown, opts?: unknown) => doExport(true, arg, scripted(opts))),
    reg(Command.treeSelectForCompare, async (arg?: unknown) => {
      const s = session();
      const e = entryOf(arg);
      compareBase = { handle: s.handle, id: e.id, text: e.text };
      await vscode.commands.executeCommand('setContext', ContextKey.hasCompareBase, true);
      return e.id;
    }),
    reg(Command.treeCompareWithSelected, async (arg?: unknown, other?: unknown) => {
      const s = session();
      const e = entryOf(arg);
      const base = typeof other === 'string' ? { handle: s.handle, id: other, text: other } : compareBase;
      if (!base || base.handle !== s.handle) {
        throw new Error('Pick the first entry with "Select for Compare" first.');
      }
      const left = DiffDocuments.uri(s.handle, base.id, e.id, 'a', s.title);
      const right = DiffDocuments.uri(s.handle, base.id, e.id, 'b', s.title);
      await vscode.commands.executeCommand('vscode.diff', left, right, `${base.id} ↔ ${e.id} (since the common ancestor)`);
      const d = await diffDocs.diff(s.handle, base.id, e.id);
      return { left: left.toString(), right: right.toString(), ancestorId: d.ancestorId, a: d.a.files, b: d.b.files };
    }),
  ];
}
