'use strict';
// Runs inside the real VS Code extension host (code-server), loaded through the
// `extensionTestsPath` payload. Prints one plain "RESULT N passed, N failed" line for the driver.
const path = require('node:path');
const Mocha = require('mocha');

function run() {
  // SESSIONTREE_E2E_GREP runs only the matching tests (while working on one of them)
  const grep = process.env.SESSIONTREE_E2E_GREP;
  const mocha = new Mocha({ ui: 'bdd', timeout: 30000, color: false, reporter: 'spec', ...(grep ? { grep } : {}) });
  mocha.addFile(path.join(__dirname, 'extension.test.js'));
  mocha.addFile(path.join(__dirname, 'graph.test.js'));
  mocha.addFile(path.join(__dirname, 'firstRows.test.js'));
  mocha.addFile(path.join(__dirname, 'restore.test.js'));
  return new Promise((resolve) => {
    const failures = [];
    const runner = mocha.run(() => {
      const passes = runner.stats ? runner.stats.passes : 0;
      for (const f of failures) {
        console.log(`E2E-FAIL ${f}`);
      }
      console.log(`RESULT ${passes} passed, ${failures.length} failed`);
      resolve();
    });
    runner.on("pass", (t) => console.log(`E2E-PASS ${t.fullTitle()} (${t.duration} ms)`));
    runner.on('fail', (t, err) => failures.push(`${t.fullTitle()}: ${err && err.stack ? err.stack : err}`));
  });
}

module.exports = { run };
