/**
 * Wrong basic-auth passwords cannot starve other traffic (issue 14): scrypt
 * checks run at most MAX_IN_FLIGHT at a time per process, excess waits in a
 * bounded queue and past it gets 503 at once; key-auth traffic keeps being
 * answered meanwhile. Latency figures are in the gateway benchmark.
 */
import type { Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomBytes, scryptSync } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { SCRYPT_NICE } from '../../../src/gateway/plugins/basic-auth/scrypt-thread.js';
import { MAX_IN_FLIGHT, MAX_QUEUED, verificationLoad } from '../../../src/gateway/plugins/basic-auth/verify.js';
import { consumer, emptyConfig, get, keyCredential, plugin, route, service, Snapshots, startProxy, startUpstream } from './harness.js';

/** The stored scrypt form with a small cost (N=2^10) so the flood runs in about a second. */
function cheapScrypt(password: string): string {
  const salt = randomBytes(16);
  return `scrypt$1024$8$1$${salt.toString('base64')}$${scryptSync(password, salt, 32, { N: 1024, r: 8, p: 1 }).toString('base64')}`;
}

describe('basic-auth under a flood of wrong passwords', () => {
  let upstream: { server: Server; port: number };
  let gw: Awaited<ReturnType<typeof startProxy>>;
  const snapshots = new Snapshots();

  beforeAll(async () => {
    upstream = await startUpstream();
    const c = emptyConfig();
    const s = service(c, { host: '127.0.0.1', port: upstream.port });
    const alice = consumer(c, 'alice');
    c.basicauth_credentials.push({ id: 'b5a0ac0c-8c5a-4bb8-9d7e-1b1f34f6c2a2', created_at: 1, consumer: { id: alice.id }, username: 'alice', password: cheapScrypt('right'), tags: null });
    keyCredential(c, alice, 'flood-test-key');
    plugin(c, 'basic-auth', {}, { route: route(c, s, { paths: ['/basic'] }) });
    plugin(c, 'key-auth', {}, { route: route(c, s, { paths: ['/keyed'] }) });
    snapshots.set(c);
    gw = await startProxy(snapshots);
  });
  afterAll(async () => {
    await gw.close();
    upstream.server.close();
  });

  const basic = (pass: string) => ({ headers: { authorization: `Basic ${Buffer.from(`alice:${pass}`).toString('base64')}` } });

  it('bounds concurrent scrypt checks, refuses the excess with 503, and keeps key-auth answering', async () => {
    const n = MAX_QUEUED + 20;
    let maxInFlight = 0;
    let maxQueued = 0;
    const sampler = setInterval(() => {
      const l = verificationLoad();
      maxInFlight = Math.max(maxInFlight, l.inFlight);
      maxQueued = Math.max(maxQueued, l.queued);
    }, 5);
    const flood = Promise.all(Array.from({ length: n }, (_, i) => get(`${gw.url}/basic`, basic(`wrong-${i}`))));
    const keyed = await get(`${gw.url}/keyed`, { headers: { apikey: 'flood-test-key' } });
    const results = await flood;
    clearInterval(sampler);
    expect(keyed.status).toBe(200);
    expect(maxInFlight).toBeLessThanOrEqual(MAX_IN_FLIGHT);
    expect(maxQueued).toBeLessThanOrEqual(MAX_QUEUED);
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 401).length).toBeGreaterThanOrEqual(MAX_QUEUED);
    const busy = results.filter((r) => r.status === 503);
    expect(busy.length).toBeGreaterThan(0);
    expect(busy[0]!.headers['retry-after']).toBe('1');
    expect(statuses.every((s) => s === 401 || s === 503)).toBe(true);
  }, 30_000);

  it('still accepts the right password, and answers a repeated one without a new scrypt', async () => {
    expect((await get(`${gw.url}/basic`, basic('right'))).status).toBe(200);
    expect((await get(`${gw.url}/basic`, basic('wrong-0'))).status).toBe(401);
    // Remembered verdicts: a burst of repeats never queues.
    let maxQueued = 0;
    const sampler = setInterval(() => (maxQueued = Math.max(maxQueued, verificationLoad().queued)), 1);
    const again = await Promise.all(Array.from({ length: 20 }, () => get(`${gw.url}/basic`, basic('wrong-0'))));
    clearInterval(sampler);
    expect(again.every((r) => r.status === 401)).toBe(true);
    expect(maxQueued).toBe(0);
  });

  it('runs scrypt on a thread of its own at a lower priority (Linux nice)', () => {
    const nice = readdirSync('/proc/self/task').map((t) => {
      const stat = readFileSync(`/proc/self/task/${t}/stat`, 'utf8');
      return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
    });
    expect(nice).toContain(SCRYPT_NICE);
  });
});
