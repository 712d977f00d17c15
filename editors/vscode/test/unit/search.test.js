'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const vscode = require('vscode');
const { SessionTreeProvider } = require('../../out/views/sessionTree');
const { CurrentSession } = require('../../out/session');
const { hitItems, markedSnippet, registerSessionSearch } = require('../../out/search');
const { FakeDaemon, row } = require('./helpers');

// a: root; b and c are its children; d under c. The leaf is b.
const PARENT = { a: null, b: 'a', c: 'a', d: 'c' };
const pathTo = (id) => (id ? [...pathTo(PARENT[id]), id] : []);

function hit(extra = {}) {
  return {
    path: '/s/other.jsonl', sessionId: 's2', sessionName: 'Other session', cwd: '/w/p', agent: 'pi',
    entryId: 'd', parentId: 'c', role: 'assistant', timestamp: '2026-03-01T12:34:56.000Z', score: -1,
    snippet: 'the romeo widget spins', highlights: [[4, 9], [10, 16]], ancestors: ['a', 'c'], depth: 2,
    pathLabels: [{ id: 'c', label: 'checkpoint' }], onActiveBranch: false, ...extra,
  };
}

function setup() {
  const daemon = new FakeDaemon({
    'session/search': ({ query }) => ({ hits: query === 'none' ? [] : [hit()], total: 1, capped: false, offset: 0, indexedFiles: 2, indexBytes: 10 }),
    'session/open': ({ path }) => ({ session: path === '/s/other.jsonl' ? 'S2' : 'S1', path, header: { type: 'session', id: 'h' }, leafId: 'b', entryCount: 4 }),
    'session/view': ({ leafId }) => {
      const leaf = leafId ?? 'b';
      const on = new Set(pathTo(leaf));
      const ids = ['a', 'b', 'c', 'd'];
      const rows = ids.map((id) => row(id, PARENT[id], id === 'a' ? 0 : id === 'd' ? 2 : 1, { onActivePath: on.has(id), isLeaf: id === leaf }));
      return { rows, total: 4, selectedIndex: ids.indexOf(leaf), leafId: leaf };
    },
  });
  const current = new CurrentSession(daemon);
  const tree = new SessionTreeProvider(daemon, current, { pageSize: 50, debounceMs: 10 });
  const revealed = [];
  const treeView = { title: 'Session Tree', reveal: async (node, opts) => { revealed.push([node.row.id, opts]); } };
  const disposables = registerSessionSearch({ daemon, current, tree, treeView });
  return { daemon, current, tree, revealed, disposables };
}

test('a hit is shown with its snippet, role, time, branch, labels and session', () => {
  const [item] = hitItems([hit()]);
  // no «» in the label: the quick pick bolds the words typed itself (both showed before)
  assert.equal(item.label, '$(hubot) the romeo widget spins');
  assert.equal(markedSnippet(hit()), 'the «romeo» «widget» spins');
  assert.equal(item.description, 'assistant · 2026-03-01 12:34 · other branch · [checkpoint]');
  assert.equal(item.detail, 'Other session — /w/p');
  assert.equal(markedSnippet({ snippet: 'x'.repeat(300) + ' word', highlights: [[301, 305]] }, 40).startsWith('…'), true);
});

test('choosing a hit opens its session drawn from the hit, its row revealed and selected', async () => {
  const { daemon, current, tree, revealed, disposables } = setup();
  await current.open('/s/first.jsonl');
  await tree.whenIdle();
  const run = vscode.commands.registered.get('sessiontree.sessions.search');
  const landed = await run('romeo');
  assert.deepEqual(landed, { path: '/s/other.jsonl', entryId: 'd', revealed: true });
  assert.equal(current.value.path, '/s/other.jsonl');
  assert.deepEqual(daemon.calls.find(([m]) => m === 'session/search')[1], { query: 'romeo', limit: 50 });
  const views = daemon.calls.filter(([m, p]) => m === 'session/view' && p.session === 'S2');
  assert.ok(views.length && views.every(([, p]) => p.leafId === 'd'), JSON.stringify(views));
  assert.deepEqual(revealed, [['d', { select: true, focus: false, expand: true }]]);
  // the hit's branch is the highlighted path; the session's own leaf is unchanged
  assert.equal(tree.nodeById('c').row.onActivePath, true);
  assert.equal(tree.nodeById('b').row.onActivePath, false);
  assert.equal(current.value.leafId, 'b');
  // Reveal Leaf's clearFocus: the session's branch again
  await tree.clearFocus();
  await tree.whenIdle();
  assert.equal(tree.nodeById('b').row.onActivePath, true);
  assert.equal(tree.nodeById('d').row.onActivePath, false);
  assert.equal(await run('none'), undefined);
  disposables.forEach((d) => d.dispose());
});

test('a hit in the session already open is focused in place, and a navigation clears the focus', async () => {
  const { daemon, current, tree, revealed, disposables } = setup();
  await current.open('/s/other.jsonl');
  await tree.whenIdle();
  const run = vscode.commands.registered.get('sessiontree.sessions.search');
  const landed = await run('romeo');
  assert.equal(landed.entryId, 'd');
  assert.equal(daemon.calls.filter(([m]) => m === 'session/open').length, 1, 'not opened again');
  assert.equal(tree.focusId, 'd');
  assert.equal(revealed.length, 1);
  daemon.notify('session/didNavigate', { session: 'S2', leafId: 'c' });
  assert.equal(tree.focusId, undefined);
  disposables.forEach((d) => d.dispose());
});
