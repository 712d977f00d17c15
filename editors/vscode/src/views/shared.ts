/**
 * The "Shared Sessions" view: the sessions other machines keep in the shared store
 * (docs/shared-store.md), grouped by machine, with who ran them and where. A click opens one
 * from the store (`session/openShared`) in the Session Tree, which then follows it live like a
 * local file. Without a store, or when it cannot be reached, the view says so in one row;
 * the Sessions view (local files) is unaffected either way.
 */
import * as vscode from 'vscode';
import type { Daemon, SessionInfo } from '../protocol';
import { formatAge } from './rows';
import { sessionLabel } from './sessions';
import { counted } from '../words';

export const SharedMethod = { list: 'session/list', openShared: 'session/openShared' } as const;
export const SharedCommand = { open: 'sessiontree.shared.open', refresh: 'sessiontree.shared.refresh' } as const;
export const SHARED_VIEW = 'sessiontree.shared';

/** The store's state as `session/list` reports it. */
export interface StoreState {
  reachable: boolean;
  machine: string;
  error?: string | null;
}

export type SharedNode =
  | { kind: 'machine'; machine: string; sessions: SessionInfo[] }
  | { kind: 'session'; info: SessionInfo }
  | { kind: 'message'; text: string; detail?: string };

/** The rows of the view: one per machine (newest first within), or one message. */
export function sharedRows(sessions: SessionInfo[], store: StoreState | undefined | null): SharedNode[] {
  if (!store) {
    return [{ kind: 'message', text: 'No shared store configured', detail: 'Set sessiontree.store (a postgresql:// URL).' }];
  }
  if (!store.reachable) {
    return [
      {
        kind: 'message',
        text: 'Shared store unreachable — local sessions keep working',
        detail: store.error ?? undefined,
      },
    ];
  }
  const byMachine = new Map<string, SessionInfo[]>();
  for (const s of sessions) {
    if (s.local !== false) {
      continue;
    }
    const m = s.machine ?? '?';
    const list = byMachine.get(m) ?? [];
    list.push(s);
    byMachine.set(m, list);
  }
  if (byMachine.size === 0) {
    return [{ kind: 'message', text: 'No shared sessions from other machines yet' }];
  }
  return [...byMachine.keys()]
    .sort()
    .map((machine) => ({
      kind: 'machine' as const,
      machine,
      sessions: (byMachine.get(machine) ?? []).sort((a, b) => Date.parse(b.modified) - Date.parse(a.modified)),
    }));
}

/** TreeDataProvider of the shared sessions, refreshed with the Sessions view's list changes. */
export class SharedSessionsProvider implements vscode.TreeDataProvider<SharedNode>, vscode.Disposable {
  private readonly emitter = new vscode.EventEmitter<SharedNode | undefined | void>();
  readonly onDidChangeTreeData = this.emitter.event;
  private readonly disposables: vscode.Disposable[] = [];
  private cache: SharedNode[] | undefined;

  /**
   * `listChanged` is the Sessions view's own change event: it refreshes on
   * `session/didChangeList`, and a notification has one handler per method in the language
   * client, so this view follows that view rather than registering a second one.
   */
  constructor(
    private readonly daemon: Daemon,
    listChanged: vscode.Event<unknown>,
    private readonly now: () => number = () => Date.now(),
    private readonly limit = 500,
  ) {
    this.disposables.push(listChanged(() => this.refresh()));
  }

  refresh(): void {
    this.cache = undefined;
    this.emitter.fire();
  }

  async fetch(): Promise<SharedNode[]> {
    const res = await this.daemon.request<{ sessions: SessionInfo[]; store?: StoreState | null }>(SharedMethod.list, {
      all: true,
      limit: this.limit,
    });
    return sharedRows(res.sessions, res.store);
  }

  async getChildren(element?: SharedNode): Promise<SharedNode[]> {
    if (element) {
      return element.kind === 'machine' ? element.sessions.map((info) => ({ kind: 'session' as const, info })) : [];
    }
    if (!this.cache) {
      try {
        this.cache = await this.fetch();
      } catch (err) {
        const msg = err instanceof Error ? err.message : String(err);
        return [{ kind: 'message', text: 'Could not list shared sessions', detail: msg }];
      }
    }
    return this.cache;
  }

  getTreeItem(node: SharedNode): vscode.TreeItem {
    if (node.kind === 'message') {
      const item = new vscode.TreeItem(node.text, vscode.TreeItemCollapsibleState.None);
      item.description = node.detail;
      item.tooltip = node.detail ? `${node.text}\n\n${node.detail}` : node.text;
      item.iconPath = new vscode.ThemeIcon(node.text.includes('unreachable') ? 'warning' : 'info');
      item.contextValue = 'shared;message';
      return item;
    }
    if (node.kind === 'machine') {
      const item = new vscode.TreeItem(node.machine, vscode.TreeItemCollapsibleState.Expanded);
      const users = [...new Set(node.sessions.map((s) => s.user).filter(Boolean))].join(', ');
      item.id = `machine:${node.machine}`;
      item.description = `${node.sessions.length} session${node.sessions.length === 1 ? '' : 's'}${users ? ` · ${users}` : ''}`;
      item.iconPath = new vscode.ThemeIcon('vm');
      item.contextValue = 'shared;machine';
      return item;
    }
    const s = node.info;
    const item = new vscode.TreeItem(sessionLabel(s), vscode.TreeItemCollapsibleState.None);
    item.id = `shared:${s.id}`;
    const project = s.cwd.split(/[\\/]/).filter(Boolean).pop() ?? s.cwd;
    item.description = `${s.user ?? '?'} · ${project} · ${formatAge(s.modified, this.now())}`;
    item.tooltip = `${sessionLabel(s)}\n\n${counted(s.messageCount, 'entry')} · ${s.user ?? '?'}@${s.machine ?? '?'}\ncwd: ${s.cwd}\nid: ${s.id}`;
    item.iconPath = new vscode.ThemeIcon('cloud');
    item.contextValue = 'shared;session';
    item.command = { command: SharedCommand.open, title: 'Open Shared Session', arguments: [s] };
    return item;
  }

  dispose(): void {
    for (const d of this.disposables) {
      d.dispose();
    }
    this.emitter.dispose();
  }
}

/**
 * Creates the view and its commands; the disposables to push on the extension's context.
 * `adopt` makes an opened daemon session the Session Tree's current one.
 */
export function registerShared(
  daemon: Daemon,
  listChanged: vscode.Event<unknown>,
  adopt: (result: { session: string; header: Record<string, unknown>; leafId: string | null; displayName?: string; path?: string }, path?: string) => unknown,
): vscode.Disposable[] {
  const provider = new SharedSessionsProvider(daemon, listChanged);
  const view = vscode.window.createTreeView(SHARED_VIEW, { treeDataProvider: provider });
  return [
    provider,
    view,
    vscode.commands.registerCommand(SharedCommand.refresh, () => provider.refresh()),
    vscode.commands.registerCommand(SharedCommand.open, async (info?: SessionInfo) => {
      if (!info) {
        return undefined;
      }
      try {
        const res = await daemon.request<{
          session: string;
          header: Record<string, unknown>;
          leafId: string | null;
          displayName?: string;
          path?: string;
        }>(SharedMethod.openShared, { sessionId: info.id });
        return adopt({ ...res, path: res.path ?? info.path }, info.path);
      } catch (err) {
        const msg = err instanceof Error ? err.message : String(err);
        void vscode.window.showErrorMessage(`Session Tree: could not open the shared session: ${msg}`);
        provider.refresh();
        return undefined;
      }
    }),
  ];
}
