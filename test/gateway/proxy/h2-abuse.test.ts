/**
 * HTTP/2 abuse by a key holder (issue 45, the CVE-2023-44487 "rapid reset"
 * pattern): streams opened and reset at once must not leave upstream requests
 * behind, a connection resetting too many streams a second is closed with
 * GOAWAY, and an honest caller still gets a whole answer afterwards.
 */
import { constants, type ClientHttp2Session } from 'node:http2';
import type { Server } from 'node:http';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateCa, issueCertificate, type KeyAndCert } from '../../../src/tls/pki.js';
import { until } from '../../helpers/until.js';
import { consumer, emptyConfig, h2Session, keyCredential, plugin, route, service, Snapshots, startProxyOn, startUpstream, type RunningProxy } from './harness.js';

const KEY = 'h2-abuse-test-key-0123456789';
/** A large answer, as `Patient?_count=1000` gives: the upstream cannot write it at once. */
const ANSWER = Buffer.alloc(2 * 1024 * 1024, 'p');
/** The upstream takes this many connections at most (FHIR's own cap, scaled down). */
const UPSTREAM_CONNECTIONS = 16;

describe('HTTP/2 rapid reset by a key holder', () => {
  let ca: KeyAndCert;
  let cert: KeyAndCert;
  let upstream: { server: Server; port: number };
  let gw: RunningProxy;
  /** Upstream connections open now. */
  let upstreamOpen = 0;
  const snapshots = new Snapshots();

  beforeAll(async () => {
    ca = generateCa({ commonName: 'H2 Abuse CA' });
    cert = issueCertificate(ca, { commonName: '127.0.0.1', hosts: ['127.0.0.1'], usage: 'server' });
    upstream = await startUpstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/fhir+json', 'content-length': String(ANSWER.length) });
      res.end(ANSWER);
    });
    upstream.server.maxConnections = UPSTREAM_CONNECTIONS;
    upstream.server.on('connection', (socket) => {
      upstreamOpen++;
      socket.once('close', () => upstreamOpen--);
    });
    const c = emptyConfig();
    const s = service(c, { host: '127.0.0.1', port: upstream.port, path: '/fhir' });
    const r = route(c, s, { paths: ['/fhir-api-key-auth'] });
    plugin(c, 'key-auth', { key_names: ['apikey'], hide_credentials: true }, { route: r });
    keyCredential(c, consumer(c, 'attacker'), KEY);
    snapshots.set(c);
    // The per-address stream cap out of the way: the reset count alone must close the connections.
    gw = await startProxyOn(snapshots, { https: { cert: cert.certPem, key: cert.keyPem }, limits: { h2MaxStreamsPerClient: 100_000 } });
  });
  afterAll(async () => {
    await gw.close();
    upstream.server.close();
  });

  const h2 = (): Promise<ClientHttp2Session> => h2Session(gw.httpsUrl, ca.certPem);

  /** Opens and at once resets `n` streams on `session`, `burst` at a time; resolves with how many it could open before the session closed. */
  async function rapidReset(session: ClientHttp2Session, n: number, burst = 50): Promise<number> {
    let opened = 0;
    session.on('error', () => undefined);
    for (let i = 0; i < n && !session.closed && !session.destroyed; i += burst) {
      for (let j = 0; j < burst && !session.closed && !session.destroyed; j++) {
        try {
          const stream = session.request({ ':path': '/fhir-api-key-auth/Patient?_count=1000', apikey: KEY });
          stream.on('error', () => undefined);
          opened++;
          // Let the headers leave, then cancel: the gateway has seen the request.
          stream.close(constants.NGHTTP2_CANCEL);
        } catch {
          return opened;
        }
      }
      await new Promise((r) => setImmediate(r));
    }
    return opened;
  }

  it('leaves no upstream request behind, closes the resetting connections, and an honest caller gets the whole answer', async () => {
    const sessions = await Promise.all([h2(), h2(), h2(), h2()]);
    expect(gw.proxy.stats.connectionsActive).toBe(4);
    // 600 each: under the 1,000 resets after which Node's own HTTP/2 layer (nghttp2's reset rate limit) closes a
    // connection, so what closes them here is the gateway's count.
    await Promise.all(sessions.map((s) => rapidReset(s, 600)));
    // Past the resets-per-second limit the gateway closes each resetting connection (GOAWAY ENHANCE_YOUR_CALM).
    // Seen from the gateway's side: a Node client that is busy resetting may not read the GOAWAY in time.
    await until(() => gw.proxy.stats.connectionsActive === 0, { what: 'the gateway closes the resetting connections' });
    for (const s of sessions) s.destroy();
    // The reset streams' upstream requests were cancelled: their connections are released.
    await until(() => gw.proxy.upstreamInFlight() === 0, { what: 'no upstream request left in flight' });

    const dispatcher = new Agent({ connect: { ca: ca.certPem } });
    try {
      const res = await request(`${gw.httpsUrl}/fhir-api-key-auth/Patient?_count=1000`, {
        dispatcher,
        headers: { apikey: KEY },
        signal: AbortSignal.timeout(30_000),
      });
      const body = Buffer.from(await res.body.arrayBuffer());
      expect(res.statusCode).toBe(200);
      expect(body.length).toBe(ANSWER.length);
    } finally {
      await dispatcher.close();
    }
    expect(upstreamOpen).toBeLessThanOrEqual(UPSTREAM_CONNECTIONS);
  }, 60_000);
});

