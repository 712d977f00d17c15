/** The "Session Tree" view: the rows of `session/view` as native, nested TreeItems. */
import * as vscode from 'vscode';
import { Command, FILTER_MODES, type FilterMode, Method, Notification } from '../constants';
import type { Daemon, Row, ViewResult } from '../protocol';
import { entryTooltipMarkdown } from '../render';
import type { CurrentSession, OpenSession } from '../session';
import { findGaps, gapRequest, headRequest, leafWindowLimit, leafWindowRequest, mergeSegments, rowAt, type Segment } from './paging';
import {
  buildPreview,
  fileSize,
  OlderRowsElement,
  olderRowsItem,
  type Preview,
  PREVIEW_CONTEXT,
  previewMessage,
  previewParams,
  requestPreview,
} from './preview';
import { formatAge, iconForRow, LEAF_ICON, leafNote, marksLeaf, nestRows, type RowNode, rowContextValue, rowLabel } from './rows';
import { counted } from '../words';

/**
 * A "Load more…" element: a gap of `hidden` rows starting at row `offset` that has not been
 * fetched yet (between the first page and the window around the leaf, or at the end).
 */
export class LoadMoreElement {
  readonly kind = 'loadMore';
  constructor(
    readonly offset: number,
    readonly hidden: number,
    readonly total: number,
  ) {}
}

export type TreeElement = RowNode | LoadMoreElement | OlderRowsElement;

/**
 * What an empty view means, for its welcome text: `loading` (the rows of the open session are
 * on their way), `empty` (a load found no row: nothing matches the filter or search), `failed`
 * (the load failed), `rows` (there are rows), `none` (no session).
 */
export type TreeViewState = 'none' | 'loading' | 'empty' | 'rows' | 'failed';

/**
 * The banner above the Session Tree rows: the filter and search in force, and, while they are,
 * what an empty view means. (VS Code shows a view's welcome text only while it has no
 * message, so with a filter or search the banner has to say "Loading…" or "Nothing matches".)
 * While the rows are a big file's preview (`previewPath`), it says so first.
 */
export function treeMessage(
  state: TreeViewState,
  filter: FilterMode,
  search: string,
  found?: number,
  previewPath?: string,
): string | undefined {
  const parts: string[] = [];
  if (filter !== 'default') {
    parts.push(`filter: ${filter}`);
  }
  if (search) {
    parts.push(`search: "${search}"`);
  }
  if (previewPath !== undefined) {
    parts.unshift(previewMessage(previewPath));
  } else if (!parts.length) {
    return undefined;
  } else if (found !== undefined) {
    parts.unshift(`Searching… ${found} found so far`); // the rest comes with didCompleteSearch
  } else if (state === 'loading') {
    parts.unshift('Loading…');
  } else if (state === 'empty') {
    parts.unshift('Nothing matches');
  }
  return parts.join(' · ');
}

/**
 * A setter of a tree view's message that sets it only when it changes: VS Code sends a message
 * through the same debounced event as the rows, so a message set (even to the same text) holds
 * back rows that follow within 200 ms.
 */
export function messageSetter(view: { message?: string | vscode.MarkdownString }): (message: string | undefined) => void {
  let shown = typeof view.message === 'string' && view.message ? view.message : undefined;
  return (message) => {
    if (message !== shown) {
      shown = message;
      view.message = message;
    }
  };
}

/** Options of the provider, injectable for tests. */
export interface SessionTreeOptions {
  pageSize: number;
  filter: FilterMode;
  debounceMs: number;
  /**
   * When another session's rows are drawn and a session is opened, they are cleared only if
   * the new rows take longer than this. VS Code holds a tree change that comes within 200 ms
   * of the one before until those 200 ms are over (its extension host debounces
   * `onDidChangeTreeData`), so a clearing change followed by the rows would keep the rows
   * back for 200 ms: new rows that come in time replace the old ones in one change.
   */
  clearAfterMs: number;
  now: () => number;
  /** The size of a session file, which tells whether its open is worth a preview. */
  sizeOf: (path: string) => Promise<number>;
  /** Where a failed preview is logged. */
  log?: (message: string) => void;
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
  private readonly stateEmitter = new vscode.EventEmitter<TreeViewState>();
  /** Fires when {@link viewState} changes, before the rows of the new state are announced. */
  readonly onDidChangeViewState = this.stateEmitter.event;
  private state: TreeViewState = 'none';

