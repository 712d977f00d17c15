/** Counts in words: `1 entry`, `2 entries` (the daemon's rule, core/format/words.py). */
const IRREGULAR: Record<string, string> = { entry: 'entries', branch: 'branches', match: 'matches' };

/** `n` and `noun`, in the singular for one, else in the plural (`plural`, else the noun's own). */
export function counted(n: number, noun: string, plural?: string): string {
  return `${n} ${n === 1 ? noun : plural ?? IRREGULAR[noun] ?? `${noun}s`}`;
}
