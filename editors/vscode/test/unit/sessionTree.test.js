'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const vscode = require('vscode');
const { SessionTreeProvider, LoadMoreElement, messageSetter, treeMessage } = require('../../out/views/sessionTree');
const { CurrentSession } = require('../../out/session');
const { FakeDaemon, messageView, row, tick } = require('./helpers');

function makeRows(n) {
  // a linear conversation: every row at depth 0, the last one is the leaf
  return Array.from({ length: n }, (_, i) =>
    row(`e${i}`, i ? `e${i - 1}` : null, 0, { onActivePath: true, isLeaf: i === n - 1, role: i % 2 ? 'assistant' : 'user', text: i % 2 ? `assistant: a${i}` : `user: q${i}` }),
  );
}

function setup(allRows, { noWindow = false, ...opts } = {}) {
  let rows = allRows;
  const daemon = new FakeDaemon({
    'session/open': ({ path }) => ({ session: 'S1', path, header: { type: 'session', id: 'h', title: 'My session' }, leafId: rows.at(-1)?.id ?? null, entryCount: rows.length }),
    'session/view': ({ offset = 0, limit = 1000, filter, selectedWindow }) => {
      const visible = filter === 'user-only' ? rows.filter((r) => r.role === 'user') : rows;
      const leaf = rows.findIndex((r) => r.isLeaf);
      const out = { rows: visible.slice(offset, offset + limit), total: visible.length, selectedIndex: Math.max(0, leaf), leafId: rows[leaf]?.id ?? null };
      // the daemon's `window`: the rows around the selected row when it lies past the rows asked for
      const end = offset + out.rows.length;
      if (selectedWindow && out.selectedIndex >= end && !noWindow) {
        const at = Math.max(end, Math.min(out.selectedIndex - Math.floor(selectedWindow / 2), visible.length - selectedWindow));
        out.window = { offset: at, rows: visible.slice(at, at + selectedWindow) };
      }
      return out;
    },
    'session/entry': ({ id }) => ({ entry: { type: 'message', id, parentId: null, timestamp: 't', message: { role: 'user', content: [{ type: 'text', text: `full text of ${id}\nsecond line` }] } } }),
  });
  const current = new CurrentSession(daemon);
  const tree = new SessionTreeProvider(daemon, current, { pageSize: 50, debounceMs: 10, now: () => Date.parse('2026-01-01T00:05:00.000Z'), ...opts });
  return { daemon, current, tree, setRows: (r) => { rows = r; } };
}

/** Holds every `session/view` answer back until the returned function is called. */
function holdViews(daemon) {
  let release;
  const gate = new Promise((r) => (release = r));
  const view = daemon.handlers['session/view'];
  daemon.handlers['session/view'] = async (p) => {
    await gate;
    return view(p);
  };
  return release;
}

test('opening a session loads the rows of session/view', async () => {
  const { current, tree, daemon } = setup(makeRows(4));
  await current.open('/tmp/s.jsonl');
  await tree.whenIdle();
  const top = tree.getChildren();
  assert.deepEqual(top.map((n) => n.row.id), ['e0', 'e1', 'e2', 'e3']);
  const view = daemon.calls.find(([m]) => m === 'session/view');
  assert.deepEqual(view[1], { session: 'S1', filter: 'default', offset: 0, limit: 50, selectedWindow: 50 });
  const leaf = tree.getTreeItem(top[3]);
  assert.equal(leaf.label, 'assistant: a3');
  assert.equal(leaf.description, 'current 5m');
  assert.equal(leaf.iconPath.id, 'target', 'the leaf is marked by its icon, before the text');
  assert.equal(leaf.iconPath.color.id, 'charts.green');
  assert.equal(leaf.id, 'e3');
  assert.equal(leaf.collapsibleState, vscode.TreeItemCollapsibleState.None);
  const first = tree.getTreeItem(top[0]);
  assert.equal(first.iconPath.id, 'account');
  assert.equal(first.iconPath.color.id, 'charts.blue');
  assert.equal(first.description, '• 5m');
});

