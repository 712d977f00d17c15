'use strict';
// The extension's protocol layer against the real Python daemon over stdio (vscode-jsonrpc, the
// library vscode-languageclient sends through). Method names come from the extension's constants.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawn } = require('node:child_process');
const rpc = require('vscode-jsonrpc/node');
const { Method, Notification, ErrorCode, PROTOCOL_VERSION } = require('../../out/constants');
const { nestRows } = require('../../out/views/rows');
const { daemonCommand } = require('../daemon-path');

const FIXTURE = path.join(__dirname, '..', 'fixtures', 'branched.jsonl');

/** Starts `sessiontree serve` on a fresh agent dir and workspace; collects notifications. */
async function startDaemon() {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'st-vscode-it-'));
  const agentDir = path.join(tmp, 'agent');
  const workspace = path.join(tmp, 'ws');
  fs.mkdirSync(agentDir, { recursive: true });
  fs.mkdirSync(workspace, { recursive: true });
  const sessionFile = path.join(workspace, 'branched.jsonl');
  fs.copyFileSync(FIXTURE, sessionFile);
  const proc = spawn(daemonCommand(), ['serve'], {
    stdio: ['pipe', 'pipe', 'pipe'],
    // the daemon's index cache, locks and navigation state stay in the test's tmp dir
    env: { ...process.env, PI_CODING_AGENT_DIR: agentDir, XDG_CACHE_HOME: path.join(tmp, 'cache'), XDG_STATE_HOME: path.join(tmp, 'state') },
  });
  let stderr = '';
  proc.stderr.on('data', (d) => (stderr += d));
  const conn = rpc.createMessageConnection(new rpc.StreamMessageReader(proc.stdout), new rpc.StreamMessageWriter(proc.stdin));
  const notes = [];
  const waiters = [];
  for (const method of Object.values(Notification)) {
    conn.onNotification(method, (params) => {
      notes.push({ method, params });
      for (const w of [...waiters]) {
        if (w.method === method && w.pred(params)) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve(params);
        }
      }
    });
  }
  conn.onNotification('window/showMessage', () => undefined);
  conn.onNotification('window/logMessage', () => undefined);
  conn.listen();
  const init = await conn.sendRequest('initialize', {
    processId: process.pid,
    rootUri: `file://${workspace}`,
    workspaceFolders: [{ uri: `file://${workspace}`, name: 'ws' }],
    capabilities: {},
    initializationOptions: { agentDir },
  });
  await conn.sendNotification('initialized', {});
  const waitFor = (method, pred = () => true, ms = 10000) => {
    const hit = notes.find((n) => n.method === method && pred(n.params));
    if (hit) {
      return Promise.resolve(hit.params);
    }
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        if (waiters.includes(w)) {
          waiters.splice(waiters.indexOf(w), 1);
          reject(new Error(`no ${method} within ${ms} ms; stderr:\n${stderr}`));
        }
      }, ms);
      const w = { method, pred, resolve: (v) => { clearTimeout(timer); resolve(v); } };
      waiters.push(w);
    });
  };
  let exitedByItself = true;
  const stop = async () => {
    try {
      await conn.sendRequest('shutdown');
      await conn.sendNotification('exit');
    } catch {
      // already gone
    }
    conn.dispose();
    await new Promise((r) => {
      if (proc.exitCode !== null) return r();
      const t = setTimeout(() => { exitedByItself = false; proc.kill(); r(); }, 3000);
      proc.on('exit', () => { clearTimeout(t); r(); });
    });
    fs.rmSync(tmp, { recursive: true, force: true });
  };
  return { conn, init, notes, waitFor, stop, exited: () => exitedByItself, agentDir, workspace, sessionFile, tmp };
}

const fileLines = (p) => fs.readFileSync(p, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));

