'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const { nestRows, rowLine, rowLabel, rowContextValue, iconForRow, formatAge, depthMarker, MAX_NEST_LEVEL } = require('../../out/views/rows');
const { row } = require('./helpers');

// a → b → c, c branches into d (→ f → g, the leaf) and e (→ h). Depths follow tree-view-rules.md:
// the single-child chain stays at 0, c's children get 1, and the one-time step puts f, g, h at 2.
function branchedRows() {
  const active = { onActivePath: true };
  return [
    row('a', null, 0, { ...active }),
    row('b', 'a', 0, { ...active, role: 'assistant', text: 'assistant: hello' }),
    row('c', 'b', 0, { ...active }),
    row('d', 'c', 1, { ...active, prefix: '├─ ' }),
    row('f', 'd', 2, { ...active, prefix: '│  ' }),
    row('g', 'f', 2, { ...active, prefix: '│  ', isLeaf: true }),
    row('e', 'c', 1, { prefix: '└─ ', label: 'alt' }),
    row('h', 'e', 2, { prefix: '   ' }),
  ];
}

const ids = (nodes) => nodes.map((n) => n.row.id);

test('a linear chain stays flat and branches nest under their branch point', () => {
  const { roots, byId } = nestRows(branchedRows());
  assert.deepEqual(ids(roots), ['a', 'b', 'c']);
  assert.deepEqual(ids(byId.get('c').children), ['d', 'e']);
  assert.deepEqual(ids(byId.get('d').children), ['f', 'g']);
  assert.deepEqual(ids(byId.get('e').children), ['h']);
  assert.equal(byId.get('g').parent.row.id, 'd');
  assert.equal(byId.get('a').parent, undefined);
});

test('containsActive marks the ancestors of the active path, not the side branch', () => {
  const { byId } = nestRows(branchedRows());
  assert.equal(byId.get('c').containsActive, true);
  assert.equal(byId.get('d').containsActive, true);
  assert.equal(byId.get('e').containsActive, false);
  assert.equal(byId.get('h').containsActive, false);
});

test('filtered rows keep their depth, so nesting survives hidden neighbours', () => {
  const rows = branchedRows().filter((r) => r.id !== 'f' && r.id !== 'b');
  const { roots, byId } = nestRows(rows);
  assert.deepEqual(ids(roots), ['a', 'c']);
  assert.deepEqual(ids(byId.get('d').children), ['g']);
});

test('several roots at depth 0 are siblings, deeper rows nest under the nearest shallower one', () => {
  const rows = [row('r1', null, 0), row('x', 'r1', 0), row('r2', null, 0), row('y', 'r2', 1), row('z', 'y', 1)];
  const { roots, byId } = nestRows(rows);
  assert.deepEqual(ids(roots), ['r1', 'x', 'r2']);
  assert.deepEqual(ids(byId.get('r2').children), ['y', 'z']);
});

test('an empty view nests to nothing', () => {
  const { roots, byId } = nestRows([]);
  assert.deepEqual(roots, []);
  assert.equal(byId.size, 0);
});

test('rowLine reproduces prefix + active marker + [label] + text', () => {
  const rows = branchedRows();
  assert.equal(rowLine(rows[3]), '├─ • user: d');
  assert.equal(rowLine(rows[6]), '└─ [alt] user: e');
  assert.equal(rowLabel(rows[6]), '[alt] user: e');
});

test('contextValue flags drive the menus', () => {
  const rows = branchedRows();
  assert.equal(rowContextValue(rows[5]), 'entry;user;leaf;active');
  assert.equal(rowContextValue(rows[6]), 'entry;user;labeled');
  assert.equal(rowContextValue(rows[1]), 'entry;active');
  assert.match(rowContextValue(rows[6]), /^entry.*;labeled/);
  assert.doesNotMatch(rowContextValue(rows[1]), /^entry.*;user/);
});

test('icons per entry kind', () => {
  assert.equal(iconForRow({ type: 'message', role: 'user' }), 'account');
  assert.equal(iconForRow({ type: 'message', role: 'assistant' }), 'hubot');
  assert.equal(iconForRow({ type: 'message', role: 'toolResult' }), 'tools');
  assert.equal(iconForRow({ type: 'compaction' }), 'fold');
  assert.equal(iconForRow({ type: 'branch_summary' }), 'git-merge');
  assert.equal(iconForRow({ type: 'label' }), 'tag');
  assert.equal(iconForRow({ type: 'something_new' }), 'circle-small');
});

test('formatAge', () => {
  const now = Date.parse('2026-01-02T00:00:00.000Z');
  assert.equal(formatAge('2026-01-01T23:59:30.000Z', now), '30s');
  assert.equal(formatAge('2026-01-01T23:00:00.000Z', now), '1h');
  assert.equal(formatAge('2026-01-01T23:15:00.000Z', now), '45m');
  assert.equal(formatAge('2026-01-01T20:00:00.000Z', now), '4h');
  assert.equal(formatAge('2025-12-20T00:00:00.000Z', now), '13d');
  assert.equal(formatAge('not a date', now), '');
});