test('branch points are expanded on the active path and collapsed elsewhere', async () => {
  const rows = [
    row('a', null, 0, { onActivePath: true }),
    row('b', 'a', 1, { onActivePath: true, isLeaf: true }),
    row('c', 'a', 1),
    row('d', 'c', 2),
  ];
  const { current, tree } = setup(rows);
  await current.open('/tmp/s.jsonl');
  await tree.whenIdle();
  const [a] = tree.getChildren();
  assert.equal(tree.getTreeItem(a).collapsibleState, vscode.TreeItemCollapsibleState.Expanded);
  const [b, c] = tree.getChildren(a);
  assert.equal(tree.getTreeItem(b).collapsibleState, vscode.TreeItemCollapsibleState.None);
  assert.equal(tree.getTreeItem(c).collapsibleState, vscode.TreeItemCollapsibleState.Collapsed);
  assert.equal(tree.getParent(c), a);
  assert.equal(tree.leafNode().row.id, 'b');
});

for (const noWindow of [false, true]) {
  test(`long sessions: the first page plus a window around a far leaf, with a "Load more…" gap${noWindow ? ' (a daemon without selectedWindow)' : ''}`, async () => {
    const { current, tree, daemon } = setup(makeRows(120), { pageSize: 50, noWindow });
    await current.open('/tmp/s.jsonl');
    await tree.whenIdle();
    const views = daemon.calls.filter(([m]) => m === 'session/view').map(([, p]) => [p.offset, p.limit]);
    // one request when the answer holds the window around the leaf, else a second one for it
    assert.deepEqual(views, noWindow ? [[0, 50], [70, 50]] : [[0, 50]], 'the window ends at the last row and holds the leaf');
    let top = tree.getChildren();
    assert.equal(top.length, 50 + 1 + 50);
    const gap = top[50];
    assert.ok(gap instanceof LoadMoreElement);
    assert.equal(gap.offset, 50);
    assert.equal(gap.hidden, 20);
    const item = tree.getTreeItem(gap);
    assert.equal(item.label, 'Load more… (20 of 120 rows not shown)');
    assert.equal(item.command.command, 'sessiontree.tree.loadMore');
    assert.deepEqual(item.command.arguments, [gap]);
    assert.equal(tree.leafNode().row.id, 'e119');
    await tree.loadMore(gap);
    assert.deepEqual(daemon.calls.at(-1)[1].offset, 50);
    assert.equal(daemon.calls.at(-1)[1].limit, 20);
    top = tree.getChildren();
    assert.equal(top.length, 120);
    assert.ok(top.every((n) => !(n instanceof LoadMoreElement)));
    assert.deepEqual(tree.loadedRows.map((r) => r.id), makeRows(120).map((r) => r.id));
  });
}

test('long sessions with the leaf near the top page forward from the end', async () => {
  const { current: c2, tree: t2, setRows } = setup(makeRows(120), { pageSize: 50 });
  setRows(makeRows(120).map((r, i) => ({ ...r, isLeaf: i === 10 })));
  await c2.open('/tmp/s.jsonl');
  await t2.whenIdle();
  let top = t2.getChildren();
  assert.equal(top.length, 51);
  assert.equal(top[50].hidden, 70);
  await t2.loadMore();
  await t2.loadMore();
  top = t2.getChildren();
  assert.equal(top.length, 120);
  assert.ok(!(top.at(-1) instanceof LoadMoreElement));
});

test('rows after a gap do not hang under rows before it', async () => {
  // a branch point at row 0, its children deep down the list
  const rows = makeRows(120).map((r, i) => ({ ...r, depth: i === 0 ? 0 : 1 }));
  const { current, tree } = setup(rows, { pageSize: 50 });
  await current.open('/tmp/s.jsonl');
  await tree.whenIdle();
  const top = tree.getChildren();
  assert.equal(top[0].row.id, 'e0');
  assert.equal(top[0].children.length, 49);
  assert.ok(top[1] instanceof LoadMoreElement);
  assert.equal(top[2].row.id, 'e70', 'the window starts at top level');
  assert.equal(tree.getParent(top[2]), undefined);
});

