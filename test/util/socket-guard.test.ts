/**
 * Issue 24, "Every listener bounds every socket": for each listener kind (the
 * API's public and metrics listeners, the gateway's HTTP, HTTPS, admin and
 * status listeners, the FHIR server, the FHIR door, the DEMO platform
 * stand-in), real raw sockets on 127.0.0.1 show that a socket that sends
 * nothing is closed within the idle bound, a TLS handshake that stalls is
 * closed, trickled headers are cut, and at the cap a new honest connection is
 * served while the idlest connection is the one dropped; the gateway's HTTPS
 * listener does the same for HTTP/2 sessions. Which connection is dropped:
 * the one idle the longest by last activity (not the oldest), never one with
 * a request in progress. "Busy is not dead": the supervisor's health probe is
 * answered while the public cap is full.
 */
import { createServer, type ServerResponse } from 'node:http';
import { connect as h2connect, type ClientHttp2Session } from 'node:http2';
import type { AddressInfo, Socket } from 'node:net';
import { connect } from 'node:net';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startApi } from '../../src/api/server/server.js';
import { loadConfig } from '../../src/api/server/config.js';
import { startAdminServer } from '../../src/gateway/admin/server.js';
import { openStore } from '../../src/gateway/store/index.js';
import { startStatusServer } from '../../src/gateway/status/server.js';
import { startFhirServer } from '../../src/fhir/server/start.js';
import { startFhirDoor } from '../../src/fhir-door/server.js';
import { buildPlatformStandIn } from '../../src/demo/platform-stand-in.js';
import { guardSockets, serverTimeouts, type SocketGuard, type SocketLimits } from '../../src/util/socket-guard.js';
import { probe } from '../../src/runtime/native/health.js';
import { STAND_IN_PLUGINS, TOOLKIT_VERSION } from '../gateway/admin/harness.js';
import { Snapshots, startProxyOn } from '../gateway/proxy/harness.js';
import { makeTestPki, type TestPki } from '../helpers/pki.js';
import { honestRequest, silentSocket, slowloris, stalledHandshake, type Endpoint, type Held } from '../helpers/raw-socket.js';
import { removeTempDirs, tempDir } from '../helpers/tmp.js';
import { until } from '../helpers/until.js';

afterAll(() => removeTempDirs());

interface Bounds {
  idleMs: number;
  headersMs: number;
  cap: number;
}

interface Running {
  at: Endpoint;
  /** A path the listener answers (any status). */
  path: string;
  close(): Promise<void>;
}

let pki: TestPki | null = null;
const testPki = (): TestPki => (pki ??= makeTestPki(tempDir('guard-pki-')));

const hostPort = (url: string): Endpoint => {
  const u = new URL(url);
  return { host: u.hostname, port: Number(u.port) };
};

async function startApiOn(b: Bounds, which: 'public' | 'metrics'): Promise<Running> {
  const dir = tempDir('guard-api-');
  const env = {
    // Never called: these tests open no patient request.
    PLATFORM_API_URL: 'http://127.0.0.1:9/',
    FHIR_BASE_URL: 'https://127.0.0.1:9/fhir',
    FHIR_API_KEY: 'k'.repeat(32),
    AUDIT_LOG: join(dir, 'audit.log'),
    METRICS_LISTEN: '127.0.0.1:0',
    HEADERS_TIMEOUT_MS: String(b.headersMs),
    REQUEST_TIMEOUT_MS: String(Math.max(b.headersMs, 1_000)),
    IDLE_TIMEOUT_MS: String(b.idleMs),
    // a queued request must give up before the idle cut (src/api/server/config.ts)
    API_QUEUE_TIMEOUT_MS: String(Math.max(100, b.idleMs - 100)),
    MAX_CONNECTIONS: String(b.cap),
    PLATFORM_ANY_IDENTIFIER_SYSTEM: 'true',
  };
  const running = await startApi(loadConfig({ host: '127.0.0.1', port: 0 }, env, dir));
  const url = which === 'public' ? running.url : running.metricsUrl!;
  return { at: hostPort(url), path: which === 'public' ? '/api/health-check' : '/metrics', close: () => running.stop() };
}

