/** Checks on the daemon command and its initialize result (no vscode import). */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

/** Resolves a command name on PATH (or checks an explicit path); undefined when not found. */
export function resolveCommand(command: string, envPath = process.env.PATH ?? ''): string | undefined {
  const isExec = (p: string) => {
    try {
      fs.accessSync(p, fs.constants.X_OK);
      return fs.statSync(p).isFile();
    } catch {
      return false;
    }
  };
  if (command === '~' || command.startsWith('~/')) {
    command = path.join(os.homedir(), command.slice(1));
  }
  if (command.includes('/') || command.includes('\\')) {
    return isExec(command) ? command : undefined;
  }
  const exts = process.platform === 'win32' ? ['.exe', '.cmd', '.bat', ''] : [''];
  for (const dir of envPath.split(path.delimiter)) {
    for (const ext of exts) {
      const candidate = path.join(dir, command + ext);
      if (dir && isExec(candidate)) {
        return candidate;
      }
    }
  }
  return undefined;
}

/** Reads `capabilities.experimental.sessionTree.protocolVersion` from an initialize result. */
export function protocolVersionOf(initializeResult: unknown): number | undefined {
  const caps = (initializeResult as { capabilities?: { experimental?: { sessionTree?: { protocolVersion?: unknown } } } })
    ?.capabilities;
  const v = caps?.experimental?.sessionTree?.protocolVersion;
  return typeof v === 'number' ? v : undefined;
}

/** The message of an error, including JSON-RPC errors. */
export function errorText(err: unknown): string {
  if (err instanceof Error) {
    return err.message;
  }
  if (err && typeof err === 'object' && 'message' in err) {
    return String((err as { message: unknown }).message);
  }
  return String(err);
}
