'use strict';
// The Shared Sessions view's provider against the real daemon over stdio and a real shared
// store (PostgreSQL started by tests/store/pg_for_editors.py): machine groups, opening from
// the store, the live didChange of another machine's append, and an unreachable store.
require('../unit/register-vscode-stub.js');
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const readline = require('node:readline');
const { spawn } = require('node:child_process');
const rpc = require('vscode-jsonrpc/node');
const { SharedSessionsProvider, SharedMethod } = require('../../out/views/shared');
const { daemonCommand, repoRoot } = require('../daemon-path');

function startStore(dir) {
  const python = path.join(repoRoot, '.venv', 'bin', 'python');
  const proc = spawn(python, [path.join(repoRoot, 'tests', 'store', 'pg_for_editors.py'), dir], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = readline.createInterface({ input: proc.stdout });
  const replies = [];
  let wake;
  lines.on('line', (l) => {
    replies.push(l);
    if (wake) wake();
  });
  const next = (n) =>
    new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error('the store helper did not answer')), 60000);
      const check = () => {
        if (replies.length >= n) {
          clearTimeout(t);
          wake = undefined;
          resolve(replies[n - 1]);
        } else {
          wake = check;
        }
      };
      check();
    });
  return {
    ready: next(1).then((l) => JSON.parse(l)),
    send: async (cmd) => {
      const n = replies.length + 1;
      proc.stdin.write(`${cmd}\n`);
      return next(n);
    },
    stop: () => new Promise((r) => { proc.on('exit', r); proc.stdin.end(); }),
  };
}

async function startDaemon(tmp, store) {
  const agentDir = path.join(tmp, 'beta-agent');
  fs.mkdirSync(agentDir, { recursive: true });
  const proc = spawn(daemonCommand(), ['serve'], {
    stdio: ['pipe', 'pipe', 'pipe'],
    env: { ...process.env, SESSIONTREE_MACHINE: 'beta', SESSIONTREE_STORE: '', XDG_CACHE_HOME: path.join(tmp, 'cache'), XDG_STATE_HOME: path.join(tmp, 'state') },
  });
  const conn = rpc.createMessageConnection(new rpc.StreamMessageReader(proc.stdout), new rpc.StreamMessageWriter(proc.stdin));
  const listeners = new Map();
  const daemon = {
    request: (method, params) => conn.sendRequest(method, params),
    onNotification: (method, fn) => {
      if (!listeners.has(method)) {
        listeners.set(method, new Set());
        conn.onNotification(method, (p) => { for (const f of listeners.get(method)) f(p); });
      }
      listeners.get(method).add(fn);
      return { dispose: () => listeners.get(method).delete(fn) };
    },
  };
  daemon.onNotification('session/didChange', () => undefined);
  conn.onNotification('window/showMessage', () => undefined);
  conn.onNotification('window/logMessage', () => undefined);
  conn.listen();
  await conn.sendRequest('initialize', { processId: process.pid, rootUri: null, capabilities: {}, initializationOptions: { agentDir, store, allowedRoots: [tmp] } });
  await conn.sendNotification('initialized', {});
  const stop = async () => {
    try { await conn.sendRequest('shutdown'); await conn.sendNotification('exit'); } catch { /* gone */ }
    conn.dispose();
    await new Promise((r) => { if (proc.exitCode !== null) return r(); const t = setTimeout(() => { proc.kill(); r(); }, 3000); proc.on('exit', () => { clearTimeout(t); r(); }); });
  };
  return { daemon, stop };
}

test('the Shared Sessions view against the real daemon and a real store', async (t) => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'st-vscode-shared-'));
  const store = startStore(path.join(tmp, 'store'));
  const info = await store.ready;
  const d = await startDaemon(tmp, info.url);
  t.after(async () => {
    await d.stop();
    await store.stop();
    fs.rmSync(tmp, { recursive: true, force: true });
  });
  const provider = new SharedSessionsProvider(d.daemon, () => ({ dispose() {} }));

  const [machine] = await provider.getChildren();
  assert.equal(machine.kind, 'machine');
  assert.equal(provider.getTreeItem(machine).label, 'alpha');
  const [session] = await provider.getChildren(machine);
  assert.equal(provider.getTreeItem(session).label, 'Shared hello from alpha');

  const opened = await d.daemon.request(SharedMethod.openShared, { sessionId: session.info.id });
  assert.equal(opened.leafId, 'm1');
  const changed = new Promise((resolve) => {
    d.daemon.onNotification('session/didChange', (p) => {
      if (p.session === opened.session && p.appended.some((e) => e.id === 'm2')) resolve(p);
    });
  });
  await store.send('append m2 live from alpha');
  const note = await Promise.race([changed, new Promise((_, rej) => setTimeout(() => rej(new Error('no didChange')), 15000))]);
  assert.equal(note.leafId, 'm2');

  await store.send('stop');
  provider.refresh();
  const [row] = await provider.getChildren();
  assert.equal(row.kind, 'message');
  assert.match(provider.getTreeItem(row).label, /unreachable — local sessions keep working/);
  await store.send('start');
});
