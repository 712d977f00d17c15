/**
 * Turns the flat rows of `session/view` into a nested tree for a native TreeView.
 *
 * The rows come in the tree selector's order (a pre-order walk, active branch first) with the
 * display indent of tree-view-rules.md as `depth`. A single-child chain keeps its parent's
 * indent and a branch point's children get one more, so "the nearest earlier row with a
 * smaller depth" is exactly the row a line visually hangs under: a long linear conversation
 * stays flat, and every branch nests under the entry it branched from. Filtering keeps each
 * row's depth, so the same rule holds for filtered views.
 *
 * Deep trees: a session with dozens of nested branches would indent its rows off the view
 * (each level is one more step of indentation), so nesting stops at {@link MAX_NEST_LEVEL}.
 * A row that would sit deeper hangs beside the deepest allowed row instead, in view order. Every
 * row deeper than that shows the daemon's depth marker (`‹N›`, the head of `shortPrefix`) before
 * its text, also where it is drawn shallower still (a page around a far leaf starts at the top
 * level, a filter leaves out the rows between). That is the rule of tree_art.py (art up to 8
 * cells in full, deeper rows behind a depth marker), so every front end shows the same thing. Search results are shown flat: matches from many
 * depths would otherwise form a staircase.
 *
 * A branch whose first row the filter hides (a tool result in `no-tools`, an assistant message
 * without text) would leave its rows at a depth shared with the next branch's, so two branches
 * would read as one list: the daemon names the depth of that hidden row on the first visible
 * row under it (`headDepth`, core/view/marks.py), and that row nests there, standing for it.
 */
import type { Row } from '../protocol';

/**
 * The deepest nesting level of a row (roots are level 0): 8, the levels the daemon's short
 * art keeps in full (SHORT_ART_WIDTH 24 / 3 columns a cell in server/sessiontree/core/tree_art.py).
 */
export const MAX_NEST_LEVEL = 8;

/** How rows are nested. */
export interface NestOptions {
  /** The deepest level a row may nest to (default {@link MAX_NEST_LEVEL}). */
  maxLevel?: number;
  /** Every row at the top level (search results). */
  flat?: boolean;
}

/** A row placed in the nested tree. */
export interface RowNode {
  row: Row;
  parent: RowNode | undefined;
  children: RowNode[];
  /** True when this node or one of its descendants is on the active path. */
  containsActive: boolean;
  /** The nesting level in the tree view (0 for a top-level row). */
  level: number;
  /** The depth marker shown before the text of a row deeper than the deepest nesting level. */
  marker?: string;
  /** A row of `session/preview`, shown while the session opens: display-only (views/preview.ts). */
  preview?: boolean;
}

/** The nested form of a list of rows. */
export interface NestedRows {
  roots: RowNode[];
  byId: Map<string, RowNode>;
}

/** Nests `rows` (in view order) by their display depth, at most `maxLevel` levels deep. */
export function nestRows(rows: readonly Row[], options: NestOptions = {}): NestedRows {
  const maxLevel = options.flat ? 0 : Math.max(0, options.maxLevel ?? MAX_NEST_LEVEL);
  const roots: RowNode[] = [];
  const byId = new Map<string, RowNode>();
  // stack[i] is the latest node whose depth is strictly smaller than the depth of stack[i+1];
  // stack.length is the level of the next node.
  const stack: RowNode[] = [];
  for (const row of rows) {
    const node: RowNode = { row, parent: undefined, children: [], containsActive: row.onActivePath, level: 0 };
    const depth = nestDepth(row);
    while (stack.length > 0 && nestDepth(stack[stack.length - 1].row) >= depth) {
      stack.pop();
    }
    // Beyond the deepest level a row becomes the sibling of the row at that level.
    while (stack.length > maxLevel) {
      stack.pop();
    }
    node.level = stack.length;
    if (!options.flat && row.depth > maxLevel) {
      node.marker = depthMarker(row);
    }
    const parent = stack[stack.length - 1];
    if (parent) {
      node.parent = parent;
      parent.children.push(node);
    } else {
      roots.push(node);
    }
    stack.push(node);
    if (!byId.has(row.id)) {
      byId.set(row.id, node);
    }
  }
  for (const node of byId.values()) {
    if (node.row.onActivePath) {
      for (let p = node.parent; p && !p.containsActive; p = p.parent) {
        p.containsActive = true;
      }
    }
  }
  return { roots, byId };
}

