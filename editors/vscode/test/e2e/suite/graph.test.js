'use strict';
// The session graph, export and compare in a real VS Code (code-server) with the real daemon.
// The driver (run-e2e.js) looks into the graph's webview in Chromium: the page renders, a
// click on a node navigates, a line appended by another process appears; screenshots go to
// test-artifacts/.
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const vscode = require('vscode');

const ws = vscode.workspace.workspaceFolders[0].uri.fsPath;
const signalDir = path.join(ws, '.e2e');
const graphFile = path.join(ws, 'graph-demo.jsonl');
const FIXTURE_TIP = '1a2caaa9'; // the demo's abandoned "migrate the fixture" attempt
const LEAF = '1a2ebbb8';

async function waitFor(what, fn, ms = 15000) {
  const start = Date.now();
  for (;;) {
    const v = await fn();
    if (v) {
      return v;
    }
    if (Date.now() - start > ms) {
      throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function askDriver(kind, payload) {
  fs.mkdirSync(signalDir, { recursive: true });
  const token = `${kind}-${Date.now()}`;
  const answer = path.join(signalDir, `${token}.done`);
  console.log(`E2E-${kind} ${JSON.stringify({ token, ...payload })}`);
  await waitFor(`driver ${kind}`, () => fs.existsSync(answer), 30000);
  const text = fs.readFileSync(answer, 'utf8');
  return text === 'ok' ? undefined : JSON.parse(text);
}

describe('Session graph, export and compare', () => {
  let api;

  before(async () => {
    const ext = vscode.extensions.getExtension('sessiontree.sessiontree');
    api = await ext.activate();
    await api.daemon.ready();
    // the bundled demo session: branches, labels, a compaction, edits on both sides
    const demo = path.join(ext.extensionPath, '..', '..', 'server', 'sessiontree', 'data', 'demo-session.jsonl');
    fs.copyFileSync(demo, graphFile);
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
    await vscode.commands.executeCommand('sessiontree.sessions.open', graphFile);
    await waitFor('the demo leaf', () => api.tree.currentLeafId === LEAF);
  });

  it('Show Session Graph renders the whole tree in a webview', async () => {
    const reply = await vscode.commands.executeCommand('sessiontree.graph.show');
    assert.equal(reply.entries, 56);
    assert.equal(reply.leafId, LEAF);
    assert.ok(api.graph.webviewPanel, 'the panel is open');
    const seen = await askDriver('GRAPH', { screenshot: 'vscode-graph', waitText: 'Added `tests/test_due.py`' });
    assert.equal(seen.nodes, 56);
    assert.equal(seen.leafId, LEAF);
    assert.ok(seen.lanes >= 2, `lanes drawn: ${seen.lanes}`);
  });

  it('a click on a node navigates there with the summary prompt', async () => {
    const pending = askDriver('GRAPHCLICK', { id: FIXTURE_TIP });
    // leaving the current branch asks whether to summarize it, as the tree view does
    await askDriver('TYPE', { text: 'Navigate without a summary' });
    await pending;
    await waitFor('the new leaf', () => api.tree.currentLeafId === FIXTURE_TIP, 20000);
    await waitFor('the graph redrawn', () => api.graph.last && api.graph.last.leafId === FIXTURE_TIP, 20000);
    const seen = await askDriver('GRAPH', { leafId: FIXTURE_TIP });
    assert.equal(seen.leafId, FIXTURE_TIP);
  });

  it('an entry appended by another process appears in the graph', async () => {
    const before = api.graph.redraws;
    const entry = {
      type: 'message',
      id: 'g0000001',
      parentId: FIXTURE_TIP,
      timestamp: '2026-01-12T10:00:00.000Z',
      message: { role: 'user', content: 'Appended live to the graph', timestamp: 1768212000000 },
    };
    fs.appendFileSync(graphFile, `${JSON.stringify(entry)}\n`);
    await waitFor('a redraw with the new entry', () => api.graph.redraws > before && api.graph.last.entries === 57, 20000);
    const seen = await askDriver('GRAPH', { waitText: 'Appended live to the graph', screenshot: 'vscode-graph-live' });
    assert.equal(seen.nodes, 57);
    assert.equal(seen.leafId, 'g0000001');
  });

  it('exports the branch to a row as redacted Markdown and as a session file', async () => {
    const md = path.join(ws, 'export-branch.md');
    const res = await vscode.commands.executeCommand('sessiontree.tree.export', LEAF, { format: 'md', target: md });
    assert.equal(res.redacted, true);
    const text = fs.readFileSync(md, 'utf8');
    assert.match(text, /^# Add a due-date column/);
    assert.match(text, /<summary>🔧 \[edit: src\/cli.py\]<\/summary>/);
    const jsonl = path.join(ws, 'export-branch.jsonl');
    await vscode.commands.executeCommand('sessiontree.tree.export', LEAF, { format: 'jsonl', target: jsonl });
    const lines = fs.readFileSync(jsonl, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    assert.equal(lines[0].parentSession, graphFile);
    assert.equal(lines[lines.length - 1].id, LEAF);
    const sub = path.join(ws, 'export-subtree.html');
    await vscode.commands.executeCommand('sessiontree.tree.exportSubtree', '1a2c4443', { format: 'html', target: sub });
    assert.equal((fs.readFileSync(sub, 'utf8').match(/Branch from/g) || []).length, 2);
  });

  it('Compare with Selected opens a diff editor of the two sides', async () => {
    await vscode.commands.executeCommand('sessiontree.tree.selectForCompare', FIXTURE_TIP);
    const res = await vscode.commands.executeCommand('sessiontree.tree.compareWithSelected', LEAF);
    assert.equal(res.ancestorId, '1a2c4443');
    assert.deepEqual(res.a.map((f) => f.path), ['tests/fixtures/tasks.json']);
    assert.deepEqual(res.b.map((f) => f.path), ['src/store.py', 'src/cli.py', 'tests/test_due.py']);
    const tab = await waitFor('the diff editor', () => {
      const t = vscode.window.tabGroups.activeTabGroup.activeTab;
      return t && t.input instanceof vscode.TabInputTextDiff ? t : undefined;
    });
    assert.equal(tab.input.original.toString(), res.left);
    const left = await vscode.workspace.openTextDocument(vscode.Uri.parse(res.left));
    assert.match(left.getText(), /tests\/fixtures\/tasks.json: write/);
    await askDriver('PAGESHOT', { name: 'vscode-compare', waitText: 'Files written or edited' });
  });
});
