'use strict';
// The preview of a big session (session/preview): drawn while its open is pending, replaced by
// the open's first rows in one change, ignored when it comes too late or for another session.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const vscode = require('vscode');
const { SessionTreeProvider, LoadMoreElement, messageSetter, treeMessage } = require('../../out/views/sessionTree');
const { OlderRowsElement, OLDER_ROWS_LABEL, PREVIEW_MIN_BYTES, PreviewRowError, refusePreviewRow, requestPreview, fileSize } = require('../../out/views/preview');
const { CurrentSession } = require('../../out/session');
const { FakeDaemon, messageView, row, tick } = require('./helpers');

const BIG = '/tmp/sessions/big.jsonl';
const SMALL = '/tmp/sessions/small.jsonl';
const MESSAGE = 'Indexing big.jsonl… showing its last entries';

function makeRows(n, prefix = 'e') {
  return Array.from({ length: n }, (_, i) =>
    row(`${prefix}${i}`, i ? `${prefix}${i - 1}` : null, 0, { onActivePath: true, isLeaf: i === n - 1, role: i % 2 ? 'assistant' : 'user', text: `${i % 2 ? 'assistant' : 'user'}: ${prefix}${i}` }),
  );
}

/**
 * A daemon with two session files: BIG (300 rows, 8 MB) and SMALL (3 rows, 1 KB). The preview
 * of BIG is its last 20 rows, the leaf last, with older ancestors above them.
 */
function setup(opts = {}) {
  const files = { [BIG]: { handle: 'S-big', rows: makeRows(300), size: 64 * 1024 * 1024 }, [SMALL]: { handle: 'S-small', rows: makeRows(3, 's'), size: 1024 } };
  const byHandle = (h) => Object.values(files).find((f) => f.handle === h);
  const logged = [];
  const daemon = new FakeDaemon({
    'session/open': ({ path: p }) => {
      const f = files[p];
      if (!f) throw new Error(`no such file: ${p}`);
      return { session: f.handle, path: p, header: { type: 'session', id: f.handle }, leafId: f.rows.at(-1).id, entryCount: f.rows.length };
    },
    'session/view': ({ session, offset = 0, limit = 1000 }) => {
      const { rows } = byHandle(session);
      return { rows: rows.slice(offset, offset + limit), total: rows.length, selectedIndex: rows.length - 1, leafId: rows.at(-1).id };
    },
    'session/preview': ({ path: p, limit }) => {
      const rows = files[p].rows.slice(-Math.min(20, limit));
      return { rows, selectedIndex: rows.length - 1, leafId: rows.at(-1).id, above: true, bytes: 4194304 };
    },
    'session/entry': ({ id }) => ({ entry: { type: 'message', id, parentId: null, timestamp: 't', message: { role: 'user', content: 'x' } } }),
  });
  const current = new CurrentSession(daemon);
  const tree = new SessionTreeProvider(daemon, current, {
    pageSize: 50,
    debounceMs: 10,
    sizeOf: async (p) => {
      if (!files[p]) throw new Error('ENOENT');
      return files[p].size;
    },
    log: (m) => logged.push(m),
    ...opts,
  });
  // what the view shows: its changes (with the rows drawn then) and its message, wired as the
  // commands wire it (src/commands.ts updateTitleMessage)
  const changes = [];
  // rows changes and message sets in the order they happen (VS Code holds back rows that
  // come within 200 ms of a message set)
  const order = [];
  tree.onDidChangeTreeData(() => {
    changes.push(tree.getChildren().map(labelOf));
    order.push('rows');
  });
  const sets = [];
  const view = messageView(sets, () => order.push('message'));
  const setMessage = messageSetter(view);
  const update = () => setMessage(treeMessage(tree.viewState, tree.filter, tree.search, tree.searchFound, tree.previewPath));
  tree.onDidChangeViewState(update);
  tree.onDidLoad(update);
  tree.onDidChangePreview(update);
  return { daemon, current, tree, files, changes, order, messages: sets, logged };
}

