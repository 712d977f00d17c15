'use strict';
// The one-step install, end to end: the VSIX that scripts/package.sh built is installed into a
// fresh code-server (new user-data and extensions dirs, a new HOME) whose PATH has no
// `sessiontree`, with no sessiontree settings at all. A session lies where the agent keeps it
// by default (~/.xcsh/agent/sessions/<encoded cwd>/). A person opens the Session Tree view
// from the activity bar, sees the session in the Sessions view, clicks it and sees its tree:
// the driver does exactly that in Chromium, asserts what is drawn and saves a screenshot in
// test-artifacts/vscode-vsix-install.png. Prints "vsix-e2e: N passed, N failed".
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const h = require('./harness');
const { vsixPath } = require('../vsix/vsix-path');

const fixture = path.join(h.extDir, 'test', 'fixtures', 'branched.jsonl');
const TIMEOUT_MS = Number(process.env.SESSIONTREE_E2E_TIMEOUT_MS || 120000);

/** PATH without any directory that holds a `sessiontree` (e.g. the checkout's .venv/bin). */
function pathWithoutSessiontree(envPath) {
  return envPath
    .split(path.delimiter)
    .filter((d) => d && !fs.existsSync(path.join(d, 'sessiontree')))
    .join(path.delimiter);
}

async function main() {
  const t0 = Date.now();
  h.checkTools();
  const vsix = vsixPath();
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'st-vscode-vsix-e2e-'));
  const env = h.isolatedEnv(tmp);
  env.PATH = pathWithoutSessiontree(env.PATH || '');
  const userData = path.join(tmp, 'user');
  const extensions = path.join(tmp, 'ext');
  const ws = path.join(env.HOME, 'project');
  fs.mkdirSync(ws, { recursive: true });
  fs.mkdirSync(extensions, { recursive: true });
  // only the settings that keep a fresh VS Code quiet; nothing of the extension's
  h.writeUserSettings(userData, h.QUIET_USER_SETTINGS);
  // the session where the agent keeps it for this project, in its default agent dir
  const lines = fs.readFileSync(fixture, 'utf8').split('\n').filter(Boolean);
  const header = JSON.parse(lines[0]);
  header.cwd = ws;
  lines[0] = JSON.stringify(header);
  const sessions = path.join(env.HOME, '.xcsh', 'agent', 'sessions', h.encodeCwd(ws, env.HOME));
  fs.mkdirSync(sessions, { recursive: true });
  fs.writeFileSync(path.join(sessions, `2026-01-10T09-00-00-000Z_${header.id}.jsonl`), `${lines.join('\n')}\n`);

  const results = [];
  const check = (name, ok, detail = '') => {
    results.push({ name, ok });
    console.log(`  ${ok ? '✓' : '✗'} ${name}${ok || !detail ? '' : `: ${detail}`}`);
  };
  let browser;
  let stop = () => undefined;
  try {
    const inPath = env.PATH.split(path.delimiter).filter((d) => fs.existsSync(path.join(d, 'sessiontree')));
    check('no sessiontree on PATH', inPath.length === 0, inPath.join(', '));
    const settings = JSON.parse(fs.readFileSync(path.join(userData, 'User', 'settings.json'), 'utf8'));
    check('no sessiontree settings', !Object.keys(settings).some((k) => k.startsWith('sessiontree.')));

    const install = execFileSync(h.node24, [...h.codeServerArgs(userData, extensions), '--install-extension', vsix], {
      env: { ...env, PATH: `${path.dirname(h.node24)}:${env.PATH}` },
      encoding: 'utf8',
      timeout: 60000,
    });
    const installedDir = fs.readdirSync(extensions).find((d) => d.startsWith('sessiontree.sessiontree-'));
    check(`the VSIX installs (${path.basename(vsix)})`, !!installedDir && /successfully installed/i.test(install), install.trim());

    const started = await h.startCodeServer({ env, userDataDir: userData, extensionsDir: extensions, folder: ws, logName: 'vscode-vsix-code-server.log' });
    stop = started.stop;
    browser = await h.launchBrowser(env);
    const page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
    const { pane, rowLabels, row, widen } = h.sidebar(page);
    await page.goto(`http://${started.host}/?folder=${encodeURIComponent(ws)}`);
    const deadline = Date.now() + TIMEOUT_MS;
    const left = () => Math.max(1000, deadline - Date.now());

    // the activity bar entry, with the extension's own icon
    const activity = page.locator('.activitybar .action-item a[aria-label^="Session Tree"]').first();
    await activity.waitFor({ state: 'visible', timeout: left() });
    const mask = await activity.evaluate((a) => getComputedStyle(a).webkitMaskImage || getComputedStyle(a).maskImage || '');
    check('the activity bar shows the Session Tree icon (media/sessiontree.svg)', /sessiontree\.svg/.test(mask), mask);
    await activity.click();

    const sessionLabel = 'How do I read a JSONL file in Python?';
    const sessionRow = row('Sessions', sessionLabel);
    await sessionRow.waitFor({ state: 'visible', timeout: left() });
    check('the Sessions view lists the session', true);
    await sessionRow.click();
    await pane('Session Tree').locator('.monaco-list-row').first().waitFor({ state: 'visible', timeout: left() });
    await page.waitForTimeout(500);
    const labels = await rowLabels('Session Tree');
    const want = ['user: How do I read a JSONL file in Python?', 'assistant: Read it line by line and call json.loads on each line.'];
    check('the Session Tree view shows the session', want.every((w) => labels.includes(w)), JSON.stringify(labels));
    const title = await pane('Session Tree').locator('.pane-header').innerText();
    check('the tree title names the session as the Sessions view does', title.includes(sessionLabel), title);

    const bar = await widen();
    await page.waitForTimeout(700);
    const shot = path.join(h.artifacts, 'vscode-vsix-install.png');
    await bar.screenshot({ path: shot });
    await page.screenshot({ path: path.join(h.artifacts, 'vscode-vsix-install-window.png') });
    console.log(`    · screenshot: ${path.relative(path.resolve(h.extDir, '..', '..'), shot)}`);

    // what the extension started, from its log in the user-data dir
    const logs = path.join(userData, 'logs');
    const found = [];
    const walk = (d) => {
      for (const e of fs.readdirSync(d, { withFileTypes: true })) {
        const p = path.join(d, e.name);
        if (e.isDirectory()) walk(p);
        else if (/Session Tree\.log$/.test(e.name)) found.push(fs.readFileSync(p, 'utf8'));
      }
    };
    if (fs.existsSync(logs)) walk(logs);
    const started1 = found.join('\n').split('\n').find((l) => l.includes('starting the bundled sessiontree'));
    check('the bundled daemon ran on a Python from PATH', !!started1 && /from PATH\)/.test(started1), found.join('\n').slice(0, 400));
    if (started1) console.log(`    · ${started1.replace(/^.*starting /, 'started ')}`);
  } catch (err) {
    check('the install test ran to its end', false, err.stack || String(err));
  } finally {
    if (browser) await browser.close().catch(() => undefined);
    stop();
    await new Promise((r) => setTimeout(r, 300));
    if (!process.env.SESSIONTREE_E2E_KEEP) fs.rmSync(tmp, { recursive: true, force: true });
  }
  const failed = results.filter((r) => !r.ok).length;
  console.log(`vsix-e2e: done in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  console.log(`vsix-e2e: ${results.length - failed} passed, ${failed} failed`);
  return failed === 0 && results.length > 0 ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(`vsix-e2e: ${err.stack || err}`);
    process.exit(1);
  },
);
