/**
 * basic-auth under a flood of random unknown usernames from many addresses
 * (issue 45: from 200 loopback addresses, valid uncached users got 503 or a
 * 12 s time-out): valid users from other addresses keep getting in, and
 * key-auth is unaffected. Linux routes all of 127.0.0.0/8 to loopback, so
 * each flooding client has an address of its own.
 */
import { randomBytes, scryptSync } from 'node:crypto';
import { Agent } from 'undici';
import { afterAll, describe, expect, it } from 'vitest';
import { MAX_QUEUED, verificationLoad } from '../../../src/gateway/plugins/basic-auth/password-check.js';
import { until } from '../../helpers/until.js';
import { consumer, get, keyCredential, plugin, route, service, useProxy } from './harness.js';

function cheapScrypt(password: string): string {
  const salt = randomBytes(16);
  return `scrypt$1024$8$1$${salt.toString('base64')}$${scryptSync(password, salt, 32, { N: 1024, r: 8, p: 1 }).toString('base64')}`;
}

const ADDRESSES = 100;
const PER_ADDRESS = 3;
const VALID = ['ann', 'ben', 'cat'];

describe('basic-auth under a flood of unknown usernames from many addresses', () => {
  const gw = useProxy((c, upstreamPort) => {
    const s = service(c, { host: '127.0.0.1', port: upstreamPort });
    for (const name of VALID) {
      const who = consumer(c, name);
      c.basicauth_credentials.push({ id: randomBytes(16).toString('hex').replace(/^(.{8})(.{4})(.{4})(.{4})(.{12})$/, '$1-$2-4$3-8$4-$5').slice(0, 36), created_at: 1, consumer: { id: who.id }, username: name, password: cheapScrypt(`${name}-right`), tags: null });
    }
    keyCredential(c, consumer(c, 'keyed'), 'unknown-flood-test-key');
    plugin(c, 'basic-auth', {}, { route: route(c, s, { paths: ['/basic'] }) });
    plugin(c, 'key-auth', {}, { route: route(c, s, { paths: ['/keyed'] }) });
  });

  const agents: Agent[] = [];
  const from = (address: string): Agent => {
    const a = new Agent({ localAddress: address });
    agents.push(a);
    return a;
  };
  afterAll(async () => {
    await Promise.all(agents.map((a) => (a.destroyed ? undefined : a.close())));
  });
  const basic = (user: string, pass: string) => ({ authorization: `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}` });

  it('lets valid users from other addresses in, and key-auth through, while the flood goes on', { timeout: 90_000 }, async () => {
    let flooding = true;
    const statuses = new Map<number, number>();
    const floodOne = async (agent: Agent): Promise<void> => {
      while (flooding) {
        const r = await get(`${gw.url}/basic`, { dispatcher: agent, headers: basic(`nobody-${randomBytes(6).toString('hex')}`, randomBytes(6).toString('hex')) }).catch(() => null);
        if (r !== null) statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
      }
    };
    const floodAgents = Array.from({ length: ADDRESSES }, (_, i) => from(`127.1.${Math.floor(i / 250)}.${(i % 250) + 1}`));
    const flood = floodAgents.flatMap((agent) => Array.from({ length: PER_ADDRESS }, () => floodOne(agent)));
    try {
      // The flood has filled the whole queue of password checks before the valid users come.
      await until(() => verificationLoad().queued >= MAX_QUEUED, { what: 'the flood to fill the queue', intervalMs: 20, timeoutMs: 30_000 });
      const honest = await Promise.all(
        VALID.map((name, i) =>
          get(`${gw.url}/basic`, { dispatcher: from(`127.2.0.${i + 1}`), headers: basic(name, `${name}-right`), signal: AbortSignal.timeout(30_000) }),
        ),
      );
      expect(honest.map((r) => r.status)).toEqual([200, 200, 200]);
      const keyed = await get(`${gw.url}/keyed`, { headers: { apikey: 'unknown-flood-test-key' } });
      expect(keyed.status).toBe(200);
    } finally {
      // The flood's waiting checks are not waited for: its connections are cut.
      flooding = false;
      await Promise.all(floodAgents.map((a) => a.destroy()));
      await Promise.all(flood);
    }
    // The flood itself got only 401 (checked) or 503 with Retry-After (over its budget or share), never in.
    expect(statuses.size).toBeGreaterThan(0);
    expect([...statuses.keys()].every((s) => s === 401 || s === 503)).toBe(true);
  });
});
