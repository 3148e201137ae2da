/**
 * Upstreams and targets drive the proxy (Kong's balancer): a service whose
 * host names an upstream is balanced across its targets, round-robin by
 * weight, with passive health checks taking a failing target out and active
 * probes bringing it back. Real upstream servers on 127.0.0.1.
 */
import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayConfig } from '../../../src/gateway/model/types.js';
import type { Target, Upstream } from '../../../src/gateway/proxy/entities.js';
import { emptyConfig, get, route, service, Snapshots, startProxy, startUpstream } from './harness.js';

interface Machine {
  name: string;
  server: Server;
  port: number;
  /** Status this machine answers with (the test flips it). */
  status: number;
  hits: number;
  hosts: string[];
}

async function machine(name: string): Promise<Machine> {
  const m = { name, status: 200, hits: 0, hosts: [] } as unknown as Machine;
  const { server, port } = await startUpstream((req, res) => {
    m.hits++;
    m.hosts.push(req.headers.host ?? '');
    res.writeHead(m.status, { 'content-type': 'text/plain' });
    res.end(name);
  });
  m.server = server;
  m.port = port;
  return m;
}

function withUpstream(c: GatewayConfig, upstream: Upstream, targets: Array<Omit<Target, 'id' | 'upstream'>>): void {
  Object.assign(c, {
    upstreams: [upstream],
    targets: targets.map((t, i) => ({ id: randomUUID(), upstream: { id: upstream.id }, created_at: i, ...t })),
  });
}

describe('upstreams and targets', () => {
  let a: Machine;
  let b: Machine;
  let gw: Awaited<ReturnType<typeof startProxy>>;
  const snapshots = new Snapshots();

  beforeAll(async () => {
    [a, b] = await Promise.all([machine('a'), machine('b')]);
    gw = await startProxy(snapshots);
  });
  afterAll(async () => {
    await gw.close();
    a.server.close();
    b.server.close();
  });

  const names = async (n: number, path = '/fhir/x'): Promise<string[]> => {
    const out: string[] = [];
    for (let i = 0; i < n; i++) {
      const r = await get(`${gw.url}${path}`);
      out.push(r.status === 200 ? r.text : String(r.status));
    }
    return out;
  };

  function configure(upstream: Partial<Upstream>, weights: [number, number]): void {
    a.status = b.status = 200;
    const c = emptyConfig();
    const svc = service(c, { host: 'fhir-machines', port: 80, retries: 0 });
    route(c, svc, { paths: ['/fhir'] });
    withUpstream(c, { id: randomUUID(), name: 'fhir-machines', ...upstream }, [
      { target: `127.0.0.1:${a.port}`, weight: weights[0] },
      { target: `127.0.0.1:${b.port}`, weight: weights[1] },
    ]);
    snapshots.set(c);
  }

  it('round-robins across targets, sending the target as Host', async () => {
    configure({}, [100, 100]);
    expect((await names(4)).sort()).toEqual(['a', 'a', 'b', 'b']);
    expect(a.hosts.at(-1)).toBe(`127.0.0.1:${a.port}`);
  });

  it('honours weights (3:1), and weight 0 takes a target out', async () => {
    configure({}, [300, 100]);
    const got = await names(8);
    expect(got.filter((x) => x === 'a')).toHaveLength(6);
    expect(got.filter((x) => x === 'b')).toHaveLength(2);
    configure({}, [100, 0]);
    expect(await names(3)).toEqual(['a', 'a', 'a']);
  });

  it('passive checks take a failing target out; active probes bring it back', async () => {
    configure(
      {
        healthchecks: {
          passive: {
            healthy: { http_statuses: [200], successes: 1 },
            unhealthy: { http_statuses: [500, 503], tcp_failures: 1, timeouts: 0, http_failures: 2 },
          },
          active: { http_path: '/health', timeout: 1, healthy: { interval: 0.1, successes: 1, http_statuses: [200] }, unhealthy: { interval: 0.1 } } as never,
        },
      },
      [100, 100],
    );
    b.status = 500;
    const before = await names(4);
    expect(before.filter((x) => x === '500')).toHaveLength(2); // b answered 500 twice, then was taken out
    const bHits = b.hits;
    expect(await names(4)).toEqual(['a', 'a', 'a', 'a']);
    b.status = 200;
    // The active prober (every 100 ms) finds b healthy again: wait for it through the proxy, not by sleeping.
    let back = false;
    for (let i = 0; i < 100 && !back; i++) {
      back = (await names(2)).includes('b');
      if (!back) await new Promise((r) => setTimeout(r, 20));
    }
    expect(back).toBe(true);
    expect(b.hits).toBeGreaterThan(bHits);
  });

  it('a target that refuses connections is taken out and the request retried on the other', async () => {
    configure({ healthchecks: { passive: { healthy: { http_statuses: [200], successes: 0 }, unhealthy: { http_statuses: [500], tcp_failures: 1, timeouts: 0, http_failures: 0 } } } }, [100, 100]);
    const c = structuredClone(snapshots.get().config) as GatewayConfig & { targets: Target[] };
    c.services[0]!.retries = 1;
    const closed = await startUpstream();
    const deadPort = closed.port;
    await new Promise<void>((r) => closed.server.close(() => r()));
    c.targets[1]!.target = `127.0.0.1:${deadPort}`;
    c.targets[1]!.id = randomUUID();
    snapshots.set(c);
    expect(await names(4)).toEqual(['a', 'a', 'a', 'a']);
  });

  it('answers 503 when no target is healthy', async () => {
    configure({ healthchecks: { passive: { healthy: { http_statuses: [200], successes: 0 }, unhealthy: { http_statuses: [500], tcp_failures: 0, timeouts: 0, http_failures: 1 } } } }, [100, 100]);
    a.status = b.status = 500;
    await names(2);
    const r = await get(`${gw.url}/fhir/x`, { headers: { accept: 'application/json' } });
    expect([r.status, r.json().message]).toEqual([503, 'failure to get a peer from the ring-balancer']);
  });
});