  private segments: Segment[] = [];
  private total = 0;
  private leafId: string | null = null;
  private selectedIndex = -1;
  private topLevel: TreeElement[] = [];
  private byId = new Map<string, RowNode>();
  private generation = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private clearTimer: ReturnType<typeof setTimeout> | undefined;
  private loading: Promise<void> = Promise.resolve();
  /** Changes of the top rows announced, and the count VS Code last asked for them at (`whenTaken`). */
  private announced = 0;
  private taken = 0;
  private takenWaiters: Array<() => void> = [];
  private readonly disposables: vscode.Disposable[] = [];
  private readonly options: SessionTreeOptions;
  private shownKey: string | undefined;
  private keepFocusOnce = false;
  private found: number | undefined;
  /** The latest open of a file whose first rows are not drawn yet (a preview may stand in). */
  private pending: { path: string; token: number } | undefined;
  private opens = 0;
  /** The rows drawn in place of the loaded ones while `pending` opens (views/preview.ts). */
  private shownPreview: Preview | undefined;
  /**
   * The file the view's message names as previewed. It goes after the rows that replace the
   * preview were announced: a message changed first holds those rows back 200 ms in VS Code.
   */
  private previewNamed: string | undefined;
  private readonly previewEmitter = new vscode.EventEmitter<Preview | undefined>();
  /** Fires when a preview is drawn (with it) and when it goes (undefined). */
  readonly onDidChangePreview = this.previewEmitter.event;
  filter: FilterMode;
  search = '';
  /**
   * An entry the view is drawn from as if it were the leaf (a cross-session search hit): its
   * branch is the highlighted path and its row the selection, until {@link clearFocus}, a
   * navigation or another session. The session's own leaf is unchanged.
   */
  focusId: string | undefined;

  constructor(
    private readonly daemon: Daemon,
    private readonly session: CurrentSession,
    options: Partial<SessionTreeOptions> = {},
  ) {
    this.options = {
      pageSize: 500,
      filter: 'default',
      debounceMs: 120,
      clearAfterMs: 150,
      now: () => Date.now(),
      sizeOf: fileSize,
      ...options,
    };
    this.filter = this.options.filter;
    this.disposables.push(
      session.onWillOpen(({ path, opened }) => this.beginOpen(path, opened)),
      session.onDidChange((s) => {
        const key = s ? `${s.handle}\u0000${s.path ?? ''}` : undefined;
        if (key !== undefined && key === this.shownKey) {
          return; // a rename: same session, same rows
        }
        this.shownKey = key;
        if (!this.keepFocusOnce) {
          this.focusId = undefined;
        }
        this.keepFocusOnce = false;
        // the preview of this session stays until its rows replace it (no empty view between)
        if (this.pending && this.pending.path !== s?.path) {
          this.pending = undefined;
        }
        const keepPreview = this.shownPreview !== undefined && this.shownPreview.token === this.pending?.token;
        const dropped = !keepPreview && this.shownPreview !== undefined;
        if (dropped) {
          this.shownPreview = undefined;
          this.previewNamed = undefined;
        }
        const drawn = this.topLevel.length > 0;
        this.segments = [];
        this.total = 0;
        this.leafId = null;
        this.setViewState(s ? 'loading' : 'none');
        this.rebuild();
        if (drawn && !keepPreview) {
          this.clearSoon();
        }
        if (dropped) {
          this.previewEmitter.fire(undefined);
        }
        void this.refresh();
      }),
    );
    const onSessionEvent = (params: { session?: string }) => {
      if (params && params.session === this.session.value?.handle) {
        this.scheduleRefresh();
      }
    };
    this.disposables.push(
      daemon.onNotification(Notification.didNavigate, (params: { session?: string }) => {
        if (params && params.session === this.session.value?.handle) {
          this.focusId = undefined; // the leaf moved: show the session's own branch again
        }
      }),
    );
    // a search shown in part (the rows found so far) has every row now: load them
    this.disposables.push(
      daemon.onNotification(Notification.didCompleteSearch, (params: { session?: string }) => {
        if (params && params.session === this.session.value?.handle && this.found !== undefined) {
          void this.refresh();
        }
      }),
    );
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
    return this.segments.flatMap((seg) => seg.rows);
  }

