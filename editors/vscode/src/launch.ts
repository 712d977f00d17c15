/**
 * How the daemon is started (no vscode import, so the unit tests run it against real Pythons).
 *
 * A packaged extension carries the daemon and its Python dependencies under `bundled/libs`
 * (scripts/bundle-libs.py; the layout of Microsoft's vscode-python-tools-extension-template)
 * and runs `python -m sessiontree serve` with `PYTHONPATH=bundled/libs`, using a Python the
 * user already has. In order:
 *   1. `sessiontree.server.command`, when set: that executable, as it is (the override);
 *   2. with a bundle: `sessiontree.python` when set, else the Python extension's interpreter
 *      for the workspace, else `python3`, `python`, `python3.N` on PATH: the first that is
 *      3.11 or newer and one of the versions the bundle has compiled wheels for;
 *   3. without a bundle (a development build): `sessiontree` on PATH.
 * When nothing fits, the problem says what was found and what to set.
 */
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { resolveCommand } from './daemonCheck';

/** The oldest Python the daemon runs on (pyproject.toml `requires-python`). */
export const MIN_PYTHON: readonly [number, number] = [3, 11];

/** What scripts/bundle-libs.py writes beside the libs: `bundled/manifest.json`. */
export interface BundleManifest {
  /** The VS Code target the libs were built for, e.g. `linux-x64`. */
  target: string;
  /** The Python versions ("3.11", ...) the compiled wheels cover. */
  pythons: string[];
  /** The sessiontree version inside. */
  sessiontree: string;
}

/** The bundled daemon of an installed extension. */
export interface Bundle {
  libs: string;
  manifest: BundleManifest;
}

/** Reads `<extensionPath>/bundled`; undefined for a build without one. */
export function readBundle(extensionPath: string): Bundle | undefined {
  const dir = path.join(extensionPath, 'bundled');
  try {
    const manifest = JSON.parse(fs.readFileSync(path.join(dir, 'manifest.json'), 'utf8')) as BundleManifest;
    const libs = path.join(dir, 'libs');
    if (!Array.isArray(manifest.pythons) || !fs.statSync(path.join(libs, 'sessiontree')).isDirectory()) {
      return undefined;
    }
    return { libs, manifest };
  } catch {
    return undefined;
  }
}

/** A Python interpreter as it answered (or failed to). */
export interface PythonProbe {
  /** The executable that ran. */
  path: string;
  /** "3.12.1" when it ran. */
  version?: string;
  major?: number;
  minor?: number;
  /** Why it could not be asked. */
  error?: string;
}

/** Runs `python -c` to learn its version (a pyenv shim without that version fails here). */
export function probePython(executable: string, timeoutMs = 10000): Promise<PythonProbe> {
  return new Promise((resolve) => {
    execFile(
      executable,
      ['-c', 'import sys; print("%d.%d.%d" % sys.version_info[:3])'],
      { timeout: timeoutMs, windowsHide: true },
      (err, stdout, stderr) => {
        const m = /^(\d+)\.(\d+)\.(\d+)\s*$/.exec(String(stdout));
        if (err || !m) {
          const why = String(stderr).trim().split('\n')[0] || (err ? err.message : `printed "${String(stdout).trim()}"`);
          resolve({ path: executable, error: why });
          return;
        }
        resolve({ path: executable, version: `${m[1]}.${m[2]}.${m[3]}`, major: Number(m[1]), minor: Number(m[2]) });
      },
    );
  });
}

/** A Python to try, and where it came from (for messages and the log). */
export interface PythonCandidate {
  command: string;
  source: string;
}

/** What to run. */
export interface LaunchPlan {
  command: string;
  args: string[];
  /** Variables added to the extension host's environment. */
  env: Record<string, string>;
  /** One line for the log: what runs, and why this one. */
  description: string;
}

/** Either a plan or the reason there is none (the message shown to the user). */
export type LaunchDecision = { plan: LaunchPlan; problem?: undefined } | { plan?: undefined; problem: string; kind: 'missing' };

/** The inputs of {@link planLaunch}: settings, the bundle, and where to look. */
export interface LaunchInput {
  /** `sessiontree.server.command` ('' = not set). */
  serverCommand: string;
  /** `sessiontree.server.args`. */
  serverArgs: string[];
  /** `sessiontree.python` ('' = not set). */
  python: string;
  /** The interpreter the Python extension selected, when it is installed. */
  pythonFromExtension?: () => Promise<string | undefined>;
  bundle?: Bundle;
  /** PATH to search. */
  envPath?: string;
  /** A directory for Python's bytecode cache, outside the extension's own files. */
  pycacheDir?: string;
  probe?: (executable: string) => Promise<PythonProbe>;
}