function labelOf(el) {
  if (el instanceof OlderRowsElement) return 'older';
  if (el instanceof LoadMoreElement) return 'more';
  return el.row.id;
}

/** Holds every answer to `method` back until the returned function is called. */
function hold(daemon, method) {
  let release;
  const gate = new Promise((r) => (release = r));
  const h = daemon.handlers[method];
  daemon.handlers[method] = async (p) => {
    await gate;
    return h(p);
  };
  return release;
}

const called = (daemon, method) => daemon.calls.filter(([m]) => m === method).map(([, p]) => p);
const previewIds = Array.from({ length: 20 }, (_, i) => `e${280 + i}`);
const realIds = [...Array.from({ length: 50 }, (_, i) => `e${i}`), 'more', ...Array.from({ length: 50 }, (_, i) => `e${250 + i}`)];

test('a big file: its preview is asked for right after the open and drawn while the open is pending', async () => {
  const { daemon, current, tree, changes, messages } = setup();
  const releaseOpen = hold(daemon, 'session/open');
  const opening = current.open(BIG);
  await tick(5);
  assert.deepEqual(daemon.calls.map(([m]) => m), ['session/open', 'session/preview'], 'the preview is sent after the open, before it answers');
  assert.deepEqual(called(daemon, 'session/preview'), [{ path: BIG, filter: 'default', limit: 50 }]);
  assert.deepEqual(changes, [['older', ...previewIds]], 'one change: the preview rows, under a row for the older entries');
  assert.equal(tree.previewPath, BIG);
  assert.deepEqual(messages, [MESSAGE]);
  // the leaf's row is the selection, as for the first rows of an open
  const leaf = tree.leafNode();
  assert.equal(leaf.row.id, 'e299');
  assert.equal(leaf.preview, true);
  assert.equal(tree.getTreeItem(leaf).iconPath.id, 'target', 'drawn like a row of the session');
  // display-only: no menus, no tooltip read from a session, no command takes it
  assert.equal(tree.getTreeItem(leaf).contextValue, 'preview');
  const older = tree.getChildren()[0];
  const olderItem = tree.getTreeItem(older);
  assert.equal(olderItem.label, OLDER_ROWS_LABEL);
  assert.equal(olderItem.command, undefined);
  assert.equal(olderItem.collapsibleState, vscode.TreeItemCollapsibleState.None);
  assert.deepEqual(tree.getChildren(older), []);
  assert.equal(tree.getParent(older), undefined);
  const item = tree.getTreeItem(leaf);
  await tree.resolveTreeItem(item, leaf);
  assert.equal(item.tooltip, undefined);
  assert.equal(called(daemon, 'session/entry').length, 0);
  assert.throws(() => refusePreviewRow(leaf), PreviewRowError);
  assert.equal(tree.nodeById('e299'), undefined, 'commands that take an entry id find no preview row');
  releaseOpen();
  await opening;
  await tree.whenIdle();
  assert.equal(tree.previewPath, undefined);
  assert.equal(tree.leafNode().preview, undefined);
  assert.equal(refusePreviewRow(tree.leafNode()), tree.leafNode());
});