  get totalRows(): number {
    return this.total;
  }

  get currentLeafId(): string | null {
    return this.leafId;
  }

  /**
   * While a search of a big session goes on: the rows it found so far (the view shows them,
   * the rest come with `session/didCompleteSearch`); undefined once the rows are all known.
   */
  get searchFound(): number | undefined {
    return this.found;
  }

  /** The file whose preview the view shows, while it shows one (for the view's message). */
  get previewPath(): string | undefined {
    return this.previewNamed;
  }

  /** What the view shows, or waits for. */
  get viewState(): TreeViewState {
    return this.state;
  }

  /** True while the view waits for the first rows of the open session. */
  get isLoading(): boolean {
    return this.state === 'loading';
  }

  /**
   * Set before the rows change is fired: the welcome text of an empty view follows this state,
   * so "nothing matches" is only ever said by a load that found nothing (a load that found rows
   * never says it, even in the moment before they are drawn).
   */
  private setViewState(state: TreeViewState): void {
    if (this.state !== state) {
      this.state = state;
      this.stateEmitter.fire(state);
    }
  }

  /** Waits for the load in flight (tests and commands that need fresh rows). */
  whenIdle(): Promise<void> {
    return this.loading;
  }

  /**
   * Resolves once VS Code has asked for the top rows announced last. VS Code takes a change of
   * a tree's rows up to 200 ms after it is announced (its extension host gathers them): a
   * reveal before that lands on the rows drawn before, and the new rows then come in under a
   * scroll position made for the old ones (the leaf was out of view after a filter change, now
   * and then). A view that is not shown asks for nothing: `maxMs` at most.
   */
  whenTaken(maxMs = 2000): Promise<void> {
    if (this.taken === this.announced) {
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, maxMs);
      this.takenWaiters.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  private announce(): void {
    this.announced++;
    this.changeEmitter.fire();
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
    const run = this.loading
      .then(() => this.load())
      .catch((err: unknown) => {
        if (this.pending && this.pending.path === this.session.value?.path) {
          this.endOpen(); // the rows of the session it was drawn for will not come
        }
        this.setViewState(this.session.value ? 'failed' : 'none');
        this.reportError(err);
      });
    this.loading = run;
    return run;
  }

  /** Fetches the next page of a gap (the first gap when none is given). */
  loadMore(gap?: LoadMoreElement): Promise<void> {
    const run = this.loading.then(() => this.loadPage(gap)).catch((err: unknown) => this.reportError(err));
    this.loading = run;
    return run;
  }

  setFilter(mode: FilterMode): Promise<void> {
    if (!FILTER_MODES.includes(mode)) {
      throw new Error(`Unknown filter mode "${mode}"; expected one of ${FILTER_MODES.join(', ')}`);
    }
    this.filter = mode;
    this.segments = [];
    return this.refresh();
  }

  /**
   * Draws the view from `id` as if it were the leaf: its branch highlighted, its row loaded
   * and selected ({@link leafNode}). With `nextSession`, the focus is for the session about to
   * be opened (set before `current.open`).
   */
  focusEntry(id: string, nextSession = false): Promise<void> {
    this.focusId = id;
    this.segments = [];
    if (nextSession) {
      this.keepFocusOnce = true;
      return Promise.resolve();
    }
    return this.refresh();
  }

  /** Back to the session's own leaf. */
  clearFocus(): Promise<void> {
    if (this.focusId === undefined) {
      return Promise.resolve();
    }
    this.focusId = undefined;
    this.segments = [];
    return this.refresh();
  }

  setSearch(query: string): Promise<void> {
    this.search = query.trim();
    this.segments = [];
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
      // a big session's search answers with the rows found so far (`complete: false`)
      params.partial = true;
    }
    if (this.focusId !== undefined) {
      params.leafId = this.focusId;
    }
    return params;
  }

