/**
 * Issue 24, "Every listener bounds every socket": for each listener kind (the
 * API's public and metrics listeners, the gateway's HTTP, HTTPS, admin and
 * status listeners, the FHIR server), real raw sockets on 127.0.0.1 show that
 * a socket that sends nothing is closed within the idle bound, a TLS handshake
 * that stalls is closed, trickled headers are cut, and at the cap a new honest
 * connection is served while the idlest connection is the one dropped.
 * "Busy is not dead": the supervisor's health probe is answered while the
 * public cap is full.
 */
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startApi } from '../../src/api/server.js';
import { loadConfig } from '../../src/api/config.js';
import { startAdminServer } from '../../src/gateway/admin/server.js';
import { openStore } from '../../src/gateway/store/index.js';
import { startStatusServer } from '../../src/gateway/status/server.js';
import { startFhirServer } from '../../src/fhir/server/start.js';
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
    // a queued request must give up before the idle cut (src/api/config.ts)
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

async function startFhir(b: Bounds): Promise<Running> {
  const fhir = await startFhirServer({
    host: '127.0.0.1', port: 0, dataDir: tempDir('guard-fhir-'),
    limits: { headersTimeoutMs: b.headersMs, requestTimeoutMs: Math.max(b.headersMs, 1_000), idleTimeoutMs: b.idleMs, maxConnections: b.cap },
  });
  return { at: hostPort(fhir.url), path: '/fhir/metadata', close: () => fhir.close() };
}

const listeners: Array<[string, (b: Bounds) => Promise<Running>]> = [
  ['API public', (b) => startApiOn(b, 'public')],
  ['API metrics', (b) => startApiOn(b, 'metrics')],
  ['gateway HTTP', (b) => startGateway(b, false)],
  ['gateway HTTPS', (b) => startGateway(b, true)],
  ['gateway admin', startAdmin],
  ['gateway status', startStatus],
  ['FHIR', startFhir],
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
    ['FHIR', startFhir],
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
