/**
 * The paging math of the Session Tree view: which runs of rows are loaded (segments), which
 * are not (gaps, shown as "Load more…"), and the offset/limit of each `session/view` request.
 * Pure functions, so the arithmetic is tested without a tree or a daemon.
 */
import type { Row } from '../protocol';

/** A contiguous run of loaded rows, starting at row `start` of the view. */
export interface Segment {
  start: number;
  rows: Row[];
}

/** A run of `hidden` rows starting at row `offset` that has not been fetched. */
export interface Gap {
  offset: number;
  hidden: number;
}

/** An `offset`/`limit` pair of a `session/view` request. */
export interface PageRequest {
  offset: number;
  limit: number;
}

/** The first request of a (re)load: one page, or more when the user already loaded more. */
export function headRequest(current: readonly Segment[], pageSize: number): PageRequest {
  return { offset: 0, limit: Math.max(pageSize, current[0]?.rows.length ?? 0) };
}

/**
 * How many rows around the leaf a (re)load asks for beside the first page
 * (`selectedWindow`): one page, or the tail loaded before when it is longer.
 */
export function leafWindowLimit(current: readonly Segment[], pageSize: number): number {
  const oldTail = current.length > 1 ? current[current.length - 1].rows.length : 0;
  return Math.max(pageSize, oldTail);
}

/**
 * The window around the leaf, when the leaf's row (`selectedIndex`) lies beyond the first page
 * of `headLength` rows; undefined when the first page holds it or holds every row. The window
 * is one page centred on the leaf (as large as the tail loaded before, on a reload), pulled back
 * so it ends at the last row, and never starts inside the first page.
 */
export function leafWindowRequest(
  current: readonly Segment[],
  headLength: number,
  total: number,
  selectedIndex: number,
  pageSize: number,
): PageRequest | undefined {
  if (selectedIndex < headLength || headLength >= total) {
    return undefined;
  }
  const limit = leafWindowLimit(current, pageSize);
  const offset = Math.max(headLength, Math.min(selectedIndex - Math.floor(pageSize / 2), total - limit));
  return { offset, limit };
}

/** The request that fills the start of a gap: at most one page. */
export function gapRequest(gap: Gap, pageSize: number): PageRequest {
  return { offset: gap.offset, limit: Math.min(pageSize, gap.hidden) };
}

/** Sorts segments, drops empty ones and joins the ones that touch or overlap. */
export function mergeSegments(segments: readonly Segment[]): Segment[] {
  const sorted = [...segments].filter((seg) => seg.rows.length > 0).sort((a, b) => a.start - b.start);
  const out: Segment[] = [];
  for (const seg of sorted) {
    const last = out[out.length - 1];
    if (last && seg.start <= last.start + last.rows.length) {
      const skip = last.start + last.rows.length - seg.start;
      last.rows = last.rows.concat(seg.rows.slice(skip));
    } else {
      out.push({ start: seg.start, rows: [...seg.rows] });
    }
  }
  return out;
}

/** The unloaded gaps of `total` rows, in view order (none when nothing is loaded). */
export function findGaps(segments: readonly Segment[], total: number): Gap[] {
  const gaps: Gap[] = [];
  let pos = 0;
  for (const seg of segments) {
    if (seg.start > pos) {
      gaps.push({ offset: pos, hidden: seg.start - pos });
    }
    pos = seg.start + seg.rows.length;
  }
  if (pos < total && segments.length > 0) {
    gaps.push({ offset: pos, hidden: total - pos });
  }
  return gaps;
}

/** The loaded row at view index `index`, if any. */
export function rowAt(segments: readonly Segment[], index: number): Row | undefined {
  const seg = segments.find((g) => index >= g.start && index < g.start + g.rows.length);
  return seg?.rows[index - seg.start];
}
