'use strict';
// Restoring files (and the conversation) to a node of another branch, in a real VS Code
// (code-server) with the real daemon, on a real git working tree whose files a session's tool
// calls changed on two branches (tests/checkpoint_scenario.py, made by run-e2e.js): the row's
// context menu, the preview as a quick pick of the files and a diff editor per file, the
// confirmation, the person's own edit kept by the merge, a conflict shown and never written, an
// unknown file left alone unless chosen, the notification's Undo. Screenshots go to
// test-artifacts/ (vscode-restore-preview.png, vscode-restore-undo.png).
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const vscode = require('vscode');

const ws = vscode.workspace.workspaceFolders[0].uri.fsPath;
const signalDir = path.join(ws, '.e2e');
const sc = JSON.parse(fs.readFileSync(path.join(signalDir, 'restore.json'), 'utf8'));
const file = (name) => path.join(sc.workspace, name);
const read = (name) => (fs.existsSync(file(name)) ? fs.readFileSync(file(name), 'utf8') : null);
const gitStatus = () => execFileSync('git', ['-C', sc.workspace, 'status', '--porcelain'], { encoding: 'utf8' });

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

let asked = 0;
async function askDriver(kind, payload) {
  fs.mkdirSync(signalDir, { recursive: true });
  asked += 1;
  const token = `${kind}-${Date.now()}-${asked}`;
  const answer = path.join(signalDir, `${token}.done`);
  console.log(`E2E-${kind} ${JSON.stringify({ token, ...payload })}`);
  await waitFor(`driver ${kind}`, () => fs.existsSync(answer), 30000);
  const text = fs.readFileSync(answer, 'utf8');
  return text === 'ok' ? undefined : JSON.parse(text);
}

/** A click on a button of a notification, in the notification center (the driver shows no toasts). */
async function clickNotification(payload) {
  await vscode.commands.executeCommand('notifications.showList');
  try {
    return await askDriver('NOTIFICATION', payload);
  } finally {
    await vscode.commands.executeCommand('notifications.hideList');
  }
}

/** The diff editor of a restore preview in front: its tab, once it shows `name`. */
function restoreDiffTab(name) {
  return waitFor(`the diff editor of ${name}`, () => {
    const t = vscode.window.tabGroups.activeTabGroup.activeTab;
    return t && t.input instanceof vscode.TabInputTextDiff && t.input.modified.scheme === 'sessiontree-restore' && t.label.startsWith(name) ? t : undefined;
  });
}

const ROW = (text) => (rows) => rows.find((r) => r.includes(text));
/** Where the scenario's files are, relative to the workspace folder (their displayPath). */
const D = `${path.relative(ws, sc.workspace)}/`;