  /**
   * Loads the first page and, when the leaf's row lies beyond it (a long conversation has its
   * leaf near the end), a window of one page around the leaf, with a "Load more…" gap between.
   * Reloads keep the sizes the user already loaded.
   */
  private async load(): Promise<void> {
    const session = this.session.value;
    const gen = ++this.generation;
    if (!session) {
      this.segments = [];
      this.total = 0;
      this.setViewState('none');
      this.rebuild();
      this.fireChange();
      return;
    }
    const page = this.options.pageSize;
    const head = headRequest(this.segments, page);
    // the rows around the leaf come in the same answer (`window`) when it lies past the head
    const first = await this.daemon.request<ViewResult>(Method.view, {
      ...this.viewParams(head.offset, head.limit),
      selectedWindow: leafWindowLimit(this.segments, page),
    });
    const segments: Segment[] = [{ start: 0, rows: first.rows }];
    const sel = first.selectedIndex ?? -1;
    if (first.window) {
      segments.push({ start: first.window.offset, rows: first.window.rows });
    } else {
      // a daemon from before `selectedWindow`: the window in a request of its own
      const window = leafWindowRequest(this.segments, first.rows.length, first.total, sel, page);
      if (window) {
        const win = await this.daemon.request<ViewResult>(Method.view, this.viewParams(window.offset, window.limit));
        segments.push({ start: window.offset, rows: win.rows });
      }
    }
    if (gen !== this.generation || this.session.value?.handle !== session.handle) {
      return;
    }
    const oldLeaf = this.leafId;
    // the first rows of the session a preview stands in for replace it, in the same change
    const replaced = this.pending?.path === session.path && this.shownPreview !== undefined;
    if (this.pending?.path === session.path) {
      this.pending = undefined;
      this.shownPreview = undefined;
    }
    this.segments = mergeSegments(segments);
    this.total = first.total;
    this.leafId = first.leafId;
    this.selectedIndex = sel;
    this.found = first.complete === false ? first.total : undefined;
    this.rebuild();
    if (session.leafId !== first.leafId && this.focusId === undefined) {
      session.leafId = first.leafId;
    }
    // a search that goes on has not found nothing yet: it is still loading
    this.setViewState(first.total > 0 ? 'rows' : this.found !== undefined ? 'loading' : 'empty');
    if (!this.shownPreview) {
      this.fireChange(); // (rows loaded behind another file's preview are drawn when it goes)
    }
    if (replaced) {
      this.previewNamed = undefined; // the message goes after the rows
    }
    this.loadEmitter.fire({ session, leafId: first.leafId, leafChanged: oldLeaf !== first.leafId });
    if (replaced) {
      this.previewEmitter.fire(undefined);
    }
  }

