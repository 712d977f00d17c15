/** Starts `sessiontree serve` through vscode-languageclient and speaks only the protocol. */
import * as vscode from 'vscode';
import {
  LanguageClient,
  type LanguageClientOptions,
  RevealOutputChannelOn,
  type ServerOptions,
  State,
  TransportKind,
} from 'vscode-languageclient/node';
import { ContextKey, INSTALL_HINT, PROTOCOL_VERSION, Setting } from './constants';
import { errorText, protocolVersionOf, resolveCommand } from './daemonCheck';
import type { Daemon } from './protocol';

/** The daemon's state, mirrored in the `sessiontree.daemonState` context key. */
export type DaemonState = 'stopped' | 'starting' | 'running' | 'missing' | 'failed';

/** The connection to the daemon. Notification handlers survive restarts. */
export class DaemonClient implements Daemon, vscode.Disposable {
  private client: LanguageClient | undefined;
  private readonly handlers = new Set<{ method: string; handler: (params: unknown) => void }>();
  private readonly stateEmitter = new vscode.EventEmitter<DaemonState>();
  readonly onDidChangeState = this.stateEmitter.event;
  private readonly restartEmitter = new vscode.EventEmitter<void>();
  /** Fires when the language client restarted a crashed daemon: session handles are gone. */
  readonly onDidRestartAfterCrash = this.restartEmitter.event;
  private stateValue: DaemonState = 'stopped';
  readonly output: vscode.LogOutputChannel;
  private readyPromise: Promise<void> | undefined;
  serverVersion: string | undefined;

  constructor() {
    this.output = vscode.window.createOutputChannel('Session Tree', { log: true });
  }

  get state(): DaemonState {
    return this.stateValue;
  }

  private setState(state: DaemonState): void {
    this.stateValue = state;
    void vscode.commands.executeCommand('setContext', ContextKey.daemonState, state);
    this.stateEmitter.fire(state);
  }

  /** Resolves once the daemon is running; rejects with the user-facing reason otherwise. */
  ready(): Promise<void> {
    return this.readyPromise ?? this.start();
  }

  start(): Promise<void> {
    this.readyPromise = this.doStart();
    return this.readyPromise;
  }

  private async doStart(): Promise<void> {
    const config = vscode.workspace.getConfiguration(Setting.section);
    const command = config.get<string>(Setting.serverCommand) || 'sessiontree';
    const args = config.get<string[]>(Setting.serverArgs) ?? ['serve'];
    const agentDir = config.get<string>(Setting.agentDir) || '';
    this.setState('starting');
    const resolved = resolveCommand(command);
    if (!resolved) {
      this.setState('missing');
      const msg = `Session Tree: the daemon \`${command}\` was not found. ${INSTALL_HINT}`;
      this.output.appendLine(msg);
      void this.showError(msg);
      throw new Error(msg);
    }
    const serverOptions: ServerOptions = {
      command: resolved,
      args,
      transport: TransportKind.stdio,
      options: { env: { ...process.env } },
    };
    const initializationOptions: Record<string, unknown> = {};
    if (agentDir) {
      initializationOptions.agentDir = agentDir;
    }
    const clientOptions: LanguageClientOptions = {
      documentSelector: [],
      outputChannel: this.output,
      revealOutputChannelOn: RevealOutputChannelOn.Never,
      initializationOptions,
      connectionOptions: { maxRestartCount: 4 },
    };
    const client = new LanguageClient('sessiontree', 'Session Tree', serverOptions, clientOptions);
    for (const h of this.handlers) {
      client.onNotification(h.method, h.handler);
    }
    this.client = client;
    let started = false;
    client.onDidChangeState((e) => {
      if (this.client !== client) {
        return;
      }
      if (e.newState === State.Running && started) {
        this.output.appendLine('the daemon was restarted after it stopped; reopening the session');
        this.restartEmitter.fire();
      } else if (e.newState === State.Stopped && started && this.stateValue === 'running') {
        this.output.appendLine('the daemon stopped');
      }
    });
    try {
      await client.start();
      started = true;
    } catch (err) {
      this.setState('failed');
      const msg = `Session Tree: the daemon \`${resolved} ${args.join(' ')}\` did not start: ${errorText(err)}. ${INSTALL_HINT}`;
      this.output.appendLine(msg);
      void this.showError(msg);
      throw new Error(msg);
    }
    const version = protocolVersionOf(client.initializeResult);
    this.serverVersion = client.initializeResult?.serverInfo?.version;
    if (version === undefined || version < PROTOCOL_VERSION) {
      this.setState('failed');
      await client.stop().catch(() => undefined);
      this.client = undefined;
      const msg =
        `Session Tree: the daemon at \`${resolved}\` (version ${this.serverVersion ?? 'unknown'}) speaks protocol ` +
        `${version ?? 'none'}, this extension needs ${PROTOCOL_VERSION}. Upgrade it with \`pip install -U sessiontree\` ` +
        'or set `sessiontree.server.command`.';
      void this.showError(msg);
      throw new Error(msg);
    }
    this.output.appendLine(`sessiontree daemon ${this.serverVersion ?? ''} running (protocol ${version})`);
    this.setState('running');
  }

  private async showError(msg: string): Promise<void> {
    const open = 'Open Settings';
    const pick = await vscode.window.showErrorMessage(msg, open);
    if (pick === open) {
      await vscode.commands.executeCommand('workbench.action.openSettings', 'sessiontree.server');
    }
  }

  async restart(): Promise<void> {
    const old = this.client;
    this.client = undefined;
    if (old) {
      await old.stop().catch(() => undefined);
    }
    await this.start();
  }

  async request<R>(method: string, params: object): Promise<R> {
    await this.ready();
    if (!this.client) {
      throw new Error('the sessiontree daemon is not running');
    }
    return this.client.sendRequest<R>(method, params);
  }

  onNotification(method: string, handler: (params: any) => void): vscode.Disposable {
    const entry = { method, handler };
    this.handlers.add(entry);
    let inner: vscode.Disposable | undefined = this.client?.onNotification(method, handler);
    return new vscode.Disposable(() => {
      this.handlers.delete(entry);
      inner?.dispose();
      inner = undefined;
    });
  }

  async dispose(): Promise<void> {
    const c = this.client;
    this.client = undefined;
    this.stateEmitter.dispose();
    this.restartEmitter.dispose();
    if (c) {
      await c.dispose(2000).catch(() => undefined);
    }
    this.output.dispose();
  }
}

export { errorText };
