'use strict';
// One face (docs/tree-view.md): the Session Tree's items for the sessions of tests/fixtures/face,
// made by the extension's provider over the real daemon, say what `sessiontree tree` prints: the
// same rows and texts in the same order, the leaf's icon on the row the CLI marks ●, the hidden
// leaf named ("leaf: …" where the CLI writes "(leaf: …)"), and every row nested under the row
// the CLI's art hangs it from (two branches never one list), in every filter mode.
require('../unit/register-vscode-stub');
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawn, spawnSync } = require('node:child_process');
const rpc = require('vscode-jsonrpc/node');
const { SessionTreeProvider } = require('../../out/views/sessionTree');
const { CurrentSession } = require('../../out/session');
const { LEAF_ICON } = require('../../out/views/rows');
const { daemonCommand, repoRoot } = require('../daemon-path');

const FACE = path.join(repoRoot, 'tests', 'fixtures', 'face');
const CASES = ['hidden-leaf', 'label-leaf', 'hidden-branches', 'unknown-types', 'omp18', 'pi16'];
const MODES = ['default', 'no-tools', 'user-only', 'labeled-only', 'all'];

/** `sessiontree tree FILE --filter MODE`: per row its art, whether it marks the leaf, its note, its text. */
function cliRows(file, mode) {
  const r = spawnSync(daemonCommand(), ['tree', file, '--filter', mode, '--color', 'never'], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  const lines = r.stdout.trimEnd().split('\n').slice(0, -1); // the footer goes
  return lines.map((line) => {
    const m = /^([│├└─ ]*)(● |• )?(.*)$/u.exec(line);
    let text = m[3];
    let note;
    const cut = text.indexOf('  (leaf: ');
    if (m[2] === '● ' && cut >= 0) {
      note = text.slice(cut + 3, -1);
      text = text.slice(0, cut);
    }
    return { art: m[1], leaf: m[2] === '● ', note, text };
  });
}

/** The row each CLI row hangs from, as its art draws it: the nearest row above at a shallower
 * column (a connector's column, the leftmost when a row draws a hidden branch's too, else the
 * row's depth). */
function artParents(rows) {
  const column = (art) => {
    const at = [...art].findIndex((c) => c === '├' || c === '└');
    return at >= 0 ? at / 3 + 1 : art.length / 3;
  };
  const stack = [];
  return rows.map((row, i) => {
    const col = column(row.art);
    while (stack.length && stack[stack.length - 1].col >= col) stack.pop();
    const parent = stack.length ? stack[stack.length - 1].i : undefined;
    stack.push({ col, i });
    return parent;
  });
}

test('the Session Tree draws the face sessions as the CLI prints them', async (t) => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'st-vscode-face-'));
  const proc = spawn(daemonCommand(), ['serve'], {
    stdio: ['pipe', 'pipe', 'pipe'],
    env: { ...process.env, PI_CODING_AGENT_DIR: path.join(tmp, 'agent'), XDG_CACHE_HOME: path.join(tmp, 'cache'), XDG_STATE_HOME: path.join(tmp, 'state') },
  });
  const conn = rpc.createMessageConnection(new rpc.StreamMessageReader(proc.stdout), new rpc.StreamMessageWriter(proc.stdin));
  conn.onNotification('window/logMessage', () => undefined);
  conn.listen();
  await conn.sendRequest('initialize', { processId: process.pid, rootUri: `file://${tmp}`, capabilities: {}, initializationOptions: { watch: false, allowedRoots: [tmp] } });
  await conn.sendNotification('initialized', {});
  const daemon = { request: (m, p) => conn.sendRequest(m, p), onNotification: (m, h) => conn.onNotification(m, h) };
  t.after(async () => {
    await conn.sendRequest('shutdown').catch(() => undefined);
    await conn.sendNotification('exit').catch(() => undefined);
    conn.dispose();
    proc.kill();
    fs.rmSync(tmp, { recursive: true, force: true });
  });

  for (const name of CASES) {
    await t.test(name, async () => {
      const file = path.join(tmp, `${name}.jsonl`);
      fs.copyFileSync(path.join(FACE, `${name}.jsonl`), file);
      const current = new CurrentSession(daemon);
      const tree = new SessionTreeProvider(daemon, current, { pageSize: 500, debounceMs: 5, now: () => Date.parse('2026-03-01T10:00:00.000Z') });
      await current.open(file);
      await tree.whenIdle();
      for (const mode of MODES) {
        await tree.setFilter(mode);
        const items = [];
        const walk = (nodes, parent) => {
          for (const node of nodes) {
            const item = tree.getTreeItem(node);
            items.push({ item, node, parent });
            walk(tree.getChildren(node), items.length - 1);
          }
        };
        walk(tree.getChildren(), undefined);
        const cli = cliRows(file, mode);
        const where = `${name} [${mode}]`;
        assert.deepEqual(items.map((x) => x.item.label), cli.map((r) => r.text), `${where}: texts`);
        assert.deepEqual(
          items.map((x) => x.item.iconPath.id === LEAF_ICON),
          cli.map((r) => r.leaf),
          `${where}: the leaf's icon where the CLI has ●`,
        );
        const noteOf = (x) => (/^leaf: /.test(x.item.description) ? x.item.description.replace(/ \d+[smhd]$|\s\d{4}-\d\d-\d\d$/, '') : undefined);
        assert.deepEqual(items.map(noteOf), cli.map((r) => r.note), `${where}: the hidden leaf named`);
        assert.deepEqual(items.map((x) => x.parent), artParents(cli), `${where}: nested as the art hangs them`);
      }
      tree.dispose();
      current.dispose();
    });
  }
});

