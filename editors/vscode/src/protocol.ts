/** Wire shapes of PROTOCOL.md (camelCase, optional fields absent rather than null). */

export interface SessionInfo {
  path: string;
  id: string;
  cwd: string;
  title?: string;
  /** The name every front end shows (newer daemons); absent: the client picks one. */
  displayName?: string;
  firstMessage: string;
  messageCount: number;
  created: string;
  modified: string;
  parentSession?: string;
  /** "pi", "claude" or "codex" (newer daemons); the other agents' sessions are read-only. */
  agent?: string;
  /** For another agent's session: the command that resumes it there. */
  resumeCommand?: string | null;
  parentId?: string | null;
  parentKind?: string | null;
  /** For pi's family: "xcsh", "pi" or "omp", whose words the file uses (newer daemons). */
  dialect?: string;
  /** With a shared store: the machine it lives on, who ran it, whether it is a local file. */
  machine?: string;
  user?: string;
  local?: boolean;
}

export interface OpenResult {
  session: string;
  path?: string;
  header: Record<string, unknown> & { id?: string; title?: string; cwd?: string };
  leafId: string | null;
  entryCount: number;
  /** The name every front end shows (newer daemons); absent: the client picks one. */
  displayName?: string;
  migratedFrom?: number;
  recovered?: { skippedLines: number; tornTail: boolean; quarantinedCopy?: string };
  restoredLeafId?: string | null;
  /** "claude" or "codex": another agent's session, opened read-only. */
  agent?: string | null;
  resumeCommand?: string | null;
}

export interface EntrySummary {
  id: string;
  parentId: string | null;
  type: string;
  timestamp: string;
  role?: string;
  customType?: string;
  text: string;
  label?: string;
}

export interface Row {
  id: string;
  parentId: string | null;
  type: string;
  role?: string;
  depth: number;
  prefix: string;
  /** `prefix` cut to its last cells behind a depth marker, present when `prefix` is wide. */
  shortPrefix?: string | null;
  onActivePath: boolean;
  isLeaf: boolean;
  label?: string;
  text: string;
  timestamp: string;
  /** The row draws the leaf marker: the leaf's, or its nearest visible ancestor's when the filter hides it. */
  marksLeaf?: boolean;
  /** On the row that marks a hidden leaf: the leaf's display text. */
  hiddenLeaf?: string;
  /** The depth of the hidden first row of a branch this row stands for (it nests there). */
  headDepth?: number;
}

export interface ViewResult {
  rows: Row[];
  total: number;
  /** null when no row is visible, and while a search is shown in part. */
  selectedIndex: number | null;
  leafId: string | null;
  /** false: a `partial` search's rows found so far (`total` counts them). */
  complete?: boolean;
  /** With `selectedWindow`: the rows around the selected row when it lies past `rows`. */
  window?: { offset: number; rows: Row[] };
}

export interface NavigateResult {
  cancelled: boolean;
  newLeafId: string | null;
  oldLeafId: string | null;
  editorText?: string;
  summaryEntry?: Record<string, unknown>;
}

export interface PrepareNavigationResult {
  targetId: string;
  oldLeafId: string | null;
  commonAncestorId: string | null;
  entriesToSummarize: EntrySummary[];
}

export interface DidChangeParams {
  session: string;
  appended: EntrySummary[];
  leafId: string | null;
  oldLeafId: string | null;
  source: 'local' | 'external';
}

export interface DidNavigateParams {
  session: string;
  newLeafId: string | null;
  oldLeafId: string | null;
}

export interface DidChangeLabelParams {
  session: string;
  targetId: string;
  label?: string;
}

export interface DidReloadParams {
  session: string;
  reason: string;
}

export interface DidChangeListParams {
  cwd?: string;
}

export interface SessionContextResult {
  messages: unknown[];
  thinkingLevel?: string;
  models?: Record<string, string>;
  mode?: string;
  llmMessages?: unknown[];
  [key: string]: unknown;
}

/**
 * What the views and commands need from the daemon connection. The real implementation is
 * `DaemonClient` (vscode-languageclient); unit tests pass a small in-memory stand-in.
 */
export interface Daemon {
  request<R>(method: string, params: object): Promise<R>;
  onNotification(method: string, handler: (params: any) => void): { dispose(): void };
}
