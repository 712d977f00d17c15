'use strict';
// Where the tests find the daemon: $SESSIONTREE_SERVER, else the repository's .venv.
const path = require('node:path');
const fs = require('node:fs');

const repoRoot = path.resolve(__dirname, '..', '..', '..');

function daemonCommand() {
  const cmd = process.env.SESSIONTREE_SERVER || path.join(repoRoot, '.venv', 'bin', 'sessiontree');
  if (!fs.existsSync(cmd)) {
    throw new Error(`sessiontree daemon not found at ${cmd}; run \`make setup-python\` or set SESSIONTREE_SERVER`);
  }
  return cmd;
}

module.exports = { daemonCommand, repoRoot };
