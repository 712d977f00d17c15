/**
 * "Show Session Graph": the whole tree of the open session drawn by the daemon
 * (`session/graph`) in a webview beside the editor. It follows the session live (a change,
 * a navigation or a reload redraws it) and a click on a node navigates there through the
 * Session Tree's own navigate command, so the same summary prompt is offered.
 */
import * as vscode from 'vscode';
import { Command, GRAPH_VIEW_TYPE, Method, Notification } from './constants';
import type { Daemon } from './protocol';
import type { CurrentSession } from './session';

interface GraphReply {
  svg: string;
  nodes: { id: string; kind: string }[];
  entries: number;
  lanes: number;
  leafId: string | null;
  summary: string;
  html?: string;
}

/** A fresh nonce for the page's inline script and style. */
function makeNonce(): string {
  const chars = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  let out = '';
  for (let i = 0; i < 32; i++) {
    out += chars.charAt(Math.floor(Math.random() * chars.length));
  }
  return out;
}

/** The one graph panel (shown again, not duplicated, by the command). */
export class GraphPanel implements vscode.Disposable {
  private panel: vscode.WebviewPanel | undefined;
  private handle: string | undefined;
  private readonly subscriptions: vscode.Disposable[] = [];
  private timer: ReturnType<typeof setTimeout> | undefined;
  private drawing: Promise<void> = Promise.resolve();
  /** How long the last redraw took: a big session is redrawn less often while it grows. */
  private lastDrawMs = 0;
  /** A change came while the panel was hidden: redraw when it is shown again. */
  private stale = false;
  /** Redraws so far (for tests: a live append shows as one more). */
  redraws = 0;
  /** The page of each wide fan shown (a "more" node clicked): parent id -> first child. */
  private pages: Record<string, number> = {};
  /** The last graph drawn. */
  last: GraphReply | undefined;
  private readonly changed = new vscode.EventEmitter<GraphReply>();
  /** Fires after every draw. */
  readonly onDidDraw = this.changed.event;

  constructor(
    private readonly daemon: Daemon,
    private readonly current: CurrentSession,
    private readonly log: (m: string) => void,
  ) {
    const redrawFor = (params: { session?: string }) => {
      if (this.panel && params?.session === this.handle) {
        this.schedule();
      }
    };
    for (const n of [Notification.didChange, Notification.didNavigate, Notification.didReload, Notification.didChangeLabel]) {
      this.subscriptions.push(daemon.onNotification(n, redrawFor));
    }
    this.subscriptions.push(
      current.onDidChange((s) => {
        if (this.panel && s && s.handle !== this.handle) {
          void this.show();
        }
      }),
    );
  }

  /** The webview, while the panel is open (tests read its state through `last`). */
  get webviewPanel(): vscode.WebviewPanel | undefined {
    return this.panel;
  }

  async show(): Promise<GraphReply> {
    const s = this.current.value;
    if (!s) {
      throw new Error('No session is open. Open one from the Sessions view first.');
    }
    if (!this.panel) {
      this.panel = vscode.window.createWebviewPanel(GRAPH_VIEW_TYPE, `Graph: ${s.title}`, vscode.ViewColumn.Active, {
        enableScripts: true,
        retainContextWhenHidden: true,
        localResourceRoots: [],
      });
      this.panel.onDidDispose(() => {
        this.panel = undefined;
        this.handle = undefined;
      });
      this.panel.onDidChangeViewState((e) => {
        if (e.webviewPanel.visible && this.stale) {
          this.schedule();
        }
      });
      this.panel.webview.onDidReceiveMessage((msg: { type?: string; id?: string; parent?: string; offset?: number }) => {
        if (msg?.type === 'navigate' && typeof msg.id === 'string') {
          void vscode.commands.executeCommand(Command.treeNavigate, msg.id);
        } else if (msg?.type === 'page' && typeof msg.parent === 'string' && Number.isInteger(msg.offset)) {
          // the branches a "more" node folds: the daemon draws that page of the fan
          this.pages = { ...this.pages, [msg.parent]: msg.offset as number };
          this.schedule();
        }
      });
    } else {
      this.panel.reveal();
    }
    this.panel.title = `Graph: ${s.title}`;
    if (this.handle !== s.handle) {
      this.pages = {};
    }
    this.handle = s.handle;
    const nonce = makeNonce();
    const reply = await this.daemon.request<GraphReply>(Method.graph, {
      session: s.handle,
      nonce,
      cspSource: this.panel.webview.cspSource,
      pages: this.pages,
    });
    this.panel.webview.html = reply.html ?? '';
    this.last = reply;
    this.changed.fire(reply);
    return reply;
  }

  private schedule(): void {
    if (this.panel && !this.panel.visible) {
      this.stale = true;
      return;
    }
    if (this.timer) {
      clearTimeout(this.timer);
    }
    // A burst of appended lines is one redraw; a graph that takes long to draw waits longer,
    // so that following a growing 100,000-entry session does not keep the daemon busy.
    const delay = Math.min(5000, Math.max(150, this.lastDrawMs * 2));
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.drawing = this.drawing.then(() => this.redraw()).catch((err) => this.log(`graph: ${String(err)}`));
    }, delay);
  }

  private async redraw(): Promise<void> {
    const panel = this.panel;
    const handle = this.handle;
    if (!panel || !handle) {
      return;
    }
    this.stale = false;
    const t0 = Date.now();
    const reply = await this.daemon.request<GraphReply>(Method.graph, { session: handle, pages: this.pages });
    this.lastDrawMs = Date.now() - t0;
    this.last = reply;
    this.redraws++;
    await panel.webview.postMessage({ type: 'update', svg: reply.svg, data: { nodes: reply.nodes }, summary: reply.summary, follow: true });
    this.changed.fire(reply);
  }

  dispose(): void {
    if (this.timer) {
      clearTimeout(this.timer);
    }
    this.panel?.dispose();
    this.changed.dispose();
    for (const d of this.subscriptions) {
      d.dispose();
    }
  }
}