async function startGateway(b: Bounds, tls: boolean): Promise<Running> {
  const p = testPki();
  const gw = await startProxyOn(new Snapshots(), {
    http: !tls,
    ...(tls ? { https: { cert: p.server.certPem, key: p.server.keyPem } } : {}),
    limits: { headersTimeoutMs: b.headersMs, requestTimeoutMs: Math.max(b.headersMs, 1_000), idleTimeoutMs: b.idleMs, handshakeTimeoutMs: b.idleMs, maxConnections: b.cap, checkIntervalMs: 50 },
  });
  const port = tls ? gw.listeners.https!.port : gw.listeners.http!.port;
  return { at: { host: '127.0.0.1', port, tls: tls ? { ca: p.ca.certPem } : null }, path: '/', close: () => gw.close() };
}

async function startAdmin(b: Bounds): Promise<Running> {
  const store = await openStore(join(tempDir('guard-admin-'), 'state.json'));
  const admin = await startAdminServer({
    host: '127.0.0.1', port: 0, store, plugins: STAND_IN_PLUGINS, version: TOOLKIT_VERSION,
    limits: { headersTimeoutMs: b.headersMs, requestTimeoutMs: Math.max(b.headersMs, 1_000), idleTimeoutMs: b.idleMs, maxConnections: b.cap },
  });
  return { at: hostPort(admin.url), path: '/status', close: () => admin.close() };
}

async function startStatus(b: Bounds): Promise<Running> {
  const status = await startStatusServer({ host: '127.0.0.1', port: 0 }, () => '', {
    headersTimeoutMs: b.headersMs, requestTimeoutMs: Math.max(b.headersMs, 1_000), idleTimeoutMs: b.idleMs, maxConnections: b.cap,
  });
  return { at: hostPort(`http://${status.address}`), path: '/metrics', close: () => status.close() };
}

async function startFhirInProcess(b: Bounds): Promise<Running> {
  const fhir = await startFhirServer({
    host: '127.0.0.1', port: 0, dataDir: tempDir('guard-fhir-'),
    limits: { headersTimeoutMs: b.headersMs, requestTimeoutMs: Math.max(b.headersMs, 1_000), idleTimeoutMs: b.idleMs, maxConnections: b.cap },
  });
  return { at: hostPort(fhir.url), path: '/fhir/metadata', close: () => fhir.close() };
}

async function startDoor(b: Bounds): Promise<Running> {
  const door = await startFhirDoor({
    host: '127.0.0.1', port: 0, upstream: 'http://127.0.0.1:9', token: 'door-token-for-tests-only',
    limits: { headersTimeoutMs: b.headersMs, requestTimeoutMs: Math.max(b.headersMs, 1_000), idleTimeoutMs: b.idleMs, maxConnections: b.cap },
  });
  // No token: the door answers 401 itself and never calls the (absent) upstream.
  return { at: hostPort(door.url), path: '/fhir/Patient', close: () => door.close() };
}

