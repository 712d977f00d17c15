/** The "Session Tree" view: the rows of `session/view` as native, nested TreeItems. */
import * as vscode from 'vscode';
import { Command, FILTER_MODES, type FilterMode, Method, Notification } from '../constants';
import type { Daemon, Row, ViewResult } from '../protocol';
import { entryTooltipMarkdown } from '../render';
import type { CurrentSession, OpenSession } from '../session';
import { formatAge, iconForRow, nestRows, type NestedRows, type RowNode, rowContextValue, rowLabel } from './rows';

/** The "Load more…" element at the end of a paged view. */
export class LoadMoreElement {
  readonly kind = 'loadMore';
  constructor(
    readonly loaded: number,
    readonly total: number,
  ) {}
}

export type TreeElement = RowNode | LoadMoreElement;

/** Options of the provider, injectable for tests. */
export interface SessionTreeOptions {
  pageSize: number;
  filter: FilterMode;
  debounceMs: number;
  now: () => number;
}

/** Result of a (re)load, for the caller that follows the leaf. */
export interface LoadEvent {
  session: OpenSession;
  leafId: string | null;
  leafChanged: boolean;
}

/** TreeDataProvider over `session/view`, refreshed by the daemon's notifications. */
export class SessionTreeProvider implements vscode.TreeDataProvider<TreeElement>, vscode.Disposable {
  private readonly changeEmitter = new vscode.EventEmitter<TreeElement | undefined | void>();
  readonly onDidChangeTreeData = this.changeEmitter.event;
  private readonly loadEmitter = new vscode.EventEmitter<LoadEvent>();
  /** Fires after each completed load with the leaf it found. */
  readonly onDidLoad = this.loadEmitter.event;

  private rows: Row[] = [];
  private total = 0;
  private leafId: string | null = null;
  private selectedIndex = -1;
  private nested: NestedRows = { roots: [], byId: new Map() };
  private generation = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private loading: Promise<void> = Promise.resolve();
  private readonly disposables: vscode.Disposable[] = [];
  private readonly options: SessionTreeOptions;
  private shownKey: string | undefined;
  filter: FilterMode;
  search = '';

  constructor(
    private readonly daemon: Daemon,
    private readonly session: CurrentSession,
    options: Partial<SessionTreeOptions> = {},
  ) {
    this.options = { pageSize: 500, filter: 'default', debounceMs: 120, now: () => Date.now(), ...options };
    this.filter = this.options.filter;
    this.disposables.push(
      session.onDidChange((s) => {
        const key = s ? `${s.handle}\u0000${s.path ?? ''}` : undefined;
        if (key !== undefined && key === this.shownKey) {
          return; // a rename: same session, same rows
        }
        this.shownKey = key;
        this.rows = [];
        this.total = 0;
        this.leafId = null;
        this.nested = { roots: [], byId: new Map() };
        this.changeEmitter.fire();
        void this.refresh();
      }),
    );
    const onSessionEvent = (params: { session?: string }) => {
      if (params && params.session === this.session.value?.handle) {
        this.scheduleRefresh();
      }
    };
    for (const method of [
      Notification.didChange,
      Notification.didNavigate,
      Notification.didChangeLabel,
      Notification.didReload,
    ]) {
      this.disposables.push(daemon.onNotification(method, onSessionEvent));
    }
  }

  /** The rows loaded so far (view order). */
  get loadedRows(): readonly Row[] {
    return this.rows;
  }

  get totalRows(): number {
    return this.total;
  }

  get currentLeafId(): string | null {
    return this.leafId;
  }

  /** Waits for the load in flight (tests and commands that need fresh rows). */
  whenIdle(): Promise<void> {
    return this.loading;
  }

