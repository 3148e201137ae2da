/**
 * Benchmark results: each bench returns a section of rows and targets; the
 * runner prints every section as a table and then one JSON document.
 */
export interface BenchTarget {
  name: string;
  value: number;
  /** e.g. "<= 1.25" or ">= 4000". */
  target: string;
  met: boolean;
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
