'use strict';
// The per-platform VSIX that scripts/package.sh builds, and its contents unpacked.
const fs = require('node:fs');
const path = require('node:path');
const { execFileSync } = require('node:child_process');

const extDir = path.resolve(__dirname, '..', '..');
const target = process.env.SESSIONTREE_VSIX_TARGET || 'linux-x64';

function vsixPath() {
  const { version } = JSON.parse(fs.readFileSync(path.join(extDir, 'package.json'), 'utf8'));
  const file = path.join(extDir, `sessiontree-${target}-${version}.vsix`);
  if (!fs.existsSync(file)) {
    throw new Error(`${file} is missing; build it with \`npm run package\` (scripts/package.sh)`);
  }
  return file;
}

/** Unpacks the VSIX (a zip) into `dir` with Python's zipfile; returns the extension's root. */
function unpack(file, dir) {
  execFileSync('python3', ['-m', 'zipfile', '-e', file, dir]);
  return path.join(dir, 'extension');
}

module.exports = { vsixPath, unpack, target };