test('notifications for the open session trigger one debounced refresh; others are ignored', async () => {
  const { current, tree, daemon, setRows } = setup(makeRows(3));
  await current.open('/tmp/s.jsonl');
  await tree.whenIdle();
  const loads = [];
  tree.onDidLoad((e) => loads.push(e));
  const viewCalls = () => daemon.calls.filter(([m]) => m === 'session/view').length;
  const before = viewCalls();
  daemon.notify('session/didChange', { session: 'OTHER', appended: [], leafId: 'x', oldLeafId: null, source: 'external' });
  await tick(30);
  assert.equal(viewCalls(), before);
  setRows(makeRows(5));
  daemon.notify('session/didChange', { session: 'S1', appended: [], leafId: 'e4', oldLeafId: 'e2', source: 'external' });
  daemon.notify('session/didNavigate', { session: 'S1', newLeafId: 'e4', oldLeafId: 'e2' });
  daemon.notify('session/didChangeLabel', { session: 'S1', targetId: 'e1', label: 'x' });
  await tick(40);
  await tree.whenIdle();
  assert.equal(viewCalls(), before + 1);
  assert.equal(tree.getChildren().length, 5);
  assert.deepEqual(loads.map((l) => [l.leafId, l.leafChanged]), [['e4', true]]);
});

test('the filter mode goes to session/view and unknown modes are refused', async () => {
  const { current, tree, daemon } = setup(makeRows(4));
  await current.open('/tmp/s.jsonl');
  await tree.whenIdle();
  await tree.setFilter('user-only');
  assert.deepEqual(tree.getChildren().map((n) => n.row.id), ['e0', 'e2']);
  assert.equal(daemon.calls.at(-1)[1].filter, 'user-only');
  assert.throws(() => tree.setFilter('bogus'), /Unknown filter mode/);
  await tree.setSearch('  q2 ');
  assert.equal(daemon.calls.at(-1)[1].search, 'q2');
});

test('resolveTreeItem fills a Markdown tooltip with the full entry text', async () => {
  const { current, tree } = setup(makeRows(2));
  await current.open('/tmp/s.jsonl');
  await tree.whenIdle();
  const [node] = tree.getChildren();
  const item = tree.getTreeItem(node);
  assert.equal(item.tooltip, undefined);
  await tree.resolveTreeItem(item, node);
  assert.ok(item.tooltip instanceof vscode.MarkdownString);
  assert.match(item.tooltip.value, /full text of e0\nsecond line/);
  assert.match(item.tooltip.value, /\*\*user\*\*/);
});

test('a rename of the open session keeps the rows; another session reloads them', async () => {
  const { current, tree, daemon } = setup(makeRows(3));
  await current.open('/tmp/s.jsonl');
  await tree.whenIdle();
  const views = () => daemon.calls.filter(([m]) => m === 'session/view').length;
  const before = views();
  current.update({ title: 'Renamed' });
  assert.equal(tree.getChildren().length, 3);
  await tree.whenIdle();
  assert.equal(views(), before);
  await current.open('/tmp/other.jsonl');
  await tree.whenIdle();
  assert.equal(views(), before + 1);
});

test('while a session loads the view says so; "nothing matches" only after a load that found nothing', async () => {
  const { current, tree, daemon, setRows } = setup(makeRows(3));
  const release = holdViews(daemon);
  const events = [];
  tree.onDidChangeViewState((state) => events.push([state, tree.getChildren().length]));
  tree.onDidChangeTreeData(() => events.push(['change', tree.getChildren().length]));
  await current.open('/tmp/s.jsonl');
  assert.equal(tree.isLoading, true);
  assert.deepEqual(tree.getChildren(), [], 'the view is empty meanwhile');
  release();
  await tree.whenIdle();
  assert.equal(tree.viewState, 'rows');
  // nothing was drawn before: no change until the rows (VS Code would hold them back 200 ms
  // after an empty one)
  assert.deepEqual(events, [['loading', 0], ['rows', 3], ['change', 3]], 'the state leads each change of rows');
  events.length = 0;
  setRows([]);
  await tree.refresh();
  assert.deepEqual(events, [['empty', 0], ['change', 0]]);
  current.clear();
  await tree.whenIdle();
  assert.equal(tree.viewState, 'none');
});

