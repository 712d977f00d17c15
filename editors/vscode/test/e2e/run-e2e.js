'use strict';
// Drives the end-to-end level: starts code-server (a real VS Code, under Node 24 from npm) with
// the extension in development mode and the mocha suite as extension tests, opens it in Debian's
// Chromium through playwright-core, answers the suite's UI requests (typing into the input box,
// screenshots) and exits non-zero unless every test passed.
const fs = require('node:fs');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const { daemonCommand, repoRoot } = require('../daemon-path');
const { snapshot } = require('./agent-snapshot');
const h = require('./harness');

const { extDir, artifacts } = h;
const fixture = path.join(extDir, 'test', 'fixtures', 'branched.jsonl');
// A v1 session written by pi-mono (no entry ids), from another project: read from ../shared
// beside the repository, copied only into the test's temporary agent dir, never committed.
const realV1 = path.join(repoRoot, '..', 'shared', 'fixtures', 'real', 'pimono-large-session.jsonl');
// (the first-rows test of the 100,000-entry session adds two daemon restarts and two opens)
const TOTAL_TIMEOUT_MS = Number(process.env.SESSIONTREE_E2E_TIMEOUT_MS || 300000);

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

/**
 * A session from the benchmark generator (benchmarks/gen_corpus.py), made once and kept under
 * <repo>/.cache/vscode/corpus (named after the generator's hash and the options), then copied.
 */
function generated(file, entries, ...options) {
  const gen = path.join(repoRoot, 'benchmarks', 'gen_corpus.py');
  const hash = require('node:crypto').createHash('sha256').update(fs.readFileSync(gen)).digest('hex').slice(0, 12);
  const dir = path.join(h.cache, 'corpus');
  const kept = path.join(dir, `${[hash, entries, ...options].join('_').replace(/[^\w.-]+/g, '')}.jsonl`);
  if (!fs.existsSync(kept)) {
    fs.mkdirSync(dir, { recursive: true });
    const venvPython = path.join(repoRoot, '.venv', 'bin', 'python');
    const python = fs.existsSync(venvPython) ? venvPython : 'python3';
    execFileSync(python, [gen, `${kept}.tmp`, String(entries), '--seed', '7', ...options], { stdio: 'ignore' });
    fs.renameSync(`${kept}.tmp`, kept);
  }
  fs.copyFileSync(kept, file);
}