/** A face session's text with its header's cwd set (omp's title slot, the first line, kept). */
function withCwd(name, cwd) {
  const lines = fs.readFileSync(path.join(FACE, `${name}.jsonl`), 'utf8').split('\n');
  const at = lines[0].startsWith('{"type":"title"') ? 1 : 0;
  const header = JSON.parse(lines[at]);
  header.cwd = cwd;
  lines[at] = JSON.stringify(header);
  return lines.join('\n');
}

// Issue 31's "done when", without a setting (issue 34): a HOME with oh-my-pi's and pi's agent
// dirs; the Sessions view lists both sessions by the names their agents give them.
test("the Sessions view lists an oh-my-pi 18 and a pi 1.6 session of the home by their names, with no agent dir set", async (t) => {
  const { SessionsProvider } = require('../../out/views/sessions');
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'st-vscode-homes-'));
  const home = path.join(tmp, 'home');
  const proj = path.join(home, 'src', 'proj');
  fs.mkdirSync(proj, { recursive: true });
  const omp = path.join(home, '.omp', 'agent', 'sessions', '-src-proj', '2026-03-01T09-00-00-000Z_omp.jsonl');
  const pi = path.join(home, '.pi', 'agent', 'sessions', `--${proj.replace(/^\//, '').replace(/\//g, '-')}--`, '2026-03-01T09-00-00-000Z_pi.jsonl');
  for (const [file, name] of [[omp, 'omp18'], [pi, 'pi16']]) {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, withCwd(name, proj));
  }
  const env = { ...process.env, HOME: home, XDG_CACHE_HOME: path.join(tmp, 'cache'), XDG_STATE_HOME: path.join(tmp, 'state'), XDG_DATA_HOME: path.join(tmp, 'data') };
  delete env.PI_CODING_AGENT_DIR;
  const proc = spawn(daemonCommand(), ['serve'], { stdio: ['pipe', 'pipe', 'pipe'], env });
  const conn = rpc.createMessageConnection(new rpc.StreamMessageReader(proc.stdout), new rpc.StreamMessageWriter(proc.stdin));
  conn.onNotification('window/logMessage', () => undefined);
  conn.listen();
  // no agentDir: what the extension sends when the setting is empty
  await conn.sendRequest('initialize', { processId: process.pid, rootUri: `file://${proj}`, workspaceFolders: [{ uri: `file://${proj}`, name: 'proj' }], capabilities: {}, initializationOptions: { watch: false } });
  await conn.sendNotification('initialized', {});
  const daemon = { request: (m, p) => conn.sendRequest(m, p), onNotification: (m, h) => conn.onNotification(m, h) };
  t.after(async () => {
    await conn.sendRequest('shutdown').catch(() => undefined);
    await conn.sendNotification('exit').catch(() => undefined);
    conn.dispose();
    proc.kill();
    fs.rmSync(tmp, { recursive: true, force: true });
  });
  const current = new CurrentSession(daemon);
  const sessions = new SessionsProvider(daemon, current, { folders: () => [proj], now: () => Date.parse('2026-03-01T10:00:00.000Z') });
  const listed = await sessions.getChildren();
  const label = (file) => sessions.getTreeItem(listed.find((s) => s.path === file)).label;
  assert.equal(label(omp), 'Parser refactor');
  assert.equal(label(pi), 'Flaky watcher test');
  assert.equal(sessions.hint, undefined);
  assert.equal((await current.open(omp)).title, 'Parser refactor');
  assert.equal((await current.open(pi)).title, 'Flaky watcher test');
  sessions.dispose();
  current.dispose();
});