test('another session replaces the rows drawn in one change when its rows come in time, else they are cleared first', async () => {
  const { current, tree, daemon } = setup(makeRows(3), { clearAfterMs: 60 });
  await current.open('/tmp/a.jsonl');
  await tree.whenIdle();
  const events = [];
  tree.onDidChangeTreeData(() => events.push(tree.getChildren().length));
  // in time: one change, from the old rows straight to the new ones
  await current.open('/tmp/b.jsonl');
  await tree.whenIdle();
  await new Promise((r) => setTimeout(r, 100));
  assert.deepEqual(events, [3], 'one change: the new rows');
  // too slow: the old rows are cleared after clearAfterMs, then the new rows come
  events.length = 0;
  const release = holdViews(daemon);
  await current.open('/tmp/c.jsonl');
  await new Promise((r) => setTimeout(r, 100));
  assert.deepEqual(events, [0], 'cleared while the rows are awaited');
  assert.equal(tree.isLoading, true);
  release();
  await tree.whenIdle();
  assert.deepEqual(events, [0, 3]);
  // closing the session clears at once
  events.length = 0;
  current.clear();
  await tree.whenIdle();
  assert.deepEqual(events, [0]);
  tree.dispose();
});

test('a failed load says so', async () => {
  const { current, tree, daemon } = setup(makeRows(3));
  daemon.handlers['session/view'] = async () => {
    throw new Error('boom');
  };
  await current.open('/tmp/s.jsonl');
  await tree.whenIdle();
  assert.equal(tree.viewState, 'failed');
  assert.equal(tree.isLoading, false);
});

test('search results are flat; the depth markers of deep rows lead their labels', async () => {
  // a chain of branch points: every row one level deeper, 12 levels
  const rows = Array.from({ length: 12 }, (_, i) =>
    row(`d${i}`, i ? `d${i - 1}` : null, i, { onActivePath: true, isLeaf: i === 11, shortPrefix: i > 8 ? `‹${i}› ${'│  '.repeat(4)}` : undefined }),
  );
  const { current, tree, daemon } = setup(rows);
  const view = daemon.handlers['session/view'];
  const hits = rows.filter((r) => Number(r.id.slice(1)) % 3 === 0);
  daemon.handlers['session/view'] = (p) => (p.search ? { ...view(p), rows: hits, total: hits.length } : view(p));
  await current.open('/tmp/s.jsonl');
  await tree.whenIdle();
  const levels = rows.map((r) => tree.nodeById(r.id).level);
  assert.deepEqual(levels, [0, 1, 2, 3, 4, 5, 6, 7, 8, 8, 8, 8]);
  assert.equal(tree.getTreeItem(tree.nodeById('d10')).label, '‹10› user: d10');
  assert.equal(tree.getTreeItem(tree.nodeById('d8')).label, 'user: d8');
  await tree.setSearch('x');
  const top = tree.getChildren();
  assert.deepEqual(top.map((n) => n.row.id), ['d0', 'd3', 'd6', 'd9']);
  assert.ok(top.every((n) => n.children.length === 0 && n.level === 0));
  assert.equal(tree.getTreeItem(top[3]).label, 'user: d9', 'no marker in a flat list');
});

