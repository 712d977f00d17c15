/** The "Sessions" view: the sessions of the workspace folders, or of every project. */
import * as vscode from 'vscode';
import { Command, Method, Notification } from '../constants';
import type { Daemon, SessionInfo } from '../protocol';
import type { CurrentSession } from '../session';
import { formatAge } from './rows';
import { type AgentFilter, agentBadge, agentIcon, agentName, agentOf } from '../agents';
import { counted } from '../words';

/** Options of the provider, injectable for tests. */
export interface SessionsOptions {
  /** Absolute paths of the workspace folders. */
  folders: () => string[];
  now: () => number;
  debounceMs: number;
  limit: number;
}

/** Merges per-folder lists: one row per path, newest first. */
export function mergeSessions(lists: SessionInfo[][]): SessionInfo[] {
  const byPath = new Map<string, SessionInfo>();
  for (const list of lists) {
    for (const s of list) {
      // Other machines' sessions in the shared store have their own view (views/shared.ts).
      if (s.local === false) {
        continue;
      }
      if (!byPath.has(s.path)) {
        byPath.set(s.path, s);
      }
    }
  }
  return [...byPath.values()].sort((a, b) => Date.parse(b.modified) - Date.parse(a.modified));
}

/**
 * The label of a session row: the daemon's `displayName` (the name the tree title shows too),
 * else, from an older daemon, its title, else its first message, else the file name.
 */
export function sessionLabel(s: SessionInfo): string {
  if (s.displayName) {
    return s.displayName;
  }
  const first = (s.firstMessage ?? '').replace(/\s+/g, ' ').trim();
  return s.title || first || (s.path.split(/[\\/]/).pop() ?? s.path);
}

/** TreeDataProvider over `session/list`, refreshed by `session/didChangeList`. */
export class SessionsProvider implements vscode.TreeDataProvider<SessionInfo>, vscode.Disposable {
  private readonly emitter = new vscode.EventEmitter<SessionInfo | undefined | void>();
  readonly onDidChangeTreeData = this.emitter.event;
  private readonly disposables: vscode.Disposable[] = [];
  private readonly options: SessionsOptions;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private cache: SessionInfo[] | undefined;
  private showAllProjects = false;
  private agents: AgentFilter = 'all';
  private hintText: string | undefined;
  private mixedDialects = false;
  private readonly hintEmitter = new vscode.EventEmitter<string | undefined>();
  /**
   * Fires with the daemon's `hint` when it changes: why no session of pi's family can be listed
   * (no agent directory exists; it names the ones looked in). The view shows it as its message,
   * beside what is listed (another agent's sessions), as the CLI prints it on stderr.
   */
  readonly onDidChangeHint = this.hintEmitter.event;

  constructor(
    private readonly daemon: Daemon,
    private readonly current: CurrentSession,
    options: Partial<SessionsOptions> = {},
  ) {
    this.options = { folders: () => [], now: () => Date.now(), debounceMs: 200, limit: 200, ...options };
    this.disposables.push(
      daemon.onNotification(Notification.didChangeList, () => this.scheduleRefresh()),
      current.onDidChange(() => this.emitter.fire()),
    );
  }

  get showAll(): boolean {
    return this.showAllProjects;
  }

  setShowAll(all: boolean): void {
    this.showAllProjects = all;
    this.refresh();
  }

  /** Whose sessions the view lists (`session/list` param `agent`). */
  get agentFilter(): AgentFilter {
    return this.agents;
  }

  setAgentFilter(agent: AgentFilter): void {
    this.agents = agent;
    this.refresh();
  }

  refresh(): void {
    this.cache = undefined;
    this.emitter.fire();
  }

