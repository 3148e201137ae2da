/** Kong's trusted_ips through the real proxy: X-Forwarded-* and X-Real-IP from trusted peers kept, from others replaced. */
import type { Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GatewayProxy } from '../../../src/gateway/proxy/gateway-proxy.js';
import { startProxyListeners, type ProxyListeners } from '../../../src/gateway/proxy/listeners.js';
import { parseTrustedIps } from '../../../src/gateway/proxy/trusted-ips.js';
import { emptyConfig, get, plugin, route, service, Snapshots, startUpstream, type Echo } from './harness.js';

describe('trusted_ips', () => {
  let upstream: { server: Server; port: number };
  const snapshots = new Snapshots();
  const started: Array<{ proxy: GatewayProxy; listeners: ProxyListeners }> = [];

  async function gateway(trusted: string): Promise<string> {
    const proxy = new GatewayProxy(snapshots.get, { trustedIps: parseTrustedIps(trusted) });
    const listeners = await startProxyListeners({ proxy, http: { host: '127.0.0.1', port: 0 } });
    started.push({ proxy, listeners });
    return `http://127.0.0.1:${listeners.http!.port}`;
  }

  beforeAll(async () => {
    upstream = await startUpstream();
    const c = emptyConfig();
    const s = service(c, { host: '127.0.0.1', port: upstream.port });
    route(c, s, { paths: ['/p'] });
    plugin(c, 'ip-restriction', { deny: ['203.0.113.9'] }, { route: route(c, s, { paths: ['/restricted'] }) });
    snapshots.set(c);
  });
  afterAll(async () => {
    for (const g of started) {
      await g.listeners.close();
      await g.proxy.close();
    }
    upstream.server.close();
  });

  const forwarded = {
    'x-forwarded-proto': 'https',
    'x-forwarded-host': 'fhir.hospital.example',
    'x-forwarded-port': '443',
    'x-forwarded-path': '/outer/p/x',
    'x-forwarded-prefix': '/outer',
    'x-forwarded-for': '203.0.113.9',
    'x-real-ip': '203.0.113.9',
  };

  it('keeps X-Forwarded-* and takes the client from X-Real-IP when the peer is trusted', async () => {
    const url = await gateway('10.0.0.0/8, 127.0.0.1');
    const h = ((await get(`${url}/p/x`, { headers: forwarded })).json() as unknown as Echo).headers;
    expect(h['x-forwarded-proto']).toBe('https');
    expect(h['x-forwarded-host']).toBe('fhir.hospital.example');
    expect(h['x-forwarded-port']).toBe('443');
    expect(h['x-forwarded-path']).toBe('/outer/p/x');
    expect(h['x-forwarded-prefix']).toBe('/outer');
    expect(h['x-real-ip']).toBe('203.0.113.9');
    expect(h['x-forwarded-for']).toBe('203.0.113.9, 203.0.113.9');
    // Plugins see the real client: ip-restriction denies it.
    const denied = await get(`${url}/restricted/x`, { headers: forwarded });
    expect([denied.status, denied.json().message]).toEqual([403, 'IP address not allowed: 203.0.113.9']);
  });

  it('replaces them when the peer is not trusted', async () => {
    const url = await gateway('10.0.0.0/8');
    const h = ((await get(`${url}/p/x`, { headers: forwarded })).json() as unknown as Echo).headers;
    expect(h['x-forwarded-proto']).toBe('http');
    expect(h['x-forwarded-host']).toBe('127.0.0.1');
    expect(h['x-forwarded-path']).toBe('/p/x');
    expect(h['x-forwarded-prefix']).toBe('/p');
    expect(h['x-real-ip']).toBe('127.0.0.1');
    expect(h['x-forwarded-for']).toBe('203.0.113.9, 127.0.0.1');
    expect((await get(`${url}/restricted/x`, { headers: forwarded })).status).toBe(200);
  });

  it('refuses an entry that is not an IP or CIDR', () => {
    expect(() => parseTrustedIps('10.0.0.0/8,not-an-ip')).toThrow(/"not-an-ip" is not an IP address or CIDR range/);
    expect(parseTrustedIps('off')).toBeNull();
  });
});