test('the open\'s first rows replace the preview in one change, with no empty view between, and clear the message', async () => {
  // rows that come long after the open: the preview stays drawn meanwhile (no clearing change)
  const { daemon, current, tree, changes, order, messages } = setup({ clearAfterMs: 10 });
  const releaseOpen = hold(daemon, 'session/open');
  const releaseViews = hold(daemon, 'session/view');
  const loads = [];
  tree.onDidLoad((e) => loads.push(e.leafId));
  const opening = current.open(BIG);
  await tick(5);
  assert.equal(changes.length, 1);
  releaseOpen();
  await opening;
  assert.equal(tree.isLoading, true);
  await tick(40);
  assert.equal(changes.length, 1, 'no change while the rows are awaited: the preview stays');
  assert.deepEqual(tree.getChildren().map(labelOf), ['older', ...previewIds]);
  assert.deepEqual(messages, [MESSAGE], 'the message stays while the open loads');
  releaseViews();
  await tree.whenIdle();
  await tick(20);
  assert.deepEqual(changes, [['older', ...previewIds], realIds], 'the preview, then the rows of the open');
  assert.deepEqual(messages, [MESSAGE, undefined], 'set once, cleared with the rows');
  assert.deepEqual(order, ['rows', 'message', 'rows', 'message'], 'each message after the rows it goes with');
  assert.deepEqual(loads, ['e299']);
  assert.equal(tree.viewState, 'rows');
  assert.equal(tree.leafNode().row.id, 'e299');
});

test('the preview replaces the rows of the session shown before, and its filter is the view\'s', async () => {
  const { daemon, current, tree, changes, order, messages } = setup();
  await current.open(SMALL);
  await tree.whenIdle();
  await tree.setFilter('no-tools');
  changes.length = 0;
  order.length = 0;
  messages.length = 0;
  const releaseOpen = hold(daemon, 'session/open');
  const opening = current.open(BIG);
  await tick(5);
  assert.deepEqual(called(daemon, 'session/preview'), [{ path: BIG, filter: 'no-tools', limit: 50 }]);
  assert.deepEqual(changes, [['older', ...previewIds]], 'from the rows of SMALL straight to the preview');
  assert.deepEqual(messages, [`${MESSAGE} · filter: no-tools`]);
  releaseOpen();
  await opening;
  await tree.whenIdle();
  assert.deepEqual(changes.at(-1), realIds);
  assert.equal(changes.length, 2);
  assert.deepEqual(order, ['rows', 'message', 'rows', 'message']);
  assert.deepEqual(messages, [`${MESSAGE} · filter: no-tools`, 'filter: no-tools'], 'back to the filter alone');
});

test('a preview that comes after the rows is ignored', async () => {
  const { daemon, current, tree, changes, messages } = setup();
  const releasePreview = hold(daemon, 'session/preview');
  await current.open(BIG);
  await tree.whenIdle();
  assert.deepEqual(changes, [realIds]);
  releasePreview();
  await tick(10);
  assert.deepEqual(changes, [realIds], 'no change');
  assert.equal(tree.previewPath, undefined);
  assert.deepEqual(messages, []);
});

test('a preview that comes after the session was loaded and is loading again is ignored', async () => {
  const { daemon, current, tree, changes } = setup();
  const releasePreview = hold(daemon, 'session/preview');
  await current.open(BIG);
  await tree.whenIdle();
  const releaseViews = hold(daemon, 'session/view');
  const refreshing = tree.refresh();
  releasePreview();
  await tick(10);
  assert.deepEqual(changes, [realIds]);
  releaseViews();
  await refreshing;
  assert.equal(tree.previewPath, undefined);
});

test('a preview of a file is ignored once another session was clicked', async () => {
  const { daemon, current, tree, changes, messages } = setup();
  const releasePreview = hold(daemon, 'session/preview');
  const releaseOpen = hold(daemon, 'session/open');
  const big = current.open(BIG);
  const small = current.open(SMALL);
  releaseOpen();
  await Promise.all([big, small]);
  await tree.whenIdle();
  releasePreview();
  await tick(10);
  await tree.whenIdle();
  assert.equal(current.value.path, SMALL);
  assert.deepEqual(changes.at(-1), ['s0', 's1', 's2']);
  assert.ok(changes.every((c) => !c.includes('older')), 'the preview of BIG was never drawn');
  assert.equal(tree.previewPath, undefined);
  assert.deepEqual(messages, []);
});

