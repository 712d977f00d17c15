'use strict';
// How the daemon is started, with real Python interpreters on a PATH the test builds: the
// bundled daemon on the first Python that fits, the override, and the messages when none fits.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { planLaunch, readBundle, probePython } = require('../../out/launch');
const { pythons } = require('../pythons');

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'st-vscode-launch-'));
test.after(() => fs.rmSync(tmp, { recursive: true, force: true }));
let n = 0;

/** A directory for PATH holding links named `name` to real interpreters (or scripts). */
function binDir(entries) {
  const dir = path.join(tmp, `bin${n++}`);
  fs.mkdirSync(dir);
  for (const [name, target] of Object.entries(entries)) {
    if (target.startsWith('#!')) {
      fs.writeFileSync(path.join(dir, name), target, { mode: 0o755 });
    } else {
      fs.symlinkSync(target, path.join(dir, name));
    }
  }
  return dir;
}

/** An installed extension with a bundle for the given Python versions. */
function extensionWithBundle(versions = ['3.11', '3.12', '3.13', '3.14']) {
  const ext = path.join(tmp, `ext${n++}`);
  fs.mkdirSync(path.join(ext, 'bundled', 'libs', 'sessiontree'), { recursive: true });
  fs.writeFileSync(path.join(ext, 'bundled', 'manifest.json'), JSON.stringify({ target: 'linux-x64', pythons: versions, sessiontree: '0.1.0' }));
  return ext;
}

const py = pythons();
const input = (over) => ({ serverCommand: '', serverArgs: ['serve'], python: '', envPath: binDir({}), ...over });

test('readBundle finds the manifest and the libs, and nothing in a development build', () => {
  const ext = extensionWithBundle(['3.12']);
  const b = readBundle(ext);
  assert.equal(b.libs, path.join(ext, 'bundled', 'libs'));
  assert.deepEqual(b.manifest.pythons, ['3.12']);
  assert.equal(readBundle(path.join(tmp, 'no-such-extension')), undefined);
});

test('the bundled daemon runs on python3 from PATH with the libs on PYTHONPATH', { skip: !py.get('3.11') && 'no Python 3.11' }, async () => {
  const bundle = readBundle(extensionWithBundle());
  const d = await planLaunch(input({ bundle, envPath: binDir({ python3: py.get('3.11') }), pycacheDir: '/tmp/pyc' }));
  assert.ok(d.plan, d.problem);
  assert.deepEqual(d.plan.args, ['-m', 'sessiontree', 'serve']);
  assert.deepEqual(d.plan.env, { PYTHONPATH: bundle.libs, PYTHONPYCACHEPREFIX: '/tmp/pyc' });
  assert.match(d.plan.description, /^the bundled sessiontree 0\.1\.0 on Python 3\.11\.\d+ \(.*python3, from PATH\)$/);
});

test('a python3 that is too old is passed over for a python3.N that fits', { skip: !(py.get('3.10') && py.get('3.12')) && 'needs Python 3.10 and 3.12' }, async () => {
  const bundle = readBundle(extensionWithBundle());
  const d = await planLaunch(input({ bundle, envPath: binDir({ python3: py.get('3.10'), 'python3.12': py.get('3.12') }) }));
  assert.ok(d.plan, d.problem);
  assert.match(d.plan.description, /Python 3\.12\.\d+ .*python3\.12, from PATH/);
});

