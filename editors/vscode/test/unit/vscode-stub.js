// A small stand-in for the `vscode` module: just the classes the view modules construct.
'use strict';
class Disposable {
  constructor(fn) { this.fn = fn; }
  dispose() { if (this.fn) { this.fn(); this.fn = undefined; } }
  static from(...ds) { return new Disposable(() => ds.forEach((d) => d.dispose())); }
}
class EventEmitter {
  constructor() { this.listeners = new Set(); this.event = (fn) => { this.listeners.add(fn); return new Disposable(() => this.listeners.delete(fn)); }; }
  fire(e) { for (const fn of [...this.listeners]) fn(e); }
  dispose() { this.listeners.clear(); }
}
const TreeItemCollapsibleState = { None: 0, Collapsed: 1, Expanded: 2 };
class TreeItem { constructor(label, collapsibleState) { this.label = label; this.collapsibleState = collapsibleState; } }
class ThemeIcon { constructor(id, color) { this.id = id; this.color = color; } }
class ThemeColor { constructor(id) { this.id = id; } }
class MarkdownString {
  constructor(value = '') { this.value = value; }
  appendMarkdown(s) { this.value += s; return this; }
  appendText(s) { this.value += s.replace(/[\\`*_{}[\]()#+\-.!]/g, '\\$&'); return this; }
  appendCodeblock(code, lang = '') { this.value += `\n\`\`\`${lang}\n${code}\n\`\`\`\n`; return this; }
}
const messages = [];
const window = {
  messages,
  showErrorMessage: async (m) => { messages.push(['error', m]); return undefined; },
  showInformationMessage: async (m) => { messages.push(['info', m]); return undefined; },
  showWarningMessage: async (m) => { messages.push(['warning', m]); return undefined; },
};
const commands = { executed: [], executeCommand: async (...args) => { commands.executed.push(args); } };
// registered command handlers by id (the search command's tests call them)
commands.registered = new Map();
commands.registerCommand = (id, fn) => { commands.registered.set(id, fn); return new Disposable(() => commands.registered.delete(id)); };
// files the code under test saved (`workspace.fs.writeFile`), and the save dialogs it showed
const written = [];
const Uri = {
  file: (p) => ({ scheme: 'file', fsPath: p, path: p }),
  joinPath: (base, ...parts) => { const p = require('node:path').join(base.fsPath, ...parts); return { scheme: 'file', fsPath: p, path: p }; },
};
window.showSaveDialog = async (o) => { window.messages.push(['save', o.defaultUri.fsPath]); return o.defaultUri; };
const workspace = {
  getConfiguration: () => ({ get: (_k, d) => d }),
  fs: { written, writeFile: async (uri, data) => { written.push([uri.fsPath, Buffer.from(data).toString('utf8')]); } },
  workspaceFolders: undefined,
  registerTextDocumentContentProvider: () => new Disposable(),
};
// vscode.lm: tests put chat models in `lm.models`.
const lm = { models: [], selectChatModels: async () => lm.models };
const LanguageModelChatMessage = { User: (content) => ({ role: 'user', content }) };
module.exports = { Uri, Disposable, EventEmitter, TreeItemCollapsibleState, TreeItem, ThemeIcon, ThemeColor, MarkdownString, window, commands, workspace, lm, LanguageModelChatMessage };
