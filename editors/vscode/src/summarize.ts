/** Writes a branch summary with a chat model from `vscode.lm`, when one is available. */
import * as vscode from 'vscode';
import type { EntrySummary } from './protocol';

/** The prompt sent to the model: the entries of the branch being left, one line each. */
export function summaryPrompt(entries: readonly EntrySummary[]): string {
  const lines = entries.map((e) => `- ${e.text}`).join('\n');
  return (
    'The following entries are a branch of a coding-agent conversation that the user is leaving. ' +
    'Write a short summary (a few sentences or bullet points) of what was tried, learned and changed on it, ' +
    'so the conversation can continue elsewhere with that knowledge. Answer with the summary only.\n\n' +
    lines
  );
}

/** True when the running VS Code offers at least one chat model. */
export async function hasChatModel(): Promise<boolean> {
  const lm = (vscode as { lm?: typeof vscode.lm }).lm;
  if (!lm || typeof lm.selectChatModels !== 'function') {
    return false;
  }
  try {
    return (await lm.selectChatModels()).length > 0;
  } catch {
    return false;
  }
}

/** Asks the first available chat model for a summary; undefined when there is none. */
export async function summarizeWithModel(
  entries: readonly EntrySummary[],
  token: vscode.CancellationToken,
): Promise<string | undefined> {
  const lm = (vscode as { lm?: typeof vscode.lm }).lm;
  if (!lm || typeof lm.selectChatModels !== 'function') {
    return undefined;
  }
  const [model] = await lm.selectChatModels();
  if (!model) {
    return undefined;
  }
  const response = await model.sendRequest(
    [vscode.LanguageModelChatMessage.User(summaryPrompt(entries))],
    { justification: 'Summarize the branch of the session you are leaving.' },
    token,
  );
  let text = '';
  for await (const part of response.text) {
    text += part;
  }
  return text.trim() || undefined;
}
