/**
 * key-auth and basic-auth handlers called directly with a request state made
 * here (no sockets: mutation testing runs these per mutant): header parsing
 * edges, the exact 401s, anonymous handling, key lookup by header/query/body,
 * expiry at the second it expires. The socket-level behaviour is in
 * auth-plugins.test.ts.
 */
import type { IncomingMessage } from 'node:http';
import { describe, expect, it, vi } from 'vitest';
import { hashBasicAuthPassword } from '../../../src/gateway/model/password.js';
import type { Consumer } from '../../../src/gateway/model/types.js';
import { basicAuthHandler, parseBasic } from '../../../src/gateway/plugins/basic-auth/handler.js';
import { MAX_IN_FLIGHT, PER_SOURCE_QUEUED, verificationLoad, verifyPassword } from '../../../src/gateway/plugins/basic-auth/password-check.js';
import { keyAuthHandler, withoutQueryArg } from '../../../src/gateway/plugins/key-auth/handler.js';
import type { CompileEnv, RequestState } from '../../../src/gateway/plugins/types.js';
import { compileEnv } from '../../../src/gateway/proxy/compile.js';
import { secretDigest } from '../../../src/util/constant-time.js';
import { consumer, emptyConfig, keyCredential } from './harness.js';

const alice = { id: 'a1', username: 'alice', custom_id: null } as unknown as Consumer;
const anon = { id: 'n1', username: 'anonymous', custom_id: null } as unknown as Consumer;
const KEY = 'k1-0123456789abcdefghijklmnopqrs';

function env(expiresAt: number | null = null): CompileEnv {
  return {
    consumerById: new Map([[alice.id, alice], [anon.id, anon]]),
    consumerByUsername: new Map([['alice', alice], ['anonymous', anon]]),
    keyCredentialsByDigest: new Map([[secretDigest(KEY), { id: 'cred-1', consumer: alice, expiresAt }]]),
    basicCredentials: new Map([['alice', { username: 'alice', password: hashBasicAuthPassword('pa:ss', alice.id), consumer: alice }]]),
    groupsByConsumer: new Map(),
  };
}

function state(o: { headers?: [string, string][]; query?: string; method?: string; body?: string; authenticated?: boolean } = {}): RequestState {
  const headers = o.headers ?? [];
  const s: RequestState = {
    req: { rawHeaders: headers.flat() } as unknown as IncomingMessage,
    method: o.method ?? 'GET',
    path: '/x',
    query: o.query ?? '',
    scheme: 'https',
    clientIp: '127.0.0.1',
    serviceId: 's1',
    routeId: 'r1',
    hasBody: o.body !== undefined,
    consumer: null,
    credentialId: null,
    authenticated: o.authenticated ?? false,
    upstreamHeaders: null,
    body: null,
    responseHeaders: null,
    header: (name) => headers.find(([n]) => n.toLowerCase() === name)?.[1],
    setUpstreamHeader(name, value) {
      (s.upstreamHeaders ??= new Map()).set(name, value);
    },
    addResponseHeader() {},
    readBody: async () => (o.body === undefined ? Buffer.alloc(0) : Buffer.from(o.body)),
  };
  return s;
}

const b64 = (text: string) => Buffer.from(text).toString('base64');

