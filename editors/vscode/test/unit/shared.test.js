'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const { SharedSessionsProvider, sharedRows } = require('../../out/views/shared');
const { mergeSessions } = require('../../out/views/sessions');
const { FakeDaemon } = require('./helpers');

const info = (id, machine, extra = {}) => ({
  path: `/${machine}/s/${id}.jsonl`, id, cwd: '/home/x/proj', firstMessage: `first of ${id}`, messageCount: 2,
  created: '2026-01-01T00:00:00Z', modified: '2026-01-01T00:00:00Z', machine, user: `${machine}-user`, local: false, ...extra,
});

test('shared sessions are grouped by machine; local ones stay in the Sessions view', () => {
  const rows = sharedRows(
    [info('a', 'zeta'), info('b', 'alpha'), info('c', 'alpha', { modified: '2026-01-02T00:00:00Z' }), info('l', 'me', { local: true })],
    { reachable: true, machine: 'me' },
  );
  assert.deepEqual(rows.map((r) => r.machine), ['alpha', 'zeta']);
  assert.deepEqual(rows[0].sessions.map((s) => s.id), ['c', 'b']);
  assert.deepEqual(mergeSessions([[info('a', 'zeta'), info('l', 'me', { local: true })]]).map((s) => s.id), ['l']);
});

test('no store, or an unreachable one, is said in one row', () => {
  assert.match(sharedRows([], undefined)[0].text, /No shared store configured/);
  const [row] = sharedRows([], { reachable: false, machine: 'me', error: 'connection refused' });
  assert.match(row.text, /unreachable — local sessions keep working/);
  assert.equal(row.detail, 'connection refused');
});

test('the provider lists every project and shows who and where', async () => {
  const daemon = new FakeDaemon({
    'session/list': (p) => ({ sessions: p.all ? [info('a', 'alpha')] : [], store: { reachable: true, machine: 'me' } }),
  });
  const vscode = require('vscode');
  const listChanged = new vscode.EventEmitter();
  const provider = new SharedSessionsProvider(daemon, listChanged.event, () => Date.parse('2026-01-01T01:00:00Z'));
  const [machine] = await provider.getChildren();
  assert.equal(provider.getTreeItem(machine).label, 'alpha');
  assert.match(provider.getTreeItem(machine).description, /1 session · alpha-user/);
  const [session] = await provider.getChildren(machine);
  const item = provider.getTreeItem(session);
  assert.equal(item.command.command, 'sessiontree.shared.open');
  assert.match(item.description, /alpha-user · proj · /);
  listChanged.fire();  // the Sessions view refreshed (on session/didChangeList)
  await provider.getChildren();
  assert.equal(daemon.calls.filter(([m]) => m === 'session/list').length, 2);
});