  /**
   * An open was sent: for a big file, its preview is asked for beside it and drawn while the
   * open and its first rows are pending. None when the view already shows that file, draws
   * the next session from a search hit, or has a search (the preview shows no search).
   */
  private beginOpen(path: string, opened: Promise<unknown>): void {
    if (this.shownPreview?.path !== path) {
      this.endOpen(); // another file was clicked: a preview drawn goes, the loaded rows come back
    }
    if (path === this.session.value?.path || this.keepFocusOnce || this.search) {
      return;
    }
    const token = ++this.opens;
    this.pending = { path, token };
    if (this.shownPreview) {
      this.shownPreview.token = token; // the same file clicked again: its preview stands
    }
    opened.then(undefined, () => {
      if (this.pending?.token === token) {
        this.endOpen();
      }
    });
    const params = previewParams(path, this.filter, this.options.pageSize);
    void requestPreview(this.daemon, params, this.options).then((result) => {
      // too late (the rows came, another file was clicked, the open failed) or of another filter
      const loaded = this.session.value?.path === path && this.state !== 'loading';
      if (!result || this.pending?.token !== token || loaded || params.filter !== this.filter || this.search) {
        return;
      }
      const preview = buildPreview(path, token, result);
      if (!preview) {
        return;
      }
      this.shownPreview = preview;
      this.rebuild();
      this.fireChange();
      this.previewNamed = path; // the message after the rows
      this.previewEmitter.fire(preview);
    });
  }

  /** No open is pending any more: a preview drawn for it goes, the loaded rows come back. */
  private endOpen(): void {
    this.pending = undefined;
    if (this.shownPreview) {
      this.shownPreview = undefined;
      this.rebuild();
      this.fireChange();
      this.previewNamed = undefined;
      this.previewEmitter.fire(undefined);
    }
  }

  private async loadPage(gap?: LoadMoreElement): Promise<void> {
    const session = this.session.value;
    const target = gap ?? this.gaps()[0];
    if (!session || !target) {
      return;
    }
    const gen = ++this.generation;
    const req = gapRequest(target, this.options.pageSize);
    const page = await this.daemon.request<ViewResult>(Method.view, this.viewParams(req.offset, req.limit));
    if (gen !== this.generation || this.session.value?.handle !== session.handle) {
      return;
    }
    this.segments = mergeSegments([...this.segments, { start: target.offset, rows: page.rows }]);
    this.total = page.total;
    this.leafId = page.leafId;
    this.found = page.complete === false ? page.total : undefined;
    this.rebuild();
    this.fireChange();
  }

  /** Announces the rows as they are now (a pending clear is no longer needed). */
  private fireChange(): void {
    if (this.clearTimer) {
      clearTimeout(this.clearTimer);
      this.clearTimer = undefined;
    }
    this.announce();
  }

  /** Clears the rows drawn of another session unless new rows come within `clearAfterMs`. */
  private clearSoon(): void {
    if (this.clearTimer) {
      clearTimeout(this.clearTimer);
    }
    this.clearTimer = setTimeout(() => {
      this.clearTimer = undefined;
      this.announce();
    }, this.options.clearAfterMs);
  }

  /** The unloaded gaps, in view order. */
  private gaps(): LoadMoreElement[] {
    return findGaps(this.segments, this.total).map((g) => new LoadMoreElement(g.offset, g.hidden, this.total));
  }

  /**
   * Nests each segment on its own (a row never hangs under a row across a gap); search
   * results stay flat.
   */
  private rebuild(): void {
    const top: TreeElement[] = [];
    const byId = new Map<string, RowNode>();
    const gaps = this.gaps();
    let pos = 0;
    for (const seg of this.segments) {
      const gap = gaps.find((g) => g.offset === pos && seg.start > pos);
      if (gap) {
        top.push(gap);
      }
      const nested = nestRows(seg.rows, { flat: !!this.search });
      top.push(...nested.roots);
      for (const [id, node] of nested.byId) {
        if (!byId.has(id)) {
          byId.set(id, node);
        }
      }
      pos = seg.start + seg.rows.length;
    }
    const tail = gaps.find((g) => g.offset === pos);
    if (tail) {
      top.push(tail);
    }
    this.topLevel = this.shownPreview ? this.shownPreview.roots : top;
    this.byId = byId;
  }

  private reportError(err: unknown): void {
    const msg = err instanceof Error ? err.message : String(err);
    void vscode.window.showErrorMessage(`Session Tree: could not load the tree: ${msg}`);
  }

