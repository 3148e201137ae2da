/**
 * basic-auth (Kong's kong/plugins/basic-auth/access.lua): Proxy-Authorization first, then Authorization;
 * split at the first ':'; 401 "Unauthorized" with `WWW-Authenticate: Basic
 * realm="…"` whether the header is missing or wrong (3.6+). Passwords are
 * verified against the stored hash (model/password.ts), never logged; an
 * unknown username goes through the same check (verify.ts) and gets the same
 * 401, in the same time, as a known one with a wrong password.
 */
import { verifyPassword } from './password-check.js';
import { anonymousMissing, findAnonymous, setConsumer } from '../consumer-headers.js';
import type { AccessResult, CompileEnv, Exit, PluginHandler, PluginRunner, RequestState } from '../types.js';
import type { BasicAuthConfig } from './schema.js';

const BASIC = /^\s*[Bb]asic\s+(\S+)\s*$/;

/** Username and password from a `Basic` header value, or null. */
export function parseBasic(value: string): { username: string; password: string } | null {
  const m = BASIC.exec(value);
  if (!m) return null;
  const decoded = Buffer.from(m[1] as string, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return null;
  return { username: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}

function compile(raw: Readonly<Record<string, unknown>>, env: CompileEnv): PluginRunner {
  const conf = raw as unknown as BasicAuthConfig;
  // Too many password checks waiting from this source or for this username (verify.ts): retry shortly; never an answer about the password.
  const busy: Exit = { status: 503, message: 'Too many authentication attempts in progress', headers: ['Retry-After', '1'] };
  const unauthorized: Exit = { status: 401, message: 'Unauthorized', headers: ['WWW-Authenticate', `Basic realm="${conf.realm}"`] };

  async function authenticate(state: RequestState): Promise<Exit | null> {
    let headerName = 'proxy-authorization';
    let value = state.header(headerName);
    if (value === undefined) {
      headerName = 'authorization';
      value = state.header(headerName);
    }
    if (value === undefined) return unauthorized;
    const given = parseBasic(value);
    if (!given) return unauthorized;
    const cred = env.basicCredentials.get(given.username);
    const stored = cred === undefined ? null : { consumerId: cred.consumer.id, stored: cred.password };
    const verdict = await verifyPassword({ ...given, source: state.clientIp }, stored);
    if (verdict === 'busy') return busy;
    if (verdict === 'bad' || cred === undefined) return unauthorized;
    if (conf.hide_credentials) state.setUpstreamHeader(headerName, null);
    setConsumer(state, cred.consumer, cred.username);
    return null;
  }

  return {
    name: 'basic-auth',
    async access(state): Promise<AccessResult> {
      if (conf.anonymous !== null && state.authenticated) return;
      const exit = await authenticate(state);
      if (!exit) return;
      if (conf.anonymous === null) return exit;
      const anon = findAnonymous(env, conf.anonymous);
      if (!anon) return anonymousMissing(conf.anonymous);
      setConsumer(state, anon, null);
    },
  };
}

export const basicAuthHandler: PluginHandler = { name: 'basic-auth', compile };
