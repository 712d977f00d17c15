/**
 * Other agents' sessions (Claude Code, Codex): the badge and icon a session row gets, the
 * filter of the Sessions view by agent, and "Copy Resume Command", offered instead of
 * navigation because those sessions are read-only (docs/other-agents.md).
 */
import * as vscode from 'vscode';
import type { SessionInfo } from './protocol';
import type { CurrentSession } from './session';
import type { SessionsProvider } from './views/sessions';

/** Agents the daemon lists; `all` shows every one. */
export const AGENT_FILTERS = ['all', 'pi', 'claude', 'codex'] as const;
export type AgentFilter = (typeof AGENT_FILTERS)[number];

/** Command ids contributed in package.json for other agents' sessions. */
export const AgentCommand = {
  copyResume: 'sessiontree.sessions.copyResumeCommand',
  filterAgent: 'sessiontree.sessions.filterByAgent',
  treeCopyResume: 'sessiontree.tree.copyResumeCommand',
} as const;

/** Context key: the Session Tree shows a read-only session of another agent. */
export const READ_ONLY_KEY = 'sessiontree.readOnly';

const NAMES: Record<string, string> = { pi: 'pi', claude: 'Claude Code', codex: 'Codex' };

/** The agent of a listed session ("pi" for pi's family and for older daemons). */
export function agentOf(s: Pick<SessionInfo, 'agent'>): string {
  return s.agent || 'pi';
}

export function agentName(agent: string): string {
  return NAMES[agent] ?? agent;
}

/** The codicon of a session row of another agent (pi's rows keep theirs). */
export function agentIcon(agent: string): string | undefined {
  if (agent === 'claude') {
    return 'sparkle';
  }
  if (agent === 'codex') {
    return 'terminal';
  }
  return undefined;
}

/** The badge before a row's description: the agent, for every agent but pi. */
export function agentBadge(s: Pick<SessionInfo, 'agent'>): string {
  const agent = agentOf(s);
  return agent === 'pi' ? '' : `${agentName(agent)} · `;
}

async function copy(command: string | undefined, agent: string): Promise<void> {
  if (!command) {
    void vscode.window.showWarningMessage('Session Tree: this session has no resume command.');
    return;
  }
  await vscode.env.clipboard.writeText(command);
  void vscode.window.showInformationMessage(`Session Tree: copied \`${command}\` (resume it in ${agentName(agent)}).`);
}

/**
 * What the tree offers instead of navigating a read-only session: copy its resume command.
 * Returns true when the current session is such a session (the caller then does nothing else).
 */
export async function offerResumeInstead(current: CurrentSession): Promise<boolean> {
  const s = current.value;
  if (!s?.agent || s.agent === 'pi') {
    return false;
  }
  const pick = await vscode.window.showInformationMessage(
    `Session Tree: this ${agentName(s.agent)} session is read-only; resume it in ${agentName(s.agent)} instead.`,
    'Copy Resume Command',
  );
  if (pick) {
    await copy(s.resumeCommand, s.agent);
  }
  return true;
}

/** Registers the commands of other agents' sessions. */
export function registerAgentCommands(current: CurrentSession, sessions: SessionsProvider): vscode.Disposable[] {
  const setKey = () =>
    void vscode.commands.executeCommand(
      'setContext',
      READ_ONLY_KEY,
      !!current.value?.agent && current.value.agent !== 'pi',
    );
  return [
    current.onDidChange(setKey),
    vscode.commands.registerCommand(AgentCommand.copyResume, async (s?: SessionInfo) => {
      const target = s ?? undefined;
      if (target) {
        await copy(target.resumeCommand ?? undefined, agentOf(target));
      } else if (current.value?.agent) {
        await copy(current.value.resumeCommand, current.value.agent);
      }
    }),
    vscode.commands.registerCommand(AgentCommand.treeCopyResume, async () => {
      if (current.value?.agent) {
        await copy(current.value.resumeCommand, current.value.agent);
      }
    }),
    vscode.commands.registerCommand(AgentCommand.filterAgent, async (agent?: AgentFilter) => {
      let choice = agent;
      if (!choice) {
        const items = AGENT_FILTERS.map((a) => ({
          label: a === 'all' ? 'All agents' : agentName(a),
          description: a === sessions.agentFilter ? 'current' : undefined,
          agent: a,
        }));
        const pick = await vscode.window.showQuickPick(items, { placeHolder: 'Show the sessions of' });
        choice = pick?.agent;
      }
      if (choice && AGENT_FILTERS.includes(choice)) {
        sessions.setAgentFilter(choice);
      }
    }),
  ];
}