async function startStandIn(b: Bounds): Promise<Running> {
  const app = buildPlatformStandIn(tempDir('guard-platform-'), {
    headersTimeoutMs: b.headersMs, requestTimeoutMs: Math.max(b.headersMs, 1_000), idleTimeoutMs: b.idleMs, maxConnections: b.cap,
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = app.server.address() as AddressInfo;
  return { at: { host: '127.0.0.1', port }, path: '/health', close: () => app.close() };
}

const listeners: Array<[string, (b: Bounds) => Promise<Running>]> = [
  ['API public', (b) => startApiOn(b, 'public')],
  ['API metrics', (b) => startApiOn(b, 'metrics')],
  ['gateway HTTP', (b) => startGateway(b, false)],
  ['gateway HTTPS', (b) => startGateway(b, true)],
  ['gateway admin', startAdmin],
  ['gateway status', startStatus],
  ['FHIR', startFhirInProcess],
  ['FHIR door', startDoor],
  ['DEMO platform stand-in', startStandIn],
];

/** Short bounds so a test sees the cut; long ones where the test needs connections to stay. */
const SHORT: Bounds = { idleMs: 300, headersMs: 300, cap: 50 };
const LONG: Bounds = { idleMs: 30_000, headersMs: 30_000, cap: 3 };

async function closedWithin(held: Held, what: string): Promise<void> {
  await until(() => held.isClosed(), { what, timeoutMs: 5_000, intervalMs: 20 });
}

describe.each(listeners)('%s listener bounds every socket', (_name, start) => {
  it('closes a raw TCP socket that never sends a byte', async () => {
    const l = await start(SHORT);
    try {
      const silent = await silentSocket(l.at);
      await closedWithin(silent, 'the silent socket closed');
      // Closed, or answered 408 first (Node's own header time-out on plain HTTP/1.1), and nothing else.
      expect(silent.received()).toMatch(/^(|HTTP\/1\.1 408 [^]*)$/);
      expect(await honestRequest(l.at, l.path)).not.toBeNull();
    } finally {
      await l.close();
    }
  });

  it('cuts a client that trickles its headers (slowloris)', async () => {
    const l = await start(SHORT);
    try {
      const loris = await slowloris(l.at);
      await closedWithin(loris, 'the slowloris connection cut');
      loris.stop();
    } finally {
      await l.close();
    }
  });

  it('at the cap serves a new honest connection and drops the idlest one', async () => {
    const l = await start(LONG);
    const held: Held[] = [];
    try {
      for (let i = 0; i < LONG.cap; i++) held.push(l.at.tls ? await stalledHandshake(l.at) : await silentSocket(l.at));
      expect(await honestRequest(l.at, l.path)).not.toBeNull();
      await closedWithin(held[0]!, 'the idlest (first) connection dropped');
      expect(held.slice(1).map((h) => h.isClosed())).toEqual(held.slice(1).map(() => false));
    } finally {
      for (const h of held) h.socket.destroy();
      await l.close();
    }
  });
});

describe('gateway HTTPS listener: TLS handshake deadline', () => {
  it('closes a TLS connection whose handshake never completes', async () => {
    const l = await startGateway(SHORT, true);
    try {
      const stalled = await stalledHandshake(l.at);
      await closedWithin(stalled, 'the stalled handshake closed');
    } finally {
      await l.close();
    }
  });
});

describe('busy is not dead: the supervisor health probe while the public cap is full', () => {
  const probed: Array<[string, (b: Bounds) => Promise<Running>]> = [
    ['API', (b) => startApiOn(b, 'public')],
    ['gateway admin', startAdmin],
    ['FHIR', startFhirInProcess],
  ];
  it.each(probed)('%s answers its health URL with the cap held by idle sockets', async (_name, start) => {
    const l = await start(LONG);
    const held: Held[] = [];
    try {
      for (let i = 0; i < LONG.cap; i++) held.push(await silentSocket(l.at));
      expect(await probe(`http://${l.at.host}:${l.at.port}${l.path}`, 2_000)).toBe(true);
    } finally {
      for (const h of held) h.socket.destroy();
      await l.close();
    }
  });
});

/** An HTTP/2 client of the gateway's HTTPS listener, with the session's close observed. */
interface H2Client {
  session: ClientHttp2Session;
  isClosed(): boolean;
  closed: Promise<void>;
}

async function h2Client(at: Endpoint): Promise<H2Client> {
  const session = h2connect(`https://${at.host}:${at.port}`, { ca: at.tls!.ca });
  let done = false;
  const closed = new Promise<void>((resolve) => session.once('close', () => {
    done = true;
    resolve();
  }));
  session.on('error', () => {});
  await new Promise<void>((resolve, reject) => {
    session.once('connect', () => resolve());
    session.once('error', reject);
  });
  return { session, closed, isClosed: () => done };
}

/** One stream on the session; its status once the answer has ended. */
function h2Get(c: H2Client, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const stream = c.session.request({ ':path': path });
    let status = 0;
    stream.once('response', (h) => (status = Number(h[':status'])));
    stream.on('data', () => {});
    stream.once('end', () => resolve(status));
    stream.once('error', reject);
    stream.end();
  });
}

