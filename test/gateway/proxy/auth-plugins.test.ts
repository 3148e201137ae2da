/** key-auth and basic-auth over real sockets: statuses, messages, headers (Kong's key-auth/handler.lua, basic-auth/access.lua). */
import { describe, expect, it } from 'vitest';
import { hashBasicAuthPassword } from '../../../src/gateway/model/password.js';
import { consumer, get, keyCredential, plugin, route, service, useProxy, type Echo } from './harness.js';

const KEY = 'k1-0123456789abcdefghijklmnopqrs';

describe('auth plugins', () => {
  let alice: ReturnType<typeof consumer>;
  let cred: ReturnType<typeof keyCredential>;
  let anon: ReturnType<typeof consumer>;

  const gw = useProxy((c, upstreamPort) => {
    const s = service(c, { host: '127.0.0.1', port: upstreamPort, path: '/fhir' });
    alice = consumer(c, 'alice', 'alice-cid');
    anon = consumer(c, 'anonymous');
    cred = keyCredential(c, alice, KEY);
    keyCredential(c, alice, 'expired-key', 1).created_at -= 10;
    plugin(c, 'key-auth', {}, { route: route(c, s, { paths: ['/key'] }) });
    plugin(c, 'key-auth', { hide_credentials: true, key_names: ['apikey', 'x-key'] }, { route: route(c, s, { paths: ['/hidden'] }) });
    plugin(c, 'key-auth', { realm: 'fhir', run_on_preflight: false }, { route: route(c, s, { paths: ['/realm'] }) });
    plugin(c, 'key-auth', { key_in_body: true, hide_credentials: true }, { route: route(c, s, { paths: ['/body'] }) });
    plugin(c, 'key-auth', { anonymous: 'anonymous' }, { route: route(c, s, { paths: ['/anon'] }) });
    plugin(c, 'key-auth', { anonymous: 'ghost' }, { route: route(c, s, { paths: ['/ghost'] }) });
    c.basicauth_credentials.push({ id: 'b5a0ac0c-8c5a-4bb8-9d7e-1b1f34f6c2a1', created_at: 1, consumer: { id: alice.id }, username: 'alice', password: hashBasicAuthPassword('pa:ss', alice.id), tags: null });
    plugin(c, 'basic-auth', {}, { route: route(c, s, { paths: ['/basic'] }) });
    plugin(c, 'basic-auth', { hide_credentials: true, realm: 'kong' }, { route: route(c, s, { paths: ['/basic-hidden'] }) });
  });

  const basic = (user: string, pass: string) => `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}`;

  it('key-auth: missing, invalid, duplicate, expired', async () => {
    const missing = await get(`${gw.url}/key/x`);
    expect([missing.status, missing.json().message, missing.headers['www-authenticate']]).toEqual([401, 'No API key found in request', 'Key']);
    expect(missing.json().request_id).toBe(missing.headers['x-kong-request-id']);
    const empty = await get(`${gw.url}/key/x`, { headers: { apikey: '' } });
    expect(empty.json().message).toBe('No API key found in request');
    const bad = await get(`${gw.url}/key/x?apikey=nope`);
    expect([bad.status, bad.json().message, bad.headers['www-authenticate']]).toEqual([401, 'Unauthorized', 'Key']);
    const dup = await get(`${gw.url}/key/x?apikey=${KEY}&apikey=${KEY}`);
    expect([dup.status, dup.json().message]).toEqual([401, 'Duplicate API key found']);
    const expired = await get(`${gw.url}/key/x`, { headers: { apikey: 'expired-key' } });
    expect(expired.json().message).toBe('Unauthorized');
    const realm = await get(`${gw.url}/realm/x`);
    expect(realm.headers['www-authenticate']).toBe('Key realm="fhir"');
  });

  it('key-auth: success sets consumer headers and keeps the key unless hidden', async () => {
    const ok = await get(`${gw.url}/key/x?a=1`, { headers: { apikey: KEY, 'x-anonymous-consumer': 'true' } });
    expect(ok.status).toBe(200);
    const h = (ok.json() as unknown as Echo).headers;
    expect(h['x-consumer-id']).toBe(alice.id);
    expect(h['x-consumer-username']).toBe('alice');
    expect(h['x-consumer-custom-id']).toBe('alice-cid');
    expect(h['x-credential-identifier']).toBe(cred.id);
    expect(h['x-anonymous-consumer']).toBeUndefined();
    expect(h.apikey).toBe(KEY);
    const hidden = await get(`${gw.url}/hidden/x?a=1&apikey=${KEY}&b=2`, { headers: { 'x-key': 'other' } });
    const e = hidden.json() as unknown as Echo;
    expect(e.url).toBe('/fhir/x?a=1&b=2');
    expect(e.headers.apikey).toBeUndefined();
    const viaHeader = await get(`${gw.url}/hidden/x?z=9`, { headers: { 'X-Key': KEY } });
    expect((viaHeader.json() as unknown as Echo).headers['x-key']).toBeUndefined();
  });

  it('key-auth: key in a form or JSON body, hidden from the upstream body', async () => {
    const form = await get(`${gw.url}/body/x`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: `a=1&apikey=${KEY}&b=2` });
    expect(form.status).toBe(200);
    expect((form.json() as unknown as Echo).body).toBe('a=1&b=2');
    const json = await get(`${gw.url}/body/x`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ apikey: KEY, n: 1 }) });
    expect(JSON.parse((json.json() as unknown as Echo).body)).toEqual({ n: 1 });
  });

  it('key-auth: run_on_preflight false lets OPTIONS through', async () => {
    expect((await get(`${gw.url}/realm/x`, { method: 'OPTIONS' })).status).toBe(200);
    expect((await get(`${gw.url}/key/x`, { method: 'OPTIONS' })).status).toBe(401);
  });

  it('key-auth: anonymous consumer on failure; missing anonymous → 500', async () => {
    const r = await get(`${gw.url}/anon/x`);
    expect(r.status).toBe(200);
    const h = (r.json() as unknown as Echo).headers;
    expect([h['x-consumer-id'], h['x-anonymous-consumer'], h['x-credential-identifier']]).toEqual([anon.id, 'true', undefined]);
    const ghost = await get(`${gw.url}/ghost/x`);
    expect([ghost.status, ghost.json().message]).toEqual([500, "anonymous consumer ghost is configured but doesn't exist"]);
  });

  it('basic-auth: missing and wrong credentials, realm header', async () => {
    const none = await get(`${gw.url}/basic/x`);
    expect([none.status, none.json().message, none.headers['www-authenticate']]).toEqual([401, 'Unauthorized', 'Basic realm="service"']);
    const wrong = await get(`${gw.url}/basic/x`, { headers: { authorization: basic('alice', 'nope') } });
    expect([wrong.status, wrong.headers['www-authenticate']]).toEqual([401, 'Basic realm="service"']);
    const unknown = await get(`${gw.url}/basic/x`, { headers: { authorization: basic('bob', 'pa:ss') } });
    expect(unknown.status).toBe(401);
  });

  it('basic-auth: password split at the first colon, Proxy-Authorization first, hide_credentials', async () => {
    const ok = await get(`${gw.url}/basic/x`, { headers: { authorization: basic('alice', 'pa:ss') } });
    expect(ok.status).toBe(200);
    const h = (ok.json() as unknown as Echo).headers;
    expect([h['x-consumer-id'], h['x-credential-identifier'], h.authorization]).toEqual([alice.id, 'alice', basic('alice', 'pa:ss')]);
    const proxyFirst = await get(`${gw.url}/basic/x`, { headers: { 'proxy-authorization': basic('alice', 'nope'), authorization: basic('alice', 'pa:ss') } });
    expect(proxyFirst.status).toBe(401);
    const hidden = await get(`${gw.url}/basic-hidden/x`, { headers: { authorization: basic('alice', 'pa:ss') } });
    expect((hidden.json() as unknown as Echo).headers.authorization).toBeUndefined();
    const realm = await get(`${gw.url}/basic-hidden/x`);
    expect(realm.headers['www-authenticate']).toBe('Basic realm="kong"');
  });
});