test('the daemon over stdio, as the extension uses it', async (t) => {
  const d = await startDaemon();
  t.after(() => d.stop());
  const { conn, sessionFile } = d;

  await t.test('initialize announces the protocol version', () => {
    assert.equal(d.init.serverInfo.name, 'sessiontree');
    assert.ok(d.init.capabilities.experimental.sessionTree.protocolVersion >= PROTOCOL_VERSION);
  });

  let session;
  await t.test('session/open returns a handle, the same one twice', async () => {
    const r = await conn.sendRequest(Method.open, { path: sessionFile });
    assert.equal(typeof r.session, 'string');
    assert.equal(r.leafId, 'a0000004');
    assert.equal(r.entryCount, 9);
    assert.equal(r.header.id, '0a1b2c3d4e5f6071');
    session = r.session;
    const again = await conn.sendRequest(Method.open, { path: sessionFile });
    assert.equal(again.session, session);
  });

  await t.test('session/view rows nest at the branch point, active branch first', async () => {
    const v = await conn.sendRequest(Method.view, { session, filter: 'default' });
    assert.equal(v.leafId, 'a0000004');
    const ids = v.rows.map((r) => r.id);
    assert.deepEqual(ids, ['u0000001', 'a0000001', 'u0000003', 'a0000004', 'u0000002', 'a0000002', 't0000001', 'a0000003']);
    assert.equal(v.total, 8);
    assert.equal(v.rows[v.selectedIndex].id, 'a0000004');
    const leafRow = v.rows.find((r) => r.isLeaf);
    assert.equal(leafRow.id, 'a0000004');
    assert.deepEqual(v.rows.filter((r) => r.onActivePath).map((r) => r.id), ['u0000001', 'a0000001', 'u0000003', 'a0000004']);
    assert.equal(v.rows[0].text, 'user: How do I read a JSONL file in Python?');
    assert.equal(v.rows[6].text, '[read: src/loader.py]');
    const { roots, byId } = nestRows(v.rows);
    assert.deepEqual(roots.map((n) => n.row.id), ['u0000001', 'a0000001']);
    assert.deepEqual(byId.get('a0000001').children.map((n) => n.row.id), ['u0000003', 'u0000002']);
    assert.deepEqual(byId.get('u0000002').children.map((n) => n.row.id), ['a0000002', 't0000001', 'a0000003']);
    const all = await conn.sendRequest(Method.view, { session, filter: 'all' });
    assert.equal(all.rows[0].id, 'm0000001');
    const page = await conn.sendRequest(Method.view, { session, offset: 2, limit: 3 });
    assert.deepEqual(page.rows.map((r) => r.id), ids.slice(2, 5));
    assert.equal(page.total, 8);
    const found = await conn.sendRequest(Method.view, { session, search: 'orjson faster' });
    assert.deepEqual(found.rows.map((r) => r.id), ['u0000003']);
  });

  await t.test('session/entry returns the stored entry', async () => {
    const r = await conn.sendRequest(Method.entry, { session, id: 't0000001' });
    assert.equal(r.entry.message.toolName, 'read');
  });

  await t.test('session/navigate moves the leaf and notifies', async () => {
    const r = await conn.sendRequest(Method.navigate, { session, targetId: 'a0000003' });
    assert.equal(r.cancelled, false);
    assert.equal(r.newLeafId, 'a0000003');
    assert.equal(r.oldLeafId, 'a0000004');
    const note = await d.waitFor(Notification.didNavigate, (p) => p.newLeafId === 'a0000003');
    assert.equal(note.session, session);
    const v = await conn.sendRequest(Method.view, { session });
    assert.equal(v.rows.find((row) => row.isLeaf).id, 'a0000003');
    assert.equal(v.rows[2].id, 'u0000002', 'the active branch moved to the front');
  });

  await t.test('navigating to a user message with a summary writes a branch summary on disk', async () => {
    const prep = await conn.sendRequest(Method.prepareNavigation, { session, targetId: 'u0000003' });
    assert.deepEqual(prep.entriesToSummarize.map((e) => e.id), ['u0000002', 'a0000002', 't0000001', 'a0000003']);
    assert.equal(prep.commonAncestorId, 'a0000001');
    const r = await conn.sendRequest(Method.navigate, { session, targetId: 'u0000003', summarize: true, summary: 'Tried a streaming loader.' });
    assert.equal(r.editorText, 'Use orjson instead, it is faster.');
    const last = fileLines(sessionFile).at(-1);
    assert.equal(last.type, 'branch_summary');
    assert.equal(last.summary, 'Tried a streaming loader.');
    assert.equal(last.parentId, 'a0000001');
    assert.equal(r.newLeafId, last.id);
  });

  await t.test('session/history records the jumps and session/back undoes the last one', async () => {
    const h = await conn.sendRequest(Method.history, { session });
    assert.ok(h.entries.length >= 2);
    assert.equal(h.index, h.entries.length);
    assert.equal(h.entries[h.index - 1].previousLeafId, 'a0000003');
    const back = await conn.sendRequest(Method.back, { session });
    assert.equal(back.cancelled, false);
    assert.equal(back.newLeafId, 'a0000003');
    const v = await conn.sendRequest(Method.view, { session });
    assert.equal(v.leafId, 'a0000003');
  });

  await t.test('session/setLabel labels a node, persists it and notifies', async () => {
    const r = await conn.sendRequest(Method.setLabel, { session, targetId: 'u0000002', label: 'streaming' });
    assert.equal(typeof r.entryId, 'string');
    const note = await d.waitFor(Notification.didChangeLabel, (p) => p.targetId === 'u0000002');
    assert.equal(note.label, 'streaming');
    const v = await conn.sendRequest(Method.view, { session });
    assert.equal(v.rows.find((row) => row.id === 'u0000002').label, 'streaming');
    const onDisk = fileLines(sessionFile).filter((e) => e.type === 'label');
    assert.deepEqual(onDisk.map((e) => [e.targetId, e.label]), [['u0000002', 'streaming']]);
    await conn.sendRequest(Method.setLabel, { session, targetId: 'u0000002' });
    const cleared = await conn.sendRequest(Method.view, { session });
    assert.equal(cleared.rows.find((row) => row.id === 'u0000002').label, undefined);
  });

  await t.test('session/context with llm returns what the model sees from a node', async () => {
    const ctx = await conn.sendRequest(Method.context, { session, leafId: 'a0000004', llm: true });
    assert.equal(ctx.messages.length, 4);
    assert.ok(Array.isArray(ctx.llmMessages));
    assert.equal(ctx.models.default, 'anthropic/claude-sonnet-4');
    const texts = JSON.stringify(ctx.llmMessages);
    assert.match(texts, /Use orjson instead/);
    assert.doesNotMatch(texts, /Make it stream/);
  });

  await t.test('an external append is reported with session/didChange', async () => {
    const v = await conn.sendRequest(Method.view, { session });
    const entry = { type: 'message', id: 'x0000001', parentId: v.leafId, timestamp: '2026-01-10T10:00:00.000Z', message: { role: 'user', content: 'Appended by another process', timestamp: 1768039200000 } };
    fs.appendFileSync(sessionFile, `${JSON.stringify(entry)}\n`);
    const note = await d.waitFor(Notification.didChange, (p) => p.source === 'external' && p.appended.some((e) => e.id === 'x0000001'));
    assert.equal(note.session, session);
    assert.equal(note.leafId, 'x0000001');
    const after = await conn.sendRequest(Method.view, { session });
    assert.equal(after.rows.find((row) => row.isLeaf).text, 'user: Appended by another process');
  });

  await t.test('errors carry the protocol codes', async () => {
    await assert.rejects(conn.sendRequest(Method.view, { session: 'no-such-handle' }), (e) => e.code === ErrorCode.unknownSession);
    await assert.rejects(conn.sendRequest(Method.entry, { session, id: 'nope' }), (e) => e.code === ErrorCode.entryNotFound);
    const outside = path.join(os.tmpdir(), `st-outside-${process.pid}.jsonl`);
    fs.copyFileSync(FIXTURE, outside);
    try {
      await assert.rejects(conn.sendRequest(Method.open, { path: outside }), (e) => e.code === ErrorCode.accessDenied);
    } finally {
      fs.rmSync(outside, { force: true });
    }
  });

  await t.test('session/list finds the sessions of the agent dir', async () => {
    const dir = path.join(d.agentDir, 'sessions', '--work-demo--');
    fs.mkdirSync(dir, { recursive: true });
    const p = path.join(dir, '2026-01-10T09-00-00-000Z_0a1b2c3d4e5f6071.jsonl');
    fs.copyFileSync(FIXTURE, p);
    const r = await conn.sendRequest(Method.list, { all: true });
    const hit = r.sessions.find((s) => s.path === p);
    assert.ok(hit, JSON.stringify(r.sessions));
    assert.equal(hit.firstMessage, 'How do I read a JSONL file in Python?');
    assert.equal(hit.cwd, '/work/demo');
  });
});

test('shutdown and exit end the daemon process', async () => {
  const d = await startDaemon();
  await d.stop();
  assert.equal(d.exited(), true, 'the daemon exited by itself after exit');
});
