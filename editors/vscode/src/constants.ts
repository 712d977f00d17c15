/**
 * Every string literal the extension shares with the daemon or with package.json:
 * protocol method names, command ids (`sessiontree.<area>.<verb>`), view ids, setting keys,
 * context keys and URI schemes. Nothing else in the extension spells these out.
 */

/** The protocol version this client speaks (PROTOCOL.md "version 1"). */
export const PROTOCOL_VERSION = 1;

/** JSON-RPC request names (PROTOCOL.md, plus the project's documented additions). */
export const Method = {
  list: 'session/list',
  recent: 'session/recent',
  open: 'session/open',
  create: 'session/create',
  continueRecent: 'session/continueRecent',
  openInMemory: 'session/openInMemory',
  forkFrom: 'session/forkFrom',
  fork: 'session/fork',
  close: 'session/close',
  flush: 'session/flush',
  setName: 'session/setName',
  tree: 'session/tree',
  view: 'session/view',
  preview: 'session/preview',
  children: 'session/children',
  path: 'session/path',
  entry: 'session/entry',
  entries: 'session/entries',
  branch: 'session/branch',
  resetLeaf: 'session/resetLeaf',
  branchWithSummary: 'session/branchWithSummary',
  prepareNavigation: 'session/prepareNavigation',
  navigate: 'session/navigate',
  branchToNewSession: 'session/branchToNewSession',
  createBranchedSession: 'session/createBranchedSession',
  setLabel: 'session/setLabel',
  labels: 'session/labels',
  context: 'session/context',
  append: 'session/append',
  history: 'session/history',
  back: 'session/back',
  doctor: 'session/doctor',
  graph: 'session/graph',
  export: 'session/export',
  diff: 'session/diff',
  search: 'session/search',
  restorePreview: 'session/restorePreview',
  restore: 'session/restore',
  restoreUndo: 'session/restoreUndo',
} as const;

/** Server-to-client notifications. */
export const Notification = {
  didChange: 'session/didChange',
  didNavigate: 'session/didNavigate',
  didChangeLabel: 'session/didChangeLabel',
  didReload: 'session/didReload',
  didChangeList: 'session/didChangeList',
  didCompleteSearch: 'session/didCompleteSearch',
} as const;

/** JSON-RPC error codes of PROTOCOL.md "Errors". */
export const ErrorCode = {
  invalidParams: -32602,
  cancelled: -32800,
  unknownSession: -32001,
  entryNotFound: -32002,
  persistFailed: -32003,
  conflict: -32004,
  accessDenied: -32005,
  summaryUnavailable: -32006,
  invalidSessionFile: -32007,
} as const;

/** Command ids, as contributed in package.json. */
export const Command = {
  sessionsRefresh: 'sessiontree.sessions.refresh',
  sessionsShowAll: 'sessiontree.sessions.showAll',
  sessionsShowWorkspace: 'sessiontree.sessions.showWorkspace',
  sessionsOpen: 'sessiontree.sessions.open',
  sessionsOpenFile: 'sessiontree.sessions.openFile',
  sessionsRename: 'sessiontree.sessions.rename',
  sessionsFork: 'sessiontree.sessions.fork',
  treeRefresh: 'sessiontree.tree.refresh',
  treeSetFilter: 'sessiontree.tree.setFilter',
  treeSearch: 'sessiontree.tree.search',
  treeClearSearch: 'sessiontree.tree.clearSearch',
  treeLoadMore: 'sessiontree.tree.loadMore',
  treeRevealLeaf: 'sessiontree.tree.revealLeaf',
  treeBack: 'sessiontree.tree.back',
  treeNavigate: 'sessiontree.tree.navigate',
  treeSetLabel: 'sessiontree.tree.setLabel',
  treeClearLabel: 'sessiontree.tree.clearLabel',
  treeBranchToNewSession: 'sessiontree.tree.branchToNewSession',
  treeFork: 'sessiontree.tree.fork',
  treeShowContext: 'sessiontree.tree.showContext',
  treeShowEntryJson: 'sessiontree.tree.showEntryJson',
  treeCopyId: 'sessiontree.tree.copyId',
  serverRestart: 'sessiontree.server.restart',
  serverShowLog: 'sessiontree.server.showLog',
  graphShow: 'sessiontree.graph.show',
  treeExport: 'sessiontree.tree.export',
  treeExportSubtree: 'sessiontree.tree.exportSubtree',
  treeSelectForCompare: 'sessiontree.tree.selectForCompare',
  treeCompareWithSelected: 'sessiontree.tree.compareWithSelected',
  sessionsSearch: 'sessiontree.sessions.search',
  restoreFiles: 'sessiontree.restore.files',
  restoreConversationAndFiles: 'sessiontree.restore.conversationAndFiles',
  restoreUndo: 'sessiontree.restore.undo',
} as const;

/** View and container ids. */
export const View = {
  container: 'sessiontree',
  sessions: 'sessiontree.sessions',
  tree: 'sessiontree.tree',
} as const;

/** Setting keys (under the `sessiontree` section). */
export const Setting = {
  section: 'sessiontree',
  serverCommand: 'server.command',
  serverArgs: 'server.args',
  python: 'python',
  agentDir: 'agentDir',
  defaultFilter: 'tree.defaultFilter',
  pageSize: 'tree.pageSize',
  followLive: 'followLive',
  preindex: 'preindex',
} as const;

/** Context keys used in `when` clauses of package.json. */
export const ContextKey = {
  daemonState: 'sessiontree.daemonState',
  showAll: 'sessiontree.showAll',
  hasSession: 'sessiontree.hasSession',
  hasSearch: 'sessiontree.hasSearch',
  /** What an empty Session Tree view means: none, loading, empty, rows, failed. */
  treeState: 'sessiontree.treeState',
  /** An entry was picked with "Select for Compare". */
  hasCompareBase: 'sessiontree.hasCompareBase',
} as const;

/** URI schemes of the read-only virtual documents. */
export const Scheme = {
  context: 'sessiontree-context',
  entry: 'sessiontree-entry',
  diff: 'sessiontree-diff',
  /** What a restore leaves of a file (the second side of a restore preview's diff editor). */
  restore: 'sessiontree-restore',
} as const;

/** The webview panel of the session graph. */
export const GRAPH_VIEW_TYPE = 'sessiontree.graph';

/**
 * The filter modes of `session/view`, in the order the tree selector cycles them: the list the
 * JSON Schema declares (protocol/generate_typescript.py), so a new mode reaches the client here.
 */
export { VIEW_FILTERS as FILTER_MODES, type ViewFilter as FilterMode } from './protocol.generated';

/** The Python extension, whose selected interpreter runs the bundled daemon when present. */
export const PYTHON_EXTENSION_ID = 'ms-python.python';
