'use strict';
// The daemon inside the VSIX runs on every CPython the bundle names (3.11 to 3.14) that this
// machine has: `python -m sessiontree serve` with PYTHONPATH=bundled/libs, spoken to over stdio
// with vscode-jsonrpc (the library vscode-languageclient sends through), and the unpacked
// extension is left as it was (bytecode goes to PYTHONPYCACHEPREFIX, outside it).
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawn } = require('node:child_process');
const rpc = require('vscode-jsonrpc/node');
const { pythons } = require('../pythons');
const { snapshot, diffSnapshots } = require('../e2e/agent-snapshot');
const { vsixPath, unpack } = require('./vsix-path');

const FIXTURE = path.join(__dirname, '..', 'fixtures', 'branched.jsonl');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'st-vscode-vsix-'));
test.after(() => fs.rmSync(tmp, { recursive: true, force: true }));
const ext = unpack(vsixPath(), path.join(tmp, 'unpacked'));
const manifest = JSON.parse(fs.readFileSync(path.join(ext, 'bundled', 'manifest.json'), 'utf8'));
const installed = pythons();

test('the VSIX carries the daemon, its libraries and a manifest, and no bytecode', () => {
  assert.deepEqual(manifest.pythons, ['3.11', '3.12', '3.13', '3.14']);
  const libs = path.join(ext, 'bundled', 'libs');
  for (const pkg of ['sessiontree', 'sessiontree_protocol', 'pygls', 'lsprotocol', 'orjson', 'msgspec', 'watchfiles', 'attrs', 'cattrs']) {
    assert.ok(fs.existsSync(path.join(libs, pkg)), `${pkg} is bundled`);
  }
  for (const v of manifest.pythons) {
    const tag = `cpython-${v.replace('.', '')}`;
    assert.ok(fs.readdirSync(path.join(libs, 'orjson')).some((f) => f.includes(tag)), `orjson for ${v}`);
    assert.ok(fs.readdirSync(path.join(libs, 'msgspec')).some((f) => f.includes(tag)), `msgspec for ${v}`);
  }
  const walk = (d) => fs.readdirSync(d, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? [e.name, ...walk(path.join(d, e.name))] : [e.name]));
  assert.ok(!walk(ext).some((n) => n === '__pycache__' || n.endsWith('.pyc')), 'no bytecode');
  assert.ok(!fs.existsSync(path.join(libs, 'bin')), 'no console scripts');
});

// one daemon per Python, started side by side (most of their time is Python importing)
test.describe('the bundled daemon', { concurrency: true }, () => {
for (const version of manifest.pythons) {
  const python = installed.get(version);
  test(`serves a session on Python ${version}`, { skip: !python && `no Python ${version} on this machine` }, async () => {
    const work = fs.mkdtempSync(path.join(tmp, `py${version}-`));
    const agentDir = path.join(work, 'agent');
    fs.mkdirSync(agentDir);
    const sessionFile = path.join(work, 'branched.jsonl');
    fs.copyFileSync(FIXTURE, sessionFile);
    const before = snapshot(ext);
    const proc = spawn(python, ['-m', 'sessiontree', 'serve'], {
      stdio: ['pipe', 'pipe', 'pipe'],
      env: {
        ...process.env,
        PYTHONPATH: path.join(ext, 'bundled', 'libs'),
        PYTHONPYCACHEPREFIX: path.join(work, 'pycache'),
        PI_CODING_AGENT_DIR: agentDir,
        XDG_CACHE_HOME: path.join(work, 'cache'),
        XDG_STATE_HOME: path.join(work, 'state'),
      },
    });
    let stderr = '';
    proc.stderr.on('data', (d) => (stderr += d));
    const conn = rpc.createMessageConnection(new rpc.StreamMessageReader(proc.stdout), new rpc.StreamMessageWriter(proc.stdin));
    conn.onNotification(() => undefined);
    conn.listen();
    try {
      const init = await conn.sendRequest('initialize', {
        processId: process.pid,
        rootUri: `file://${work}`,
        workspaceFolders: [{ uri: `file://${work}`, name: 'ws' }],
        capabilities: {},
        initializationOptions: { agentDir },
      });
      assert.equal(init.serverInfo.name, 'sessiontree', stderr);
      assert.equal(init.serverInfo.version, manifest.sessiontree);
      await conn.sendNotification('initialized', {});
      const opened = await conn.sendRequest('session/open', { path: sessionFile });
      const view = await conn.sendRequest('session/view', { session: opened.session, filter: 'default' });
      assert.ok(view.rows.some((r) => r.text === 'user: How do I read a JSONL file in Python?'), JSON.stringify(view.rows.map((r) => r.text)));
      await conn.sendRequest('shutdown');
      await conn.sendNotification('exit');
    } finally {
      conn.dispose();
      proc.kill();
    }
    assert.deepEqual(diffSnapshots(before, snapshot(ext)), [], 'the extension directory is left as it was');
  });
}
});
