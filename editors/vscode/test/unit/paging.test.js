'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const { headRequest, leafWindowLimit, leafWindowRequest, gapRequest, mergeSegments, findGaps, rowAt } = require('../../out/views/paging');
const { row } = require('./helpers');

/** `n` rows with ids r<start>… r<start+n-1>. */
function rows(start, n) {
  return Array.from({ length: n }, (_, i) => row(`r${start + i}`, null, 0));
}
const seg = (start, n) => ({ start, rows: rows(start, n) });
const ids = (segment) => segment.rows.map((r) => r.id);

test('headRequest: one page at first, the loaded head length on a reload', () => {
  assert.deepEqual(headRequest([], 50), { offset: 0, limit: 50 });
  assert.deepEqual(headRequest([seg(0, 120), seg(900, 50)], 50), { offset: 0, limit: 120 });
  assert.deepEqual(headRequest([seg(0, 10)], 50), { offset: 0, limit: 50 });
});

test('leafWindowRequest: none when the first page holds the leaf or every row', () => {
  assert.equal(leafWindowRequest([], 50, 1000, 49, 50), undefined);
  assert.equal(leafWindowRequest([], 50, 50, 60, 50), undefined);
  assert.equal(leafWindowRequest([], 30, 30, 29, 50), undefined);
});

test('leafWindowRequest: one page centred on a leaf in the middle', () => {
  assert.deepEqual(leafWindowRequest([], 50, 1000, 500, 50), { offset: 475, limit: 50 });
});

test('leafWindowRequest: pulled back to end at the last row', () => {
  assert.deepEqual(leafWindowRequest([], 50, 1000, 999, 50), { offset: 950, limit: 50 });
});

test('leafWindowRequest: never starts inside the first page', () => {
  assert.deepEqual(leafWindowRequest([], 50, 80, 60, 50), { offset: 50, limit: 50 });
  assert.deepEqual(leafWindowRequest([], 50, 1000, 55, 50), { offset: 50, limit: 50 });
});

test('leafWindowRequest: a reload keeps the tail the user loaded', () => {
  assert.deepEqual(leafWindowRequest([seg(0, 50), seg(800, 200)], 50, 1000, 999, 50), { offset: 800, limit: 200 });
  // a single segment has no separate tail to keep
  assert.deepEqual(leafWindowRequest([seg(0, 300)], 50, 1000, 999, 50), { offset: 950, limit: 50 });
});

test('leafWindowLimit: one page, or the longer tail the user loaded', () => {
  assert.equal(leafWindowLimit([], 50), 50);
  assert.equal(leafWindowLimit([seg(0, 50), seg(800, 200)], 50), 200);
  assert.equal(leafWindowLimit([seg(0, 50), seg(800, 20)], 50), 50);
  assert.equal(leafWindowLimit([seg(0, 300)], 50), 50, 'a single segment has no tail');
});

test('gapRequest: at most one page from the start of the gap', () => {
  assert.deepEqual(gapRequest({ offset: 50, hidden: 400 }, 100), { offset: 50, limit: 100 });
  assert.deepEqual(gapRequest({ offset: 50, hidden: 7 }, 100), { offset: 50, limit: 7 });
});

test('mergeSegments: sorts, drops empty runs, joins touching and overlapping runs', () => {
  const merged = mergeSegments([seg(10, 5), { start: 3, rows: [] }, seg(0, 5), seg(5, 5), seg(12, 6), seg(30, 2)]);
  assert.deepEqual(
    merged.map((s) => [s.start, s.rows.length]),
    [
      [0, 18],
      [30, 2],
    ],
  );
  assert.deepEqual(ids(merged[0]), rows(0, 18).map((r) => r.id));
});

test('mergeSegments: a run inside another adds nothing, and the inputs are not changed', () => {
  const a = seg(0, 10);
  const b = seg(2, 3);
  const merged = mergeSegments([a, b]);
  assert.equal(merged.length, 1);
  assert.equal(merged[0].rows.length, 10);
  merged[0].rows.push(row('x', null, 0));
  assert.equal(a.rows.length, 10);
});

test('findGaps: between runs and after the last, none when nothing is loaded', () => {
  assert.deepEqual(findGaps([seg(0, 50), seg(475, 50)], 1000), [
    { offset: 50, hidden: 425 },
    { offset: 525, hidden: 475 },
  ]);
  assert.deepEqual(findGaps([seg(0, 50), seg(950, 50)], 1000), [{ offset: 50, hidden: 900 }]);
  assert.deepEqual(findGaps([seg(0, 10)], 10), []);
  assert.deepEqual(findGaps([], 1000), []);
});

test('rowAt: the row at a view index, undefined in a gap or past the end', () => {
  const segments = [seg(0, 5), seg(20, 5)];
  assert.equal(rowAt(segments, 3).id, 'r3');
  assert.equal(rowAt(segments, 22).id, 'r22');
  assert.equal(rowAt(segments, 10), undefined);
  assert.equal(rowAt(segments, 25), undefined);
  assert.equal(rowAt(segments, -1), undefined);
});