/** The depth a row nests at: that of the hidden first row of a branch it stands for, else its own. */
export function nestDepth(row: Pick<Row, 'depth' | 'headDepth'>): number {
  return row.headDepth ?? row.depth;
}

/** Whether a row carries the leaf marker (the leaf, or the row that stands for a hidden leaf). */
export function marksLeaf(row: Pick<Row, 'isLeaf' | 'marksLeaf'>): boolean {
  // an older daemon sends no marksLeaf: its leaf row marks the leaf
  return row.marksLeaf ?? row.isLeaf;
}

/** What the row that marks the leaf says of it: `leaf: TEXT` for a leaf the filter hides. */
export function leafNote(row: Pick<Row, 'hiddenLeaf'>): string | undefined {
  return row.hiddenLeaf !== undefined ? `leaf: ${row.hiddenLeaf}` : undefined;
}

/**
 * The depth marker of a deep row: the daemon's (the `‹N›` that starts `shortPrefix`), or the
 * same form from `depth` when an older daemon sends no short art.
 */
export function depthMarker(row: Pick<Row, 'depth' | 'shortPrefix'>): string {
  const head = /^\S+/.exec(row.shortPrefix ?? '');
  return head ? head[0] : `‹${row.depth}›`;
}

/** The line the tree selector draws for a row, without the connector art. */
export function rowLabel(row: Row): string {
  return (row.label ? `[${row.label}] ` : '') + row.text;
}

/** The full line of tree-view-rules.md: prefix, active marker, label, text. */
export function rowLine(row: Row): string {
  return row.prefix + (row.onActivePath ? '• ' : '') + rowLabel(row);
}

/**
 * The ThemeIcon of the current leaf's row, whatever its kind: the glyph of "Reveal Current
 * Leaf" in the view's title bar.
 */
export const LEAF_ICON = 'target';

/** A ThemeIcon id for an entry kind. */
export function iconForRow(row: Pick<Row, 'type' | 'role'>): string {
  if (row.type === 'message') {
    switch (row.role) {
      case 'user':
        return 'account';
      case 'assistant':
        return 'hubot';
      case 'toolResult':
        return 'tools';
      case 'bashExecution':
        return 'terminal';
      case 'pythonExecution':
        return 'terminal';
      case 'developer':
        return 'code';
      case 'fileMention':
        return 'file';
      default:
        return 'comment';
    }
  }
  switch (row.type) {
    case 'compaction':
      return 'fold';
    case 'branch_summary':
      return 'git-merge';
    case 'model_change':
      return 'chip';
    case 'thinking_level_change':
      return 'lightbulb';
    case 'label':
      return 'tag';
    case 'custom':
    case 'custom_message':
      return 'extensions';
    case 'session_init':
      return 'rocket';
    case 'mode_change':
      return 'symbol-enum';
    default:
      return 'circle-small';
  }
}

/** The contextValue of a row: `entry` plus `;flag` words for menu `when` clauses. */
export function rowContextValue(row: Row): string {
  const flags = ['entry'];
  if (row.type === 'message' && row.role === 'user') {
    flags.push('user');
  }
  if (row.label) {
    flags.push('labeled');
  }
  if (marksLeaf(row)) {
    flags.push('leaf');
  }
  if (row.onActivePath) {
    flags.push('active');
  }
  return flags.join(';');
}

/** "3m", "2h", "5d" style age of an ISO timestamp relative to `now` (ms). */
export function formatAge(iso: string, now: number): string {
  const t = Date.parse(iso);
  if (Number.isNaN(t)) {
    return '';
  }
  const s = Math.max(0, Math.round((now - t) / 1000));
  if (s < 60) {
    return `${s}s`;
  }
  const m = Math.round(s / 60);
  if (m < 60) {
    return `${m}m`;
  }
  const h = Math.round(m / 60);
  if (h < 48) {
    return `${h}h`;
  }
  const d = Math.round(h / 24);
  if (d < 60) {
    return `${d}d`;
  }
  return new Date(t).toISOString().slice(0, 10);
}