function prepare() {
  const tmp = fs.mkdtempSync(path.join(require('node:os').tmpdir(), 'st-vscode-e2e-'));
  const env = h.isolatedEnv(tmp);
  const ws = path.join(tmp, 'ws');
  const agent = path.join(tmp, 'agent');
  for (const d of [ws, agent, path.join(tmp, 'ext'), path.join(ws, '.vscode')]) {
    fs.mkdirSync(d, { recursive: true });
  }
  fs.copyFileSync(fixture, path.join(ws, 'branched.jsonl'));
  fs.writeFileSync(path.join(ws, 'long.jsonl'), longSession(3000));
  // branches nested 61 levels deep (a branch every 11 entries), for the deep-tree tests
  generated(path.join(ws, 'deep.jsonl'), 3000, '--branch-every', '11');
  // the 100,000-entry corpus of the benchmarks: its first page takes the daemon more than a
  // second (the view is empty meanwhile), as in the report of the "Nothing matches" problem
  generated(path.join(ws, 'big.jsonl'), 100000);
  // The same session, as the agent would have stored it for this workspace, for the Sessions view.
  const lines = fs.readFileSync(fixture, 'utf8').split('\n').filter(Boolean);
  const header = JSON.parse(lines[0]);
  header.cwd = ws;
  lines[0] = JSON.stringify(header);
  const sessDir = path.join(agent, 'sessions', h.encodeCwd(ws, env.HOME));
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
  // The daemon and the agent dir in User settings, where people put them (they must apply in
  // code-server, a remote window, too); the page size for this workspace only.
  fs.writeFileSync(path.join(ws, '.vscode', 'settings.json'), JSON.stringify({ 'sessiontree.tree.pageSize': 100 }, null, 2));
  h.writeUserSettings(path.join(tmp, 'user'), {
    ...h.QUIET_USER_SETTINGS,
    'sessiontree.server.command': daemonCommand(),
    'sessiontree.agentDir': agent,
    // a click's cold figure (firstRows.test.js) is of a session nobody indexed ahead; the
    // daemon's indexing of listed sessions ahead is tested in tests/e2e/test_preindex.py
    'sessiontree.preindex': 0,
  });
  // The sessions every front end is compared on (tests/fixtures/face): in the workspace to open,
  // and oh-my-pi's and pi's files as their agents keep them for another project, to list by name.
  const face = path.join(repoRoot, 'tests', 'fixtures', 'face');
  fs.mkdirSync(path.join(ws, 'face'), { recursive: true });
  for (const name of fs.readdirSync(face).filter((n) => n.endsWith('.jsonl'))) {
    fs.copyFileSync(path.join(face, name), path.join(ws, 'face', name));
  }
  const faceProject = path.join(tmp, 'face-project');
  fs.mkdirSync(faceProject, { recursive: true });
  const faceDir = path.join(agent, 'sessions', h.encodeCwd(faceProject, env.HOME));
  fs.mkdirSync(faceDir, { recursive: true });
  for (const name of ['omp18', 'pi16']) {
    const lines = fs.readFileSync(path.join(face, `${name}.jsonl`), 'utf8').split('\n');
    const at = lines[0].startsWith('{"type":"title"') ? 1 : 0; // omp's title slot stays as it is
    const header = JSON.parse(lines[at]);
    header.cwd = faceProject;
    lines[at] = JSON.stringify(header);
    fs.writeFileSync(path.join(faceDir, `2026-03-01T09-00-00-000Z_${name}.jsonl`), lines.join('\n'));
  }
  if (looking.v1) {
    looking.agentBefore = snapshot(agent);
  }
  fs.writeFileSync(path.join(e2eDir, 'looking.json'), JSON.stringify({ agent, ...looking }));
  // Claude Code and Codex sessions of the workspace in the HOME (read-only for sessiontree).
  const venvPy = path.join(repoRoot, '.venv', 'bin', 'python');
  const others = JSON.parse(
    execFileSync(fs.existsSync(venvPy) ? venvPy : 'python3', [path.join(repoRoot, 'tests', 'other_agents_home.py'), env.HOME, ws], {
      encoding: 'utf8',
    }),
  );
  others.claudeDir = path.join(env.HOME, '.claude');
  others.codexDir = path.join(env.HOME, '.codex');
  others.before = { claude: snapshot(others.claudeDir), codex: snapshot(others.codexDir) };
  fs.writeFileSync(path.join(e2eDir, 'others.json'), JSON.stringify(others));
  // A real git working tree whose files a session's tool calls changed on two branches, with
  // the person's own edits since (tests/checkpoint_scenario.py), for the restore tests.
  const scenario = execFileSync(
    fs.existsSync(venvPy) ? venvPy : 'python3',
    [path.join(repoRoot, 'tests', 'checkpoint_scenario.py'), path.join(ws, 'restore-demo')],
    { encoding: 'utf8', env },
  );
  fs.writeFileSync(path.join(e2eDir, 'restore.json'), scenario);
  return { tmp, ws, agent, env };
}

