/**
 * Wrong basic-auth passwords cannot starve other traffic (issue 14) nor lock
 * out the honest (issue 24): scrypt checks run at most MAX_IN_FLIGHT at a time
 * per process, the excess of one source waits in that source's bounded share
 * and past it gets 503 at once, while a valid user from another address is
 * still checked; key-auth traffic keeps being answered meanwhile. Unknown
 * usernames cost a scrypt check like known ones (counted, never timed).
 * Latency figures are in the gateway benchmark.
 */
import { describe, expect, it } from 'vitest';
import { randomBytes, scryptSync } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { SCRYPT_NICE, scryptChecksStarted } from '../../../src/gateway/plugins/basic-auth/scrypt-thread.js';
import { Agent } from 'undici';
import { afterAll } from 'vitest';
import { MAX_IN_FLIGHT, PER_SOURCE_QUEUED, verificationLoad } from '../../../src/gateway/plugins/basic-auth/password-check.js';
import { until } from '../../helpers/until.js';
import { consumer, get, keyCredential, plugin, route, service, useProxy } from './harness.js';

/** The stored scrypt form with a small cost (N=2^10) so the flood runs in about a second. */
function cheapScrypt(password: string): string {
  const salt = randomBytes(16);
  return `scrypt$1024$8$1$${salt.toString('base64')}$${scryptSync(password, salt, 32, { N: 1024, r: 8, p: 1 }).toString('base64')}`;
}

describe('basic-auth under a flood of wrong passwords', () => {
  const gw = useProxy((c, upstreamPort) => {
    const s = service(c, { host: '127.0.0.1', port: upstreamPort });
    const alice = consumer(c, 'alice');
    c.basicauth_credentials.push({ id: 'b5a0ac0c-8c5a-4bb8-9d7e-1b1f34f6c2a2', created_at: 1, consumer: { id: alice.id }, username: 'alice', password: cheapScrypt('right'), tags: null });
    keyCredential(c, alice, 'flood-test-key');
    const bob = consumer(c, 'bob');
    c.basicauth_credentials.push({ id: '0d4c7f43-3a51-4a5e-9a3e-5d0c0e2b7f11', created_at: 1, consumer: { id: bob.id }, username: 'bob', password: cheapScrypt('bobs-right'), tags: null });
    plugin(c, 'basic-auth', {}, { route: route(c, s, { paths: ['/basic'] }) });
    plugin(c, 'key-auth', {}, { route: route(c, s, { paths: ['/keyed'] }) });
  });

  const basic = (pass: string, user = 'alice') => ({ headers: { authorization: `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}` } });
  // A second client address on loopback (Linux answers all of 127.0.0.0/8): the flood comes from it.
  const fromOther = new Agent({ localAddress: '127.0.0.2' });
  afterAll(() => fromOther.close());

  it('bounds concurrent scrypt checks, refuses the excess with 503, and keeps key-auth answering', async () => {
    const n = PER_SOURCE_QUEUED + 20;
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
    expect(maxQueued).toBeLessThanOrEqual(PER_SOURCE_QUEUED);
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 401).length).toBeGreaterThanOrEqual(MAX_IN_FLIGHT + PER_SOURCE_QUEUED);
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

  it('a wrong-password flood from one address does not refuse a valid user from another', { timeout: 30_000 }, async () => {
    const n = PER_SOURCE_QUEUED + 30;
    const flood = Promise.all(Array.from({ length: n }, (_, i) => get(`${gw.url}/basic`, { ...basic(`guess-${i}-${Math.random()}`), dispatcher: fromOther })));
    // the flood's share is full (its excess is being refused) before the honest user arrives
    await until(() => verificationLoad().queued >= PER_SOURCE_QUEUED, { what: 'the flooding address to fill its share', intervalMs: 5 });
    const honest = await get(`${gw.url}/basic`, basic('bobs-right', 'bob'));
    const results = await flood;
    expect(honest.status).toBe(200);
    expect(results.filter((r) => r.status === 503).length, 'the flooding address is refused').toBeGreaterThan(0);
    expect(results.every((r) => r.status === 401 || r.status === 503)).toBe(true);
    await until(() => verificationLoad().inFlight === 0 && verificationLoad().queued === 0, { what: 'the checks to drain', intervalMs: 20 });
  });

  it('checks an unknown username with scrypt like a known one with a wrong password, and answers the same 401', { timeout: 30_000 }, async () => {
    await until(() => verificationLoad().inFlight === 0 && verificationLoad().queued === 0, { what: 'no check in progress', intervalMs: 20 });
    const before = scryptChecksStarted();
    const unknown = await get(`${gw.url}/basic`, basic(`pw-${Math.random()}`, 'nobody-here'));
    expect(scryptChecksStarted() - before, 'unknown username').toBe(1);
    const known = await get(`${gw.url}/basic`, basic(`pw-${Math.random()}`, 'bob'));
    expect(scryptChecksStarted() - before, 'known username, wrong password').toBe(2);
    for (const r of [unknown, known]) {
      expect(r.status).toBe(401);
      expect(r.headers['www-authenticate']).toBe('Basic realm="service"');
      expect(r.json().message).toBe('Unauthorized');
    }
  });

  it('runs scrypt on a thread of its own at a lower priority (Linux nice)', () => {
    const nice = readdirSync('/proc/self/task').map((t) => {
      const stat = readFileSync(`/proc/self/task/${t}/stat`, 'utf8');
      return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
    });
    expect(nice).toContain(SCRYPT_NICE);
  });
});
