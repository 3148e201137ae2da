/**
 * rate-limiting, local policy (Kong's kong/plugins/rate-limiting/handler.lua): fixed windows, counted once per
 * gateway (counters.ts), keyed like Kong's by route, service, identifier and
 * period. X-RateLimit-Limit/Remaining-<Period> for each configured window
 * and RateLimit-Limit/Remaining/Reset for the tightest; over the limit → 429
 * with Retry-After.
 */
import type { AccessResult, CompileEnv, Exit, PluginHandler, PluginRunner, RequestState } from '../types.js';
import { take, type TakeResult } from './counters.js';
import { windowOf } from './windows.js';
import { PERIODS, type Period, type RateLimitingConfig } from './schema.js';

const TITLE: Record<Period, string> = { second: 'Second', minute: 'Minute', hour: 'Hour', day: 'Day', month: 'Month', year: 'Year' };

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
  const limits = periods.map((p) => conf[p] as number);

  function respond(state: RequestState, now: number, r: TakeResult): AccessResult {
    const stop: Period | null = r.stop < 0 ? null : (periods[r.stop] as Period);
    let limit = -1;
    let remaining = 0;
    let reset = 0;
    const headers: string[] = [];
    periods.forEach((p, i) => {
      const max = limits[i] as number;
      const left = Math.max(0, max - (r.counts[i] as number) - (stop === null || stop === p ? 1 : 0));
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
      const exit: Exit = { status: conf.error_code, message: conf.error_message, headers: conf.hide_client_headers ? ['Retry-After', String(reset)] : headers };
      return exit;
    }
    if (!conf.hide_client_headers) for (let i = 0; i < headers.length; i += 2) state.addResponseHeader(headers[i] as string, headers[i + 1] as string);
  }

  return {
    name: 'rate-limiting',
    access(state): AccessResult {
      const id = identifier(conf, state);
      const now = Date.now();
      const base = `${state.routeId}:${state.serviceId}:${id}:`;
      const keys = periods.map((p) => base + p);
      const starts = periods.map((p) => windowOf(p, now)[0]);
      return respond(state, now, take({ keys, starts, limits }));
    },
  };
}

export const rateLimitingHandler: PluginHandler = { name: 'rate-limiting', compile };
