/**
 * Turns the flat rows of `session/view` into a nested tree for a native TreeView.
 *
 * The rows come in the tree selector's order (a pre-order walk, active branch first) with the
 * display indent of tree-view-rules.md as `depth`. A single-child chain keeps its parent's
 * indent and a branch point's children get one more, so "the nearest earlier row with a
 * smaller depth" is exactly the row a line visually hangs under: a long linear conversation
 * stays flat, and every branch nests under the entry it branched from. Filtering keeps each
 * row's depth, so the same rule holds for filtered and searched views.
 */
import type { Row } from '../protocol';

/** A row placed in the nested tree. */
export interface RowNode {
  row: Row;
  parent: RowNode | undefined;
  children: RowNode[];
  /** True when this node or one of its descendants is on the active path. */
  containsActive: boolean;
}

/** The nested form of a list of rows. */
export interface NestedRows {
  roots: RowNode[];
  byId: Map<string, RowNode>;
}

/** Nests `rows` (in view order) by their display depth. */
export function nestRows(rows: readonly Row[]): NestedRows {
  const roots: RowNode[] = [];
  const byId = new Map<string, RowNode>();
  // stack[i] is the latest node whose depth is strictly smaller than the depth of stack[i+1].
  const stack: RowNode[] = [];
  for (const row of rows) {
    const node: RowNode = { row, parent: undefined, children: [], containsActive: row.onActivePath };
    while (stack.length > 0 && stack[stack.length - 1].row.depth >= row.depth) {
      stack.pop();
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

/** The line the tree selector draws for a row, without the connector art. */
export function rowLabel(row: Row): string {
  return (row.label ? `[${row.label}] ` : '') + row.text;
}

/** The full line of tree-view-rules.md: prefix, active marker, label, text. */
export function rowLine(row: Row): string {
  return row.prefix + (row.onActivePath ? '• ' : '') + rowLabel(row);
}

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
  if (row.isLeaf) {
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
