/**
 * cors (Kong's kong/plugins/cors/handler.lua): answers preflights (OPTIONS + Origin +
 * Access-Control-Request-Method) with 200 and no body before any auth plugin
 * runs, and adds ACAO/ACAC/Expose-Headers/Vary to every other response,
 * errors included. Origin rules are precomputed per plugin instance.
 */
import { RE2JS } from 're2js';
import type { AccessResult, CompileEnv, PluginHandler, PluginRunner, RequestState } from '../types.js';
import type { CorsConfig } from './schema.js';

const PLAIN = /^[A-Za-z0-9.:/-]+$/;
const DEFAULT_PORTS: Record<string, string> = { 'http:': '80', 'https:': '443' };

/** `scheme://host[:non-default-port]`, lower-cased; the input when unparsable. */
export function normaliseOrigin(origin: string): string {
  try {
    const u = new URL(origin);
    const port = u.port && u.port !== DEFAULT_PORTS[u.protocol] ? `:${u.port}` : '';
    return `${u.protocol}//${u.hostname}${port}`;
  } catch {
    return origin;
  }
}

type Matcher = { plain: string } | { regex: RE2JS; full: boolean };

interface OriginRules {
  /** Empty or ["*"]: ACAO * (no Vary). */
  allowAll: boolean;
  /** One plain entry: that value whatever the request's Origin. */
  fixed: string | null;
  /** Several entries including '*': ACAO * when an Origin is sent. */
  hasWildcard: boolean;
  matchers: Matcher[];
}

function rules(origins: string[] | null): OriginRules {
  const list = origins ?? [];
  if (list.length === 0 || (list.length === 1 && list[0] === '*')) return { allowAll: true, fixed: null, hasWildcard: false, matchers: [] };
  if (list.length === 1 && PLAIN.test(list[0] as string)) return { allowAll: false, fixed: list[0] as string, hasWildcard: false, matchers: [] };
  const matchers: Matcher[] = [];
  for (const entry of list) {
    if (entry === '*') continue;
    matchers.push(PLAIN.test(entry) ? { plain: normaliseOrigin(entry) } : { regex: RE2JS.compile(`${entry}$`), full: entry.includes(':') });
  }
  return { allowAll: false, fixed: null, hasWildcard: list.includes('*'), matchers };
}

/** Sets ACAO (and Vary); returns true when the answer is the wildcard. */
function origin(r: OriginRules, state: RequestState, out: string[]): boolean {
  if (r.allowAll) {
    out.push('Access-Control-Allow-Origin', '*');
    return true;
  }
  out.push('Vary', 'Origin');
  if (r.fixed !== null) {
    out.push('Access-Control-Allow-Origin', r.fixed);
    return false;
  }
  const reqOrigin = state.header('origin');
  if (!reqOrigin) return false;
  if (r.hasWildcard) {
    out.push('Access-Control-Allow-Origin', '*');
    return true;
  }
  const normalised = normaliseOrigin(reqOrigin);
  let host = normalised;
  const sep = normalised.indexOf('//');
  if (sep >= 0) host = normalised.slice(sep + 2).replace(/:\d+$/, '');
  for (const m of r.matchers) {
    const ok = 'plain' in m ? m.plain === normalised : m.regex.matcher(m.full ? normalised : host).find();
    if (ok) {
      out.push('Access-Control-Allow-Origin', normalised);
      return false;
    }
  }
  return false;
}

function credentials(conf: CorsConfig, allowAll: boolean, state: RequestState, out: string[]): void {
  if (!conf.credentials) return;
  if (!allowAll) {
    out.push('Access-Control-Allow-Credentials', 'true');
    return;
  }
  const reqOrigin = state.header('origin');
  if (!reqOrigin) return;
  // A wildcard may not carry credentials: echo the Origin instead (Kong's cors/handler.lua).
  const i = out.indexOf('Access-Control-Allow-Origin');
  if (i >= 0) out[i + 1] = reqOrigin;
  out.push('Access-Control-Allow-Credentials', 'true', 'Vary', 'Origin');
}

function compile(raw: Readonly<Record<string, unknown>>, _env: CompileEnv): PluginRunner {
  const conf = raw as unknown as CorsConfig;
  const r = rules(conf.origins);
  const methods = conf.methods.join(',');
  const allowHeaders = conf.headers && conf.headers.length ? conf.headers.join(',') : null;
  const exposed = conf.exposed_headers && conf.exposed_headers.length ? conf.exposed_headers.join(',') : null;

  return {
    name: 'cors',
    access(state): AccessResult {
      if (state.method !== 'OPTIONS' || !state.header('origin') || !state.header('access-control-request-method')) return;
      if (conf.preflight_continue) return;
      const headers: string[] = [];
      const allowAll = origin(r, state, headers);
      credentials(conf, allowAll, state, headers);
      const echo = allowHeaders ?? state.header('access-control-request-headers');
      if (echo) headers.push('Access-Control-Allow-Headers', echo);
      headers.push('Access-Control-Allow-Methods', methods);
      if (conf.max_age !== null) headers.push('Access-Control-Max-Age', String(conf.max_age));
      if (conf.private_network && state.header('access-control-request-private-network') === 'true') {
        headers.push('Access-Control-Allow-Private-Network', 'true');
      }
      // status 200 with an empty message: the proxy sends no body for it.
      return { status: 200, message: '', headers };
    },
    header(state, out): void {
      if (state.method === 'OPTIONS' && !conf.preflight_continue && state.header('origin') && state.header('access-control-request-method')) return;
      const allowAll = origin(r, state, out);
      credentials(conf, allowAll, state, out);
      if (exposed) out.push('Access-Control-Expose-Headers', exposed);
    },
  };
}

export const corsHandler: PluginHandler = { name: 'cors', compile };
