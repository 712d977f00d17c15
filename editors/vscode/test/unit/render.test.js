'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const { entryTooltipMarkdown, renderContext, contentText } = require('../../out/render');
const { resolveCommand, protocolVersionOf } = require('../../out/daemonCheck');
const { documentUri } = require('../../out/documents');

test('contentText joins text blocks and shows tool calls', () => {
  const text = contentText([
    { type: 'text', text: 'Reading it.' },
    { type: 'toolCall', id: 't1', name: 'read', arguments: { path: 'a.py' } },
    { type: 'image', data: 'xx' },
  ]);
  assert.equal(text, 'Reading it.\n\n→ read({"path":"a.py"})\n\n[image]');
});

test('the tooltip shows kind, id, label and the full text in a fence', () => {
  const md = entryTooltipMarkdown({ type: 'message', id: 'ab12', timestamp: 'T', message: { role: 'user', content: 'line 1\n```x```' } }, 'keep');
  assert.match(md, /^\*\*user\*\* · `ab12` · T · 🏷 keep/);
  assert.match(md, /````text\nline 1\n```x```\n````/);
});

test('renderContext lists state and every message the model sees', () => {
  const doc = renderContext(
    { thinkingLevel: 'high', models: { default: 'anthropic/claude' }, mode: 'none', messages: [], llmMessages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }, { role: 'assistant', content: [{ type: 'text', text: 'hello' }] }] },
    'My session',
    'abcd',
  );
  assert.match(doc, /^# Context of My session at abcd/);
  assert.match(doc, /- thinking level: high/);
  assert.match(doc, /- models: default: anthropic\/claude/);
  assert.match(doc, /## 1\. user\n\n```\nhi\n```/);
  assert.match(doc, /## 2\. assistant/);
});

test('resolveCommand finds executables on PATH and refuses missing ones', () => {
  assert.equal(resolveCommand('node', process.env.PATH), require('node:child_process').execSync('command -v node', { shell: '/bin/sh' }).toString().trim());
  assert.equal(resolveCommand('definitely-not-a-sessiontree-binary', process.env.PATH), undefined);
  assert.equal(resolveCommand('/nonexistent/sessiontree'), undefined);
  assert.equal(resolveCommand(process.execPath), process.execPath);
  const home = require('node:os').homedir();
  const fs = require('node:fs');
  const dir = fs.mkdtempSync(require('node:path').join(home, '.st-resolve-'));
  try {
    const exe = require('node:path').join(dir, 'sessiontree');
    fs.writeFileSync(exe, '#!/bin/sh\n', { mode: 0o755 });
    assert.equal(resolveCommand(`~/${require('node:path').basename(dir)}/sessiontree`), exe);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('protocolVersionOf reads the experimental capability', () => {
  assert.equal(protocolVersionOf({ capabilities: { experimental: { sessionTree: { protocolVersion: 1 } } } }), 1);
  assert.equal(protocolVersionOf({ capabilities: {} }), undefined);
  assert.equal(protocolVersionOf(undefined), undefined);
});