  scheduleRefresh(): void {
    if (this.timer) {
      clearTimeout(this.timer);
    }
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.refresh();
    }, this.options.debounceMs);
  }

  /** The daemon's note of why no session of pi's family can be listed, if it sent one. */
  get hint(): string | undefined {
    return this.hintText;
  }

  /** Fetches the list (workspace folders, or all projects when toggled or without folders). */
  async fetch(): Promise<SessionInfo[]> {
    const folders = this.options.folders();
    const limit = this.options.limit;
    type Listed = { sessions: SessionInfo[]; hint?: string };
    let answers: Listed[];
    if (this.showAllProjects || folders.length === 0) {
      answers = [await this.daemon.request<Listed>(Method.list, { all: true, limit, ...this.agentParam() })];
    } else {
      answers = await Promise.all(
        folders.map((cwd) => this.daemon.request<Listed>(Method.list, { cwd, limit, ...this.agentParam() })),
      );
    }
    this.setHint(answers.find((a) => a.hint)?.hint);
    const merged = mergeSessions(answers.map((a) => a.sessions));
    // several agents of pi's family listed (no agent dir set): each row says whose it is
    this.mixedDialects = new Set(merged.filter((s) => agentOf(s) === 'pi').map((s) => s.dialect ?? '')).size > 1;
    return merged;
  }

  private setHint(hint: string | undefined): void {
    if (hint !== this.hintText) {
      this.hintText = hint;
      this.hintEmitter.fire(hint);
    }
  }

  private agentParam(): { agent?: AgentFilter } {
    return this.agents === 'all' ? {} : { agent: this.agents };
  }

  async getChildren(element?: SessionInfo): Promise<SessionInfo[]> {
    if (element) {
      return [];
    }
    if (!this.cache) {
      try {
        this.cache = await this.fetch();
      } catch (err) {
        const msg = err instanceof Error ? err.message : String(err);
        // A daemon that did not start was already reported, with its fix, by the client.
        if (!msg.startsWith('Session Tree:')) {
          void vscode.window.showErrorMessage(`Session Tree: could not list sessions: ${msg}`);
        }
        return [];
      }
    }
    return this.cache;
  }

  getTreeItem(s: SessionInfo): vscode.TreeItem {
    const item = new vscode.TreeItem(sessionLabel(s), vscode.TreeItemCollapsibleState.None);
    item.id = s.path;
    const age = formatAge(s.modified, this.options.now());
    const count = counted(s.messageCount, 'msg');
    const project = s.cwd.split(/[\\/]/).filter(Boolean).pop() ?? s.cwd;
    const badge = agentBadge(s) || (this.mixedDialects && s.dialect ? `${s.dialect} · ` : '');
    item.description = badge + (this.showAllProjects ? `${count} · ${age} · ${project}` : `${count} · ${age}`);
    const isCurrent = this.current.value?.path === s.path;
    item.iconPath = new vscode.ThemeIcon(
      agentIcon(agentOf(s)) ?? (isCurrent ? 'comment-discussion' : 'comment'),
      isCurrent ? new vscode.ThemeColor('charts.green') : undefined,
    );
    const md = new vscode.MarkdownString();
    md.appendMarkdown(`**${escapeMd(sessionLabel(s))}**\n\n`);
    if (s.title && s.firstMessage) {
      md.appendText(`${s.firstMessage.slice(0, 500)}\n\n`);
    }
    md.appendMarkdown(`${count} · modified ${escapeMd(s.modified)} · created ${escapeMd(s.created)}\n\n`);
    md.appendMarkdown(`cwd: \`${s.cwd}\`\n\nfile: \`${s.path}\``);
    if (s.resumeCommand) {
      md.appendMarkdown(`\n\n${agentName(agentOf(s))}, read-only · resume: \`${s.resumeCommand}\``);
    }
    item.tooltip = md;
    item.contextValue = isCurrent ? 'session;current' : 'session';
    if (agentOf(s) !== 'pi') {
      // read-only: no rename or fork, "Copy Resume Command" instead
      item.contextValue = `foreignSession;${agentOf(s)}${isCurrent ? ';current' : ''}`;
    }
    item.command = { command: Command.sessionsOpen, title: 'Open Session', arguments: [s] };
    item.resourceUri = undefined;
    return item;
  }

  dispose(): void {
    if (this.timer) {
      clearTimeout(this.timer);
    }
    for (const d of this.disposables) {
      d.dispose();
    }
    this.emitter.dispose();
    this.hintEmitter.dispose();
  }
}

function escapeMd(s: string): string {
  return s.replace(/[\\`*_{}[\]()#+\-.!|<>]/g, '\\$&');
}
