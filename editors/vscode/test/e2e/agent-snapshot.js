'use strict';
// A snapshot of everything under a directory (every name, every directory, every file's
// sha256, size and mtime), so that a test can show that looking at sessions changed nothing
// in the agent's directory. Used by the driver (before VS Code starts) and by the suite (after
// the clicks). Plain Node, no vscode API, so both sides load the same code.
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');

/** Every entry under `root` (itself excluded), keyed by its path relative to `root`. */
function snapshot(root) {
  const out = {};
  const walk = (dir) => {
    for (const name of fs.readdirSync(dir).sort()) {
      const abs = path.join(dir, name);
      const rel = path.relative(root, abs);
      const st = fs.lstatSync(abs);
      if (st.isSymbolicLink()) {
        out[rel] = { type: 'link', target: fs.readlinkSync(abs) };
      } else if (st.isDirectory()) {
        // a directory's mtime moves when anything is created or removed in it, even a lock file
        // that is gone again, so it is part of "exactly as before"
        out[rel] = { type: 'dir', mode: st.mode, mtimeMs: st.mtimeMs };
        walk(abs);
      } else {
        const sha256 = crypto.createHash('sha256').update(fs.readFileSync(abs)).digest('hex');
        out[rel] = { type: 'file', mode: st.mode, size: st.size, mtimeMs: st.mtimeMs, sha256 };
      }
    }
  };
  walk(root);
  return out;
}

/** The differences between two snapshots, one readable line each (empty when equal). */
function diffSnapshots(before, after) {
  const lines = [];
  for (const rel of Object.keys(before)) {
    if (!(rel in after)) {
      lines.push(`removed or renamed: ${rel} (${before[rel].type})`);
    }
  }
  for (const rel of Object.keys(after)) {
    const a = after[rel];
    const b = before[rel];
    if (!b) {
      lines.push(`created: ${rel} (${a.type}${a.type === 'file' ? `, ${a.size} bytes` : ''})`);
      continue;
    }
    for (const key of new Set([...Object.keys(b), ...Object.keys(a)])) {
      if (b[key] !== a[key]) {
        lines.push(`changed: ${rel}: ${key} ${JSON.stringify(b[key])} -> ${JSON.stringify(a[key])}`);
      }
    }
  }
  return lines;
}

module.exports = { snapshot, diffSnapshots };
