/** Command handlers; every registration is returned for disposal with the extension. */
import * as vscode from 'vscode';
import { Command, ContextKey, FILTER_MODES, type FilterMode, Method, Scheme } from './constants';
import { documentUri } from './documents';
import type { Daemon, NavigateResult, OpenResult, PrepareNavigationResult, SessionInfo } from './protocol';
import { type CurrentSession, requireOpen } from './session';
import { hasChatModel, summarizeWithModel } from './summarize';
import { offerResumeInstead } from './agents';
import { guarded } from './guard';
import { isRowNode, refusePreviewRow } from './views/preview';
import type { RowNode } from './views/rows';
import { LoadMoreElement, messageSetter, type SessionTreeProvider, type TreeElement, treeMessage } from './views/sessionTree';
import type { SessionsProvider } from './views/sessions';
import { sessionLabel } from './views/sessions';
import { counted } from './words';

/** What the command handlers work on. */
export interface CommandContext {
  daemon: Daemon;
  current: CurrentSession;
  tree: SessionTreeProvider;
  sessions: SessionsProvider;
  treeView: vscode.TreeView<TreeElement>;
  /** Where failed commands are logged (the daemon's output channel). */
  log?: (message: string) => void;
}

/** How `navigate` should summarize the branch being left (for scripted calls). */
export interface NavigateOptions {
  /** "none": no summary; "type": ask in an input box; "model": ask a chat model. */
  summary?: 'none' | 'type' | 'model';
  /** A ready summary text (implies summarizing). */
  text?: string;
}

const FILTER_DESCRIPTIONS: Record<FilterMode, string> = {
  default: 'everything but labels, custom entries and model/thinking changes',
  'no-tools': 'like default, without tool results',
  'user-only': 'only your messages',
  'labeled-only': 'only labelled entries',
  all: 'every entry',
};

function isSessionInfo(x: unknown): x is SessionInfo {
  return !!x && typeof x === 'object' && 'path' in x && 'messageCount' in x;
}