/** A chain of branch points `n` levels deep, then a side branch back at level 2. */
function deepRows(n) {
  const rows = Array.from({ length: n }, (_, i) => row(`d${i}`, i ? `d${i - 1}` : null, i));
  rows.push(row('s', 'd1', 2));
  return rows;
}

test('nesting stops at MAX_NEST_LEVEL: deeper rows hang beside the deepest allowed row', () => {
  assert.equal(MAX_NEST_LEVEL, 8);
  const { roots, byId } = nestRows(deepRows(64));
  assert.deepEqual(ids(roots), ['d0']);
  const levels = [...byId.values()].map((n) => n.level);
  assert.equal(Math.max(...levels), 8);
  const under = byId.get('d7').children;
  assert.deepEqual(ids(under), Array.from({ length: 56 }, (_, i) => `d${i + 8}`), 'd8..d63 in view order');
  assert.equal(byId.get('d8').marker, undefined, 'depth 8 is nested, not marked');
  assert.equal(byId.get('d9').marker, '‹9›');
  assert.equal(byId.get('d63').marker, '‹63›');
  assert.equal(byId.get('s').parent.row.id, 'd1', 'a shallower row after the deep run nests by depth again');
  assert.equal(byId.get('s').level, 2);
});

test('a deep row drawn at the top level (a page around a far leaf) still carries its marker', () => {
  const { roots } = nestRows([row('w1', 'x', 84, { shortPrefix: '‹84› │  │  │  ├─ ' }), row('w2', 'w1', 85)]);
  assert.equal(roots[0].level, 0);
  assert.equal(roots[0].marker, '‹84›');
  assert.equal(roots[0].children[0].marker, '‹85›');
});

test('a smaller cap and the flat form', () => {
  const capped = nestRows(deepRows(6), { maxLevel: 2 });
  assert.deepEqual(ids(capped.byId.get('d1').children), ['d2', 'd3', 'd4', 'd5', 's']);
  assert.equal(capped.byId.get('d5').marker, '‹5›');
  const flat = nestRows(deepRows(6), { flat: true });
  assert.equal(flat.roots.length, 7);
  assert.ok(flat.roots.every((n) => n.level === 0 && n.marker === undefined));
});

test("the depth marker is the daemon's, or made the same way from depth", () => {
  assert.equal(depthMarker({ depth: 63, shortPrefix: '‹63› │  │  │  ├─ ' }), '‹63›');
  assert.equal(depthMarker({ depth: 12 }), '‹12›');
  assert.equal(depthMarker({ depth: 12, shortPrefix: null }), '‹12›');
});

test('a row that stands for a hidden branch head nests at its depth: two branches stay two', () => {
  // u0 branches into two tool results the filter hides (no-tools); their first visible rows
  // draw their connectors (headDepth 1), the rest of each branch keeps depth 2
  const rows = [
    row('u0', null, 0, { onActivePath: true }),
    row('a1', 'r1', 2, { prefix: '├─    ', headDepth: 1, onActivePath: true }),
    row('a2', 'a1', 2, { prefix: '│     ', onActivePath: true, marksLeaf: true, isLeaf: true }),
    row('b1', 'r2', 2, { prefix: '└─    ', headDepth: 1 }),
    row('b2', 'b1', 2, { prefix: '      ' }),
  ];
  const { roots, byId } = nestRows(rows);
  assert.deepEqual(ids(roots), ['u0']);
  assert.deepEqual(ids(byId.get('u0').children), ['a1', 'b1']);
  assert.deepEqual(ids(byId.get('a1').children), ['a2']);
  assert.deepEqual(ids(byId.get('b1').children), ['b2']);
  // without headDepth (an older daemon) they were one list under u0
  const flat = nestRows(rows.map(({ headDepth, ...r }) => r));
  assert.deepEqual(ids(flat.byId.get('u0').children), ['a1', 'a2', 'b1', 'b2']);
});

test('the leaf marker follows marksLeaf, and a hidden leaf is named', () => {
  const { marksLeaf, leafNote } = require('../../out/views/rows');
  assert.equal(marksLeaf(row('x', null, 0, { isLeaf: false, marksLeaf: true, hiddenLeaf: '[model: a/b]' })), true);
  assert.equal(marksLeaf(row('x', null, 0, { isLeaf: true })), true, 'an older daemon: isLeaf');
  assert.equal(leafNote(row('x', null, 0, { hiddenLeaf: '[model: a/b]' })), 'leaf: [model: a/b]');
  assert.equal(leafNote(row('x', null, 0)), undefined);
  assert.equal(rowContextValue(row('x', null, 0, { marksLeaf: true, onActivePath: true })), 'entry;user;leaf;active');
});
