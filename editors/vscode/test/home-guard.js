#!/usr/bin/env node
'use strict';
// Fails the VS Code suite when it wrote under the real home. Every level runs with HOME and the
// XDG dirs pointed into temporary dirs (scripts/test.sh, test/isolate.js, the e2e drivers);
// this is the check that they did: a snapshot (names, sizes, modes, mtimes, contents) of the
// places sessiontree, code-server and Chromium would write, taken before the levels run and
// compared after them.
//   node test/home-guard.js save FILE     (before)
//   node test/home-guard.js check FILE    (after; prints "home-guard: N passed, N failed")
// The real home is $SESSIONTREE_REAL_HOME, else the current HOME.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { snapshot, diffSnapshots } = require('./e2e/agent-snapshot');

const WATCHED = [
  '.local/state/sessiontree', // navigation state (state.json)
  '.cache/sessiontree', // index cache, locks, listing cache
  '.local/share/code-server', // code-server's logs and heartbeat
  '.config/code-server', // code-server's config.yaml
  '.xcsh', // the default agent dir
  '.pi',
  '.config/chromium',
  '.pki', // Chromium's NSS database
];

function take(home) {
  const out = {};
  for (const rel of WATCHED) {
    const abs = path.join(home, rel);
    let st;
    try {
      st = fs.lstatSync(abs);
    } catch {
      out[rel] = { absent: true };
      continue;
    }
    out[rel] = st.isDirectory() ? { dir: { type: 'dir', mtimeMs: st.mtimeMs }, tree: snapshot(abs) } : { file: st.size };
  }
  return out;
}

function compare(before, after) {
  const problems = [];
  for (const rel of WATCHED) {
    const a = before[rel] || { absent: true };
    const b = after[rel] || { absent: true };
    if (a.absent && b.absent) continue;
    if (a.absent !== b.absent) {
      problems.push(`${rel}: ${a.absent ? 'created' : 'removed'}`);
      continue;
    }
    if (a.tree && b.tree) {
      if (a.dir.mtimeMs !== b.dir.mtimeMs) problems.push(`${rel}: changed (something was created or removed in it)`);
      problems.push(...diffSnapshots(a.tree, b.tree).map((l) => `${rel}: ${l}`));
    } else if (JSON.stringify(a) !== JSON.stringify(b)) {
      problems.push(`${rel}: changed`);
    }
  }
  return problems;
}

function main() {
  const [verb, file] = process.argv.slice(2);
  const home = process.env.SESSIONTREE_REAL_HOME || os.homedir();
  if (verb === 'save' && file) {
    fs.writeFileSync(file, JSON.stringify({ home, snap: take(home) }));
    return 0;
  }
  if (verb === 'check' && file) {
    const saved = JSON.parse(fs.readFileSync(file, 'utf8'));
    const problems = compare(saved.snap, take(saved.home));
    for (const p of problems) console.log(`  ✗ under the real home ${saved.home}: ${p}`);
    if (!problems.length) console.log(`  ✓ nothing written under ${saved.home} (${WATCHED.join(', ')})`);
    console.log(`home-guard: ${problems.length ? 0 : 1} passed, ${problems.length ? 1 : 0} failed`);
    return problems.length ? 1 : 0;
  }
  console.error('usage: home-guard.js save|check FILE');
  return 2;
}

process.exit(main());