test('a click on the session shown drops the preview drawn of another file', async () => {
  const { daemon, current, tree, changes, order, messages } = setup();
  await current.open(SMALL);
  await tree.whenIdle();
  changes.length = 0;
  order.length = 0;
  const releaseOpen = hold(daemon, 'session/open');
  const big = current.open(BIG);
  await tick(5);
  assert.equal(tree.previewPath, BIG);
  const small = current.open(SMALL);
  assert.equal(tree.previewPath, undefined);
  assert.deepEqual(changes, [['older', ...previewIds], ['s0', 's1', 's2']], 'the rows of SMALL come back');
  assert.deepEqual(messages, [MESSAGE, undefined]);
  assert.deepEqual(order, ['rows', 'message', 'rows', 'message']);
  assert.equal(called(daemon, 'session/preview').length, 1, 'none for the file shown');
  releaseOpen();
  await Promise.all([big, small]);
  await tree.whenIdle();
  assert.equal(current.value.path, SMALL);
  assert.equal(tree.previewPath, undefined);
});

test('a preview drawn goes when another session is adopted before its open answers', async () => {
  const { daemon, current, tree, changes, messages } = setup();
  const releaseOpen = hold(daemon, 'session/open');
  const big = current.open(BIG);
  await tick(5);
  assert.equal(tree.previewPath, BIG);
  // e.g. a session from the Shared Sessions view, adopted without an open of a file
  current.adopt({ session: 'S-small', header: {}, leafId: 's2', path: SMALL });
  await tree.whenIdle();
  assert.equal(tree.previewPath, undefined);
  assert.deepEqual(changes.at(-1), ['s0', 's1', 's2']);
  assert.deepEqual(messages, [MESSAGE, undefined]);
  releaseOpen();
  await big;
  await tree.whenIdle();
  assert.deepEqual(changes.at(-1), realIds, 'the open that answered last wins, as before');
});

test('a preview of a session that failed to open is ignored; one drawn goes and the rows shown before come back', async () => {
  const { daemon, current, tree, changes, messages } = setup();
  await current.open(SMALL);
  await tree.whenIdle();
  changes.length = 0;
  const openFile = daemon.handlers['session/open'];
  let fail;
  daemon.handlers['session/open'] = (p) =>
    p.path === BIG ? new Promise((_, reject) => (fail = () => reject(new Error('not a session file')))) : openFile(p);
  // the open fails before the preview answers
  const releasePreview = hold(daemon, 'session/preview');
  let failed = current.open(BIG).catch((e) => e);
  await tick(5);
  fail();
  assert.match((await failed).message, /not a session file/);
  releasePreview();
  await tick(10);
  assert.deepEqual(changes, [], 'nothing drawn');
  assert.equal(tree.previewPath, undefined);
  // the open fails after the preview was drawn: the rows of SMALL come back in one change
  daemon.handlers['session/preview'] = () => ({ rows: makeRows(3, 'b'), selectedIndex: 2, leafId: 'b2', above: false, bytes: 100 });
  failed = current.open(BIG).catch((e) => e);
  await tick(5);
  assert.deepEqual(changes, [['b0', 'b1', 'b2']], 'no older-entries row when the leaf\'s ancestors were all read');
  fail();
  await failed;
  await tick(5);
  assert.deepEqual(changes, [['b0', 'b1', 'b2'], ['s0', 's1', 's2']]);
  assert.equal(current.value.path, SMALL);
  assert.equal(tree.previewPath, undefined);
  assert.deepEqual(messages, [MESSAGE, undefined]);
});

test('a preview whose session fails to load goes with the failure', async () => {
  const { daemon, current, tree, changes } = setup();
  const releaseOpen = hold(daemon, 'session/open');
  daemon.handlers['session/view'] = async () => {
    throw new Error('boom');
  };
  const opening = current.open(BIG);
  await tick(5);
  assert.equal(tree.previewPath, BIG);
  releaseOpen();
  await opening;
  await tree.whenIdle();
  assert.equal(tree.viewState, 'failed');
  assert.equal(tree.previewPath, undefined);
  assert.deepEqual(changes.at(-1), []);
});

