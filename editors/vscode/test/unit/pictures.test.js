'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const { exportReport, DiffDocuments } = require('../../out/pictures');

test('the export report names the redactions per pattern', () => {
  assert.equal(
    exportReport({ entries: 46, redacted: true, redactions: [{ pattern: 'jwt', count: 2 }, { pattern: 'url-password', count: 6 }] }, '/tmp/x.md'),
    'Exported 46 entries to /tmp/x.md (redacted: jwt 2, url-password 6).',
  );
  assert.equal(exportReport({ entries: 3, redacted: true, redactions: [] }, 'x'), 'Exported 3 entries to x (redaction found nothing).');
  assert.equal(exportReport({ entries: 3, redacted: false, redactions: [] }, 'x'), 'Exported 3 entries to x (not redacted).');
});

test('both sides of a comparison come from one session/diff request', async () => {
  const calls = [];
  const daemon = {
    request: async (method, params) => {
      calls.push([method, params]);
      return { ancestorId: 'p', a: { document: 'left' }, b: { document: 'right' } };
    },
    onNotification: () => ({ dispose() {} }),
  };
  const docs = new DiffDocuments(daemon);
  // (the stub has no Uri; the provider reads only the query)
  const uri = (side) => ({ query: new URLSearchParams({ session: 's1', a: 'a1', b: 'b1', side }).toString() });
  const left = uri('a');
  const right = uri('b');
  assert.equal(await docs.provideTextDocumentContent(left), 'left');
  assert.equal(await docs.provideTextDocumentContent(right), 'right');
  assert.deepEqual(calls, [['session/diff', { session: 's1', a: 'a1', b: 'b1' }]]);
});
