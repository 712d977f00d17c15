#!/usr/bin/env node
'use strict';
// Runs a test command with a home of its own: HOME and the XDG dirs in a temporary directory
// (removed afterwards), so that a test level run on its own (npm run test:unit, ...) cannot
// write sessiontree's state and caches, or anything else, under the real home.
//   node test/isolate.js CMD [ARGS...]
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawnSync } = require('node:child_process');

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'st-vscode-home-'));
const home = path.join(tmp, 'home');
const env = {
  ...process.env,
  HOME: home,
  XDG_CONFIG_HOME: path.join(home, '.config'),
  XDG_DATA_HOME: path.join(home, '.local', 'share'),
  XDG_CACHE_HOME: path.join(home, '.cache'),
  XDG_STATE_HOME: path.join(home, '.local', 'state'),
};
delete env.PI_CODING_AGENT_DIR;
fs.mkdirSync(home, { recursive: true });
const [cmd, ...args] = process.argv.slice(2);
const res = spawnSync(cmd, args, { stdio: 'inherit', env });
fs.rmSync(tmp, { recursive: true, force: true });
if (res.error) {
  console.error(`isolate: ${res.error.message}`);
  process.exit(1);
}
process.exit(res.status ?? 1);
