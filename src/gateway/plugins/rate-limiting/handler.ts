/**
 * rate-limiting, local policy (kong.md §2): fixed windows counted in this
 * process; X-RateLimit-Limit/Remaining-<Period> for each configured window
 * and RateLimit-Limit/Remaining/Reset for the tightest; over the limit → 429
 * with Retry-After. With several proxy workers each counts on its own
 * (documented in docs/gateway-proxy.md).
 */
import type { AccessResult, CompileEnv, PluginHandler, PluginRunner, RequestState } from '../types.js';
import { windowOf } from './windows.js';
import { PERIODS, type Period, type RateLimitingConfig } from './schema.js';

const TITLE: Record<Period, string> = { second: 'Second', minute: 'Minute', hour: 'Hour', day: 'Day', month: 'Month', year: 'Year' };
const MAX_KEYS = 100_000;

interface Counter {
  start: number;
  count: number;
}

function identifier(conf: RateLimitingConfig, state: RequestState): string {
  switch (conf.limit_by) {
    case 'consumer':
      return state.consumer?.id ?? state.clientIp;
    case 'credential':
      return state.credentialId ?? state.clientIp;
    case 'service':
      return state.serviceId;
    case 'header':
      return state.header((conf.header_name as string).toLowerCase()) ?? state.clientIp;
    case 'path':
      return state.path === conf.path ? state.path : state.clientIp;
    default:
      return state.clientIp;
  }
}

function compile(raw: Readonly<Record<string, unknown>>, _env: CompileEnv): PluginRunner {
  const conf = raw as unknown as RateLimitingConfig;
  const periods = PERIODS.filter((p) => conf[p] !== null);
  const counters = new Map<string, Counter>();

  function counter(key: string, now: number, period: Period): Counter {
    const [start] = windowOf(period, now);
    let c = counters.get(key);
    if (c === undefined) {
      if (counters.size >= MAX_KEYS) counters.clear();
      c = { start, count: 0 };
      counters.set(key, c);
    } else if (c.start !== start) {
      c.start = start;
      c.count = 0;
    }
    return c;
  }

  return {
    name: 'rate-limiting',
    access(state): AccessResult {
      const id = identifier(conf, state);
      const now = Date.now();
      const used: Counter[] = [];
      let stop: Period | null = null;
      for (const p of periods) {
        const c = counter(`${p}:${id}`, now, p);
        used.push(c);
        if (stop === null && c.count >= (conf[p] as number)) stop = p;
      }
      let limit = -1;
      let remaining = 0;
      let reset = 0;
      const headers: string[] = [];
      periods.forEach((p, i) => {
        const c = used[i] as Counter;
        const max = conf[p] as number;
        const left = Math.max(0, max - c.count - (stop === null || stop === p ? 1 : 0));
        if (limit < 0 || left < remaining || (left === remaining && max > limit)) {
          limit = max;
          remaining = left;
          reset = Math.max(1, Math.ceil((windowOf(p, now)[1] - now) / 1000));
        }
        headers.push(`X-RateLimit-Limit-${TITLE[p]}`, String(max), `X-RateLimit-Remaining-${TITLE[p]}`, String(left));
      });
      headers.push('RateLimit-Limit', String(limit), 'RateLimit-Remaining', String(remaining), 'RateLimit-Reset', String(reset));
      if (stop !== null) {
        headers.push('Retry-After', String(reset));
        return { status: conf.error_code, message: conf.error_message, headers: conf.hide_client_headers ? ['Retry-After', String(reset)] : headers };
      }
      for (const c of used) c.count++;
      if (!conf.hide_client_headers) for (let i = 0; i < headers.length; i += 2) state.addResponseHeader(headers[i] as string, headers[i + 1] as string);
    },
  };
}

export const rateLimitingHandler: PluginHandler = { name: 'rate-limiting', compile };
