'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const vscode = require('vscode');
const { summaryPrompt, summarizeWithModel, hasChatModel } = require('../../out/summarize');

const entries = [
  { id: 'u1', parentId: null, type: 'message', role: 'user', timestamp: 't', text: 'user: make it stream' },
  { id: 'a1', parentId: 'u1', type: 'message', role: 'assistant', timestamp: 't', text: 'assistant: done' },
];

test('the prompt lists the entries of the branch being left', () => {
  const prompt = summaryPrompt(entries);
  assert.match(prompt, /branch of a coding-agent conversation/);
  assert.match(prompt, /- user: make it stream\n- assistant: done$/);
});

test('without a chat model there is no summary', async () => {
  vscode.lm.models = [];
  assert.equal(await hasChatModel(), false);
  assert.equal(await summarizeWithModel(entries, {}), undefined);
});

test('with a chat model the streamed answer becomes the summary', async () => {
  const sent = [];
  vscode.lm.models = [
    {
      sendRequest: async (messages, options) => {
        sent.push({ messages, options });
        return { text: (async function* () { yield '  Tried a streaming '; yield 'loader.\n'; })() };
      },
    },
  ];
  try {
    assert.equal(await hasChatModel(), true);
    assert.equal(await summarizeWithModel(entries, {}), 'Tried a streaming loader.');
    assert.equal(sent.length, 1);
    assert.equal(sent[0].messages[0].role, 'user');
    assert.match(sent[0].messages[0].content, /make it stream/);
  } finally {
    vscode.lm.models = [];
  }
});
