/** Regex route paths (`~/…`) as Kong 3.9 matches them, on RE2 (src/gateway/proxy/regex.ts), through the real proxy. */
import type { Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { routePathError } from '../../../src/gateway/proxy/regex.js';
import { GatewayProxy } from '../../../src/gateway/proxy/gateway-proxy.js';
import { startProxyListeners } from '../../../src/gateway/proxy/listeners.js';
import { removeTempDirs } from '../../helpers/tmp.js';
import { startAdmin } from '../admin/harness.js';
import { emptyConfig, get, route, service, Snapshots, startProxy, startUpstream, type Echo } from './harness.js';

describe('regex route paths', () => {
  let upstream: { server: Server; port: number };
  let gw: Awaited<ReturnType<typeof startProxy>>;
  const snapshots = new Snapshots();

  beforeAll(async () => {
    upstream = await startUpstream();
    const c = emptyConfig();
    const svc = (path: string) => service(c, { host: '127.0.0.1', port: upstream.port, path });
    route(c, svc('/plain'), { paths: ['/api'] });
    route(c, svc('/regex-low'), { paths: ['~/api/v\\d+'], regex_priority: 0, strip_path: false });
    route(c, svc('/regex-high'), { paths: ['~/api/v[0-9]+/high'], regex_priority: 10, strip_path: false });
    route(c, svc('/fhir'), { paths: ['~/r/(?<type>Patient|Observation)/(\\d+)$'], strip_path: true });
    route(c, svc('/strip'), { paths: ['~/s/[a-z]+'] });
    route(c, svc('/evil'), { paths: ['~/evil/(a+)+$'] });
    snapshots.set(c);
    gw = await startProxy(snapshots);
  });
  afterAll(async () => {
    await gw.close();
    upstream.server.close();
  });

  const upstreamUrl = async (path: string): Promise<string | number> => {
    const r = await get(`${gw.url}${path}`);
    return r.status === 200 ? (r.json() as unknown as Echo).url : r.status;
  };

  it('matches a regex path anchored at the start of the path, and only there', async () => {
    expect(await upstreamUrl('/r/Patient/12')).toBe('/fhir');
    expect(await upstreamUrl('/r/Observation/7?x=1')).toBe('/fhir?x=1');
    expect(await upstreamUrl('/r/Patient/abc')).toBe(404);
    expect(await upstreamUrl('/r/Patient/12/more')).toBe(404); // `$` anchors the end
    expect(await upstreamUrl('/x/r/Patient/12')).toBe(404); // Kong anchors with ^
  });

  it('orders a regex path before a plain prefix, then by regex_priority', async () => {
    expect(await upstreamUrl('/api/other')).toBe('/plain/other');
    expect(await upstreamUrl('/api/v2/x')).toBe('/regex-low/api/v2/x');
    expect(await upstreamUrl('/api/v2/high')).toBe('/regex-high/api/v2/high');
  });

  it('strips the part the regex matched when strip_path is on', async () => {
    expect(await upstreamUrl('/s/abc/rest')).toBe('/strip/rest');
  });

  it('cannot be made to backtrack: a classic catastrophic pattern answers at once', async () => {
    // With a backtracking engine `(a+)+$` on 40 a's and a b would run for days.
    expect(await upstreamUrl(`/evil/${'a'.repeat(40)}b`)).toBe(404);
    expect(await upstreamUrl(`/evil/${'a'.repeat(40)}`)).toBe('/evil');
  });

  it('exports the write-time check the admin API uses (Kong 400 message)', () => {
    expect(routePathError('/plain')).toBeNull();
    expect(routePathError('~/ok/(\\d+)')).toBeNull();
    expect(routePathError('~/bad/(')).toMatch(/^invalid regex: '\/bad\/\(' \(PCRE returned: .*missing closing \)/);
    expect(routePathError('~/look(?=ahead)')).toMatch(/^invalid regex: .*unsupported Perl syntax/);
  });

  it('does not apply a version with a regex that does not compile: the last good one keeps serving', async () => {
    const c = emptyConfig();
    const s = service(c, { host: '127.0.0.1', port: upstream.port, path: '/ok' });
    route(c, s, { paths: ['/fine'] });
    const local = new Snapshots();
    local.set(c);
    const gw2 = await startProxy(local);
    try {
      expect((await get(`${gw2.url}/fine/x`)).status).toBe(200);
      route(c, s, { paths: ['~/broken/('] });
      local.set(c);
      expect((await get(`${gw2.url}/fine/x`)).status).toBe(200);
      expect(gw2.proxy.health()).toMatchObject({ degraded: true });
      expect(gw2.proxy.health().error).toMatch(/invalid regex path/);
    } finally {
      await gw2.close();
    }
  });

  it('through the admin API: a regex RE2 runs is stored and routed, one it cannot is refused with 400', async () => {
    const admin = await startAdmin();
    const proxy = new GatewayProxy(() => admin.store.snapshot());
    const listeners = await startProxyListeners({ proxy, http: { host: '127.0.0.1', port: 0 } });
    try {
      expect((await admin.call('POST', '/services', { name: 'fhir', url: `http://127.0.0.1:${upstream.port}/fhir` })).status).toBe(201);
      expect((await admin.call('POST', '/services/fhir/routes', { paths: ['~/p/(?<id>[0-9]+)$'] })).status).toBe(201);
      const refused = await admin.call('POST', '/services/fhir/routes', { paths: ['~/p/(?=lookahead)'] });
      expect(refused.status).toBe(400);
      expect(refused.json.fields.paths).toMatch(/^invalid regex: '\/p\/\(\?=lookahead\)' \(PCRE returned: .*unsupported Perl syntax/);
      const r = await get(`http://127.0.0.1:${listeners.http!.port}/p/42`);
      expect((r.json() as unknown as Echo).url).toBe('/fhir');
    } finally {
      await listeners.close();
      await proxy.close();
      await admin.close();
      removeTempDirs();
    }
  });
});
