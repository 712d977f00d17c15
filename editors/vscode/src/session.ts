/** The session shown in the Session Tree view. */
import * as vscode from 'vscode';
import { Method } from './constants';
import type { Daemon, OpenResult } from './protocol';

/** The currently open session: its handle, file and title. */
export interface OpenSession {
  handle: string;
  path?: string;
  title: string;
  leafId: string | null;
  /** "claude" or "codex" for another agent's (read-only) session; absent for pi's. */
  agent?: string;
  /** With `agent`: the shell command that resumes the session in its agent. */
  resumeCommand?: string;
}

/** An open that was sent to the daemon and has not answered yet. */
export interface OpeningSession {
  path: string;
  /** Settles with the open: resolves once the session is current, rejects when it failed. */
  opened: Promise<unknown>;
}

/** Holds the open session and tells the views when it changes. */
export class CurrentSession implements vscode.Disposable {
  private current: OpenSession | undefined;
  private readonly emitter = new vscode.EventEmitter<OpenSession | undefined>();
  /** Fires after a session was opened, replaced or closed. */
  readonly onDidChange = this.emitter.event;
  private readonly willOpenEmitter = new vscode.EventEmitter<OpeningSession>();
  /** Fires when `session/open` of a file was sent (a big file's view asks for its preview). */
  readonly onWillOpen = this.willOpenEmitter.event;

  constructor(private readonly daemon: Daemon) {}

  get value(): OpenSession | undefined {
    return this.current;
  }

  /** Opens a session file through the daemon and makes it current. */
  async open(path: string): Promise<OpenSession> {
    const opening = this.daemon.request<OpenResult>(Method.open, { path });
    const opened = opening.then((result) => this.adopt(result, path));
    this.willOpenEmitter.fire({ path, opened });
    return opened;
  }

  /** Makes an already opened daemon session current. */
  adopt(
    result: Pick<OpenResult, 'session' | 'header' | 'leafId' | 'displayName'> & {
      path?: string;
      agent?: string | null;
      resumeCommand?: string | null;
    },
    path?: string,
  ): OpenSession {
    const p = result.path ?? path;
    // the daemon's name, so that the title agrees with the Sessions view; older daemons send none
    const title = result.displayName || sessionTitle(result.header, p);
    this.current = { handle: result.session, path: p, title, leafId: result.leafId ?? null };
    if (result.agent) {
      this.current.agent = result.agent;
      this.current.resumeCommand = result.resumeCommand ?? undefined;
    }
    this.emitter.fire(this.current);
    return this.current;
  }

  /** Updates the title or path in place (rename, fork). */
  update(patch: Partial<OpenSession>): void {
    if (this.current) {
      this.current = { ...this.current, ...patch };
      this.emitter.fire(this.current);
    }
  }

  clear(): void {
    this.current = undefined;
    this.emitter.fire(undefined);
  }

  dispose(): void {
    this.emitter.dispose();
    this.willOpenEmitter.dispose();
  }
}

/** A short title when the daemon sends no `displayName`: the header's title, else the file name. */
/** The open session, or an error saying none is open (for commands that need one). */
export function requireOpen(current: { readonly value: OpenSession | undefined }): OpenSession {
  if (!current.value) {
    throw new Error('No session is open. Open one from the Sessions view first.');
  }
  return current.value;
}

export function sessionTitle(header: { title?: unknown } | undefined, path?: string): string {
  if (header && typeof header.title === 'string' && header.title) {
    return header.title;
  }
  if (path) {
    const base = path.split(/[\\/]/).pop() ?? path;
    return base.replace(/\.jsonl$/, '');
  }
  return 'in-memory session';
}
