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
import { ContextKey, PROTOCOL_VERSION, PYTHON_EXTENSION_ID, Setting } from './constants';
import { errorText, protocolVersionOf } from './daemonCheck';
import { type Bundle, planLaunch, readBundle } from './launch';
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
  /** What the last start ran (for the log and the tests). */
  launched: string | undefined;
  private readonly bundle: Bundle | undefined;

  /**
   * @param extensionPath where a packaged extension keeps `bundled/` (the daemon and its libs)
   * @param pycacheDir where Python may write bytecode of the bundled libs (the extension's
   *   global storage), so the extension's own directory is never written
   */
  constructor(
    extensionPath?: string,
    private readonly pycacheDir?: string,
  ) {
    this.output = vscode.window.createOutputChannel('Session Tree', { log: true });
    this.bundle = extensionPath ? readBundle(extensionPath) : undefined;
  }

  /** True when this build carries the daemon (a packaged, per-platform VSIX). */
  get hasBundle(): boolean {
    return !!this.bundle;
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
    const args = config.get<string[]>(Setting.serverArgs) ?? ['serve'];
    const agentDir = config.get<string>(Setting.agentDir) || '';
    this.setState('starting');
    const decision = await planLaunch({
      serverCommand: config.get<string>(Setting.serverCommand) ?? '',
      serverArgs: args,
      python: config.get<string>(Setting.python) ?? '',
      pythonFromExtension: () => pythonFromExtension(this.output),
      bundle: this.bundle,
      pycacheDir: this.pycacheDir,
    });
    if (!decision.plan) {
      this.setState('missing');
      const msg = `Session Tree: ${decision.problem}`;
      this.output.appendLine(msg);
      void this.showError(msg, decision.problem.includes('sessiontree.python') ? Setting.python : Setting.serverCommand);
      throw new Error(msg);
    }
    const plan = decision.plan;
    this.launched = plan.description;
    this.output.appendLine(`starting ${plan.description}`);
    const serverOptions: ServerOptions = {
      command: plan.command,
      args: plan.args,
      transport: TransportKind.stdio,
      options: { env: { ...process.env, ...plan.env } },
    };
    const initializationOptions: Record<string, unknown> = {};
    if (agentDir) {
      initializationOptions.agentDir = agentDir;
    }
    const preindex = config.get<number>(Setting.preindex);
    if (typeof preindex === 'number') {
      initializationOptions.preindex = preindex;
    }
    const store = config.get<string>('store') || '';
    if (store) {
      initializationOptions.store = store;
    }
    const clientOptions: LanguageClientOptions = {
      documentSelector: [],
      outputChannel: this.output,
      revealOutputChannelOn: RevealOutputChannelOn.Never,
      initializationOptions,
      connectionOptions: { maxRestartCount: 4 },
    };
    const client = new LanguageClient('sessiontree', 'Session Tree', serverOptions, clientOptions);
    // The language client keeps one handler per method (a second registration replaces the
    // first): one dispatcher per method calls every subscriber.
    for (const method of new Set([...this.handlers].map((h) => h.method))) {
      client.onNotification(method, this.dispatcher(method));
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
      const msg = `Session Tree: the daemon (${plan.description}) did not start: ${errorText(err)}. See the Session Tree log (Show Daemon Log).`;
      this.output.appendLine(msg);
      void this.showError(msg, Setting.serverCommand);
      throw new Error(msg);
    }
    const version = protocolVersionOf(client.initializeResult);
    this.serverVersion = client.initializeResult?.serverInfo?.version;
    if (version === undefined || version < PROTOCOL_VERSION) {
      this.setState('failed');
      await client.stop().catch(() => undefined);
      this.client = undefined;
      const fix = this.bundle
        ? 'Clear `sessiontree.server.command` to use the daemon bundled with the extension, or upgrade that one'
        : 'Upgrade it (from a checkout: `python3 -m pip install .`) or set `sessiontree.server.command` to a newer one';
      const msg =
        `Session Tree: the daemon at \`${plan.command}\` (version ${this.serverVersion ?? 'unknown'}) speaks protocol ` +
        `${version ?? 'none'}, this extension needs ${PROTOCOL_VERSION}. ${fix}.`;
      void this.showError(msg, Setting.serverCommand);
      throw new Error(msg);
    }
    this.output.appendLine(`sessiontree daemon ${this.serverVersion ?? ''} running (protocol ${version})`);
    this.setState('running');
  }

  /** Shows the message with a button to the setting that fixes it (User settings work). */
  private async showError(msg: string, setting: string): Promise<void> {
    const open = 'Open Settings';
    const log = 'Show Log';
    const pick = await vscode.window.showErrorMessage(msg, open, log);
    if (pick === open) {
      await vscode.commands.executeCommand('workbench.action.openSettings', `${Setting.section}.${setting}`);
    } else if (pick === log) {
      this.output.show();
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
    const first = ![...this.handlers].some((h) => h.method === method);
    this.handlers.add(entry);
    if (first) {
      this.client?.onNotification(method, this.dispatcher(method));
    }
    return new vscode.Disposable(() => {
      this.handlers.delete(entry);
    });
  }

  /** Calls every handler subscribed to `method`, in subscription order. */
  private dispatcher(method: string): (params: unknown) => void {
    return (params) => {
      for (const h of [...this.handlers]) {
        if (h.method === method) {
          h.handler(params);
        }
      }
    };
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

/** The interpreter the Python extension (ms-python.python) selected, when it is installed. */
async function pythonFromExtension(log: vscode.LogOutputChannel): Promise<string | undefined> {
  const ext = vscode.extensions.getExtension(PYTHON_EXTENSION_ID);
  if (!ext) {
    return undefined;
  }
  type Env = { executable?: { uri?: vscode.Uri } };
  type Api = {
    environments?: {
      getActiveEnvironmentPath(resource?: vscode.Uri): { path: string };
      resolveEnvironment(env: { path: string } | string): Promise<Env | undefined>;
    };
  };
  // the Python extension can take long to activate; the daemon does not wait for it forever
  const timeout = new Promise<undefined>((r) => setTimeout(() => r(undefined), 10000));
  try {
    const api = (await Promise.race([ext.isActive ? Promise.resolve(ext.exports) : ext.activate(), timeout])) as Api | undefined;
    const envs = api?.environments;
    if (!envs) {
      return undefined;
    }
    const active = envs.getActiveEnvironmentPath(vscode.workspace.workspaceFolders?.[0]?.uri);
    const resolved = await Promise.race([envs.resolveEnvironment(active), timeout]);
    return resolved?.executable?.uri?.fsPath ?? active.path;
  } catch (err) {
    log.appendLine(`the Python extension gave no interpreter: ${errorText(err)}`);
    return undefined;
  }
}
