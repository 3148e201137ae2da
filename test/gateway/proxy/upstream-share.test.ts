/**
 * Upstream connections to one service are shared between callers (issue 45):
 * a consumer (or, without one, a client address) has at most
 * `upstreamRequestsPerCaller` requests in flight to a service, past which it
 * gets 429, so it cannot hold the whole pool; a request whose client left
 * while it waited for a pool connection is never sent.
 */
import type { ServerResponse } from 'node:http';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from '../../helpers/until.js';
import { consumer, emptyConfig, keyCredential, plugin, route, service, Snapshots, startProxyOn, startUpstream, type RunningProxy } from './harness.js';

const PER_CALLER = 3;
const POOL = 4;

describe('upstream connections shared between callers', () => {
  let upstream: Awaited<ReturnType<typeof startUpstream>>;
  let gw: RunningProxy;
  /** Answers the upstream holds back until a test releases them, and the paths it saw. */
  const held: ServerResponse[] = [];
  const seen: string[] = [];
  const snapshots = new Snapshots();

  beforeAll(async () => {
    upstream = await startUpstream((req, res) => {
      seen.push(req.url ?? '');
      held.push(res);
    });
    const c = emptyConfig();
    const s = service(c, { host: '127.0.0.1', port: upstream.port });
    const keyed = route(c, s, { paths: ['/keyed'] });
    plugin(c, 'key-auth', {}, { route: keyed });
    keyCredential(c, consumer(c, 'alice'), 'alice-key-0123456789');
    keyCredential(c, consumer(c, 'bob'), 'bob-key-0123456789');
    keyCredential(c, consumer(c, 'carol'), 'carol-key-0123456789');
    route(c, s, { paths: ['/open'] });
    snapshots.set(c);
    gw = await startProxyOn(snapshots, { limits: { upstreamRequestsPerCaller: PER_CALLER, upstreamConnectionsPerService: POOL } });
  });
  afterAll(async () => {
    for (const r of held.splice(0)) r.end();
    await gw.close();
    upstream.server.close();
  });

  const release = (n: number): void => {
    for (const r of held.splice(0, n)) {
      r.writeHead(200, { 'content-type': 'text/plain' });
      r.end('ok');
    }
  };

  /** Starts a request and returns its eventual status and body (never rejects: an aborted one gives status 0). */
  function send(path: string, headers: Record<string, string>, opts: { signal?: AbortSignal; localAddress?: string } = {}) {
    const dispatcher = new Agent(opts.localAddress ? { localAddress: opts.localAddress } : {});
    return request(`${gw.url}${path}`, { headers, dispatcher, ...(opts.signal ? { signal: opts.signal } : {}) })
      .then(async (r) => ({ status: r.statusCode, retryAfter: r.headers['retry-after'], body: await r.body.text() }))
      .catch(() => ({ status: 0, retryAfter: undefined, body: '' }))
      .finally(() => void dispatcher.close());
  }

  it('a consumer past its share gets 429 with Retry-After; another consumer is still served', async () => {
    seen.length = 0;
    const alice = Array.from({ length: PER_CALLER }, (_, i) => send(`/keyed/a${i}`, { apikey: 'alice-key-0123456789' }));
    await until(() => seen.length === PER_CALLER, { what: "alice's requests at the upstream" });
    const over = await send('/keyed/a-over', { apikey: 'alice-key-0123456789' });
    expect(over.status).toBe(429);
    expect(over.retryAfter).toBe('1');
    expect(JSON.parse(over.body)).toMatchObject({ message: 'Too many requests in progress' });
    expect(seen).not.toContain('/a-over');

    const bob = send('/keyed/b0', { apikey: 'bob-key-0123456789' });
    await until(() => seen.includes('/b0'), { what: "bob's request at the upstream" });
    release(PER_CALLER + 1);
    expect((await bob).status).toBe(200);
    expect((await Promise.all(alice)).map((r) => r.status)).toEqual([200, 200, 200]);
    await until(() => gw.proxy.upstreamInFlight() === 0, { what: 'every slot given back' });
  });

  it('without a consumer the share is per client address', async () => {
    seen.length = 0;
    const first = Array.from({ length: PER_CALLER }, (_, i) => send(`/open/x${i}`, {}, { localAddress: '127.0.0.2' }));
    await until(() => seen.length === PER_CALLER, { what: "127.0.0.2's requests at the upstream" });
    expect((await send('/open/x-over', {}, { localAddress: '127.0.0.2' })).status).toBe(429);
    const other = send('/open/y0', {}, { localAddress: '127.0.0.3' });
    await until(() => seen.includes('/y0'), { what: "127.0.0.3's request at the upstream" });
    release(PER_CALLER + 1);
    expect((await other).status).toBe(200);
    await Promise.all(first);
    await until(() => gw.proxy.upstreamInFlight() === 0, { what: 'every slot given back' });
  });

  it('never sends a request whose client left while it waited for a pool connection', async () => {
    seen.length = 0;
    // The pool's connections all busy: alice 3, bob 1.
    const busy = [
      ...Array.from({ length: PER_CALLER }, (_, i) => send(`/keyed/a${i}`, { apikey: 'alice-key-0123456789' })),
      send('/keyed/b0', { apikey: 'bob-key-0123456789' }),
    ];
    await until(() => seen.length === POOL, { what: 'the pool full' });
    const gone = new AbortController();
    const carol = send('/keyed/c-gone', { apikey: 'carol-key-0123456789' }, { signal: gone.signal });
    await until(() => gw.proxy.upstreamInFlight() === POOL + 1, { what: "carol's request waiting in the pool" });
    gone.abort();
    expect((await carol).status).toBe(0);
    // A connection frees: carol's request is dropped at its turn, not sent.
    release(POOL);
    await Promise.all(busy);
    await until(() => gw.proxy.upstreamInFlight() === 0, { what: "carol's request dropped" });
    const after = await Promise.race([send('/keyed/after', { apikey: 'bob-key-0123456789' }), until(() => seen.includes('/after') && held.length > 0, { what: 'the next request' }).then(() => null)]);
    expect(after).toBeNull();
    release(1);
    expect(seen).not.toContain('/c-gone');
  });

  it("frees a caller's share as soon as its client leaves, though the request still waits in the pool", async () => {
    seen.length = 0;
    const busy = [
      send('/keyed/a0', { apikey: 'alice-key-0123456789' }),
      send('/keyed/a1', { apikey: 'alice-key-0123456789' }),
      send('/keyed/b0', { apikey: 'bob-key-0123456789' }),
      send('/keyed/b1', { apikey: 'bob-key-0123456789' }),
    ];
    await until(() => seen.length === POOL, { what: 'the pool full' });
    const gone = new AbortController();
    const third = send('/keyed/a-gone', { apikey: 'alice-key-0123456789' }, { signal: gone.signal });
    await until(() => gw.proxy.upstreamInFlight() === POOL + 1, { what: "alice's third request waiting in the pool" });
    gone.abort();
    expect((await third).status).toBe(0);
    await until(() => gw.proxy.upstreamInFlight() === POOL, { what: "alice's share given back" });
    // alice has 2 of her 3 in use: a new request is taken (it waits for a connection), not refused.
    const next = send('/keyed/a-next', { apikey: 'alice-key-0123456789' });
    await until(() => gw.proxy.upstreamInFlight() === POOL + 1, { what: "alice's next request taken" });
    release(POOL);
    await Promise.all(busy);
    await until(() => seen.includes('/a-next'), { what: "alice's next request at the upstream" });
    release(1);
    expect((await next).status).toBe(200);
    expect(seen).not.toContain('/a-gone');
  });
});