describe('gateway HTTPS listener: HTTP/2 sessions are bounded too', () => {
  it('closes an HTTP/2 session with no stream in progress after the idle time-out', async () => {
    // The proxy's own idle-session timer is its keep-alive time-out (60 s here): the close comes from the guard.
    const l = await startGateway(SHORT, true);
    try {
      const c = await h2Client(l.at);
      expect(await h2Get(c, '/')).toBeGreaterThan(0);
      await until(() => c.isClosed(), { what: 'the idle HTTP/2 session closed', timeoutMs: 5_000, intervalMs: 20 });
    } finally {
      await l.close();
    }
  });

  it('at the cap serves a new HTTP/2 client and drops the session idle the longest by its last stream, not the oldest', async () => {
    const l = await startGateway(LONG, true);
    const held: H2Client[] = [];
    try {
      for (let i = 0; i < LONG.cap; i++) {
        const c = await h2Client(l.at);
        await h2Get(c, '/');
        held.push(c);
      }
      // The oldest session is active again: the second one is now idle the longest.
      await h2Get(held[0]!, '/');
      const newcomer = await h2Client(l.at);
      held.push(newcomer);
      expect(await h2Get(newcomer, '/')).toBeGreaterThan(0);
      await until(() => held[1]!.isClosed(), { what: 'the idlest (second) session dropped', timeoutMs: 5_000, intervalMs: 20 });
      expect([held[0]!.isClosed(), held[2]!.isClosed(), newcomer.isClosed()]).toEqual([false, false, false]);
    } finally {
      for (const c of held) c.session.destroy();
      await l.close();
    }
  });
});

/**
 * The rule for the connection dropped at the cap, on a bare guarded node:http
 * server: the one idle the longest by its last activity (a request begun or
 * ended, the connection opened), not the one connected first; a connection
 * with a request in progress is never dropped, and when every one has, the
 * newcomer is refused.
 */