test('a failed preview is logged only; the open shows its rows', async () => {
  const { daemon, current, tree, changes, logged } = setup();
  daemon.handlers['session/preview'] = async () => {
    throw new Error('Method Not Found: session/preview');
  };
  const before = vscode.window.messages.length;
  await current.open(BIG);
  await tree.whenIdle();
  await tick(5);
  assert.deepEqual(changes, [realIds]);
  assert.equal(vscode.window.messages.length, before, 'no message for the user');
  assert.deepEqual(logged, [`no preview of ${BIG}: Method Not Found: session/preview`]);
});

test('a preview without rows draws nothing', async () => {
  const { daemon, current, tree, changes, messages } = setup();
  daemon.handlers['session/preview'] = () => ({ rows: [], selectedIndex: null, leafId: null, above: false, bytes: 0, indexed: true });
  await current.open(BIG);
  await tree.whenIdle();
  assert.deepEqual(changes, [realIds]);
  assert.deepEqual(messages, []);
});

test('no preview below 4 MB, of the file shown already, with a search, or for a search hit', async () => {
  const { daemon, current, tree, files } = setup();
  await current.open(SMALL);
  await tree.whenIdle();
  files[BIG].size = PREVIEW_MIN_BYTES - 1;
  await current.open(BIG);
  await tree.whenIdle();
  assert.equal(called(daemon, 'session/preview').length, 0, 'below 4 MB');
  files[BIG].size = PREVIEW_MIN_BYTES;
  await current.open(SMALL);
  await current.open(BIG);
  await tree.whenIdle();
  assert.equal(called(daemon, 'session/preview').length, 1, 'at 4 MB');
  await current.open(BIG);
  await tree.whenIdle();
  assert.equal(called(daemon, 'session/preview').length, 1, 'the file shown already');
  await current.open(SMALL);
  await tree.whenIdle();
  await tree.setSearch('x');
  await current.open(BIG);
  await tree.whenIdle();
  await tree.setSearch('');
  await current.open(SMALL);
  await tree.whenIdle();
  await tree.focusEntry('e5', true);
  await current.open(BIG);
  await tree.whenIdle();
  assert.equal(called(daemon, 'session/preview').length, 1, 'none with a search, none for a search hit');
});

test('the preview\'s limit is the page size, at most 2000', async () => {
  const { daemon, current, tree } = setup({ pageSize: 5000 });
  await current.open(BIG);
  await tree.whenIdle();
  assert.equal(called(daemon, 'session/preview')[0].limit, 2000);
});

test('requestPreview: the size of the file on disk decides', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'st-preview-'));
  try {
    const small = path.join(dir, 'small.jsonl');
    const big = path.join(dir, 'big.jsonl');
    fs.writeFileSync(small, '');
    fs.truncateSync(small, PREVIEW_MIN_BYTES - 1);
    fs.writeFileSync(big, '');
    fs.truncateSync(big, PREVIEW_MIN_BYTES);
    assert.equal(PREVIEW_MIN_BYTES, 32 * 1024 * 1024);
    assert.equal(await fileSize(big), PREVIEW_MIN_BYTES);
    const daemon = new FakeDaemon({ 'session/preview': (p) => ({ rows: [], selectedIndex: null, leafId: null, above: false, bytes: 0, path: p.path }) });
    const ask = (p) => requestPreview(daemon, { path: p, filter: 'default', limit: 10 }, { sizeOf: fileSize });
    assert.equal(await ask(small), undefined);
    assert.equal(await ask(path.join(dir, 'missing.jsonl')), undefined);
    assert.equal((await ask(big)).path, big);
    assert.deepEqual(daemon.calls.map(([m, p]) => [m, p.path]), [['session/preview', big]]);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