/** Registers every command. */
export function registerCommands(ctx: CommandContext): vscode.Disposable[] {
  const { daemon, current, tree, sessions, treeView } = ctx;

  const requireSession = () => requireOpen(current);

  /**
   * A node from a menu argument, an entry id, or the view's selection. A row of a preview
   * (a big session still opening) is refused: nothing is done with it.
   */
  const nodeOf = async (arg: unknown): Promise<RowNode> => {
    if (isRowNode(arg)) {
      return refusePreviewRow(arg);
    }
    if (typeof arg === 'string') {
      await tree.whenIdle();
      const node = tree.nodeById(arg);
      if (node) {
        return node;
      }
      throw new Error(`Entry ${arg} is not shown in the Session Tree view`);
    }
    const sel = treeView.selection.find(isRowNode);
    if (sel) {
      return refusePreviewRow(sel);
    }
    throw new Error('Select an entry in the Session Tree view first.');
  };

  const pathOf = (arg: unknown): string | undefined => {
    if (typeof arg === 'string') {
      return arg;
    }
    if (arg instanceof vscode.Uri) {
      return arg.fsPath;
    }
    if (isSessionInfo(arg)) {
      return arg.path;
    }
    return undefined;
  };

  const handleOf = async (arg: unknown): Promise<{ handle: string; path?: string }> => {
    const p = pathOf(arg);
    if (!p || p === current.value?.path) {
      const s = requireSession();
      return { handle: s.handle, path: s.path };
    }
    const res = await daemon.request<OpenResult>(Method.open, { path: p });
    return { handle: res.session, path: res.path ?? p };
  };

  const wrap = <A extends unknown[]>(fn: (...args: A) => Promise<unknown> | unknown) => guarded(fn, ctx.log);

  const setMessage = messageSetter(treeView);
  const updateTitleMessage = () => {
    setMessage(treeMessage(tree.viewState, tree.filter, tree.search, tree.searchFound, tree.previewPath));
    void vscode.commands.executeCommand('setContext', ContextKey.hasSearch, !!tree.search);
  };

  /** The id of the selected row, to find it again after the rows were reloaded. */
  const selectedId = (): string | undefined => treeView.selection.find(isRowNode)?.row.id;

  /**
   * After the rows changed under the user (filter, cleared search): bring the selected row
   * back into view when it is still shown, else the leaf (or its nearest shown ancestor).
   */
  const revealAfterChange = async (keepId: string | undefined): Promise<void> => {
    const kept = keepId ? tree.nodeById(keepId) : undefined;
    const node = kept ?? tree.leafNode();
    if (!node || !treeView.visible) {
      return;
    }
    // revealed once VS Code has the new rows, not among the rows it is about to replace
    await tree.whenTaken();
    await treeView.reveal(node, { select: !!kept, focus: false, expand: false }).then(undefined, () => undefined);
  };

  const offerText = (message: string, text: string | undefined) => {
    if (!text) {
      void vscode.window.showInformationMessage(message);
      return;
    }
    const copy = 'Copy Text';
    void vscode.window
      .showInformationMessage(`${message} The message was: "${text.slice(0, 120)}${text.length > 120 ? '…' : ''}"`, copy)
      .then((pick) => (pick === copy ? vscode.env.clipboard.writeText(text) : undefined));
  };

  const reg = (id: string, fn: (...args: any[]) => unknown) => vscode.commands.registerCommand(id, wrap(fn));

  return [
    tree.onDidChangeViewState(() => updateTitleMessage()),
    tree.onDidLoad(() => updateTitleMessage()),
    tree.onDidChangePreview(() => updateTitleMessage()),
    reg(Command.sessionsRefresh, () => sessions.refresh()),
    reg(Command.sessionsShowAll, async () => {
      sessions.setShowAll(true);
      await vscode.commands.executeCommand('setContext', ContextKey.showAll, true);
    }),
    reg(Command.sessionsShowWorkspace, async () => {
      sessions.setShowAll(false);
      await vscode.commands.executeCommand('setContext', ContextKey.showAll, false);
    }),
    reg(Command.sessionsOpen, async (arg?: unknown) => {
      let p = pathOf(arg);
      if (!p) {
        const list = await sessions.fetch();
        const pick = await vscode.window.showQuickPick(
          list.map((s) => ({ label: sessionLabel(s), description: counted(s.messageCount, 'msg'), detail: s.path, s })),
          { placeHolder: 'Open a session', matchOnDetail: true },
        );
        p = pick?.s.path;
      }
      if (!p) {
        return undefined;
      }
      const opened = await current.open(p);
      await tree.whenIdle();
      return opened;
    }),
    reg(Command.sessionsOpenFile, async () => {
      const picked = await vscode.window.showOpenDialog({
        canSelectMany: false,
        filters: { 'Session files': ['jsonl'] },
        openLabel: 'Open Session',
      });
      if (picked?.[0]) {
        return current.open(picked[0].fsPath);
      }
      return undefined;
    }),
    reg(Command.sessionsRename, async (arg?: unknown, name?: unknown) => {
      const { handle, path } = await handleOf(arg);
      const old = isSessionInfo(arg) ? sessionLabel(arg) : current.value?.title;
      const value =
        (typeof name === 'string' ? name : undefined) ??
        (await vscode.window.showInputBox({ prompt: 'New session name', value: old, validateInput: (v) => (v.trim() ? undefined : 'The name cannot be empty') }));
      if (value === undefined) {
        return undefined;
      }
      const res = await daemon.request<{ changed: boolean }>(Method.setName, { session: handle, name: value, source: 'user' });
      if (current.value?.handle === handle) {
        current.update({ title: value.trim() });
      }
      sessions.refresh();
      return { ...res, path };
    }),
    reg(Command.sessionsFork, async (arg?: unknown) => {
      const { handle } = await handleOf(arg);
      const res = await daemon.request<{ oldPath: string; newPath: string }>(Method.fork, { session: handle });
      const opened = await current.open(res.newPath);
      sessions.refresh();
      void vscode.window.showInformationMessage(`Forked into ${res.newPath}`);
      return { ...res, session: opened.handle };
    }),
    reg(Command.treeRefresh, () => tree.refresh()),
    reg(Command.treeLoadMore, (gap?: LoadMoreElement) => tree.loadMore(gap instanceof LoadMoreElement ? gap : undefined)),
    // A title-bar button passes the view's selected row as the first argument: only a string
    // is a mode (scripted calls); anything else asks.
    reg(Command.treeSetFilter, async (mode?: unknown) => {
      let m = typeof mode === 'string' ? (mode as FilterMode) : undefined;
      if (!m) {
        const pick = await vscode.window.showQuickPick(
          FILTER_MODES.map((f) => ({ label: f, description: FILTER_DESCRIPTIONS[f], picked: f === tree.filter })),
          { placeHolder: `Filter (now: ${tree.filter})` },
        );
        m = pick?.label as FilterMode | undefined;
      }
      if (!m) {
        return undefined;
      }
      const keep = selectedId();
      await tree.setFilter(m);
      updateTitleMessage();
      await revealAfterChange(keep);
      return m;
    }),
    // As for the filter: the title-bar button passes the selected row, which is no query.
    reg(Command.treeSearch, async (query?: unknown) => {
      const q =
        typeof query === 'string'
          ? query
          : await vscode.window.showInputBox({ prompt: 'Search the session tree (all words must match)', value: tree.search });
      if (q === undefined) {
        return undefined;
      }
      const keep = selectedId();
      await tree.setSearch(q);
      updateTitleMessage();
      if (!tree.search) {
        await revealAfterChange(keep);
      }
      return q;
    }),
    reg(Command.treeClearSearch, async () => {
      const keep = selectedId();
      await tree.setSearch('');
      updateTitleMessage();
      await revealAfterChange(keep);
    }),
    reg(Command.treeRevealLeaf, async () => {
      await tree.clearFocus(); // a search hit's branch gives way to the session's own leaf
      const node = tree.leafNode();
      if (node) {
        await tree.whenTaken();
        await treeView.reveal(node, { select: true, focus: false, expand: true });
      }
      return node?.row.id;
    }),
    reg(Command.treeNavigate, async (arg?: unknown, opts?: unknown) => {
      if (await offerResumeInstead(current)) {
        return undefined; // another agent's session is read-only: resume it there instead
      }
      // a menu passes the selected rows as the second argument: only a plain object is options
      const options = opts && typeof opts === 'object' && !Array.isArray(opts) ? (opts as NavigateOptions) : undefined;
      const s = requireSession();
      // The session graph navigates by id: a node it draws may be hidden by the view's filter.
      const targetId = typeof arg === 'string' ? arg : (await nodeOf(arg)).row.id;
      let summary: string | undefined = options?.text;
      if (summary === undefined && options?.summary !== 'none') {
        const prep = await daemon.request<PrepareNavigationResult>(Method.prepareNavigation, {
          session: s.handle,
          targetId,
        });
        if (prep.entriesToSummarize.length > 0) {
          let how: NavigateOptions['summary'] = options?.summary;
          if (!how) {
            const items: (vscode.QuickPickItem & { how: 'none' | 'type' | 'model' })[] = [
              { label: 'Navigate without a summary', how: 'none' },
              { label: 'Summarize the branch you leave: type a summary…', how: 'type' },
            ];
            if (await hasChatModel()) {
              items.push({ label: 'Summarize the branch you leave with a language model', how: 'model' });
            }
            const pick = await vscode.window.showQuickPick(items, {
              placeHolder: `Leaving ${counted(prep.entriesToSummarize.length, 'entry')} behind`,
            });
            if (!pick) {
              return undefined;
            }
            how = pick.how;
          }
          if (how === 'model') {
            const generated = await vscode.window.withProgress(
              { location: vscode.ProgressLocation.Notification, title: 'Summarizing the branch…', cancellable: true },
              (_progress, token) => summarizeWithModel(prep.entriesToSummarize, token),
            );
            if (!generated) {
              void vscode.window.showWarningMessage('Session Tree: no chat model gave a summary; type one instead.');
            }
            how = 'type';
            summary = generated;
          }
          if (how === 'type') {
            summary = await vscode.window.showInputBox({
              prompt: 'Summary of the branch you are leaving (stored as a branch summary entry)',
              value: summary,
            });
            if (summary === undefined) {
              return undefined;
            }
          }
        }
      }
      const params: Record<string, unknown> = { session: s.handle, targetId };
      if (summary !== undefined && summary !== '') {
        params.summarize = true;
        params.summary = summary;
      }
      const res = await daemon.request<NavigateResult>(Method.navigate, params);
      await tree.refresh();
      if (!res.cancelled && res.editorText) {
        offerText('Moved before the selected message.', res.editorText);
      }
      return res;
    }),
    reg(Command.treeBack, async () => {
      const s = requireSession();
      const res = await daemon.request<NavigateResult>(Method.back, { session: s.handle });
      if (res.cancelled) {
        void vscode.window.showInformationMessage('Session Tree: no earlier leaf to go back to.');
      }
      await tree.refresh();
      return res;
    }),
    reg(Command.treeSetLabel, async (arg?: unknown, label?: unknown) => {
      const s = requireSession();
      const node = await nodeOf(arg);
      const value =
        (typeof label === 'string' ? label : undefined) ??
        (await vscode.window.showInputBox({
          prompt: `Label for "${node.row.text.slice(0, 60)}"`,
          value: node.row.label ?? '',
          placeHolder: 'e.g. before-refactor',
        }));
      if (value === undefined) {
        return undefined;
      }
      const params: Record<string, unknown> = { session: s.handle, targetId: node.row.id };
      if (value.trim()) {
        params.label = value.trim();
      }
      const res = await daemon.request<{ entryId: string }>(Method.setLabel, params);
      await tree.refresh();
      return res;
    }),
    reg(Command.treeClearLabel, async (arg?: unknown) => {
      const s = requireSession();
      const node = await nodeOf(arg);
      const res = await daemon.request<{ entryId: string }>(Method.setLabel, { session: s.handle, targetId: node.row.id });
      await tree.refresh();
      return res;
    }),
    reg(Command.treeBranchToNewSession, async (arg?: unknown) => {
      const s = requireSession();
      const node = await nodeOf(arg);
      if (!(node.row.type === 'message' && node.row.role === 'user')) {
        throw new Error('Branching to a new session starts from one of your messages.');
      }
      const res = await daemon.request<{ selectedText: string; path?: string; session: string }>(
        Method.branchToNewSession,
        { session: s.handle, entryId: node.row.id },
      );
      if (res.path) {
        await current.open(res.path);
      } else {
        current.adopt({ session: res.session, header: {}, leafId: null, path: undefined });
      }
      sessions.refresh();
      offerText('Branched into a new session.', res.selectedText);
      return res;
    }),
    reg(Command.treeFork, async (arg?: unknown) => {
      const s = requireSession();
      const node = await nodeOf(arg);
      const res = await daemon.request<{ path?: string }>(Method.createBranchedSession, {
        session: s.handle,
        leafId: node.row.id,
      });
      if (res.path) {
        await current.open(res.path);
        void vscode.window.showInformationMessage(`New session up to this entry: ${res.path}`);
      }
      sessions.refresh();
      return res;
    }),
    reg(Command.treeShowContext, async (arg?: unknown) => {
      const s = requireSession();
      const node = await nodeOf(arg);
      const doc = await vscode.workspace.openTextDocument(documentUri(Scheme.context, s.handle, node.row.id, s.title));
      await vscode.window.showTextDocument(doc, { preview: true });
      return doc.uri.toString();
    }),
    reg(Command.treeShowEntryJson, async (arg?: unknown) => {
      const s = requireSession();
      const node = await nodeOf(arg);
      const doc = await vscode.workspace.openTextDocument(documentUri(Scheme.entry, s.handle, node.row.id, s.title));
      await vscode.window.showTextDocument(doc, { preview: true });
      return doc.uri.toString();
    }),
    reg(Command.treeCopyId, async (arg?: unknown) => {
      const node = await nodeOf(arg);
      await vscode.env.clipboard.writeText(node.row.id);
      return node.row.id;
    }),
  ];
}