describe('which connection the guard drops at the cap', () => {
  interface Guarded {
    port: number;
    guard: SocketGuard;
    /** Responses of GET /work, held until the test ends them. */
    work: ServerResponse[];
    close(): void;
  }

  async function guarded(cap: number): Promise<Guarded> {
    const limits: SocketLimits = { headersTimeoutMs: 30_000, requestTimeoutMs: 30_000, keepAliveTimeoutMs: 30_000, handshakeTimeoutMs: 30_000, idleTimeoutMs: 30_000, maxConnections: cap };
    const work: ServerResponse[] = [];
    const server = createServer(serverTimeouts(limits), (req, res) => {
      if (req.url === '/work') work.push(res);
      else res.end('ok');
    });
    const guard = guardSockets(server, limits);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    return {
      port: (server.address() as AddressInfo).port,
      guard,
      work,
      close: () => {
        for (const res of work) res.end();
        server.closeAllConnections();
        server.close();
      },
    };
  }

  /** A keep-alive connection with its close observed. */
  interface Conn {
    socket: Socket;
    isClosed(): boolean;
    text(): string;
  }

  async function open(port: number): Promise<Conn> {
    const socket = connect(port, '127.0.0.1');
    let done = false;
    let text = '';
    socket.on('data', (d: Buffer) => (text += d.toString('latin1')));
    socket.once('close', () => (done = true));
    socket.on('error', () => {});
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', reject);
    });
    return { socket, isClosed: () => done, text: () => text };
  }

  /** GET / on the kept-alive connection; resolves once the answer has arrived. */
  async function answered(c: Conn): Promise<void> {
    const before = c.text().length;
    c.socket.write('GET / HTTP/1.1\r\nHost: h\r\n\r\n');
    await until(() => c.text().slice(before).endsWith('ok'), { what: 'the answer on a kept-alive connection', intervalMs: 10 });
  }

  it('drops the connection idle the longest by last activity, not the oldest', async () => {
    const g = await guarded(3);
    const held: Conn[] = [];
    try {
      for (let i = 0; i < 3; i++) {
        const c = await open(g.port);
        await answered(c);
        held.push(c);
      }
      // The first connection is the oldest, but asks again: the second is now idle the longest.
      await answered(held[0]!);
      const newcomer = await open(g.port);
      held.push(newcomer);
      await answered(newcomer);
      await until(() => held[1]!.isClosed(), { what: 'the idlest (second) connection dropped', intervalMs: 10 });
      expect([held[0]!.isClosed(), held[2]!.isClosed()]).toEqual([false, false]);
      await answered(held[0]!);
      expect(g.guard.stats()).toMatchObject({ open: 3, evicted: 1, refused: 0 });
    } finally {
      for (const c of held) c.socket.destroy();
      g.close();
    }
  });

  it('never drops a connection with a request in progress, and refuses the newcomer when every one has', async () => {
    const g = await guarded(2);
    const held: Conn[] = [];
    try {
      // The first connection's request began before the second connection's last activity: by time it is the idlest.
      const busy = await open(g.port);
      held.push(busy);
      busy.socket.write('GET /work HTTP/1.1\r\nHost: h\r\n\r\n');
      await until(() => g.work.length === 1, { what: 'the first request in progress', intervalMs: 10 });
      const idle = await open(g.port);
      held.push(idle);
      await answered(idle);

      const third = await open(g.port);
      held.push(third);
      await answered(third);
      await until(() => idle.isClosed(), { what: 'the idle connection dropped, not the busy one', intervalMs: 10 });
      expect(busy.isClosed()).toBe(false);

      // Now both connections have a request in progress: a newcomer is closed at once, unanswered.
      third.socket.write('GET /work HTTP/1.1\r\nHost: h\r\n\r\n');
      await until(() => g.work.length === 2, { what: 'the second request in progress', intervalMs: 10 });
      expect(await honestRequest({ host: '127.0.0.1', port: g.port }, '/')).toBeNull();
      expect(g.guard.stats()).toMatchObject({ open: 2, evicted: 1, refused: 1 });

      g.work[0]!.end('done');
      await until(() => busy.text().endsWith('done'), { what: 'the busy request answered in the end', intervalMs: 10 });
    } finally {
      for (const c of held) c.socket.destroy();
      g.close();
    }
  });

  it('with every connection busy, sheds the oldest one still sending its request (a held upload), never a whole request (issue 45)', async () => {
    const g = await guarded(3);
    const held: Conn[] = [];
    const upload = (c: Conn) => c.socket.write('POST /work HTTP/1.1\r\nHost: h\r\nContent-Length: 100\r\n\r\n{');
    try {
      const oldUpload = await open(g.port);
      const whole = await open(g.port);
      const newUpload = await open(g.port);
      held.push(oldUpload, whole, newUpload);
      upload(oldUpload);
      await until(() => g.work.length === 1, { what: 'the first upload in progress', intervalMs: 10 });
      whole.socket.write('GET /work HTTP/1.1\r\nHost: h\r\n\r\n');
      await until(() => g.work.length === 2, { what: 'the whole request in progress', intervalMs: 10 });
      upload(newUpload);
      await until(() => g.work.length === 3, { what: 'the second upload in progress', intervalMs: 10 });

      // the honest newcomer is served; the oldest upload makes room, by connect order
      expect(await honestRequest({ host: '127.0.0.1', port: g.port }, '/')).toBe(200);
      await until(() => oldUpload.isClosed(), { what: 'the oldest upload shed', intervalMs: 10 });
      expect([whole.isClosed(), newUpload.isClosed()]).toEqual([false, false]);
      expect(g.guard.stats()).toMatchObject({ evicted: 1, shed: 1, refused: 0 });

      // the honest one has gone (Connection: close): a place is free, and taken by a whole request
      const busy = await open(g.port);
      held.push(busy);
      busy.socket.write('GET /work HTTP/1.1\r\nHost: h\r\n\r\n');
      await until(() => g.work.length === 4, { what: 'the second whole request in progress', intervalMs: 10 });
      // at the cap again: the remaining upload goes
      const third = await open(g.port);
      held.push(third);
      await until(() => newUpload.isClosed(), { what: 'the second upload shed', intervalMs: 10 });
      third.socket.write('GET /work HTTP/1.1\r\nHost: h\r\n\r\n');
      await until(() => g.work.length === 5, { what: 'the third whole request in progress', intervalMs: 10 });
      // now every connection holds a whole request: none is cut, the newcomer is refused
      expect(await honestRequest({ host: '127.0.0.1', port: g.port }, '/')).toBeNull();
      expect(whole.isClosed()).toBe(false);
      expect(g.guard.stats()).toMatchObject({ open: 3, evicted: 2, shed: 2, refused: 1 });
    } finally {
      for (const c of held) c.socket.destroy();
      g.close();
    }
  });

  it('sheds an upload hanging since before an idle connection last made progress, not that connection (an honest caller between requests)', async () => {
    const g = await guarded(2);
    const held: Conn[] = [];
    try {
      const upload = await open(g.port);
      held.push(upload);
      upload.socket.write('POST /work HTTP/1.1\r\nHost: h\r\nContent-Length: 100\r\n\r\n{');
      await until(() => g.work.length === 1, { what: 'the upload in progress', intervalMs: 10 });
      const began = Date.now();
      await until(() => Date.now() > began, { what: 'a later millisecond', intervalMs: 1 });
      const honest = await open(g.port);
      held.push(honest);
      await answered(honest); // idle now, its last request ended after the upload began

      const newcomer = await open(g.port);
      held.push(newcomer);
      await answered(newcomer);
      await until(() => upload.isClosed(), { what: 'the hanging upload shed', intervalMs: 10 });
      expect(honest.isClosed()).toBe(false);
      await answered(honest); // and it still serves
      expect(g.guard.stats()).toMatchObject({ evicted: 1, shed: 1 });
    } finally {
      for (const c of held) c.socket.destroy();
      g.close();
    }
  });

  it('forgets a connection that went away mid-request: it neither counts towards the cap nor stands as the one to drop', async () => {
    const g = await guarded(2);
    const held: Conn[] = [];
    try {
      const gone = await open(g.port);
      gone.socket.write('GET /work HTTP/1.1\r\nHost: h\r\n\r\n');
      await until(() => g.work.length === 1, { what: 'the request in progress', intervalMs: 10 });
      // Its response closes after its socket: the end of that request must not bring the connection back.
      gone.socket.destroy();
      await until(() => g.guard.stats().open === 0, { what: 'the server forgot the closed connection', intervalMs: 10 });

      for (let i = 0; i < 2; i++) {
        const c = await open(g.port);
        held.push(c);
        await answered(c);
      }
      const newcomer = await open(g.port);
      held.push(newcomer);
      await answered(newcomer);
      await until(() => held[0]!.isClosed(), { what: 'the idlest live connection dropped', intervalMs: 10 });
      expect(g.guard.stats()).toMatchObject({ open: 2, evicted: 1 });
    } finally {
      for (const c of held) c.socket.destroy();
      g.close();
    }
  });
});
