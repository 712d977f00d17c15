'use strict';
// The CPython interpreters on this machine, by minor version ("3.12" -> path): pyenv's, the
// system's and python3 on PATH. The tests that need a given version skip when it is absent.
const fs = require('node:fs');
const path = require('node:path');
const { execFileSync } = require('node:child_process');

function versionOf(exe) {
  try {
    const out = execFileSync(exe, ['-c', 'import sys; print("%d.%d" % sys.version_info[:2])'], { encoding: 'utf8', timeout: 10000, stdio: ['ignore', 'pipe', 'ignore'] });
    return out.trim();
  } catch {
    return undefined;
  }
}

let found;
/** Map of "3.N" to an interpreter of that version. */
function pythons() {
  if (found) return found;
  found = new Map();
  const candidates = [];
  const pyenv = process.env.PYENV_ROOT;
  if (pyenv && fs.existsSync(path.join(pyenv, 'versions'))) {
    for (const v of fs.readdirSync(path.join(pyenv, 'versions')).sort()) {
      candidates.push(path.join(pyenv, 'versions', v, 'bin', 'python3'));
    }
  }
  for (const dir of ['/usr/bin', '/usr/local/bin']) {
    for (const minor of [10, 11, 12, 13, 14]) {
      candidates.push(path.join(dir, `python3.${minor}`));
    }
  }
  for (const exe of candidates) {
    if (!fs.existsSync(exe)) continue;
    const v = versionOf(exe);
    if (v && !found.has(v)) found.set(v, fs.realpathSync(exe));
  }
  return found;
}

module.exports = { pythons, versionOf };