describe('basic-auth', () => {
  const basic = (conf: Record<string, unknown> = {}, e = env()) =>
    basicAuthHandler.compile({ anonymous: null, hide_credentials: false, realm: 'service', ...conf }, e);

  it('parseBasic: scheme, whitespace, and the first colon', () => {
    expect(parseBasic(`Basic ${b64('u:p:q')}`)).toEqual({ username: 'u', password: 'p:q' });
    expect(parseBasic(`  basic\t ${b64('u:p')}  `)).toEqual({ username: 'u', password: 'p' });
    expect(parseBasic(`Basic ${b64(':p')}`)).toEqual({ username: '', password: 'p' });
    for (const bad of [`Basic ${b64('nocolon')}`, `xBasic ${b64('u:p')}`, `Basic ${b64('u:p')} extra`, `Basic${b64('u:p')}`, `Bearer ${b64('u:p')}`, 'Basic ']) {
      expect(parseBasic(bad), bad).toBeNull();
    }
  });

  it('answers 503 with Retry-After, never a pass, when the password checks are saturated', { timeout: 30_000 }, async () => {
    // this source's share full of other guesses (distinct, so none is answered from memory)
    const stored = hashBasicAuthPassword('other', 'c9');
    const flood = Array.from({ length: MAX_IN_FLIGHT + PER_SOURCE_QUEUED }, (_, i) => verifyPassword({ username: 'alice', password: `flood-${i}-${Math.random()}`, source: '127.0.0.1' }, { consumerId: 'c9', stored }));
    expect(verificationLoad()).toEqual({ inFlight: MAX_IN_FLIGHT, queued: PER_SOURCE_QUEUED });
    const exit = await basic().access!(state({ headers: [['authorization', `Basic ${b64('alice:not-checked-yet')}`]] }));
    expect(exit).toEqual({ status: 503, message: 'Too many authentication attempts in progress', headers: ['Retry-After', '1'] });
    await Promise.all(flood);
  });

  it('is named as Kong has it', () => {
    expect([basic().name, basicAuthHandler.name]).toEqual(['basic-auth', 'basic-auth']);
  });

  it('refuses a missing, unparsable, unknown or wrong credential with the same 401', async () => {
    const exit = { status: 401, message: 'Unauthorized', headers: ['WWW-Authenticate', 'Basic realm="service"'] };
    for (const headers of [[], [['authorization', 'Bearer x']], [['authorization', `Basic ${b64('bob:pa:ss')}`]], [['authorization', `Basic ${b64('alice:wrong')}`]]] as [string, string][][]) {
      expect(await basic().access!(state({ headers })), JSON.stringify(headers)).toEqual(exit);
    }
    expect(((await basic({ realm: 'kong' }).access!(state())) as { headers: string[] }).headers).toEqual(['WWW-Authenticate', 'Basic realm="kong"']);
  });

  it('accepts the right password, Proxy-Authorization first, hiding it when asked', async () => {
    const s = state({ headers: [['proxy-authorization', `Basic ${b64('alice:pa:ss')}`], ['authorization', 'Bearer other']] });
    expect(await basic({ hide_credentials: true }).access!(s)).toBeUndefined();
    expect([s.consumer?.id, s.credentialId, s.authenticated]).toEqual(['a1', 'alice', true]);
    expect(s.upstreamHeaders?.get('proxy-authorization')).toBeNull();
    const kept = state({ headers: [['authorization', `Basic ${b64('alice:pa:ss')}`]] });
    expect(await basic().access!(kept)).toBeUndefined();
    expect(kept.upstreamHeaders?.has('authorization')).toBe(false);
  });

  it('anonymous: used on failure, skipped when already authenticated, 500 when it does not exist', async () => {
    const failed = state();
    expect(await basic({ anonymous: 'anonymous' }).access!(failed)).toBeUndefined();
    expect([failed.consumer?.id, failed.credentialId]).toEqual(['n1', null]);
    const already = state({ authenticated: true });
    expect(await basic({ anonymous: 'anonymous' }).access!(already)).toBeUndefined();
    expect(already.consumer).toBeNull();
    // without anonymous, being authenticated by another plugin does not skip this one
    expect(await basic().access!(state({ authenticated: true }))).toMatchObject({ status: 401 });
    expect(await basic({ anonymous: 'ghost' }).access!(state())).toMatchObject({ status: 500 });
  });
});

