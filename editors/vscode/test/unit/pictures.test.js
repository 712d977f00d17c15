'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const vscode = require('vscode');
const { exportReport, DiffDocuments, isPlainFileName, registerPictures } = require('../../out/pictures');

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

test('a suggested name is saved only when it is a plain file name', () => {
  for (const ok of ['0195-1a2b.md', 'a.b-c_d.jsonl', 'x']) {
    assert.equal(isPlainFileName(ok), true, ok);
  }
  for (const bad of ['../outside/pwn-leaf.md', '/etc/passwd', 'a/b.md', 'a\\b.md', '..', '.hidden', '-rf.md', 'a..b', 'a\nb', '', 'x'.repeat(121), undefined, 3]) {
    assert.equal(isPlainFileName(bad), false, String(bad));
  }
});

test('the export command refuses a suggested name that leaves the folder and writes nothing', async () => {
  const reply = (name) => ({ content: 'PWNED', format: 'md', entries: 1, redacted: true, redactions: [], findings: [], suggestedName: name });
  let name = '../outside/pwn-leaf.md';
  const daemon = { request: async () => reply(name), onNotification: () => ({ dispose() {} }) };
  const current = { value: { handle: 's1', path: '/w/sessions/a.jsonl', title: 't' } };
  const disposables = registerPictures({ daemon, current, treeView: { selection: [] }, diffDocs: new DiffDocuments(daemon) });
  const run = vscode.commands.registered.get('sessiontree.tree.export');
  vscode.workspace.fs.written.length = 0;
  vscode.window.messages.length = 0;
  assert.equal(await run('e1', { format: 'md' }), undefined);
  assert.deepEqual(vscode.workspace.fs.written, []);
  assert.ok(vscode.window.messages.some(([kind, m]) => kind === 'error' && m.includes('not a plain file name')), JSON.stringify(vscode.window.messages));
  // a plain name is offered in the save dialog and saved there
  name = 'sess-e1.md';
  const saved = await run('e1', { format: 'md' });
  assert.equal(saved.target, '/w/sessions/sess-e1.md');
  assert.deepEqual(vscode.workspace.fs.written, [['/w/sessions/sess-e1.md', 'PWNED']]);
  for (const d of disposables) d.dispose();
});