async function main() {
  const t0 = Date.now();
  h.checkTools();
  if (!fs.existsSync(path.join(extDir, 'dist', 'extension.js'))) {
    throw new Error('dist/extension.js missing; run npm run build');
  }
  fs.mkdirSync(artifacts, { recursive: true });
  const { tmp, ws, agent, env } = prepare();
  let browser;
  let passed = 0;
  let failed = 0;
  const problems = [];
  let stopServer = () => undefined;
  try {
    const started = await h.startCodeServer({
      // the daemon's own cache (index, locks) and navigation state follow XDG into tmp; the
      // 100,000-entry session is one too big to keep its searchable texts, so its searches
      // answer in steps whatever the daemon's idle time did (firstRows.test.js)
      env: { ...env, PI_CODING_AGENT_DIR: agent, SESSIONTREE_SEARCH_TEXTS_MAX: '60000' },
      userDataDir: path.join(tmp, 'user'),
      extensionsDir: path.join(tmp, 'ext'),
      extraArgs: ['--vscode-option', 'enable-smoke-test-driver'],
      folder: ws,
      logName: 'vscode-e2e-code-server.log',
    });
    const { host } = started;
    stopServer = started.stop;
    const tReady = Date.now();
    browser = await h.launchBrowser(env);
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
    const { pane, rowLabels, row: rowOf, widen } = h.sidebar(page);
    // Visible rows of a view as drawn: the label, the nesting level, where the text starts
    // (px from the row's left edge), the icon, and whether the label is cut short.
    const geometry = (title) =>
      pane(title)
        .locator('.monaco-list-row')
        .evaluateAll((rows) =>
          rows.map((r) => {
            const rect = r.getBoundingClientRect();
            const name = r.querySelector('.label-name');
            const nameRect = name ? name.getBoundingClientRect() : rect;
            const container = r.querySelector('.monaco-icon-label-container');
            const icon = r.querySelector('.custom-view-tree-node-item-icon');
            const iconRect = icon ? icon.getBoundingClientRect() : undefined;
            return {
              label: name ? name.textContent.replace(/\s+/g, ' ').trim() : '',
              level: Number(r.getAttribute('aria-level')),
              textLeft: Math.round(nameRect.left - rect.left),
              rowWidth: Math.round(rect.width),
              icon: icon ? String(icon.className) : '',
              iconVisible: !!iconRect && iconRect.width > 0 && iconRect.left >= rect.left && iconRect.right <= rect.right,
              cut: container ? container.scrollWidth > container.clientWidth + 1 : false,
            };
          }),
        );
    const toasts = async () =>
      (await page.locator('.notifications-toasts .notification-list-item-message').allInnerTexts()).map((t) => t.trim());
    const watches = new Map();
    /** The webview frame showing the session graph (with `text` and the leaf `leafId`, once drawn). */
    const graphFrame = async (text, leafId) => {
      const deadline = Date.now() + 20000;
      for (;;) {
        for (const f of page.frames()) {
          try {
            const ok = await f.evaluate(
              ([t, l]) => {
                const svg = document.querySelector('svg.sessiontree-graph');
                if (!svg) return false;
                if (t && !svg.textContent.includes(t)) return false;
                const leaf = document.querySelector('g.node.leaf');
                return !l || (leaf && leaf.dataset.id === l);
              },
              [text || '', leafId || ''],
            );
            if (ok) return f;
          } catch {
            // a frame that went away or is not ours
          }
        }
        if (Date.now() > deadline) throw new Error(`no graph webview${text ? ` showing "${text}"` : ''}`);
        await page.waitForTimeout(200);
      }
    };
    const handle = async (kind, data) => {
      if (kind === 'TYPE') {
        const input = page.locator('.quick-input-widget input.input').first();
        await input.waitFor({ state: 'visible', timeout: 15000 });
        await input.fill(data.text);
        await page.keyboard.press('Enter');
        ack(data.token);
      } else if (kind === 'CLICK') {
        // a mouse click on the row of a view whose label is exactly data.label, as a person would
        const row = rowOf(data.pane, data.label);
        await row.waitFor({ state: 'visible', timeout: 15000 });
        const listed = await rowLabels(data.pane);
        await row.click();
        ack(data.token, { listed });
      } else if (kind === 'FIRSTROWS') {
        // a mouse click on a row of data.pane (Sessions), timed in the page from the mouse
        // press to the first rows of data.tree (Session Tree, empty before) in the DOM. With
        // data.preview (how the aria-label of a preview row starts), also the times of the first
        // preview rows, of the leaf's preview row, and of the first rows that are no preview's
        // (the exact rows of the open).
        const treeBody = pane(data.tree).locator('.pane-body');
        const target = rowOf(data.pane, data.label);
        await target.waitFor({ state: 'visible', timeout: 15000 });
        await page
          .waitForFunction((el) => !el.querySelector('.monaco-list-row .label-name'), await treeBody.elementHandle(), { timeout: 15000 })
          .catch(() => undefined);
        await treeBody.evaluate((el, preview) => {
          const drawn = () =>
            [...el.querySelectorAll('.monaco-list-row')]
              .map((r) => {
                const name = r.querySelector('.label-name');
                return { label: name ? name.textContent.replace(/\s+/g, ' ').trim() : '', aria: r.getAttribute('aria-label') || '' };
              })
              .filter((r) => r.label);
          const w = { before: drawn().map((r) => r.label), pressedAt: null, firstAt: null, first: [], previewAt: null, previewLeafAt: null, preview: [], exactAt: null, exact: [] };
          const done = () => w.firstAt !== null && (!preview || w.exactAt !== null);
          const observer = new MutationObserver(() => {
            if (w.pressedAt === null || done()) return;
            const rows = drawn();
            if (rows.length === 0) return;
            const now = performance.now();
            if (w.firstAt === null) {
              w.firstAt = now;
              w.first = rows.map((r) => r.label);
            }
            if (preview) {
              const previewRows = rows.filter((r) => r.aria.startsWith(preview));
              if (previewRows.length > 0 && w.previewAt === null) {
                w.previewAt = now;
                w.preview = rows.map((r) => r.label);
              }
              if (w.previewLeafAt === null && previewRows.some((r) => r.aria.includes('current leaf, '))) {
                w.previewLeafAt = now;
              }
              if (previewRows.length === 0 && w.exactAt === null) {
                w.exactAt = now;
                w.exact = rows.map((r) => r.label);
              }
            }
            if (done()) observer.disconnect();
          });
          observer.observe(el, { subtree: true, childList: true, characterData: true, attributes: true, attributeFilter: ['aria-label'] });
          document.addEventListener('mousedown', () => (w.pressedAt = performance.now()), { capture: true, once: true });
          window.__sessiontreeFirstRows = w;
        }, data.preview || '');
        await target.click();
        await page
          .waitForFunction(
            (preview) => {
              const w = window.__sessiontreeFirstRows;
              return w.firstAt !== null && (!preview || w.exactAt !== null);
            },
            data.preview || '',
            { timeout: data.timeout || 60000, polling: 50 },
          )
          .catch(() => undefined);
        const w = await page.evaluate(() => window.__sessiontreeFirstRows);
        const since = (t) => (t === null ? null : t - w.pressedAt);
        ack(data.token, {
          before: w.before,
          first: w.first,
          ms: since(w.firstAt),
          previewMs: since(w.previewAt),
          previewLeafMs: since(w.previewLeafAt),
          preview: w.preview,
          exactMs: since(w.exactAt),
          exact: w.exact,
        });
      } else if (kind === 'ROWS') {
        const rows = pane(data.pane).locator('.monaco-list-row').first();
        await rows.waitFor({ state: 'visible', timeout: 15000 });
        if (data.until) {
          // the window draws after the extension host is done: give a row awaited time to appear
          await rowOf(data.pane, data.until).waitFor({ state: 'visible', timeout: 5000 }).catch(() => undefined);
        }
        ack(data.token, { labels: await rowLabels(data.pane) });
      } else if (kind === 'GEOMETRY') {
        await pane(data.pane).locator('.monaco-list-row').first().waitFor({ state: 'visible', timeout: 15000 });
        await page.waitForTimeout(300);
        ack(data.token, { rows: await geometry(data.pane) });
      } else if (kind === 'TITLE') {
        // a click on a button of the view's title bar (shown while the pointer is over the view)
        await pane(data.pane).locator('.pane-header').hover();
        const button = pane(data.pane).locator(`.pane-header .actions .action-label[aria-label="${data.action}"]`);
        await button.waitFor({ state: 'visible', timeout: 10000 });
        await button.click();
        ack(data.token);
      } else if (kind === 'TOASTS') {
        ack(data.token, { messages: await toasts() });
      } else if (kind === 'WATCH') {
        // records every text the view body shows until WATCHED (a MutationObserver in the page,
        // so that a state drawn for a few milliseconds, e.g. while a session loads, is seen too)
        const body = await pane(data.pane).locator('.pane-body').elementHandle();
        await body.evaluate((el) => {
          const seen = new Set([el.innerText]);
          const observer = new MutationObserver(() => seen.add(el.innerText));
          observer.observe(el, { subtree: true, childList: true, characterData: true, attributes: true });
          window.__sessiontreeWatch = { observer, seen };
        });
        watches.set(data.pane, body);
        ack(data.token);
      } else if (kind === 'WATCHED') {
        const body = watches.get(data.pane);
        // the renderer draws after the extension host is done: wait for the drawing awaited
        if (data.until) {
          await pane(data.pane).getByText(data.until, { exact: false }).first().waitFor({ state: 'visible', timeout: 15000 });
        }
        const seen = await body.evaluate(() => {
          const w = window.__sessiontreeWatch;
          w.observer.disconnect();
          return [...w.seen];
        });
        ack(data.token, { seen: seen.map((t) => t.replace(/\s+/g, ' ').trim().slice(0, 200)) });
      } else if (kind === 'GRAPH' || kind === 'GRAPHCLICK') {
        // the session graph's webview: a frame of the page that holds the daemon's SVG
        const frame = await graphFrame(data.waitText, data.leafId);
        if (kind === 'GRAPHCLICK') {
          await frame.locator(`g.node[data-id="${data.id}"]`).click();
          ack(data.token);
        } else {
          const seen = await frame.evaluate(() => {
            const svg = document.querySelector('svg.sessiontree-graph');
            const leaf = document.querySelector('g.node.leaf');
            return { nodes: svg.querySelectorAll('g.node').length, lanes: Number(svg.dataset.lanes), leafId: leaf ? leaf.dataset.id : null };
          });
          if (data.screenshot) {
            await page.waitForTimeout(300);
            await page.screenshot({ path: path.join(artifacts, `${data.screenshot}.png`) });
          }
          ack(data.token, seen);
        }
      } else if (kind === 'CONTEXTMENU') {
        // a right click on the row of a view whose label is exactly data.label, then a click on
        // the context menu's item data.item
        const row = rowOf(data.pane, data.label);
        await row.waitFor({ state: 'visible', timeout: 15000 });
        await row.click({ button: 'right' });
        const item = page.locator('.monaco-menu .action-item .action-label', { hasText: data.item }).first();
        await item.waitFor({ state: 'visible', timeout: 10000 });
        // the menu acts on the item under the pointer with Enter as with a click (a click
        // right after the menu opened is taken for the end of the opening click)
        await item.hover();
        await page.waitForTimeout(200);
        await page.keyboard.press('Enter');
        ack(data.token);
      } else if (kind === 'QUICKPICK') {
        // the quick pick shown: its title and rows as drawn (once a row shows data.waitText)
        const widget = page.locator('.quick-input-widget');
        await widget.waitFor({ state: 'visible', timeout: 15000 });
        if (data.waitText) {
          await widget.locator('.monaco-list-row', { hasText: data.waitText }).first().waitFor({ state: 'visible', timeout: 15000 });
        }
        if (data.screenshot) {
          await page.waitForTimeout(700);
          await page.screenshot({ path: path.join(artifacts, `${data.screenshot}.png`) });
        }
        const title = (await widget.locator('.quick-input-title').innerText().catch(() => '')).trim();
        const rows = (await widget.locator('.monaco-list-row').allInnerTexts()).map((t) => t.replace(/\s+/g, ' ').trim());
        ack(data.token, { title, rows });
      } else if (kind === 'PICK') {
        // a click on the quick pick's row that shows data.text (a click accepts it)
        const row = page.locator('.quick-input-widget .monaco-list-row', { hasText: data.text }).first();
        await row.waitFor({ state: 'visible', timeout: 15000 });
        await row.click();
        ack(data.token);
      } else if (kind === 'KEY') {
        await page.keyboard.press(data.key);
        ack(data.token);
      } else if (kind === 'NOTIFICATION') {
        // a notification that says data.text: its message, then a click on its button
        // data.button. With the smoke-test driver VS Code shows no toasts: the suite opens the
        // notification center (notifications.showList), where the same item has the same buttons.
        const item = page.locator('.notification-list-item', { hasText: data.text }).first();
        await item.waitFor({ state: 'visible', timeout: 15000 });
        const message = (await item.locator('.notification-list-item-message').innerText()).trim();
        if (data.screenshot) {
          await page.waitForTimeout(500);
          await page.screenshot({ path: path.join(artifacts, `${data.screenshot}.png`) });
        }
        await item.hover();
        await item.locator('.monaco-button', { hasText: data.button }).first().click();
        ack(data.token, { message });
      } else if (kind === 'PAGESHOT') {
        if (data.waitText) {
          await page.getByText(data.waitText, { exact: false }).first().waitFor({ state: 'visible', timeout: 15000 }).catch(() => undefined);
        }
        await page.waitForTimeout(500);
        await page.screenshot({ path: path.join(artifacts, `${data.name}.png`) });
        ack(data.token);
      } else if (kind === 'SCREENSHOT') {
        const bar = await widen();
        // the pointer off the views: a hover left by an earlier click shows its tooltip
        const size = page.viewportSize();
        if (size) await page.mouse.move(size.width - 20, Math.floor(size.height / 2));
        await page.waitForTimeout(700);
        const name = data.name || 'vscode-sidebar';
        await bar.screenshot({ path: path.join(artifacts, `${name}.png`) });
        if (!data.name) {
          await page.screenshot({ path: path.join(artifacts, 'vscode-window.png') });
        }
        const text = await bar.innerText();
        fs.writeFileSync(path.join(artifacts, `${name}.txt`), text);
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
        handle(kind, data).catch((err) => {
          problems.push(`driver ${kind}: ${err.message}`);
          // what the window showed when the driver gave up
          page.screenshot({ path: path.join(artifacts, `e2e-failed-${kind.toLowerCase()}.png`) }).catch(() => undefined);
        });
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