test('a search shown in part (partial) loads every row once the daemon completes it', async () => {
  const rows = makeRows(10);
  let complete = false;
  const daemon = new FakeDaemon({
    'session/open': ({ path }) => ({ session: 'S1', path, header: { type: 'session', id: 'h' }, leafId: 'e9', entryCount: 10 }),
    'session/view': ({ offset = 0, limit = 1000, search, partial }) => {
      const hits = search ? rows.filter((r) => r.text.startsWith(search)) : rows;
      if (search && partial && !complete) {
        // the rows found so far: no selection yet
        return { rows: hits.slice(0, 2).slice(offset, offset + limit), total: 2, selectedIndex: null, leafId: 'e9', complete: false };
      }
      return { rows: hits.slice(offset, offset + limit), total: hits.length, selectedIndex: hits.length - 1, leafId: 'e9' };
    },
  });
  const current = new CurrentSession(daemon);
  const tree = new SessionTreeProvider(daemon, current, { pageSize: 50, debounceMs: 10 });
  await current.open('/tmp/s.jsonl');
  await tree.whenIdle();
  await tree.setSearch('assistant');
  const asked = daemon.calls.filter(([m]) => m === 'session/view').at(-1)[1];
  assert.equal(asked.partial, true, 'a search asks for a partial answer');
  assert.equal(tree.searchFound, 2);
  assert.equal(tree.viewState, 'rows');
  assert.deepEqual(tree.loadedRows.map((r) => r.id), ['e1', 'e3']);
  assert.equal(treeMessage(tree.viewState, tree.filter, tree.search, tree.searchFound), 'Searching… 2 found so far · search: "assistant"');
  // another session's completion is not this view's
  daemon.notify('session/didCompleteSearch', { session: 'S2', search: 'assistant', filter: 'default', leafId: 'x', total: 1 });
  await tick(20);
  assert.equal(tree.searchFound, 2);
  complete = true;
  daemon.notify('session/didCompleteSearch', { session: 'S1', search: 'assistant', filter: 'default', leafId: 'e9', total: 5 });
  await tick(20);
  await tree.whenIdle();
  assert.equal(tree.searchFound, undefined);
  assert.equal(tree.totalRows, 5);
  assert.deepEqual(tree.loadedRows.map((r) => r.id), ['e1', 'e3', 'e5', 'e7', 'e9']);
  assert.equal(treeMessage(tree.viewState, tree.filter, tree.search, tree.searchFound), 'search: "assistant"');
});

test('a search in progress that found nothing yet is loading, not "nothing matches"', async () => {
  const daemon = new FakeDaemon({
    'session/open': ({ path }) => ({ session: 'S1', path, header: { type: 'session', id: 'h' }, leafId: 'e0', entryCount: 1 }),
    'session/view': ({ search }) =>
      search ? { rows: [], total: 0, selectedIndex: null, leafId: 'e0', complete: false } : { rows: [row('e0', null, 0)], total: 1, selectedIndex: 0, leafId: 'e0' },
  });
  const current = new CurrentSession(daemon);
  const tree = new SessionTreeProvider(daemon, current, { pageSize: 50, debounceMs: 10 });
  await current.open('/tmp/s.jsonl');
  await tree.whenIdle();
  await tree.setSearch('rare');
  assert.equal(tree.viewState, 'loading');
  assert.equal(tree.searchFound, 0);
  assert.equal(treeMessage(tree.viewState, tree.filter, tree.search, tree.searchFound), 'Searching… 0 found so far · search: "rare"');
});

test('the view message is set only when it changes (a set holds the next rows back in VS Code)', () => {
  const sets = [];
  const view = messageView(sets);
  const set = messageSetter(view);
  set(undefined);
  assert.deepEqual(sets, [], 'nothing to change');
  set('Loading… · filter: all');
  set('Loading… · filter: all');
  assert.deepEqual(sets, ['Loading… · filter: all']);
  set(undefined);
  set(undefined);
  assert.deepEqual(sets, ['Loading… · filter: all', undefined]);
});

test('whenTaken waits until VS Code has asked for the rows announced last (a reveal before lands on the old rows)', async () => {
  const { current, tree } = setup(makeRows(4));
  const heard = [];
  tree.onDidChangeTreeData(() => heard.push('changed'));
  await current.open('/s/a.jsonl');
  await tree.whenIdle();
  assert.ok(heard.length > 0);
  let taken = false;
  const waiting = tree.whenTaken(60000).then(() => {
    taken = true;
  });
  await tick(20);
  assert.equal(taken, false, 'VS Code has not asked yet');
  tree.getChildren(); // what VS Code does once it takes the change
  await waiting;
  assert.equal(taken, true);
  await tree.whenTaken(60000); // nothing announced since: at once
  // a view VS Code does not show asks for nothing: the wait still ends (at its bound)
  await tree.setFilter('all');
  await tree.whenTaken(30);
});
