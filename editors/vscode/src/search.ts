/**
 * Search across every session (`session/search`): a quick pick whose items are the daemon's
 * hits as you type; choosing one opens its session in the Session Tree with the hit's row
 * revealed and selected and its branch highlighted (the view drawn from the hit, as if it
 * were the leaf, until Reveal Leaf or a navigation).
 */
import * as vscode from 'vscode';
import { Command, Method } from './constants';
import { counted } from './words';
import type { SearchHit, SearchResult } from './protocol.generated';
import type { Daemon } from './protocol';
import type { CurrentSession } from './session';
import type { SessionTreeProvider, TreeElement } from './views/sessionTree';

export interface SearchContext {
  daemon: Daemon;
  current: CurrentSession;
  tree: SessionTreeProvider;
  treeView: vscode.TreeView<TreeElement>;
}

/** What a scripted call of the command returns: the hit it landed on. */
export interface SearchLanding {
  path: string;
  entryId: string;
  revealed: boolean;
}

export interface HitItem extends vscode.QuickPickItem {
  hit: SearchHit;
}

const ROLE_ICON: Record<string, string> = { user: 'account', assistant: 'hubot', tool: 'tools', other: 'circle-outline' };

/**
 * The snippet shortened around its first matched word, the matched words between `open` and
 * `close` (default «»; a quick pick's label takes none: the quick pick bolds the words typed
 * itself, and marks as well would show both).
 */
export function markedSnippet(hit: Pick<SearchHit, 'snippet' | 'highlights'>, max = 160, open = '«', close = '»'): string {
  const text = hit.snippet ?? '';
  const ranges = hit.highlights ?? [];
  let start = 0;
  if (ranges.length && ranges[0][0] > max / 3) {
    start = ranges[0][0] - Math.floor(max / 3);
  }
  let out = start > 0 ? '…' : '';
  let pos = start;
  for (const [a, b] of ranges) {
    if (b <= pos) {
      continue;
    }
    out += text.slice(pos, Math.max(pos, a)) + open + text.slice(Math.max(pos, a), b) + close;
    pos = b;
  }
  out += text.slice(pos);
  return out.length > max + 2 ? `${out.slice(0, max)}…` : out;
}

/**
 * One quick-pick item per hit: the snippet (its matched words bold, as the quick pick shows
 * the words typed); role, time and branch; session and project.
 */
export function hitItems(hits: SearchHit[]): HitItem[] {
  return hits.map((hit) => {
    const when = hit.timestamp ? hit.timestamp.slice(0, 16).replace('T', ' ') : '';
    const branch = hit.onActiveBranch === false ? 'other branch' : hit.onActiveBranch ? 'active branch' : '';
    const labels = (hit.pathLabels ?? []).map((l) => `[${l.label}]`).join(' ');
    return {
      label: `$(${ROLE_ICON[hit.role] ?? 'circle-outline'}) ${markedSnippet(hit, 160, '', '')}`,
      description: [hit.role, when, branch, labels].filter(Boolean).join(' · '),
      detail: [hit.sessionName ?? hit.path, hit.cwd].filter(Boolean).join(' — '),
      alwaysShow: true,
      hit,
    };
  });
}

export function registerSessionSearch(ctx: SearchContext): vscode.Disposable[] {
  const { daemon, current, tree, treeView } = ctx;

  const search = (query: string, limit = 50) =>
    daemon.request<SearchResult>(Method.search, { query, limit });

  /** Opens the hit's session with the view drawn from the hit, and selects its row. */
  const land = async (hit: SearchHit): Promise<SearchLanding> => {
    if (current.value?.path === hit.path) {
      await tree.focusEntry(hit.entryId);
    } else {
      await tree.focusEntry(hit.entryId, true);
      await current.open(hit.path);
    }
    await tree.whenIdle();
    const node = tree.nodeById(hit.entryId);
    let revealed = false;
    if (node) {
      await treeView.reveal(node, { select: true, focus: false, expand: true }).then(
        () => {
          revealed = true;
        },
        () => undefined,
      );
    }
    return { path: hit.path, entryId: hit.entryId, revealed };
  };

  const pick = (initial: string): Promise<SearchHit | undefined> =>
    new Promise((resolve) => {
      const qp = vscode.window.createQuickPick<HitItem>();
      qp.placeholder = 'Search every session (words, "a phrase"; the last word as a prefix)';
      qp.matchOnDescription = false;
      qp.matchOnDetail = false;
      let generation = 0;
      let pending: Promise<void> = Promise.resolve();
      let done = false;
      const run = (value: string) => {
        const gen = ++generation;
        if (!value.trim()) {
          qp.items = [];
          qp.busy = false;
          return;
        }
        qp.busy = true;
        pending = search(value).then(
          (res) => {
            if (gen !== generation || done) {
              return;
            }
            qp.items = hitItems(res.hits);
            qp.title = `${res.total}${res.capped ? '+' : ''} ${res.total === 1 && !res.capped ? 'match' : 'matches'} in ${counted(res.indexedFiles, 'session')}`;
            qp.busy = false;
          },
          (err: unknown) => {
            if (gen === generation) {
              qp.busy = false;
              qp.title = `Search failed: ${err instanceof Error ? err.message : String(err)}`;
            }
          },
        );
      };
      let timer: ReturnType<typeof setTimeout> | undefined;
      qp.onDidChangeValue((value) => {
        if (timer) {
          clearTimeout(timer);
        }
        timer = setTimeout(() => run(value), 120);
      });
      qp.onDidAccept(async () => {
        let item = qp.selectedItems[0] ?? qp.activeItems[0];
        if (!item) {
          // Enter before the results came: the hits of what was typed, first one
          if (timer) {
            clearTimeout(timer);
            run(qp.value);
          }
          await pending;
          item = qp.items[0];
        }
        if (!item) {
          return;
        }
        done = true;
        qp.hide();
        resolve(item.hit);
      });
      qp.onDidHide(() => {
        qp.dispose();
        resolve(undefined);
      });
      qp.value = initial;
      qp.show();
      if (initial) {
        run(initial);
      }
    });

  return [
    // A string argument searches without the quick pick and lands on hit `index` (scripts, tests).
    vscode.commands.registerCommand(Command.sessionsSearch, async (query?: unknown, index?: unknown) => {
      try {
        let hit: SearchHit | undefined;
        if (typeof query === 'string') {
          const res = await search(query);
          hit = res.hits[typeof index === 'number' ? index : 0];
          if (!hit) {
            return undefined;
          }
        } else {
          hit = await pick('');
        }
        return hit ? await land(hit) : undefined;
      } catch (err) {
        void vscode.window.showErrorMessage(`Session Tree: ${err instanceof Error ? err.message : String(err)}`);
        return undefined;
      }
    }),
  ];
}