  /** The node of the leaf, or of its nearest visible ancestor (the selector's selection). */
  leafNode(): RowNode | undefined {
    if (this.shownPreview) {
      return this.shownPreview.selected;
    }
    if (this.leafId) {
      const node = this.byId.get(this.leafId);
      if (node) {
        return node;
      }
    }
    const row = rowAt(this.segments, this.selectedIndex);
    return row ? this.byId.get(row.id) : undefined;
  }

  nodeById(id: string): RowNode | undefined {
    return this.byId.get(id);
  }

  getChildren(element?: TreeElement): TreeElement[] {
    if (element instanceof LoadMoreElement || element instanceof OlderRowsElement) {
      return [];
    }
    if (element) {
      return element.children;
    }
    if (this.taken !== this.announced) {
      this.taken = this.announced;
      for (const waiter of this.takenWaiters.splice(0)) {
        waiter();
      }
    }
    return this.topLevel;
  }

  getParent(element: TreeElement): TreeElement | undefined {
    return 'row' in element ? element.parent : undefined;
  }

  getTreeItem(element: TreeElement): vscode.TreeItem {
    if (element instanceof OlderRowsElement) {
      return olderRowsItem();
    }
    if (element instanceof LoadMoreElement) {
      const item = new vscode.TreeItem(
        `Load more… (${element.hidden} of ${counted(element.total, 'row')} not shown)`,
        vscode.TreeItemCollapsibleState.None,
      );
      item.id = `sessiontree.loadMore.${element.offset}`;
      item.iconPath = new vscode.ThemeIcon('ellipsis');
      item.command = { command: Command.treeLoadMore, title: 'Load more', arguments: [element] };
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
    // the daemon gives every row its text (an unknown entry type too: `[future entry]`)
    const text = rowLabel(row);
    const item = new vscode.TreeItem(element.marker ? `${element.marker} ${text}` : text, state);
    item.id = row.id;
    const age = formatAge(row.timestamp, this.options.now());
    const desc: string[] = [];
    const leaf = marksLeaf(row);
    const note = leafNote(row);
    if (note !== undefined) {
      desc.push(note); // the leaf is hidden by the filter: this row stands for it
    } else if (leaf) {
      desc.push('current');
    } else if (row.onActivePath) {
      desc.push('•');
    }
    if (age) {
      desc.push(age);
    }
    item.description = desc.join(' ');
    // The leaf is marked by its icon, at the start of the row, where a long text cannot push
    // it out of sight (the description after the text is cut first).
    item.iconPath = leaf
      ? new vscode.ThemeIcon(LEAF_ICON, new vscode.ThemeColor('charts.green'))
      : new vscode.ThemeIcon(iconForRow(row), row.onActivePath ? new vscode.ThemeColor('charts.blue') : undefined);
    item.contextValue = element.preview ? PREVIEW_CONTEXT : rowContextValue(row);
    // a screen reader says which rows are a preview (a big session still opening)
    item.accessibilityInformation = {
      label: `${element.preview ? 'preview, ' : ''}${row.onActivePath ? 'active path, ' : ''}${leaf ? (note !== undefined ? `${note}, ` : 'current leaf, ') : ''}${rowLabel(row)}`,
    };
    return item;
  }

  /** Fills the tooltip lazily with the entry's full text from `session/entry`. */
  async resolveTreeItem(item: vscode.TreeItem, element: TreeElement): Promise<vscode.TreeItem> {
    if (!('row' in element) || element.preview || !this.session.value) {
      return item; // a preview row has no session to read the entry from yet
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
    if (this.clearTimer) {
      clearTimeout(this.clearTimer);
    }
    for (const d of this.disposables) {
      d.dispose();
    }
    this.changeEmitter.dispose();
    this.loadEmitter.dispose();
    this.stateEmitter.dispose();
    this.previewEmitter.dispose();
  }
}
