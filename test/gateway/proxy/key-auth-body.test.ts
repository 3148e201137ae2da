/**
 * key-auth with `key_in_body` (Kong's key-auth/handler.lua reads the body only
 * for form and JSON content types): what counts as a key in a body, and what
 * does not. The handler is called directly (mutation testing runs these per
 * mutant); the socket-level behaviour is in auth-plugins.test.ts.
 */
import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import type { Consumer } from '../../../src/gateway/model/types.js';
import { keyAuthHandler } from '../../../src/gateway/plugins/key-auth/handler.js';
import type { CompileEnv, RequestState } from '../../../src/gateway/plugins/types.js';
import { secretDigest } from '../../../src/util/constant-time.js';

const alice = { id: 'a1', username: 'alice', custom_id: null } as unknown as Consumer;
const anon = { id: 'n1', username: 'anonymous', custom_id: null } as unknown as Consumer;
const KEY = 'k1-body-0123456789abcdefghijklm';
const env: CompileEnv = {
  consumerById: new Map([[alice.id, alice], [anon.id, anon]]),
  consumerByUsername: new Map([['alice', alice], ['anonymous', anon]]),
  keyCredentialsByDigest: new Map([[secretDigest(KEY), { id: 'cred-1', consumer: alice, expiresAt: null }]]),
  basicCredentials: new Map(),
  groupsByConsumer: new Map(),
};
const missing = { status: 401, message: 'No API key found in request', headers: ['WWW-Authenticate', 'Key'] };

function post(type: string | null, body: string, query = ''): RequestState {
  const headers: [string, string][] = type === null ? [] : [['content-type', type]];
  const s: RequestState = {
    req: { rawHeaders: headers.flat() } as unknown as IncomingMessage,
    method: 'POST', path: '/x', query, scheme: 'https', clientIp: '127.0.0.1', serviceId: 's1', routeId: 'r1', hasBody: true,
    consumer: null, credentialId: null, authenticated: false, upstreamHeaders: null, body: null, responseHeaders: null,
    header: (name) => headers.find(([n]) => n.toLowerCase() === name)?.[1],
    setUpstreamHeader(name, value) {
      (s.upstreamHeaders ??= new Map()).set(name, value);
    },
    addResponseHeader() {},
    readBody: async () => Buffer.from(body),
  };
  return s;
}

const keyAuth = (conf: Record<string, unknown> = {}) =>
  keyAuthHandler.compile({
    key_names: ['apikey'], key_in_header: true, key_in_query: true, key_in_body: true, hide_credentials: false,
    anonymous: null, run_on_preflight: true, realm: null, ...conf,
  }, env);

describe('key-auth: keys in the body', () => {
  it('reads a JSON body only when it is sent as JSON', async () => {
    const json = JSON.stringify({ apikey: KEY });
    expect(await keyAuth().access!(post('application/json; charset=utf-8', json))).toBeUndefined();
    for (const type of ['text/plain', 'application/fhir+json', null]) {
      expect(await keyAuth().access!(post(type, json)), String(type)).toEqual(missing);
    }
  });

  it('never reads the body unless key_in_body is set', async () => {
    expect(await keyAuth({ key_in_body: false }).access!(post('application/json', JSON.stringify({ apikey: KEY })))).toEqual(missing);
  });

  it('a form body without the key, or with an empty value list, is a missing key', async () => {
    expect(await keyAuth().access!(post('application/x-www-form-urlencoded', 'a=1&b=2'))).toEqual(missing);
    expect(await keyAuth().access!(post('application/x-www-form-urlencoded', ''))).toEqual(missing);
  });

  it('leaves a form body alone unless hide_credentials is set and the key is in it', async () => {
    const kept = post('application/x-www-form-urlencoded', `a=1&apikey=${KEY}`);
    expect(await keyAuth().access!(kept)).toBeUndefined();
    expect(kept.body).toBeNull();
    const none = post('application/x-www-form-urlencoded', 'a=1', `apikey=${KEY}`);
    expect(await keyAuth({ hide_credentials: true }).access!(none)).toBeUndefined();
    expect(none.body).toBeNull();
    expect(none.query).toBe('');
  });

  it('a key found in the header is used without reading the body', async () => {
    const s = post('application/json', '{"apikey":"other"}');
    s.readBody = async () => {
      throw new Error('body read');
    };
    const header = { ...s, req: { rawHeaders: ['apikey', KEY] } as unknown as IncomingMessage };
    expect(await keyAuth().access!(header)).toBeUndefined();
  });

  it('anonymous stands in when the body holds no key, and the real consumer when it does', async () => {
    const a = post('application/json', '{"x":1}');
    expect(await keyAuth({ anonymous: 'anonymous' }).access!(a)).toBeUndefined();
    expect([a.consumer?.id, a.credentialId]).toEqual(['n1', null]);
    const k = post('application/json', JSON.stringify({ apikey: KEY }));
    expect(await keyAuth({ anonymous: 'anonymous' }).access!(k)).toBeUndefined();
    expect([k.consumer?.id, k.credentialId]).toEqual(['a1', 'cred-1']);
  });

  it('a body key that is not a string or a list of strings is no key', async () => {
    for (const body of ['{"apikey":{"k":"v"}}', '{"apikey":true}', '{"apikey":null}', '"apikey"', '7']) {
      expect(await keyAuth().access!(post('application/json', body)), body).toEqual(missing);
    }
  });
});
