/**
 * rate-limiting's counters, once per gateway (Kong's `local` policy keeps them
 * in an nginx shared dict): plain state of the one proxy process.
 *
 * One call checks and counts every window of a request atomically: if any
 * window is already at its limit nothing is counted (Kong counts only
 * requests it lets through).
 */
export interface TakeRequest {
  /** One key per window: route, service, identifier and period. */
  keys: string[];
  /** Start (ms) of each key's current window. */
  starts: number[];
  limits: number[];
}

export interface TakeResult {
  /** Each window's count before this request. */
  counts: number[];
  /** Index of the first window at its limit, or -1 (then the request was counted). */
  stop: number;
}

const MAX_KEYS = 100_000;

interface Counter {
  start: number;
  count: number;
}

const counters = new Map<string, Counter>();

/** Checks every window of one request and, when none is at its limit, counts it in all of them. */
export function take(t: TakeRequest): TakeResult {
  const used: Counter[] = [];
  let stop = -1;
  for (let i = 0; i < t.keys.length; i++) {
    const key = t.keys[i] as string;
    const start = t.starts[i] as number;
    let c = counters.get(key);
    if (c === undefined) {
      if (counters.size >= MAX_KEYS) counters.clear();
      c = { start, count: 0 };
      counters.set(key, c);
    } else if (c.start !== start) {
      c.start = start;
      c.count = 0;
    }
    used.push(c);
    if (stop < 0 && c.count >= (t.limits[i] as number)) stop = i;
  }
  const counts = used.map((c) => c.count);
  if (stop < 0) for (const c of used) c.count++;
  return { counts, stop };
}
