'use strict';
// Other agents' sessions in the Sessions view: badge, icon, menu value, the filter by agent,
// and the agent and resume command kept with the opened session.
const test = require('node:test');
const assert = require('node:assert/strict');
const { SessionsProvider } = require('../../out/views/sessions');
const { CurrentSession } = require('../../out/session');
const { agentBadge, agentIcon, agentOf } = require('../../out/agents');
const { FakeDaemon } = require('./helpers');

const info = (path, extra = {}) => ({
  path,
  id: path,
  cwd: '/w',
  firstMessage: `first of ${path}`,
  messageCount: 3,
  created: '2026-01-01T00:00:00Z',
  modified: '2026-01-01T00:00:00Z',
  ...extra,
});

test('badge and icon name the agent; pi sessions look as before', () => {
  assert.equal(agentOf({}), 'pi');
  assert.equal(agentBadge({ agent: 'pi' }), '');
  assert.equal(agentBadge({ agent: 'claude' }), 'Claude Code · ');
  assert.equal(agentBadge({ agent: 'codex' }), 'Codex · ');
  assert.equal(agentIcon('pi'), undefined);
  assert.notEqual(agentIcon('claude'), agentIcon('codex'));
});

test('rows of other agents are read-only rows with their badge, and the list filters by agent', async () => {
  const daemon = new FakeDaemon({
    'session/list': (p) => ({
      sessions: [
        info('/c', { agent: 'claude', resumeCommand: 'claude --resume c' }),
        info('/x', { agent: 'codex', resumeCommand: 'codex resume x' }),
        info('/p', { agent: 'pi' }),
      ].filter((s) => !p.agent || s.agent === p.agent),
    }),
  });
  const provider = new SessionsProvider(daemon, new CurrentSession(daemon), {
    folders: () => ['/w'],
    now: () => Date.parse('2026-01-01T01:00:00Z'),
  });
  const kids = await provider.getChildren();
  const claude = provider.getTreeItem(kids.find((s) => s.agent === 'claude'));
  assert.equal(claude.description, 'Claude Code · 3 msgs · 1h');
  assert.equal(claude.iconPath.id, 'sparkle');
  assert.equal(claude.contextValue, 'foreignSession;claude');
  const pi = provider.getTreeItem(kids.find((s) => s.agent === 'pi'));
  assert.equal(pi.description, '3 msgs · 1h');
  assert.equal(pi.contextValue, 'session');
  assert.equal(daemon.calls.at(-1)[1].agent, undefined, 'all agents: no agent param');
  provider.setAgentFilter('codex');
  assert.deepEqual((await provider.getChildren()).map((s) => s.agent), ['codex']);
  assert.equal(daemon.calls.at(-1)[1].agent, 'codex');
});

test('an opened session of another agent keeps its agent and resume command', async () => {
  const daemon = new FakeDaemon({
    'session/open': ({ path }) => ({
      session: 'S',
      path,
      header: { id: 'c' },
      leafId: 'a8',
      entryCount: 3,
      agent: 'claude',
      resumeCommand: 'claude --resume c',
    }),
  });
  const s = await new CurrentSession(daemon).open('/c');
  assert.equal(s.agent, 'claude');
  assert.equal(s.resumeCommand, 'claude --resume c');
});