describe('HTTP/2 streams per client address', () => {
  const PER_CLIENT = 4;
  let ca: KeyAndCert;
  let cert: KeyAndCert;
  let upstream: { server: Server; port: number };
  let gw: RunningProxy;
  const held: Array<import('node:http').ServerResponse> = [];
  const snapshots = new Snapshots();

  beforeAll(async () => {
    ca = generateCa({ commonName: 'H2 Per Client CA' });
    cert = issueCertificate(ca, { commonName: '127.0.0.1', hosts: ['127.0.0.1'], usage: 'server' });
    upstream = await startUpstream((_req, res) => held.push(res));
    const c = emptyConfig();
    route(c, service(c, { host: '127.0.0.1', port: upstream.port }), { paths: ['/held'] });
    snapshots.set(c);
    gw = await startProxyOn(snapshots, { http: false, https: { cert: cert.certPem, key: cert.keyPem }, limits: { h2MaxStreamsPerClient: PER_CLIENT } });
  });
  afterAll(async () => {
    for (const r of held.splice(0)) r.end();
    await gw.close();
    upstream.server.close();
  });

  it('refuses a stream past the cap over all of the address\'s connections with REFUSED_STREAM, before it reaches the upstream', async () => {
    const connect = (): Promise<ClientHttp2Session> => h2Session(gw.httpsUrl, ca.certPem);
    const [a, b] = await Promise.all([connect(), connect()]);
    try {
      // Two connections, PER_CLIENT streams between them: all reach the upstream and wait there.
      const streams = Array.from({ length: PER_CLIENT }, (_, i) => (i % 2 === 0 ? a : b).request({ ':path': `/held/${i}` }).on('error', () => undefined).resume());
      await until(() => held.length === PER_CLIENT, { what: 'the streams at the upstream' });
      const refused = await new Promise<number>((resolve) => {
        const st = b.request({ ':path': '/held/over' });
        st.on('error', () => undefined);
        st.once('close', () => resolve(st.rstCode));
      });
      expect(refused).toBe(constants.NGHTTP2_REFUSED_STREAM);
      expect(held.length).toBe(PER_CLIENT);
      // Once a stream ends, the address may open another.
      // the upstream sees the path with the route's /held stripped
      const first = held.splice(held.findIndex((r) => r.req.url === '/0'), 1)[0]!;
      const firstClosed = new Promise((resolve) => streams[0]!.once('close', resolve));
      first.end('done');
      await firstClosed;
      const next = await new Promise<number>((resolve) => {
        const st = a.request({ ':path': '/held/next' });
        st.on('error', () => undefined);
        st.once('response', (h) => resolve(Number(h[':status'])));
        void until(() => held.length === PER_CLIENT, { what: 'the next stream at the upstream' }).then(() => held.at(-1)!.end('ok'));
      });
      expect(next).toBe(200);
    } finally {
      a.destroy();
      b.destroy();
    }
  });
});
