/** Read-only virtual documents: the context the model sees from a node, and an entry's JSON. */
import * as vscode from 'vscode';
import { Method, Scheme } from './constants';
import type { Daemon, SessionContextResult } from './protocol';
import { renderContext } from './render';

/** Builds the URI of a virtual document for an entry of a session. */
export function documentUri(scheme: string, session: string, entryId: string, title: string): vscode.Uri {
  const safeTitle = title.replace(/[\\/?#%]/g, '_').slice(0, 60) || 'session';
  const ext = scheme === Scheme.context ? 'md' : 'json';
  const query = new URLSearchParams({ session, id: entryId, title }).toString();
  return vscode.Uri.from({ scheme, path: `/${safeTitle}/${entryId}.${ext}`, query });
}

/** TextDocumentContentProvider for the `sessiontree-context` and `sessiontree-entry` schemes. */
export class SessionDocuments implements vscode.TextDocumentContentProvider {
  constructor(private readonly daemon: Daemon) {}

  async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    const q = new URLSearchParams(uri.query);
    const session = q.get('session') ?? '';
    const id = q.get('id') ?? '';
    if (uri.scheme === Scheme.context) {
      const ctx = await this.daemon.request<SessionContextResult>(Method.context, { session, leafId: id, llm: true });
      return renderContext(ctx, q.get('title') ?? session, id);
    }
    const res = await this.daemon.request<{ entry: unknown }>(Method.entry, { session, id, resolveBlobs: false });
    return `${JSON.stringify(res.entry, null, 2)}\n`;
  }
}
