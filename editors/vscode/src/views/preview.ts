/**
 * The rows of a big session drawn at once, while its `session/open` still indexes the file:
 * `session/preview` reads the rows around the leaf from the end of the file (docs/preview.md).
 * They are display-only (no menus, no commands: the session has no handle yet) and the open's
 * first `session/view` page replaces them. Files below {@link PREVIEW_MIN_BYTES} open fast
 * enough and never ask for one.
 */
import { promises as fs } from 'node:fs';
import * as vscode from 'vscode';
import { type FilterMode, Method } from '../constants';
import type { Daemon } from '../protocol';
import type { PreviewParams, PreviewResult } from '../protocol.generated';
import { nestRows, type RowNode } from './rows';

/**
 * Session files of this many bytes or more get a preview while they open (the daemon's "big
 * session", as for indexing ahead). A smaller file's open and first page take under a quarter
 * of a second cold: a preview drawn just before them would only hold its rows back, since VS
 * Code gives a tree change that comes within 200 ms of the last one at the end of that time.
 */
export const PREVIEW_MIN_BYTES = 32 * 1024 * 1024;

/** The most rows the daemon answers a preview with (PreviewParams.limit). */
export const PREVIEW_MAX_ROWS = 2000;

/** The contextValue of a preview row: it matches no menu of package.json. */
export const PREVIEW_CONTEXT = 'preview';

/** The label of the row above a preview whose leaf has older ancestors that were not read. */
export const OLDER_ROWS_LABEL = 'Older entries… (shown once the session is open)';

/** The row above the preview's rows when their leaf has older ancestors (`above`). */
export class OlderRowsElement {
  readonly kind = 'olderRows';
}

/** A preview as the Session Tree view draws it. */
export interface Preview {
  /** The session file it was drawn from. */
  path: string;
  /** The open it belongs to (the view's count of opens). */
  token: number;
  /** The top-level elements: the older-entries row when `above`, then the nested rows. */
  roots: (RowNode | OlderRowsElement)[];
  /** The row of the leaf, or of its nearest visible ancestor. */
  selected: RowNode | undefined;
}

/** The view's message while a preview is shown. */
export function previewMessage(path: string): string {
  const name = path.split(/[\\/]/).pop() || path;
  return `Indexing ${name}… showing its last entries`;
}

/** The size of a file in bytes (the default of the view's `sizeOf` option). */
export async function fileSize(path: string): Promise<number> {
  return (await fs.stat(path)).size;
}

/** Where {@link requestPreview} learns a file's size and reports a failed preview. */
export interface PreviewRequestOptions {
  sizeOf: (path: string) => Promise<number>;
  log?: (message: string) => void;
}

/**
 * Asks the daemon for the preview of a session file, when it is big enough to need one;
 * undefined for a smaller file, one that cannot be read, or a failed request (logged only: the
 * open goes on and shows the rows).
 */
export async function requestPreview(
  daemon: Daemon,
  params: PreviewParams,
  options: PreviewRequestOptions,
): Promise<PreviewResult | undefined> {
  let size: number;
  try {
    size = await options.sizeOf(params.path);
  } catch {
    return undefined; // the open reports a missing or unreadable file
  }
  if (size < PREVIEW_MIN_BYTES) {
    return undefined;
  }
  try {
    return await daemon.request<PreviewResult>(Method.preview, params);
  } catch (err) {
    options.log?.(`no preview of ${params.path}: ${err instanceof Error ? err.message : String(err)}`);
    return undefined;
  }
}

/** The params of the preview of `path` drawn with the view's filter and page size. */
export function previewParams(path: string, filter: FilterMode, pageSize: number): PreviewParams {
  return { path, filter, limit: Math.min(pageSize, PREVIEW_MAX_ROWS) };
}

/**
 * Nests the rows of a preview like the rows of `session/view` (search never applies: a view
 * with a search asks for no preview), marked display-only; undefined when it has no rows.
 */
export function buildPreview(path: string, token: number, result: PreviewResult): Preview | undefined {
  if (!result.rows || result.rows.length === 0) {
    return undefined;
  }
  const nested = nestRows(result.rows);
  for (const node of nested.byId.values()) {
    node.preview = true;
  }
  const selectedRow = result.selectedIndex !== null ? result.rows[result.selectedIndex] : undefined;
  const selected = selectedRow ? nested.byId.get(selectedRow.id) : undefined;
  const roots: (RowNode | OlderRowsElement)[] = result.above ? [new OlderRowsElement(), ...nested.roots] : nested.roots;
  return { path, token, roots, selected };
}

/** The TreeItem of the older-entries row: not interactive. */
export function olderRowsItem(): vscode.TreeItem {
  const item = new vscode.TreeItem(OLDER_ROWS_LABEL, vscode.TreeItemCollapsibleState.None);
  item.id = 'sessiontree.preview.older';
  item.iconPath = new vscode.ThemeIcon('ellipsis');
  item.contextValue = 'previewOlder';
  item.accessibilityInformation = { label: `preview, ${OLDER_ROWS_LABEL}` };
  return item;
}

/** A command was given a preview row: it waits for nothing and does nothing. */
export class PreviewRowError extends Error {
  constructor() {
    super('The session is still opening: its rows can be used once they are shown.');
  }
}

/** Throws {@link PreviewRowError} for a preview row (commands on rows call it first). */
export function refusePreviewRow(node: RowNode): RowNode {
  if (node.preview) {
    throw new PreviewRowError();
  }
  return node;
}

/** Whether a command's argument is a row of the Session Tree view. */
export function isRowNode(x: unknown): x is RowNode {
  return !!x && typeof x === 'object' && 'row' in x && 'children' in x;
}

/**
 * The entry a row command acts on: a menu's row, else the view's selected row (never a
 * preview's); a string is an entry id.
 */
export function entryOfArg(arg: unknown, selection: readonly unknown[]): { id: string; text: string } {
  if (typeof arg === 'string') {
    return { id: arg, text: arg };
  }
  const node = isRowNode(arg) ? arg : selection.find(isRowNode);
  if (!node) {
    throw new Error('Select an entry in the Session Tree view first.');
  }
  refusePreviewRow(node);
  return { id: node.row.id, text: node.row.text };
}
