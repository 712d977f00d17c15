/** Entry point: wires the daemon connection, the two views, the documents and the commands. */
import * as vscode from 'vscode';
import { DaemonClient } from './client';
import { Command, ContextKey, FILTER_MODES, type FilterMode, Scheme, Setting, View } from './constants';
import { registerCommands } from './commands';
import { registerAgentCommands } from './agents';
import { registerSessionSearch } from './search';
import { SessionDocuments } from './documents';
import { GraphPanel } from './graphPanel';
import { DiffDocuments, registerPictures } from './pictures';
import { CurrentSession } from './session';
import { messageSetter, SessionTreeProvider, type TreeElement } from './views/sessionTree';
import { SessionsProvider } from './views/sessions';
import { registerShared } from './views/shared';
import { registerRestore, RestoreDocuments } from './restore';

/** What `activate` returns: the live parts, for other extensions and the end-to-end tests. */
export interface SessionTreeApi {
  daemon: DaemonClient;
  current: CurrentSession;
  tree: SessionTreeProvider;
  sessions: SessionsProvider;
  treeView: vscode.TreeView<TreeElement>;
  sessionsView: vscode.TreeView<unknown>;
  graph: GraphPanel;
  /** The reveal of the leaf that followed the last load, done (tests wait for it). */
  whenLeafRevealed: () => Promise<void>;
}

let daemonRef: DaemonClient | undefined;

