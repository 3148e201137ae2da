/**
 * key-auth (Kong's kong/plugins/key-auth/handler.lua): header, then query, then body per key name; missing
 * vs invalid vs duplicate keys; WWW-Authenticate on every 401 (3.7+);
 * hide_credentials; anonymous. The credentials are indexed per snapshot by the
 * SHA-256 digest of their key (util/constant-time.ts secretDigest), so the
 * lookup never compares the caller's key with a stored one. Keys are never logged.
 */
import { secretDigest } from '../../../util/constant-time.js';
import { anonymousMissing, findAnonymous, setConsumer } from '../consumer-headers.js';
import type { AccessResult, CompileEnv, Exit, PluginHandler, PluginRunner, RequestState } from '../types.js';
import type { KeyAuthConfig } from './schema.js';

const BODY_LIMIT = 16 * 1024 * 1024;
const DUPLICATE = 'Duplicate API key found';
const MISSING = 'No API key found in request';
const INVALID = 'Unauthorized';

/** Values of a request header from the raw list (duplicates kept apart). */
function rawValues(state: RequestState, lower: string): string[] | undefined {
  const raw = state.req.rawHeaders;
  let out: string[] | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string;
    if (name.length === lower.length && name.toLowerCase() === lower) (out ??= []).push(raw[i + 1] as string);
  }
  return out;
}

function queryValues(query: string, name: string): string[] | undefined {
  if (query === '') return undefined;
  const all = new URLSearchParams(query).getAll(name);
  return all.length ? all : undefined;
}

/** Removes every `name` argument, keeping the others raw and in order. */
export function withoutQueryArg(query: string, name: string): string {
  return query
    .split('&')
    .filter((part) => {
      const eq = part.indexOf('=');
      const key = eq < 0 ? part : part.slice(0, eq);
      try {
        return decodeURIComponent(key.replace(/\+/g, ' ')) !== name;
      } catch {
        return true;
      }
    })
    .join('&');
}

type BodyKind = 'form' | 'json' | null;

function bodyKind(state: RequestState): BodyKind {
  const type = state.header('content-type')?.toLowerCase() ?? '';
  if (type.startsWith('application/x-www-form-urlencoded')) return 'form';
  if (type.startsWith('application/json')) return 'json';
  return null;
}

async function bodyValue(state: RequestState, name: string, hide: boolean): Promise<string | string[] | undefined> {
  const kind = bodyKind(state);
  if (!kind) return undefined;
  const body = state.body ?? (await state.readBody(BODY_LIMIT));
  if (!body || body.length === 0) return undefined;
  if (kind === 'form') {
    const params = new URLSearchParams(body.toString('utf8'));
    const all = params.getAll(name);
    if (hide && all.length) state.body = Buffer.from(withoutQueryArg(body.toString('utf8'), name));
    return all.length === 0 ? undefined : all.length === 1 ? all[0] : all;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    return undefined;
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) return undefined;
  const value = (parsed as Record<string, unknown>)[name];
  if (hide && value !== undefined) {
    delete (parsed as Record<string, unknown>)[name];
    state.body = Buffer.from(JSON.stringify(parsed));
  }
  return typeof value === 'string' ? value : Array.isArray(value) ? (value as string[]) : undefined;
}

function compile(raw: Readonly<Record<string, unknown>>, env: CompileEnv): PluginRunner {
  const conf = raw as unknown as KeyAuthConfig;
  const challenge = ['WWW-Authenticate', conf.realm === null ? 'Key' : `Key realm="${conf.realm}"`];
  const fail = (message: string): Exit => ({ status: 401, message, headers: challenge });
  const names = conf.key_names.map((n) => n.toLowerCase());

  function pick(state: RequestState, i: number, v: string | string[]): string | Exit {
    if (Array.isArray(v)) {
      if (v.length > 1) return fail(DUPLICATE);
      v = v[0] as string;
    }
    if (conf.hide_credentials) {
      // Kong's key-auth/handler.lua (Kong #4366): removed from header and query alike.
      state.setUpstreamHeader(names[i] as string, null);
      if (state.query !== '') state.query = withoutQueryArg(state.query, conf.key_names[i] as string);
    }
    return v;
  }

  function headerOrQuery(state: RequestState, i: number): string[] | undefined {
    let v: string[] | undefined;
    if (conf.key_in_header) v = rawValues(state, names[i] as string);
    if (v === undefined && conf.key_in_query) v = queryValues(state.query, conf.key_names[i] as string);
    return v;
  }

  /** The hot path: no body lookup, no promise. */
  function findKeySync(state: RequestState): string | Exit {
    for (let i = 0; i < names.length; i++) {
      const v = headerOrQuery(state, i);
      if (v !== undefined) return pick(state, i, v);
    }
    return '';
  }

  async function findKeyWithBody(state: RequestState): Promise<string | Exit> {
    for (let i = 0; i < names.length; i++) {
      const v = headerOrQuery(state, i) ?? (await bodyValue(state, conf.key_names[i] as string, conf.hide_credentials));
      if (v !== undefined) return pick(state, i, v);
    }
    return '';
  }

  function check(state: RequestState, key: string | Exit): AccessResult {
    let exit: Exit | null = null;
    if (typeof key !== 'string') exit = key;
    else if (key === '') exit = fail(MISSING);
    else {
      const cred = env.keyCredentialsByDigest.get(secretDigest(key));
      if (!cred || (cred.expiresAt !== null && cred.expiresAt <= Date.now() / 1000)) {
        exit = fail(INVALID);
      } else {
        setConsumer(state, cred.consumer, cred.id);
        return;
      }
    }
    if (conf.anonymous === null) return exit;
    const anon = findAnonymous(env, conf.anonymous);
    if (!anon) return anonymousMissing(conf.anonymous);
    setConsumer(state, anon, null);
  }

  return {
    name: 'key-auth',
    access(state): AccessResult | Promise<AccessResult> {
      if (!conf.run_on_preflight && state.method === 'OPTIONS') return;
      if (conf.anonymous !== null && state.authenticated) return;
      if (conf.key_in_body) return findKeyWithBody(state).then((key) => check(state, key));
      return check(state, findKeySync(state));
    },
  };
}

export const keyAuthHandler: PluginHandler = { name: 'key-auth', compile };
