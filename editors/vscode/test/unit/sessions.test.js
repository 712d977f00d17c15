'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const { SessionsProvider, mergeSessions, sessionLabel } = require('../../out/views/sessions');
const { CurrentSession } = require('../../out/session');
const { FakeDaemon, tick } = require('./helpers');

const info = (path, modified, extra = {}) => ({ path, id: path, cwd: '/w', firstMessage: `first of ${path}`, messageCount: 3, created: modified, modified, ...extra });

test('mergeSessions keeps one row per path, newest first', () => {
  const a = info('/a', '2026-01-01T00:00:00Z');
  const b = info('/b', '2026-01-03T00:00:00Z');
  const c = info('/c', '2026-01-02T00:00:00Z');
  assert.deepEqual(mergeSessions([[a, b], [c, b]]).map((s) => s.path), ['/b', '/c', '/a']);
});

test('sessionLabel prefers the title, then the first message, then the file name', () => {
  assert.equal(sessionLabel(info('/x/s.jsonl', 't', { title: 'Named' })), 'Named');
  assert.equal(sessionLabel(info('/x/s.jsonl', 't', { firstMessage: ' hello\n world ' })), 'hello world');
  assert.equal(sessionLabel(info('/x/s.jsonl', 't', { firstMessage: '' })), 's.jsonl');
});

test("the daemon's displayName wins, and the tree title is the same name", async () => {
  const s = info('/x/2026_abc.jsonl', 't', { firstMessage: '/mode', displayName: 'Fix the parser' });
  assert.equal(sessionLabel(s), 'Fix the parser');
  const daemon = new FakeDaemon({
    'session/open': ({ path }) => ({ session: 'S', path, header: { id: 'abc' }, leafId: null, entryCount: 0, displayName: 'Fix the parser' }),
  });
  const current = new CurrentSession(daemon);
  assert.equal((await current.open(s.path)).title, 'Fix the parser');
  const old = new CurrentSession(new FakeDaemon({ 'session/open': ({ path }) => ({ session: 'S', path, header: {}, leafId: null, entryCount: 0 }) }));
  assert.equal((await old.open('/x/2026_abc.jsonl')).title, '2026_abc', 'an older daemon: the file name, as before');
});

test('lists the workspace folders, or every project when toggled', async () => {
  const daemon = new FakeDaemon({
    'session/list': (p) => ({ sessions: p.all ? [info('/all', '2026-01-05T00:00:00Z')] : [info(`${p.cwd}/s`, '2026-01-01T00:00:00Z')] }),
  });
  const current = new CurrentSession(daemon);
  const provider = new SessionsProvider(daemon, current, { folders: () => ['/w1', '/w2'], now: () => Date.parse('2026-01-01T01:00:00Z'), debounceMs: 5 });
  let kids = await provider.getChildren();
  assert.deepEqual(kids.map((s) => s.path).sort(), ['/w1/s', '/w2/s']);
  assert.deepEqual(daemon.calls.map(([, p]) => p.cwd).sort(), ['/w1', '/w2']);
  const item = provider.getTreeItem(kids[0]);
  assert.equal(item.label, `first of ${kids[0].path}`);
  assert.equal(item.description, '3 msgs · 1h');
  assert.equal(item.command.command, 'sessiontree.sessions.open');
  assert.equal(item.contextValue, 'session');
  provider.setShowAll(true);
  kids = await provider.getChildren();
  assert.deepEqual(kids.map((s) => s.path), ['/all']);
  assert.equal(daemon.calls.at(-1)[1].all, true);
});

test('session/didChangeList refreshes the list (debounced)', async () => {
  let n = 0;
  const daemon = new FakeDaemon({ 'session/list': () => ({ sessions: Array.from({ length: ++n }, (_, i) => info(`/s${i}`, '2026-01-01T00:00:00Z')) }) });
  const provider = new SessionsProvider(daemon, new CurrentSession(daemon), { folders: () => ['/w'], debounceMs: 5 });
  let fired = 0;
  provider.onDidChangeTreeData(() => fired++);
  assert.equal((await provider.getChildren()).length, 1);
  assert.equal((await provider.getChildren()).length, 1, 'cached until something changes');
  daemon.notify('session/didChangeList', { cwd: '/w' });
  daemon.notify('session/didChangeList', { cwd: '/w' });
  await tick(20);
  assert.equal(fired, 1);
  assert.equal((await provider.getChildren()).length, 2);
});

test("the daemon's hint (no agent directory of pi's family) is announced, and goes when one appears", async () => {
  let hint = 'no agent directory at /h/.xcsh/agent (the default, and no /h/.pi/agent or /h/.omp/agent either; set $PI_CODING_AGENT_DIR to use another)';
  const daemon = new FakeDaemon({ 'session/list': () => ({ sessions: [info('/claude/x', '2026-01-01T00:00:00Z', { agent: 'claude' })], ...(hint ? { hint } : {}) }) });
  const provider = new SessionsProvider(daemon, new CurrentSession(daemon), { folders: () => ['/w'], debounceMs: 5 });
  const heard = [];
  provider.onDidChangeHint((h) => heard.push(h));
  assert.equal((await provider.getChildren()).length, 1, 'the other agents are still listed');
  assert.equal(provider.hint, hint);
  hint = undefined;
  provider.refresh();
  await provider.getChildren();
  assert.deepEqual(heard, [heard[0], undefined]);
  assert.ok(heard[0].includes('.pi/agent'));
});

test("a list of several agents of pi's family says whose each session is", async () => {
  const daemon = new FakeDaemon({
    'session/list': () => ({
      sessions: [info('/omp', '2026-01-02T00:00:00Z', { dialect: 'omp' }), info('/pi', '2026-01-01T00:00:00Z', { dialect: 'pi' })],
    }),
  });
  const provider = new SessionsProvider(daemon, new CurrentSession(daemon), { folders: () => ['/w'], now: () => Date.parse('2026-01-03T00:00:00Z') });
  const [omp, pi] = await provider.getChildren();
  assert.match(provider.getTreeItem(omp).description, /^omp · 3 msgs/);
  assert.match(provider.getTreeItem(pi).description, /^pi · 3 msgs/);
  const one = new FakeDaemon({ 'session/list': () => ({ sessions: [info('/pi', '2026-01-01T00:00:00Z', { dialect: 'pi' })] }) });
  const alone = new SessionsProvider(one, new CurrentSession(one), { folders: () => ['/w'], now: () => Date.parse('2026-01-03T00:00:00Z') });
  const [only] = await alone.getChildren();
  assert.match(alone.getTreeItem(only).description, /^3 msgs/, 'one agent: no badge');
});

test('counts say 1 msg, 2 msgs', async () => {
  const daemon = new FakeDaemon({ 'session/list': () => ({ sessions: [info('/a', '2026-01-01T00:00:00Z', { messageCount: 1 })] }) });
  const provider = new SessionsProvider(daemon, new CurrentSession(daemon), { folders: () => ['/w'], now: () => Date.parse('2026-01-01T01:00:00Z') });
  const [s] = await provider.getChildren();
  assert.ok(provider.getTreeItem(s).description.startsWith('1 msg ·'), provider.getTreeItem(s).description);
});