  /** Refreshes after `debounceMs`, folding a burst of notifications into one request. */
  scheduleRefresh(): void {
    if (this.timer) {
      clearTimeout(this.timer);
    }
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.refresh();
    }, this.options.debounceMs);
  }

  /** Reloads the view, keeping at least as many rows as are loaded now. */
  refresh(): Promise<void> {
    const run = this.loading.then(() => this.load()).catch((err: unknown) => this.reportError(err));
    this.loading = run;
    return run;
  }

  /** Loads the next page. */
  loadMore(): Promise<void> {
    const run = this.loading.then(() => this.loadPage()).catch((err: unknown) => this.reportError(err));
    this.loading = run;
    return run;
  }

  setFilter(mode: FilterMode): Promise<void> {
    if (!FILTER_MODES.includes(mode)) {
      throw new Error(`Unknown filter mode "${mode}"; expected one of ${FILTER_MODES.join(', ')}`);
    }
    this.filter = mode;
    this.rows = [];
    return this.refresh();
  }

  setSearch(query: string): Promise<void> {
    this.search = query.trim();
    this.rows = [];
    return this.refresh();
  }

  private viewParams(offset: number, limit: number): object {
    const params: Record<string, unknown> = {
      session: this.session.value?.handle,
      filter: this.filter,
      offset,
      limit,
    };
    if (this.search) {
      params.search = this.search;
    }
    return params;
  }

  private async load(): Promise<void> {
    const session = this.session.value;
    const gen = ++this.generation;
    if (!session) {
      this.rows = [];
      this.total = 0;
      this.nested = nestRows([]);
      this.changeEmitter.fire();
      return;
    }
    const want = Math.max(this.options.pageSize, this.rows.length);
    const first = await this.daemon.request<ViewResult>(Method.view, this.viewParams(0, want));
    let rows = first.rows;
    // Make sure the leaf's row (or its nearest visible ancestor) is loaded so it can be revealed.
    if (first.selectedIndex >= rows.length && rows.length < first.total) {
      const extra = first.selectedIndex + 1 - rows.length + Math.floor(this.options.pageSize / 2);
      const more = await this.daemon.request<ViewResult>(Method.view, this.viewParams(rows.length, extra));
      rows = rows.concat(more.rows);
    }
    if (gen !== this.generation || this.session.value?.handle !== session.handle) {
      return;
    }
    const oldLeaf = this.leafId;
    this.rows = rows;
    this.total = first.total;
    this.leafId = first.leafId;
    this.selectedIndex = first.selectedIndex;
    this.nested = nestRows(rows);
    if (session.leafId !== first.leafId) {
      session.leafId = first.leafId;
    }
    this.changeEmitter.fire();
    this.loadEmitter.fire({ session, leafId: first.leafId, leafChanged: oldLeaf !== first.leafId });
  }

  private async loadPage(): Promise<void> {
    const session = this.session.value;
    if (!session || this.rows.length >= this.total) {
      return;
    }
    const gen = ++this.generation;
    const page = await this.daemon.request<ViewResult>(
      Method.view,
      this.viewParams(this.rows.length, this.options.pageSize),
    );
    if (gen !== this.generation || this.session.value?.handle !== session.handle) {
      return;
    }
    this.rows = this.rows.concat(page.rows);
    this.total = page.total;
    this.leafId = page.leafId;
    this.nested = nestRows(this.rows);
    this.changeEmitter.fire();
  }

  private reportError(err: unknown): void {
    const msg = err instanceof Error ? err.message : String(err);
    void vscode.window.showErrorMessage(`Session Tree: could not load the tree: ${msg}`);
  }

  /** The node of the leaf, or of its nearest visible ancestor (the selector's selection). */
  leafNode(): RowNode | undefined {
    if (this.leafId) {
      const node = this.nested.byId.get(this.leafId);
      if (node) {
        return node;
      }
    }
    const row = this.rows[this.selectedIndex];
    return row ? this.nested.byId.get(row.id) : undefined;
  }

  nodeById(id: string): RowNode | undefined {
    return this.nested.byId.get(id);
  }

  getChildren(element?: TreeElement): TreeElement[] {
    if (element instanceof LoadMoreElement) {
      return [];
    }
    if (element) {
      return element.children;
    }
    const roots: TreeElement[] = [...this.nested.roots];
    if (this.rows.length < this.total) {
      roots.push(new LoadMoreElement(this.rows.length, this.total));
    }
    return roots;
  }

  getParent(element: TreeElement): TreeElement | undefined {
    return element instanceof LoadMoreElement ? undefined : element.parent;
  }

  getTreeItem(element: TreeElement): vscode.TreeItem {
    if (element instanceof LoadMoreElement) {
      const item = new vscode.TreeItem(
        `Load more… (${element.loaded} of ${element.total} rows)`,
        vscode.TreeItemCollapsibleState.None,
      );
      item.id = `sessiontree.loadMore`;
      item.iconPath = new vscode.ThemeIcon('ellipsis');
      item.command = { command: Command.treeLoadMore, title: 'Load more' };
      item.contextValue = 'loadMore';
      return item;
    }
    const row = element.row;
    const state =
      element.children.length === 0
        ? vscode.TreeItemCollapsibleState.None
        : element.containsActive
          ? vscode.TreeItemCollapsibleState.Expanded
          : vscode.TreeItemCollapsibleState.Collapsed;
    const item = new vscode.TreeItem(rowLabel(row) || `[${row.type}]`, state);
    item.id = row.id;
    const age = formatAge(row.timestamp, this.options.now());
    const desc: string[] = [];
    if (row.isLeaf) {
      desc.push('● current');
    } else if (row.onActivePath) {
      desc.push('•');
    }
    if (age) {
      desc.push(age);
    }
    item.description = desc.join(' ');
    const color = row.isLeaf
      ? new vscode.ThemeColor('charts.green')
      : row.onActivePath
        ? new vscode.ThemeColor('charts.blue')
        : undefined;
    item.iconPath = new vscode.ThemeIcon(iconForRow(row), color);
    item.contextValue = rowContextValue(row);
    item.accessibilityInformation = {
      label: `${row.onActivePath ? 'active path, ' : ''}${row.isLeaf ? 'current leaf, ' : ''}${rowLabel(row)}`,
    };
    return item;
  }

  /** Fills the tooltip lazily with the entry's full text from `session/entry`. */
  async resolveTreeItem(item: vscode.TreeItem, element: TreeElement): Promise<vscode.TreeItem> {
    if (element instanceof LoadMoreElement || !this.session.value) {
      return item;
    }
    try {
      const res = await this.daemon.request<{ entry: Record<string, unknown> }>(Method.entry, {
        session: this.session.value.handle,
        id: element.row.id,
      });
      const md = new vscode.MarkdownString(entryTooltipMarkdown(res.entry, element.row.label));
      item.tooltip = md;
    } catch (err) {
      item.tooltip = `${rowLabel(element.row)}\n(${err instanceof Error ? err.message : String(err)})`;
    }
    return item;
  }

  dispose(): void {
    if (this.timer) {
      clearTimeout(this.timer);
    }
    for (const d of this.disposables) {
      d.dispose();
    }
    this.changeEmitter.dispose();
    this.loadEmitter.dispose();
  }
}
