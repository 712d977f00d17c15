'use strict';
// The restore preview's view logic: the quick pick's items, the confirmation and the lines said
// after a restore and an undo, for the preview the daemon gives on the editors' scenario
// (tests/checkpoint_scenario.py: two branches, a merge, a conflict, an unknown file).
const test = require('node:test');
const assert = require('node:assert/strict');
const { pickItems, confirmation, restoredMessage, undoneMessage, leftSummary, explain, applyLabel, diffTitle, tally } = require('../../out/views/restorePreview');

const file = (displayPath, status, extra = {}) => ({
  path: `/ws/${displayPath}`,
  displayPath,
  status,
  diff: status === 'unknown' ? '' : `--- a/${displayPath}\n+++ b/${displayPath}\n`,
  hashBefore: status === 'create' ? null : 'h0',
  hashAfter: ['change', 'create'].includes(status) ? 'h1' : null,
  reason: '',
  conflicts: 0,
  base: 'known (edit)',
  target: 'known (write)',
  ...extra,
});

const preview = (over = {}) => ({
  targetId: 'e0014',
  baseId: 'e0024',
  commonAncestorId: 'e0007',
  leafId: 'e0024',
  conversation: false,
  previewToken: 't1',
  commands: [],
  files: [
    file('app.py', 'change', { reason: 'merged with your changes since' }),
    file('config.py', 'conflict', { reason: 'your changes and the restore touch the same lines', conflicts: 1 }),
    file('feature.py', 'create'),
    file('notes.md', 'unknown', { reason: 'its content at the target is not known: not seen in the session before', target: 'unknown: not seen in the session before' }),
  ],
  ...over,
});

test('the pick offers the restore first, then the unknown files, then every file with its status', () => {
  const items = pickItems(preview(), false);
  assert.deepEqual(
    items.map((i) => [i.kind, i.label]),
    [
      ['apply', '$(check) Restore 2 files'],
      ['includeUnknown', '$(question) Include the unknown files (1)'],
      ['separator', 'Files (a file shows its diff: disk ↔ after the restore)'],
      ['file', '$(diff-modified) app.py'],
      ['file', '$(warning) config.py'],
      ['file', '$(diff-added) feature.py'],
      ['file', '$(question) notes.md'],
    ],
  );
  assert.equal(items[0].description, '1 conflict, 1 unknown left as they are');
  const byName = Object.fromEntries(items.filter((i) => i.kind === 'file').map((i) => [i.file.displayPath, i]));
  assert.equal(byName['app.py'].detail, 'merged with your changes since');
  assert.match(byName['config.py'].detail, /^your changes and the restore touch the same lines · not written; the diff shows the markers$/);
  assert.match(byName['notes.md'].detail, /not seen in the session before · left alone; "Include the unknown files" may write it/);
  assert.equal(byName['feature.py'].description, 'create');
});

test('with the unknown files included the pick offers to leave them alone again', () => {
  const pv = preview({ files: [file('notes.md', 'delete', { reason: 'taken as absent at the target (no call on its path made it)' })] });
  const items = pickItems(pv, true);
  assert.deepEqual(items.slice(0, 2).map((i) => i.label), ['$(check) Restore 1 file', '$(eye-closed) Leave the unknown files alone']);
  assert.equal(explain(file('x', 'unknown', { reason: 'r' }), true), 'r · nothing to write');
});

test('nothing to write: no restore item for the files alone, the conversation alone for both', () => {
  const only = preview({ files: [file('config.py', 'conflict', { conflicts: 2 })] });
  assert.equal(pickItems(only, false)[0].kind, 'separator');
  assert.match(pickItems(only, false)[1].detail, /2 conflicting regions/);
  const both = { ...only, conversation: true };
  assert.equal(pickItems(both, false)[0].label, '$(check) Restore the conversation only');
  assert.equal(applyLabel({ files: [], conversation: false }), 'Nothing to write');
});

test('the commands run on the way are listed after the files', () => {
  const items = pickItems(preview({ commands: [{ entryId: 'e0020', command: 'sed -i s/a/b/ x.py\nmore' }] }), false);
  const tail = items.slice(-2);
  assert.equal(tail[0].kind, 'separator');
  assert.deepEqual([tail[1].label, tail[1].description], ['$(terminal) sed -i s/a/b/ x.py', 'at e0020']);
});

test('the confirmation names what is written and what is left', () => {
  const ask = confirmation({ ...preview(), conversation: true }, 'Branch one: make c bigger and add a feature.');
  assert.equal(ask.message, 'Restore 2 files and move the conversation to "Branch one: make c bigger and add a feature."?');
  assert.equal(
    ask.detail,
    'Written: app.py (change), feature.py (create).\nLeft as they are: config.py (conflict), notes.md (unknown).\nA backup of every file is kept; Undo puts them back.',
  );
});

test('after a restore and after an undo', () => {
  const pv = preview();
  const { written, left } = tally(pv.files);
  const res = { written, skipped: left, backupId: 'r1', newLeafId: 'e0014', oldLeafId: 'e0024' };
  assert.equal(
    restoredMessage(res, 'Branch one'),
    'Restored 2 files to "Branch one". The conversation moved there. Left as they are: config.py (conflict), notes.md (unknown).',
  );
  assert.equal(undoneMessage({ undone: true, backupId: 'r1', written, skipped: [] }), 'Put back 2 files.');
  assert.equal(
    undoneMessage({ undone: true, backupId: 'r1', written: [written[0]], skipped: [written[1]] }),
    'Put back 1 file. Changed since the restore, left as they are: feature.py.',
  );
  assert.equal(undoneMessage({ undone: false, backupId: null, written: [], skipped: [] }), 'There is no restore to undo.');
  assert.equal(leftSummary([]), '');
  assert.equal(diffTitle({ displayPath: 'src/app.py', status: 'change' }, 'e0014'), 'app.py (disk ↔ restore to e0014: change)');
});
