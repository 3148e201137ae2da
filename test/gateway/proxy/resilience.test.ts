/** A configuration the proxy cannot compile never takes the process down, and the last good one stays in force. */
import type { Server } from 'node:http';
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
  });

  it('answers 500 when no configuration ever compiled, then recovers', async () => {
    snapshots.set(broken());
    const r = await get(`${gw.url}/p/x`);
    expect([r.status, r.json().message]).toEqual([500, 'An unexpected error occurred']);
    const good = emptyConfig();
    route(good, service(good, { host: '127.0.0.1', port: upstream.port }), { paths: ['/p'] });
    snapshots.set(good);
    expect((await get(`${gw.url}/p/x`)).status).toBe(200);
    snapshots.set(broken());
    expect((await get(`${gw.url}/p/x`)).status).toBe(200); // last good configuration kept
  });
});
