/**
 * Benchmark results: each bench returns a section of rows and targets; the
 * runner prints every section as a table and then one JSON document.
 */
/**
 * One target (issue 49): our figure as a ratio to a floor measured in the same
 * run, because absolute figures on a shared machine swing by 2x from one hour
 * to the next while the ratio of two things measured side by side does not.
 */
export interface BenchTarget {
  name: string;
  /** The ratio of `figure` to `floor` (or, for a target without a floor, the figure). */
  value: number;
  /** e.g. "<= 1.10" or ">= 0.9". */
  target: string;
  met: boolean;
  /** The floor, named and measured in the same run, e.g. "bare node:http + undici proxy checking one key: 9,812 req/s". */
  floor?: string;
  /** Our figure the ratio is taken of, e.g. "8,900 req/s". */
  figure?: string;
}

export interface BenchSection {
  name: string;
  /** What was measured, on what (machine, sizes, durations). */
  description: string;
  rows: Array<Record<string, string | number>>;
  targets: BenchTarget[];
}

export type Bench = () => Promise<BenchSection>;

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i] as number;
}

export function round(n: number, digits = 2): number {
  const f = 10 ** digits;
  return Math.round(n * f) / f;
}