export function activate(context: vscode.ExtensionContext): SessionTreeApi {
  const config = vscode.workspace.getConfiguration(Setting.section);
  const daemon = new DaemonClient(context.extensionPath, vscode.Uri.joinPath(context.globalStorageUri, 'pycache').fsPath);
  daemonRef = daemon;
  const current = new CurrentSession(daemon);
  const defaultFilter = config.get<string>(Setting.defaultFilter) as FilterMode;
  const tree = new SessionTreeProvider(daemon, current, {
    filter: FILTER_MODES.includes(defaultFilter) ? defaultFilter : 'default',
    pageSize: Math.max(50, config.get<number>(Setting.pageSize) ?? 500),
    log: (m) => daemon.output.warn(m),
  });
  const sessions = new SessionsProvider(daemon, current, {
    folders: () => (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath),
  });
  const treeView = vscode.window.createTreeView(View.tree, { treeDataProvider: tree, showCollapseAll: true });
  const sessionsView = vscode.window.createTreeView(View.sessions, { treeDataProvider: sessions });
  // no agent directory of pi's family: the daemon says which it looked for (the CLI prints it)
  const sessionsMessage = messageSetter(sessionsView);
  const docs = new SessionDocuments(daemon);
  const graph = new GraphPanel(daemon, current, (m) => daemon.output.error(m));

  const followLive = () => vscode.workspace.getConfiguration(Setting.section).get<boolean>(Setting.followLive, true);
  let leafRevealed: Promise<void> = Promise.resolve();
  /** Brings the leaf's row (or its nearest shown ancestor) into view, without selecting it. */
  const revealLeaf = () => {
    if (!followLive() || !treeView.visible) {
      return;
    }
    const node = tree.leafNode();
    if (node) {
      // once VS Code has the rows the node is among (a reveal before lands on the old ones)
      leafRevealed = tree
        .whenTaken()
        .then(() => treeView.reveal(node, { select: false, focus: false, expand: true }))
        .then(undefined, () => undefined);
    }
  };
  context.subscriptions.push(
    current,
    tree,
    sessions,
    treeView,
    sessionsView,
    vscode.workspace.registerTextDocumentContentProvider(Scheme.context, docs),
    vscode.workspace.registerTextDocumentContentProvider(Scheme.entry, docs),
    sessions.onDidChangeHint((hint) =>
      sessionsMessage(hint ? `${hint}. Set "Session Tree: Agent Dir" to use another.` : undefined),
    ),
    current.onDidChange((s) => {
      treeView.description = s?.title;
      void vscode.commands.executeCommand('setContext', ContextKey.hasSession, !!s);
    }),
    // The key tells what an empty view means. It is left alone when rows come: a view with rows
    // shows no welcome text, and the key reaches the window before the rows do, so setting it
    // would leave the empty view of the moment before without its "Loading…".
    tree.onDidChangeViewState((state) => {
      if (state !== 'rows') {
        void vscode.commands.executeCommand('setContext', ContextKey.treeState, state);
      }
    }),
    tree.onDidLoad((e) => {
      if (e.leafChanged) {
        revealLeaf();
      }
    }),
    // a big session's preview is drawn like its first rows: the leaf's row in view; the title
    // of the session shown before goes meanwhile (the file's name is in the view's message)
    tree.onDidChangePreview((preview) => {
      treeView.description = preview ? undefined : current.value?.title;
      if (preview) {
        revealLeaf();
      }
    }),
    vscode.workspace.onDidChangeWorkspaceFolders(() => sessions.refresh()),
    daemon.onDidRestartAfterCrash(() => {
      const path = current.value?.path;
      current.clear();
      sessions.refresh();
      if (path) {
        current.open(path).then(undefined, () => undefined);
      }
    }),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (
        e.affectsConfiguration(`${Setting.section}.${Setting.serverCommand}`) ||
        e.affectsConfiguration(`${Setting.section}.${Setting.serverArgs}`) ||
        e.affectsConfiguration(`${Setting.section}.${Setting.python}`) ||
        e.affectsConfiguration(`${Setting.section}.${Setting.agentDir}`) ||
        e.affectsConfiguration(`${Setting.section}.store`) ||
        e.affectsConfiguration(`${Setting.section}.${Setting.preindex}`)
      ) {
        void vscode.commands.executeCommand(Command.serverRestart);
      }
      if (e.affectsConfiguration(`${Setting.section}.${Setting.defaultFilter}`)) {
        const mode = vscode.workspace.getConfiguration(Setting.section).get<string>(Setting.defaultFilter) as FilterMode;
        if (FILTER_MODES.includes(mode)) {
          void vscode.commands.executeCommand(Command.treeSetFilter, mode);
        }
      }
    }),
    ...registerCommands({ daemon, current, tree, sessions, treeView, log: (m) => daemon.output.error(m) }),
    ...registerSessionSearch({ daemon, current, tree, treeView }),
    vscode.commands.registerCommand(Command.serverRestart, async () => {
      current.clear();
      try {
        await daemon.restart();
      } catch {
        // the reason was already shown to the user
      }
      sessions.refresh();
    }),
    vscode.commands.registerCommand(Command.serverShowLog, () => daemon.output.show()),
    ...registerAgentCommands(current, sessions),
    graph,
    vscode.commands.registerCommand(Command.graphShow, async () => {
      try {
        return await graph.show();
      } catch (err) {
        void vscode.window.showErrorMessage(`Session Tree: ${err instanceof Error ? err.message : String(err)}`);
        return undefined;
      }
    }),
    ...registerPictures({ daemon, current, treeView, diffDocs: new DiffDocuments(daemon) }),
    ...registerShared(daemon, sessions.onDidChangeTreeData, (result, path) => current.adopt(result, path)),
    ...registerRestore({ daemon, current, tree, treeView, docs: new RestoreDocuments(), log: (m) => daemon.output.error(m) }),
  );
  void vscode.commands.executeCommand('setContext', ContextKey.showAll, false);
  void vscode.commands.executeCommand('setContext', ContextKey.hasSession, false);
  void vscode.commands.executeCommand('setContext', ContextKey.treeState, 'none');
  daemon.start().then(
    () => sessions.refresh(),
    () => undefined,
  );
  return { daemon, current, tree, sessions, treeView, sessionsView, graph, whenLeafRevealed: () => leafRevealed };
}

export function deactivate(): Promise<void> | undefined {
  const d = daemonRef;
  daemonRef = undefined;
  return d?.dispose();
}
