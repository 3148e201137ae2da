/**
 * rate-limiting's counters, once per gateway (Kong's `local` policy keeps them
 * in an nginx shared dict that every worker sees). With one proxy process they
 * live in that process; with `--workers N` the primary holds them and each
 * worker asks it over the cluster IPC channel (server.ts wires both ends), so
 * N workers allow the configured limit, not N times it.
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

export interface RateCounterStore {
  take(t: TakeRequest): TakeResult | Promise<TakeResult>;
}

const MAX_KEYS = 100_000;
const REPLY_TIMEOUT_MS = 1000;

interface Counter {
  start: number;
  count: number;
}

/** The counters themselves (in the single proxy process, or in the primary). */
export class LocalCounters implements RateCounterStore {
  private readonly counters = new Map<string, Counter>();

  take(t: TakeRequest): TakeResult {
    const used: Counter[] = [];
    let stop = -1;
    for (let i = 0; i < t.keys.length; i++) {
      const key = t.keys[i] as string;
      const start = t.starts[i] as number;
      let c = this.counters.get(key);
      if (c === undefined) {
        if (this.counters.size >= MAX_KEYS) this.counters.clear();
        c = { start, count: 0 };
        this.counters.set(key, c);
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
}

export const RATE_LIMIT_REQUEST = 'gateway-rate-limit';
export const RATE_LIMIT_REPLY = 'gateway-rate-limit-reply';

export interface RateLimitRequestMessage extends TakeRequest {
  type: typeof RATE_LIMIT_REQUEST;
  id: number;
}

export interface RateLimitReplyMessage extends TakeResult {
  type: typeof RATE_LIMIT_REPLY;
  id: number;
}

/** A worker's view: each take is answered by the primary's LocalCounters. */
export class PrimaryCounters implements RateCounterStore {
  private next = 0;
  private readonly pending = new Map<number, (r: TakeResult) => void>();

  constructor(private readonly send: (m: RateLimitRequestMessage) => void) {}

  take(t: TakeRequest): Promise<TakeResult> {
    const id = ++this.next;
    return new Promise((resolve) => {
      // Kong's fault_tolerant (default true): if the counters cannot be reached, let the request through uncounted.
      const timer = setTimeout(() => {
        this.pending.delete(id);
        resolve({ counts: t.keys.map(() => 0), stop: -1 });
      }, REPLY_TIMEOUT_MS);
      this.pending.set(id, (r) => {
        clearTimeout(timer);
        resolve(r);
      });
      try {
        this.send({ type: RATE_LIMIT_REQUEST, id, keys: t.keys, starts: t.starts, limits: t.limits });
      } catch {
        // channel closed: the timer answers
      }
    });
  }

  /** Feed every message from the primary here. */
  onMessage(m: unknown): void {
    const r = m as RateLimitReplyMessage;
    if (r?.type !== RATE_LIMIT_REPLY) return;
    const resolve = this.pending.get(r.id);
    if (!resolve) return;
    this.pending.delete(r.id);
    resolve({ counts: r.counts, stop: r.stop });
  }
}

let store: RateCounterStore = new LocalCounters();

/** The store the rate-limiting plugin counts in (server.ts sets PrimaryCounters in workers). */
export function rateCounterStore(): RateCounterStore {
  return store;
}

export function setRateCounterStore(s: RateCounterStore): void {
  store = s;
}