describe('key-auth', () => {
  const keyAuth = (conf: Record<string, unknown> = {}, e = env()) =>
    keyAuthHandler.compile({
      key_names: ['apikey'], key_in_header: true, key_in_query: true, key_in_body: false, hide_credentials: false,
      anonymous: null, run_on_preflight: true, realm: null, ...conf,
    }, e);
  const missing = { status: 401, message: 'No API key found in request', headers: ['WWW-Authenticate', 'Key'] };
  const invalid = { status: 401, message: 'Unauthorized', headers: ['WWW-Authenticate', 'Key'] };

  it('is named as Kong has it', () => {
    expect([keyAuth().name, keyAuthHandler.name]).toEqual(['key-auth', 'key-auth']);
  });

  it('header names match case-insensitively and exactly; header before query', async () => {
    const s = state({ headers: [['ApiKey', KEY]], query: 'apikey=wrong' });
    expect(await keyAuth().access!(s)).toBeUndefined();
    expect([s.consumer?.id, s.credentialId]).toEqual(['a1', 'cred-1']);
    expect(await keyAuth().access!(state({ headers: [['apikeyx', KEY]] }))).toEqual(missing);
    expect(await keyAuth().access!(state({ headers: [['apike', KEY]] }))).toEqual(missing);
    expect(await keyAuth({ key_in_header: false }).access!(state({ headers: [['apikey', KEY]] }))).toEqual(missing);
    expect(await keyAuth({ key_in_query: false }).access!(state({ query: `apikey=${KEY}` }))).toEqual(missing);
    expect(await keyAuth().access!(state({ query: `other=1&apikey=${KEY}` }))).toBeUndefined();
    expect(await keyAuth({ key_names: ['a', 'apikey'] }).access!(state({ query: `apikey=${KEY}` }))).toBeUndefined();
  });

  it('a duplicate key, an unknown key, an expired key; the realm in the challenge', async () => {
    expect(await keyAuth().access!(state({ headers: [['apikey', KEY], ['apikey', KEY]] }))).toMatchObject({ message: 'Duplicate API key found' });
    expect(await keyAuth().access!(state({ headers: [['apikey', 'nope']] }))).toEqual(invalid);
    // at exactly the second a key expires it no longer works
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      vi.setSystemTime(1_700_000_000_000);
      expect(await keyAuth({}, env(1_700_000_000)).access!(state({ headers: [['apikey', KEY]] }))).toEqual(invalid);
      expect(await keyAuth({}, env(1_700_000_001)).access!(state({ headers: [['apikey', KEY]] }))).toBeUndefined();
    } finally {
      vi.useRealTimers();
    }
    expect(await keyAuth({ realm: 'fhir' }).access!(state())).toEqual({ ...missing, headers: ['WWW-Authenticate', 'Key realm="fhir"'] });
  });

  it('a snapshot indexes each key by its digest: the key itself is neither a lookup key nor kept, and the digest is no key', async () => {
    const config = emptyConfig();
    const bob = consumer(config, 'bob');
    keyCredential(config, bob, KEY);
    const compiled = compileEnv(config);
    expect([...compiled.keyCredentialsByDigest.keys()]).toEqual([secretDigest(KEY)]);
    expect(JSON.stringify([...compiled.keyCredentialsByDigest])).not.toContain(KEY);
    const s = state({ headers: [['apikey', KEY]] });
    expect(await keyAuth({}, compiled).access!(s)).toBeUndefined();
    expect(s.consumer?.username).toBe('bob');
    // one character off, and the stored digest presented as a key
    expect(await keyAuth({}, compiled).access!(state({ headers: [['apikey', `${KEY.slice(0, -1)}x`]] }))).toEqual(invalid);
    expect(await keyAuth({}, compiled).access!(state({ headers: [['apikey', secretDigest(KEY)]] }))).toEqual(invalid);
  });

  it('hide_credentials removes the key from header and query, keeping the other arguments raw', async () => {
    const s = state({ headers: [['apikey', KEY]], query: 'a=%41&apikey=x&b' });
    expect(await keyAuth({ hide_credentials: true }).access!(s)).toBeUndefined();
    expect(s.upstreamHeaders?.get('apikey')).toBeNull();
    expect(s.query).toBe('a=%41&b');
    const q = state({ headers: [['apikey', KEY]] });
    await keyAuth({ hide_credentials: true }).access!(q);
    expect(q.query).toBe('');
    expect(withoutQueryArg('apikey&x=1&api%6Bey=2&%zz=3&apikey=4', 'apikey')).toBe('x=1&%zz=3');
    expect(withoutQueryArg('=v&apikey=1', '')).toBe('apikey=1');
  });

  it('OPTIONS skips unless run_on_preflight; anonymous on failure, skipped when already authenticated, 500 when missing', async () => {
    expect(await keyAuth({ run_on_preflight: false }).access!(state({ method: 'OPTIONS' }))).toBeUndefined();
    expect(await keyAuth({ run_on_preflight: false }).access!(state({ method: 'GET' }))).toEqual(missing);
    expect(await keyAuth().access!(state({ method: 'OPTIONS' }))).toEqual(missing);
    const a = state();
    expect(await keyAuth({ anonymous: 'anonymous' }).access!(a)).toBeUndefined();
    expect([a.consumer?.id, a.credentialId]).toEqual(['n1', null]);
    const already = state({ authenticated: true });
    expect(await keyAuth({ anonymous: 'anonymous' }).access!(already)).toBeUndefined();
    expect(already.consumer).toBeNull();
    expect(await keyAuth().access!(state({ authenticated: true }))).toEqual(missing);
    expect(await keyAuth({ anonymous: 'ghost' }).access!(state())).toMatchObject({ status: 500 });
  });

  it('keys in a form or JSON body, by content type, hidden from the body when asked', async () => {
    const body = (type: string, text: string, conf: Record<string, unknown> = {}) => {
      const s = state({ headers: [['content-type', type]], body: text, method: 'POST' });
      return { s, result: keyAuth({ key_in_body: true, ...conf }).access!(s) };
    };
    expect(await body('application/x-www-form-urlencoded; charset=utf-8', `a=1&apikey=${KEY}`).result).toBeUndefined();
    expect(await body('Application/JSON', JSON.stringify({ apikey: KEY })).result).toBeUndefined();
    expect(await body('text/plain', `apikey=${KEY}`).result).toEqual(missing);
    expect(await body('application/json', '').result).toEqual(missing);
    expect(await body('application/json', 'not json').result).toEqual(missing);
    expect(await body('application/json', JSON.stringify([KEY])).result).toEqual(missing);
    expect(await body('application/json', 'null').result).toEqual(missing);
    expect(await body('application/json', JSON.stringify({ apikey: 5 })).result).toEqual(missing);
    expect(await body('application/json', JSON.stringify({ apikey: [KEY, KEY] })).result).toMatchObject({ message: 'Duplicate API key found' });
    expect(await body('application/x-www-form-urlencoded', `apikey=${KEY}&apikey=${KEY}`).result).toMatchObject({ message: 'Duplicate API key found' });
    const form = body('application/x-www-form-urlencoded', `a=1&apikey=${KEY}&b=2`, { hide_credentials: true });
    expect(await form.result).toBeUndefined();
    expect(form.s.body?.toString()).toBe('a=1&b=2');
    const json = body('application/json', JSON.stringify({ a: 1, apikey: KEY }), { hide_credentials: true });
    expect(await json.result).toBeUndefined();
    expect(json.s.body?.toString()).toBe('{"a":1}');
    const kept = body('application/json', JSON.stringify({ a: 1, apikey: KEY }));
    await kept.result;
    expect(kept.s.body).toBeNull();
    const none = body('application/json', JSON.stringify({ a: 1 }), { hide_credentials: true });
    expect(await none.result).toEqual(missing);
    expect(none.s.body).toBeNull();
    const noType = state({ body: `apikey=${KEY}`, method: 'POST' });
    expect(await keyAuth({ key_in_body: true }).access!(noType)).toEqual(missing);
  });
});
