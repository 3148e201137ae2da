/** A configuration the proxy cannot compile never takes the process down, and the last good one stays in force. */
import type { Server } from 'node:http';
import { join } from 'node:path';
import { startAdminServer } from '../../../src/gateway/admin/server.js';
import { PLUGIN_SCHEMAS } from '../../../src/gateway/plugins/index.js';
import { openStore } from '../../../src/gateway/store/index.js';
import { removeTempDirs, tempDir } from '../../helpers/tmp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { emptyConfig, get, plugin, route, service, Snapshots, startProxy, startUpstream } from './harness.js';

describe('proxy resilience', () => {
  let upstream: { server: Server; port: number };
  let gw: Awaited<ReturnType<typeof startProxy>>;
  const snapshots = new Snapshots();

  function broken() {
    const c = emptyConfig();
    const r = route(c, service(c, { host: '127.0.0.1', port: upstream.port }), { paths: ['/p'] });
    const p = plugin(c, 'cors', { origins: ['https://a.example', 'https://b.example'] }, { route: r });
    (p.config.origins as string[])[0] = '(unclosed'; // as if the state file were edited by hand
    return c;
  }

  beforeAll(async () => {
    upstream = await startUpstream();
    gw = await startProxy(snapshots);
  });
  afterAll(async () => {
    await gw.close();
    upstream.server.close();
    removeTempDirs();
  });

  it('answers 503 and reports itself degraded when no configuration ever compiled, then recovers', async () => {
    snapshots.set(broken());
    const r = await get(`${gw.url}/p/x`);
    expect([r.status, r.json().message]).toEqual([503, 'no configuration available']);
    expect(gw.proxy.health()).toMatchObject({ appliedVersion: null, degraded: true });
    expect(gw.proxy.health().error).toMatch(/not applied: plugin .* \(cors\): invalid config \(config\.origins/);
    const good = emptyConfig();
    route(good, service(good, { host: '127.0.0.1', port: upstream.port }), { paths: ['/p'] });
    snapshots.set(good);
    expect((await get(`${gw.url}/p/x`)).status).toBe(200);
    expect(gw.proxy.health()).toMatchObject({ appliedVersion: snapshots.get().version, degraded: false, error: null });
    const goodVersion = snapshots.get().version;
    snapshots.set(broken());
    expect((await get(`${gw.url}/p/x`)).status).toBe(200); // last good configuration kept
    expect(gw.proxy.health()).toMatchObject({ appliedVersion: goodVersion, latestVersion: goodVersion + 1, degraded: true });
  });

  it('never serves a route without a plugin the proxy cannot run (fail closed)', async () => {
    const good = emptyConfig();
    const r = route(good, service(good, { host: '127.0.0.1', port: upstream.port }), { paths: ['/p'] });
    snapshots.set(good);
    expect((await get(`${gw.url}/p/x`)).status).toBe(200);
    const unknown = structuredClone(good);
    plugin(unknown, 'key-auth', {}, { route: r }).name = 'key-auth-typo';
    snapshots.set(unknown);
    expect((await get(`${gw.url}/p/x`)).status).toBe(200); // the previous version, not the route without its auth
    expect(gw.proxy.health().error).toMatch(/'key-auth-typo' is not available/);
  });

  it('admin GET /status shows the proxy health, and answers 503 while no configuration applies', async () => {
    const store = await openStore(join(tempDir(), 'state.json'));
    const admin = await startAdminServer({ host: '127.0.0.1', port: 0, store, plugins: PLUGIN_SCHEMAS, version: '3.9.1', proxyHealth: () => gw.proxy.health() });
    try {
      const fresh = new Snapshots();
      fresh.set(broken());
      const lone = await startProxy(fresh);
      const admin2 = await startAdminServer({ host: '127.0.0.1', port: 0, store, plugins: PLUGIN_SCHEMAS, version: '3.9.1', proxyHealth: () => lone.proxy.health() });
      try {
        const down = await get(`${admin2.url}/status`);
        expect(down.status).toBe(503);
        expect(down.json().proxy).toMatchObject({ appliedVersion: null, degraded: true });
      } finally {
        await admin2.close();
        await lone.close();
      }
      const good = emptyConfig();
      route(good, service(good, { host: '127.0.0.1', port: upstream.port }), { paths: ['/p'] });
      snapshots.set(good);
      const up = await get(`${admin.url}/status`);
      expect(up.status).toBe(200);
      expect(up.json().proxy).toMatchObject({ appliedVersion: snapshots.get().version, degraded: false });
    } finally {
      await admin.close();
    }
  });
});
