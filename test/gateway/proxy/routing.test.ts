/** Routing, URI rules and headers both ways, over real sockets (Kong's kong/router/utils.lua, kong/runloop/handler.lua). */
import { describe, expect, it } from 'vitest';
import { upstreamPathV0 } from '../../../src/gateway/proxy/upstream-uri.js';
import { get, route, service, useProxy, type Echo } from './harness.js';

describe('upstream URI (v0)', () => {
  it.each([
    ['/fhir', '/fhir-api-key-auth/metadata', '/fhir-api-key-auth', true, '/fhir/metadata'],
    ['/fhir', '/fhir-api-key-auth', '/fhir-api-key-auth', true, '/fhir'],
    ['/fhir', '/fhir-api-key-auth/', '/fhir-api-key-auth', true, '/fhir/'],
    ['/fhir', '/abcx', '/abc', true, '/fhir/x'],
    ['/fhir/', '/abc/x', '/abc', true, '/fhir/x'],
    ['/fhir/', '/abc', '/abc', true, '/fhir'],
    ['/', '/abc/x', '/abc', true, '/x'],
    ['/', '/abc', '/abc', true, '/'],
    ['/fhir', '/abc/x', '/abc', false, '/fhir/abc/x'],
    ['/fhir/', '/abc/x', '/abc', false, '/fhir/abc/x'],
    ['/', '/abc/x', '/abc', false, '/abc/x'],
  ])('base %s, request %s, prefix %s, strip %s → %s', (base, req, prefix, strip, want) => {
    expect(upstreamPathV0(base, req, prefix, strip)).toBe(want);
  });
});

describe('proxy routing and headers', () => {
  const gw = useProxy((c, upstreamPort) => {
    const fhir = service(c, { host: '127.0.0.1', port: upstreamPort, path: '/fhir', name: 'fhir' });
    route(c, fhir, { paths: ['/fhir-api-key-auth'] });
    route(c, fhir, { paths: ['/fhir-api-key-auth/long'], strip_path: false });
    route(c, fhir, { paths: ['/host-only'], hosts: ['api.example.com'], preserve_host: true });
    route(c, fhir, { paths: ['/posts'], methods: ['POST'] });
    route(c, fhir, { paths: ['/secure'], protocols: ['https'] });
    const off = service(c, { host: '127.0.0.1', port: upstreamPort, enabled: false });
    route(c, off, { paths: ['/disabled'] });
  });

  it('strips the prefix onto the service path, keeps the query, prefers the longest prefix', async () => {
    const a = await get(`${gw.url}/fhir-api-key-auth/metadata?x=1&y=2`);
    expect(a.status).toBe(200);
    expect((a.json() as unknown as Echo).url).toBe('/fhir/metadata?x=1&y=2');
    const b = await get(`${gw.url}/fhir-api-key-auth/long/x`);
    expect((b.json() as unknown as Echo).url).toBe('/fhir/fhir-api-key-auth/long/x');
    const c = await get(`${gw.url}/fhir-api-key-authx`); // string prefix, not segment-aware
    expect((c.json() as unknown as Echo).url).toBe('/fhir/x');
  });

  it('sends Kong headers upstream', async () => {
    const r = await get(`${gw.url}/fhir-api-key-auth/a`, { headers: { 'x-forwarded-for': '10.1.1.1', 'x-forwarded-proto': 'https', connection: 'keep-alive' } });
    const h = (r.json() as unknown as Echo).headers;
    expect(h.host).toBe(`127.0.0.1:${gw.upstreamPort}`);
    expect(h['x-forwarded-for']).toBe('10.1.1.1, 127.0.0.1');
    expect(h['x-forwarded-proto']).toBe('http'); // untrusted client value replaced
    expect(h['x-forwarded-host']).toBe('127.0.0.1');
    expect(h['x-forwarded-port']).toBe(String(gw.listeners.http?.port));
    expect(h['x-forwarded-path']).toBe('/fhir-api-key-auth/a');
    expect(h['x-forwarded-prefix']).toBe('/fhir-api-key-auth');
    expect(h['x-real-ip']).toBe('127.0.0.1');
    expect(h.via).toBe('1.1 kong/3.9.1');
    expect(h['x-kong-request-id']).toMatch(/^[0-9a-f]{32}$/);
    expect(r.headers['x-kong-request-id']).toBe(h['x-kong-request-id']);
  });

  it('sends Kong headers downstream on proxied responses', async () => {
    const r = await get(`${gw.url}/fhir-api-key-auth/a`);
    expect(r.headers.via).toBe('1.1 kong/3.9.1');
    expect(r.headers['x-upstream']).toBe('yes');
    expect(Number(r.headers['x-kong-upstream-latency'])).toBeGreaterThanOrEqual(0);
    expect(Number(r.headers['x-kong-proxy-latency'])).toBeGreaterThanOrEqual(0);
    expect(r.headers.server).toBeUndefined();
  });

  it('matches hosts and preserves the Host header when asked', async () => {
    const miss = await get(`${gw.url}/host-only`);
    expect(miss.status).toBe(404);
    const hit = await get(`${gw.url}/host-only/x`, { headers: { host: 'api.example.com:8000' } });
    expect(hit.status).toBe(200);
    expect((hit.json() as unknown as Echo).headers.host).toBe('api.example.com:8000');
  });

  it('matches methods', async () => {
    expect((await get(`${gw.url}/posts`)).status).toBe(404);
    const r = await get(`${gw.url}/posts`, { method: 'POST', body: 'hello' });
    expect(r.status).toBe(200);
    expect((r.json() as unknown as Echo).body).toBe('hello');
  });

  it('answers no route with Kong 404 body and headers', async () => {
    const r = await get(`${gw.url}/nothing-here`, { headers: { accept: 'application/json' } });
    expect(r.status).toBe(404);
    expect(r.json()).toEqual({ message: 'no Route matched with those values', request_id: r.headers['x-kong-request-id'] });
    expect(r.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(r.headers.server).toBe('kong/3.9.1');
    expect(r.headers['x-kong-response-latency']).toMatch(/^\d+$/);
    expect((await get(`${gw.url}/disabled`)).status).toBe(404);
  });

  it('normalises dot segments before matching', async () => {
    const r = await get(`${gw.url}/nothing/../fhir-api-key-auth/p`);
    expect((r.json() as unknown as Echo).url).toBe('/fhir/p');
  });

  it('answers 426 for an https-only route over http', async () => {
    const r = await get(`${gw.url}/secure`);
    expect(r.status).toBe(426);
    expect(r.json().message).toBe('Please use HTTPS protocol');
  });

  it('applies a configuration change on the next request', async () => {
    const c = structuredClone(gw.snapshots.get().config);
    route(c, c.services[0]!, { paths: ['/new-route'] });
    gw.snapshots.set(c);
    const r = await get(`${gw.url}/new-route/z`);
    expect((r.json() as unknown as Echo).url).toBe('/fhir/z');
  });
});