/** Names tried on PATH when no interpreter is configured, newest versioned names last. */
export function pathCandidates(platform = process.platform): string[] {
  const versioned = ['python3.14', 'python3.13', 'python3.12', 'python3.11'];
  return platform === 'win32' ? ['python', 'python3'] : ['python3', 'python', ...versioned];
}

const fmtMin = `${MIN_PYTHON[0]}.${MIN_PYTHON[1]}`;

/** Decides what to start; never throws. */
export async function planLaunch(input: LaunchInput): Promise<LaunchDecision> {
  const envPath = input.envPath ?? process.env.PATH ?? '';
  const args = input.serverArgs.length ? input.serverArgs : ['serve'];
  const override = input.serverCommand.trim();
  if (override) {
    const resolved = resolveCommand(override, envPath);
    if (!resolved) {
      const fix = input.bundle
        ? 'Clear the setting to use the daemon bundled with the extension, or set it to the full path of a `sessiontree` executable.'
        : 'Set it to the full path of a `sessiontree` executable (e.g. `<checkout>/.venv/bin/sessiontree` after `make run`).';
      return { kind: 'missing', problem: `the daemon \`${override}\` (\`sessiontree.server.command\`) was not found. ${fix}` };
    }
    return { plan: { command: resolved, args, env: {}, description: `${resolved} ${args.join(' ')} (sessiontree.server.command)` } };
  }
  if (!input.bundle) {
    const resolved = resolveCommand('sessiontree', envPath);
    if (resolved) {
      return { plan: { command: resolved, args, env: {}, description: `${resolved} ${args.join(' ')} (from PATH)` } };
    }
    return {
      kind: 'missing',
      problem:
        'this build of the extension carries no daemon, and `sessiontree` is not on PATH. Install it from a checkout ' +
        '(`python3 -m pip install .`, or `make run` for a .venv), or set `sessiontree.server.command` to its full path.',
    };
  }
  const bundle = input.bundle;
  const probe = input.probe ?? ((exe: string) => probePython(exe));
  const candidates: PythonCandidate[] = [];
  if (input.python.trim()) {
    candidates.push({ command: input.python.trim(), source: 'sessiontree.python' });
  } else {
    let fromExt: string | undefined;
    try {
      fromExt = await input.pythonFromExtension?.();
    } catch {
      fromExt = undefined;
    }
    if (fromExt) {
      candidates.push({ command: fromExt, source: 'the Python extension' });
    }
    for (const name of pathCandidates()) {
      candidates.push({ command: name, source: 'PATH' });
    }
  }
  const found: string[] = [];
  const seen = new Set<string>();
  for (const c of candidates) {
    const resolved = resolveCommand(c.command, envPath);
    if (!resolved) {
      if (c.source !== 'PATH') {
        found.push(`\`${c.command}\` (${c.source}) was not found`);
      }
      continue;
    }
    let real = resolved;
    try {
      real = fs.realpathSync(resolved);
    } catch {
      // keep the path as found
    }
    // a name that leads to an interpreter already asked (python3 -> python3.11) says nothing new
    if (seen.has(real)) {
      continue;
    }
    seen.add(real);
    const p = await probe(resolved);
    if (p.version === undefined || p.major === undefined || p.minor === undefined) {
      found.push(`\`${resolved}\` (${c.source}) did not run: ${p.error ?? 'no version'}`);
      continue;
    }
    const minor = `${p.major}.${p.minor}`;
    if (p.major < MIN_PYTHON[0] || (p.major === MIN_PYTHON[0] && p.minor < MIN_PYTHON[1])) {
      found.push(`\`${resolved}\` (${c.source}) is Python ${p.version}, older than ${fmtMin}`);
      continue;
    }
    if (!bundle.manifest.pythons.includes(minor)) {
      found.push(
        `\`${resolved}\` (${c.source}) is Python ${p.version}; the bundled libraries are built for ${bundle.manifest.pythons.join(', ')}`,
      );
      continue;
    }
    const env: Record<string, string> = { PYTHONPATH: bundle.libs };
    if (input.pycacheDir) {
      env.PYTHONPYCACHEPREFIX = input.pycacheDir;
    }
    return {
      plan: {
        command: resolved,
        args: ['-m', 'sessiontree', ...args],
        env,
        description: `the bundled sessiontree ${bundle.manifest.sessiontree} on Python ${p.version} (${resolved}, from ${c.source})`,
      },
    };
  }
  const what = found.length ? `Found: ${found.join('; ')}.` : 'No `python3` or `python` is on PATH.';
  return {
    kind: 'missing',
    problem:
      `the bundled daemon needs Python ${fmtMin} or newer (${bundle.manifest.pythons.join(', ')}). ${what} ` +
      `Install Python ${fmtMin}+, or set \`sessiontree.python\` to a Python ${fmtMin}+ interpreter ` +
      '(or `sessiontree.server.command` to a `sessiontree` executable) in your User settings.',
  };
}