describe('Restore files and conversation to a node', () => {
  let api;

  before(async () => {
    const ext = vscode.extensions.getExtension('sessiontree.sessiontree');
    api = await ext.activate();
    await api.daemon.ready();
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
    // room for the diff editors' two sides (the pictures of docs/checkpoints.md)
    await vscode.commands.executeCommand('workbench.action.closeAuxiliaryBar');
    await vscode.workspace.getConfiguration('diffEditor').update('useInlineViewWhenSpaceIsLimited', false, vscode.ConfigurationTarget.Global);
    await vscode.commands.executeCommand('workbench.view.extension.sessiontree');
    await vscode.commands.executeCommand('sessiontree.sessions.open', sc.session);
    await waitFor('the scenario leaf', () => api.tree.currentLeafId === sc.leaf);
  });

  after(async () => {
    await vscode.workspace.getConfiguration('diffEditor').update('useInlineViewWhenSpaceIsLimited', undefined, vscode.ConfigurationTarget.Global);
  });

  it('Restore Files to Here… on a row of the other branch: the diff per file, the statuses, the merge, then Undo', async function () {
    this.timeout(120000);
    const statusBefore = gitStatus();
    // the row's context menu, as a person would (its branch unfolded first)
    await api.treeView.reveal(api.tree.nodeById(sc.target), { select: false, focus: false, expand: true });
    await askDriver('CONTEXTMENU', { pane: 'Session Tree', label: '[write: feature.py]', item: 'Restore Files to Here…' });
    const pick = await askDriver('QUICKPICK', { waitText: 'notes.md', screenshot: 'vscode-restore-preview' });
    assert.match(pick.title, /^Restore files to "\[write: feature.py\]"/);
    assert.match(ROW('Restore 2 files')(pick.rows), /1 conflict, 1 unknown left as they are/);
    assert.ok(ROW('Include the unknown files (1)')(pick.rows));
    assert.match(ROW('app.py')(pick.rows), /change.*merged with your changes since/);
    assert.match(ROW('config.py')(pick.rows), /conflict.*your changes and the restore touch the same lines · not written/);
    assert.match(ROW('feature.py')(pick.rows), /create/);
    assert.match(ROW('notes.md')(pick.rows), /unknown.*not seen in the session before · left alone/);

    // the first file's diff: the file on disk beside exactly what the restore leaves
    const appTab = await restoreDiffTab('app.py');
    assert.equal(appTab.input.original.fsPath, file('app.py'));
    assert.equal((await vscode.workspace.openTextDocument(appTab.input.modified)).getText(), sc.restored['app.py']);
    // the conflict's diff shows the markers; it is never written
    await askDriver('PICK', { text: 'config.py' });
    const confTab = await restoreDiffTab('config.py');
    const conflict = (await vscode.workspace.openTextDocument(confTab.input.modified)).getText();
    assert.match(conflict, /<<<<<<< disk \(your version\)\nlevel = 5\n\|\|\|\|\|\|\| session \(current node\)\nlevel = 2\n=======\nlevel = 1\n>>>>>>> restore target\n/);
    // a file made on the other branch: an empty side beside its text
    await askDriver('PICK', { text: 'feature.py' });
    const featTab = await restoreDiffTab('feature.py');
    assert.equal((await vscode.workspace.openTextDocument(featTab.input.original)).getText(), '');
    assert.equal((await vscode.workspace.openTextDocument(featTab.input.modified)).getText(), sc.restored['feature.py']);
    assert.equal(read('app.py'), sc.disk['app.py'], 'a preview writes nothing');

    await askDriver('PICK', { text: 'Restore 2 files' });
    // the confirmation names what is written and what is left
    const ask = await askDriver('QUICKPICK', { waitText: 'Cancel' });
    assert.match(ask.title, /^Restore 2 files to "\[write: feature.py\]"\?/);
    assert.ok(
      ROW('Restore')(ask.rows).includes(
        `Written: ${D}app.py (change), ${D}feature.py (create). Left as they are: ${D}config.py (conflict), ${D}notes.md (unknown).`,
      ),
    );
    await askDriver('PICK', { text: 'Restore' });

    await waitFor('the restored files', () => read('feature.py') !== null);
    assert.equal(read('app.py'), sc.restored['app.py'], "b and c as on branch one, the person's first line kept");
    assert.equal(read('feature.py'), sc.restored['feature.py']);
    assert.equal(read('config.py'), sc.disk['config.py'], 'the conflict is not written');
    assert.equal(read('notes.md'), sc.disk['notes.md'], 'the unknown file is left alone');
    assert.equal(api.tree.currentLeafId, sc.leaf, 'the conversation stays');
    await waitFor('the preview tabs closed', () => !vscode.window.tabGroups.all.flatMap((g) => g.tabs).some((t) => t.input instanceof vscode.TabInputTextDiff && t.input.modified.scheme === 'sessiontree-restore'));

    const toast = await clickNotification({ text: 'Restored 2 files', button: 'Undo', screenshot: 'vscode-restore-undo' });
    assert.ok(toast.message.includes(`Restored 2 files to "[write: feature.py]". Left as they are: ${D}config.py (conflict), ${D}notes.md (unknown).`));
    await waitFor('the files put back', () => read('feature.py') === null);
    assert.equal(read('app.py'), sc.disk['app.py']);
    assert.equal(gitStatus(), statusBefore);
    // the disk is as it was at the preview again: its diff editor, without the pick over it
    await vscode.commands.executeCommand('vscode.diff', appTab.input.original, appTab.input.modified, appTab.label);
    await restoreDiffTab('app.py');
    await askDriver('PAGESHOT', { name: 'vscode-restore-diff', waitText: 'mine: kept by the restore' });
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
  });

  it('Restore Conversation and Files… with the unknown files included, then Undo puts back both', async function () {
    this.timeout(120000);
    const pending = vscode.commands.executeCommand('sessiontree.restore.conversationAndFiles', sc.target);
    await askDriver('QUICKPICK', { waitText: 'Include the unknown files' });
    await askDriver('PICK', { text: 'Include the unknown files' });
    const again = await askDriver('QUICKPICK', { waitText: 'Leave the unknown files alone' });
    assert.match(ROW('notes.md')(again.rows), /delete.*taken as absent at the target/);
    assert.ok(ROW('Restore 3 files and the conversation')(again.rows));
    await askDriver('PICK', { text: 'Restore 3 files and the conversation' });
    const ask = await askDriver('QUICKPICK', { waitText: 'Cancel' });
    assert.match(ask.title, /^Restore 3 files and move the conversation to/);
    await askDriver('PICK', { text: 'Restore' });
    const out = await pending;
    assert.deepEqual(out.result.written.map((f) => path.basename(f.displayPath)), ['app.py', 'feature.py', 'notes.md']);
    assert.equal(read('notes.md'), null);
    await waitFor('the leaf on branch one', () => api.tree.currentLeafId === sc.target);

    await clickNotification({ text: 'The conversation moved there', button: 'Undo' });
    await waitFor('the leaf back on branch two', () => api.tree.currentLeafId === sc.leaf);
    await waitFor('the files put back', () => read('notes.md') === sc.disk['notes.md']);
    assert.equal(read('app.py'), sc.disk['app.py']);
    assert.equal(read('feature.py'), null);
  });

  it('a preview the disk changed under is refused, nothing written, and previewed again', async function () {
    this.timeout(120000);
    const pending = vscode.commands.executeCommand('sessiontree.restore.files', sc.target);
    await askDriver('QUICKPICK', { waitText: 'Restore 2 files' });
    // the person edits app.py while the preview is shown
    const edited = `${sc.disk['app.py']}# one more line\n`;
    fs.writeFileSync(file('app.py'), edited);
    await askDriver('PICK', { text: 'Restore 2 files' });
    await askDriver('QUICKPICK', { waitText: 'Cancel' });
    await askDriver('PICK', { text: 'Restore' });
    const warned = await clickNotification({ text: 'changed since the preview', button: 'Preview Again' });
    assert.match(warned.message, /nothing was written/);
    assert.equal(read('app.py'), edited);
    assert.equal(read('feature.py'), null);
    // the new preview merges the new line too; Esc cancels it
    await askDriver('QUICKPICK', { waitText: 'Restore 2 files' });
    const tab = await restoreDiffTab('app.py');
    assert.equal((await vscode.workspace.openTextDocument(tab.input.modified)).getText(), `${sc.restored['app.py']}# one more line\n`);
    await askDriver('KEY', { key: 'Escape' });
    const out = await pending;
    assert.equal(out.result, undefined);
    assert.equal(read('app.py'), edited);
    fs.writeFileSync(file('app.py'), sc.disk['app.py']);
  });

  it('Undo Last Restore says when there is none to undo', async () => {
    const res = await vscode.commands.executeCommand('sessiontree.restore.undo');
    assert.equal(res.undone, false);
    assert.equal(res.backupId, null);
  });
});
