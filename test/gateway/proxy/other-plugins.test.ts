/** cors, acl, ip-restriction, rate-limiting, request-size-limiting, scoping precedence and run order (Kong's kong/plugins/<name>/, kong/runloop/plugins_iterator.lua). */
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { consumer, get, keyCredential, plugin, route, service, useProxy, type Echo } from './harness.js';

describe('cors, acl, ip-restriction, rate-limiting, request-size-limiting', () => {
  const gw = useProxy((c, upstreamPort) => {
    const s = service(c, { host: '127.0.0.1', port: upstreamPort });
    const alice = consumer(c, 'alice');
    const bob = consumer(c, 'bob');
    keyCredential(c, alice, 'alice-key');
    keyCredential(c, bob, 'bob-key');
    c.acls.push({ id: 'a0a0a0a0-0000-4000-8000-000000000001', created_at: 1, consumer: { id: alice.id }, group: 'readers', tags: null });
    c.acls.push({ id: 'a0a0a0a0-0000-4000-8000-000000000002', created_at: 1, consumer: { id: alice.id }, group: 'staff', tags: null });

    const corsRoute = route(c, s, { paths: ['/cors'] });
    plugin(c, 'cors', { origins: ['https://app.example', 'https://.*\\.partner\\.example'], credentials: true, exposed_headers: ['X-Total'], max_age: 600 }, { route: corsRoute });
    plugin(c, 'key-auth', {}, { route: corsRoute });
    plugin(c, 'cors', {}, { route: route(c, s, { paths: ['/cors-any'] }) });
    plugin(c, 'cors', { origins: ['https://only.example'] }, { route: route(c, s, { paths: ['/cors-one'] }) });

    const aclRoute = route(c, s, { paths: ['/acl'] });
    plugin(c, 'key-auth', {}, { route: aclRoute });
    plugin(c, 'acl', { allow: ['readers'] }, { route: aclRoute });
    plugin(c, 'acl', { deny: ['readers'] }, { route: route(c, s, { paths: ['/acl-noauth'] }) });

    const ipRoute = route(c, s, { paths: ['/ip'] });
    plugin(c, 'ip-restriction', { deny: ['127.0.0.0/8'] }, { route: ipRoute });
    plugin(c, 'ip-restriction', { allow: ['127.0.0.1'] }, { route: route(c, s, { paths: ['/ip-ok'] }) });
    const orderRoute = route(c, s, { paths: ['/order'] });
    plugin(c, 'ip-restriction', { deny: ['127.0.0.1'], status: 451, message: 'go away' }, { route: orderRoute });
    plugin(c, 'key-auth', {}, { route: orderRoute });

    plugin(c, 'rate-limiting', { minute: 2, hour: 100 }, { route: route(c, s, { paths: ['/rl'] }) });
    const rlConsumer = route(c, s, { paths: ['/rl-consumer'] });
    plugin(c, 'key-auth', {}, { route: rlConsumer });
    plugin(c, 'rate-limiting', { minute: 100 }, { route: rlConsumer });
    plugin(c, 'rate-limiting', { minute: 1 }, { consumer: bob }); // Consumer beats Route? no: Route+Service is not set here, so C (4) > R (3)

    plugin(c, 'request-size-limiting', { allowed_payload_size: 10, size_unit: 'bytes' }, { route: route(c, s, { paths: ['/size'] }) });
    plugin(c, 'request-size-limiting', { allowed_payload_size: 10, size_unit: 'bytes', require_content_length: true }, { route: route(c, s, { paths: ['/size-cl'] }) });
  });

  it('cors preflight: 200, empty, before auth', async () => {
    const r = await get(`${gw.url}/cors/x`, { method: 'OPTIONS', headers: { origin: 'https://app.example', 'access-control-request-method': 'GET', 'access-control-request-headers': 'apikey' } });
    expect(r.status).toBe(200);
    expect(r.text).toBe('');
    expect(r.headers['content-length']).toBe('0');
    expect(r.headers['access-control-allow-origin']).toBe('https://app.example');
    expect(r.headers['access-control-allow-credentials']).toBe('true');
    expect(r.headers['access-control-allow-headers']).toBe('apikey');
    expect(r.headers['access-control-allow-methods']).toBe('GET,HEAD,PUT,PATCH,POST,DELETE,OPTIONS,TRACE,CONNECT');
    expect(r.headers['access-control-max-age']).toBe('600');
    expect(r.headers.vary).toBe('Origin');
  });

  it('cors headers on auth errors and proxied responses; regex origins; no match removes ACAO', async () => {
    const denied = await get(`${gw.url}/cors/x`, { headers: { origin: 'https://a.partner.example:443' } });
    expect(denied.status).toBe(401);
    expect(denied.headers['access-control-allow-origin']).toBe('https://a.partner.example');
    expect(denied.headers['access-control-expose-headers']).toBe('X-Total');
    expect(denied.headers['access-control-allow-methods']).toBeUndefined();
    const ok = await get(`${gw.url}/cors/x`, { headers: { origin: 'https://app.example', apikey: 'alice-key' } });
    expect([ok.status, ok.headers['access-control-allow-origin'], ok.headers.vary]).toEqual([200, 'https://app.example', 'Origin']);
    const other = await get(`${gw.url}/cors/x`, { headers: { origin: 'https://evil.example', apikey: 'alice-key' } });
    expect(other.headers['access-control-allow-origin']).toBeUndefined();
    const plainOptions = await get(`${gw.url}/cors/x`, { method: 'OPTIONS', headers: { origin: 'https://app.example' } });
    expect(plainOptions.status).toBe(401); // not a preflight: no Access-Control-Request-Method
  });

  it('cors wildcard and single-origin rules', async () => {
    const any = await get(`${gw.url}/cors-any/x`);
    expect([any.headers['access-control-allow-origin'], any.headers.vary]).toEqual(['*', undefined]);
    const one = await get(`${gw.url}/cors-one/x`, { headers: { origin: 'https://elsewhere.example' } });
    expect(one.headers['access-control-allow-origin']).toBe('https://only.example');
  });

  it('acl: groups header, 403 for others, 401 without a consumer', async () => {
    const ok = await get(`${gw.url}/acl/x`, { headers: { apikey: 'alice-key' } });
    expect((ok.json() as unknown as Echo).headers['x-consumer-groups']).toBe('readers, staff');
    const bob = await get(`${gw.url}/acl/x`, { headers: { apikey: 'bob-key' } });
    expect([bob.status, bob.json().message]).toEqual([403, 'You cannot consume this service']);
    const anon = await get(`${gw.url}/acl-noauth/x`);
    expect([anon.status, anon.json().message]).toEqual([401, 'Unauthorized']);
  });

  it('ip-restriction: deny, allow, custom status; auth runs first', async () => {
    const r = await get(`${gw.url}/ip/x`);
    expect([r.status, r.json().message]).toEqual([403, 'IP address not allowed: 127.0.0.1']);
    expect((await get(`${gw.url}/ip-ok/x`)).status).toBe(200);
    expect((await get(`${gw.url}/order/x`)).status).toBe(401); // key-auth 1250 before ip-restriction 990
    const custom = await get(`${gw.url}/order/x`, { headers: { apikey: 'alice-key' } });
    expect([custom.status, custom.json().message]).toEqual([451, 'go away']);
  });

  it('rate-limiting: headers, then 429 with Retry-After', async () => {
    const first = await get(`${gw.url}/rl/x`);
    expect(first.headers['x-ratelimit-limit-minute']).toBe('2');
    expect(first.headers['x-ratelimit-remaining-minute']).toBe('1');
    expect(first.headers['x-ratelimit-limit-hour']).toBe('100');
    expect(first.headers['ratelimit-limit']).toBe('2');
    expect(first.headers['ratelimit-remaining']).toBe('1');
    expect(Number(first.headers['ratelimit-reset'])).toBeGreaterThan(0);
    expect((await get(`${gw.url}/rl/x`)).headers['x-ratelimit-remaining-minute']).toBe('0');
    const over = await get(`${gw.url}/rl/x`);
    expect([over.status, over.json().message]).toEqual([429, 'API rate limit exceeded']);
    expect(Number(over.headers['retry-after'])).toBeGreaterThan(0);
  });

  it('scoping: a consumer-scoped instance beats a route-scoped one for that consumer only', async () => {
    expect((await get(`${gw.url}/rl-consumer/x`, { headers: { apikey: 'bob-key' } })).headers['x-ratelimit-limit-minute']).toBe('1');
    expect((await get(`${gw.url}/rl-consumer/x`, { headers: { apikey: 'bob-key' } })).status).toBe(429);
    expect((await get(`${gw.url}/rl-consumer/x`, { headers: { apikey: 'alice-key' } })).headers['x-ratelimit-limit-minute']).toBe('100');
  });

  it('request-size-limiting: 413, 417 with Expect, 411 without a length', async () => {
    const big = await get(`${gw.url}/size/x`, { method: 'POST', body: 'x'.repeat(11) });
    expect([big.status, big.json().message]).toEqual([413, 'Request size limit exceeded']);
    expect((await get(`${gw.url}/size/x`, { method: 'POST', body: 'x'.repeat(10) })).status).toBe(200);
    async function* chunks() {
      yield Buffer.from('x'.repeat(8));
      yield Buffer.from('x'.repeat(8));
    }
    expect((await get(`${gw.url}/size/x`, { method: 'POST', body: Readable.from(chunks()) })).status).toBe(413);
    const small = await get(`${gw.url}/size/x`, { method: 'POST', body: Readable.from((async function* () { yield Buffer.from('abc'); })()) });
    expect([small.status, (small.json() as unknown as Echo).body]).toEqual([200, 'abc']);
    expect((await get(`${gw.url}/size-cl/x`)).status).toBe(411);
  });
});