test('no Python that fits: the message says what was found and what to set', { skip: !py.get('3.10') && 'no Python 3.10' }, async () => {
  const bundle = readBundle(extensionWithBundle());
  const d = await planLaunch(input({ bundle, envPath: binDir({ python3: py.get('3.10') }) }));
  assert.equal(d.plan, undefined);
  assert.equal(d.kind, 'missing');
  assert.match(d.problem, /needs Python 3\.11 or newer/);
  assert.match(d.problem, /python3` \(PATH\) is Python 3\.10\.\d+, older than 3\.11/);
  assert.match(d.problem, /set `sessiontree\.python` to a Python 3\.11\+ interpreter/);
  assert.match(d.problem, /`sessiontree\.server\.command`/);
  assert.match(d.problem, /User settings/);
  const none = await planLaunch(input({ bundle }));
  assert.match(none.problem, /No `python3` or `python` is on PATH/);
});

test('a Python newer than the compiled wheels of the bundle is named as such', { skip: !py.get('3.12') && 'no Python 3.12' }, async () => {
  const bundle = readBundle(extensionWithBundle(['3.11']));
  const d = await planLaunch(input({ bundle, envPath: binDir({ python3: py.get('3.12') }) }));
  assert.match(d.problem, /is Python 3\.12\.\d+; the bundled libraries are built for 3\.11/);
});

test('a python that does not run (a pyenv shim without that version) is reported, not fatal', async () => {
  const bundle = readBundle(extensionWithBundle());
  const broken = '#!/bin/sh\necho "pyenv: python3: command not found" >&2\nexit 127\n';
  const d = await planLaunch(input({ bundle, envPath: binDir({ python3: broken }) }));
  assert.match(d.problem, /python3` \(PATH\) did not run: pyenv: python3: command not found/);
  const probe = await probePython(path.join(tmp, 'nope'));
  assert.ok(probe.error);
});

test('sessiontree.python is the only interpreter tried when set', { skip: !py.get('3.13') && 'no Python 3.13' }, async () => {
  const bundle = readBundle(extensionWithBundle());
  const good = await planLaunch(input({ bundle, python: py.get('3.13'), envPath: binDir({ python3: py.get('3.11') || py.get('3.13') }) }));
  assert.match(good.plan.description, /Python 3\.13\.\d+ .*from sessiontree\.python\)/);
  const bad = await planLaunch(input({ bundle, python: path.join(tmp, 'missing-python') }));
  assert.match(bad.problem, /missing-python` \(sessiontree\.python\) was not found/);
});

test("the Python extension's interpreter comes before PATH", { skip: !(py.get('3.12') && py.get('3.13')) && 'needs Python 3.12 and 3.13' }, async () => {
  const bundle = readBundle(extensionWithBundle());
  const d = await planLaunch(input({ bundle, pythonFromExtension: async () => py.get('3.12'), envPath: binDir({ python3: py.get('3.13') }) }));
  assert.match(d.plan.description, /Python 3\.12\.\d+ .*from the Python extension\)/);
  const failing = await planLaunch(input({ bundle, pythonFromExtension: async () => { throw new Error('not ready'); }, envPath: binDir({ python3: py.get('3.13') }) }));
  assert.match(failing.plan.description, /Python 3\.13/, 'a failing Python extension is skipped');
});

test('sessiontree.server.command overrides the bundle; a missing one says how to go back to it', async () => {
  const fake = path.join(binDir({ sessiontree: '#!/bin/sh\nexit 0\n' }), 'sessiontree');
  const bundle = readBundle(extensionWithBundle());
  const d = await planLaunch(input({ bundle, serverCommand: fake, serverArgs: ['serve', '--log-file', 'x'] }));
  assert.equal(d.plan.command, fake);
  assert.deepEqual(d.plan.args, ['serve', '--log-file', 'x']);
  assert.deepEqual(d.plan.env, {});
  const missing = await planLaunch(input({ bundle, serverCommand: '/no/such/sessiontree' }));
  assert.match(missing.problem, /`\/no\/such\/sessiontree` \(`sessiontree\.server\.command`\) was not found\. Clear the setting to use the daemon bundled/);
});

test('a development build (no bundle) runs sessiontree from PATH, or says how to install it', async () => {
  const dir = binDir({ sessiontree: '#!/bin/sh\nexit 0\n' });
  const d = await planLaunch(input({ envPath: dir }));
  assert.equal(d.plan.command, path.join(dir, 'sessiontree'));
  const none = await planLaunch(input({}));
  assert.match(none.problem, /carries no daemon, and `sessiontree` is not on PATH\. Install it from a checkout/);
});
