/**
 * `hospital-api gateway`: the admin API (with the store) and the proxy in one
 * process, or with `workers > 1` the proxy in node:cluster workers that share
 * the listening sockets and follow the state file (watchStateFile). The
 * primary prints one ready line on stderr with the bound addresses.
 */
import cluster, { type Worker } from 'node:cluster';
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { HospitalApiError } from '../errors/index.js';
import type { ListenAddress } from '../util/listen-address.js';
import { startAdminServer, type AdminServer } from './admin/server.js';
import type { ConfigSnapshot } from './model/types.js';
import { PLUGIN_SCHEMAS } from './plugins/index.js';
import {
  LocalCounters,
  PrimaryCounters,
  RATE_LIMIT_REPLY,
  RATE_LIMIT_REQUEST,
  setRateCounterStore,
  type RateLimitReplyMessage,
  type RateLimitRequestMessage,
} from './plugins/rate-limiting/counters.js';
import { GatewayProxy, type ProxyHealth } from './proxy/gateway-proxy.js';
import { startProxyListeners, type ProxyListeners } from './proxy/listeners.js';
import { setServerTokens } from './proxy/kong-response.js';
import { parseTrustedIps } from './proxy/trusted-ips.js';
import { loadSnapshotFromFile, openStore, watchStateFile } from './store/index.js';

export interface GatewayOptions {
  admin: ListenAddress | null;
  proxy: ListenAddress | null;
  proxySsl: ListenAddress | null;
  certPath: string | null;
  keyPath: string | null;
  statePath: string;
  workers: number;
  /** Kong's trusted_ips, comma-separated (proxy/trusted-ips.ts); null = none. */
  trustedIps?: string | null;
  /** Kong's `headers` server_tokens (Server / Via naming kong/x.y.z); default on. */
  serverTokens?: boolean;
  version: string;
}

export interface RunningGateway {
  admin: string | null;
  proxy: string | null;
  proxySsl: string | null;
  close(): Promise<void>;
}

interface Listening {
  type: 'gateway-listening';
  http: AddressInfo | null;
  https: AddressInfo | null;
}

const WORKER_ENV = 'HOSPITAL_API_GATEWAY_WORKER';
const HEALTH = 'gateway-proxy-health';

interface HealthMessage {
  type: typeof HEALTH;
  health: ProxyHealth;
}

/**
 * The proxy's configuration health as the admin API's `GET /status` shows it
 * (field `proxy`): with workers, the worst of their reports.
 */
function combineHealth(reports: ProxyHealth[]): ProxyHealth | null {
  if (reports.length === 0) return null;
  return reports.find((h) => h.appliedVersion === null) ?? reports.find((h) => h.degraded) ?? (reports[0] as ProxyHealth);
}

function addr(a: AddressInfo | null): string | null {
  if (!a) return null;
  return a.family === 'IPv6' ? `[${a.address}]:${a.port}` : `${a.address}:${a.port}`;
}

function readTls(o: GatewayOptions): { cert: string; key: string } | null {
  if (!o.proxySsl) return null;
  if (!o.certPath || !o.keyPath) {
    throw new HospitalApiError('ERR_USAGE', { detail: '--proxy-ssl-listen needs --cert and --key (or use --proxy-ssl-listen off)' });
  }
  const read = (path: string) => {
    try {
      return readFileSync(path, 'utf8');
    } catch (err) {
      throw new HospitalApiError('ERR_FILE_READ', { path, detail: (err as Error).message }, { cause: err });
    }
  };
  return { cert: read(o.certPath), key: read(o.keyPath) };
}

async function listenProxy(o: GatewayOptions, proxy: GatewayProxy): Promise<ProxyListeners> {
  const tls = readTls(o);
  try {
    return await startProxyListeners({ proxy, http: o.proxy, https: o.proxySsl && tls ? { ...o.proxySsl, ...tls } : null });
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { port?: number; address?: string };
    if (e.code === 'EADDRINUSE') throw new HospitalApiError('ERR_PORT_IN_USE', { host: e.address ?? '', port: e.port ?? 0, detail: '' }, { cause: err });
    if (e.code === 'ERR_OSSL_PEM_NO_START_LINE' || /PEM|key values mismatch/i.test(e.message)) {
      throw new HospitalApiError('ERR_TLS_MATERIAL', { path: o.certPath ?? '', detail: e.message }, { cause: err });
    }
    throw err;
  }
}

/**
 * SIGHUP rereads --cert/--key and installs them for new TLS connections without
 * closing a socket (`cert renew`); a pair that does not load leaves the old one
 * in force. With workers, the primary passes the signal on to each of them.
 */
function reloadTlsOnSignal(o: GatewayOptions, listeners: ProxyListeners | null, workers: () => Worker[]): void {
  // Without a TLS listener there is nothing to reload, but SIGHUP (systemctl reload) must not end the process.
  if (!o.proxySsl) {
    process.on('SIGHUP', () => process.stderr.write('hospital-api gateway: SIGHUP: no TLS listener, nothing to reload\n'));
    return;
  }
  process.on('SIGHUP', () => {
    try {
      const tls = readTls(o);
      if (tls && listeners) listeners.setTls(tls);
      for (const w of workers()) w.process.kill('SIGHUP');
      process.stderr.write('hospital-api gateway: TLS certificate reloaded\n');
    } catch (err) {
      process.stderr.write(`hospital-api gateway: TLS reload failed, the previous certificate stays in use: ${(err as Error).message}\n`);
    }
  });
}

/** True in a proxy worker process forked by runGateway. */
export function isGatewayWorker(): boolean {
  return cluster.isWorker && process.env[WORKER_ENV] !== undefined;
}

/** Worker body: follow the state file, serve the proxy, report the bound addresses. */
export async function runGatewayWorker(): Promise<void> {
  const o = JSON.parse(process.env[WORKER_ENV] as string) as GatewayOptions;
  setServerTokens(o.serverTokens !== false);
  // Rate-limiting counters live in the primary: one count per gateway, not per worker.
  const counters = new PrimaryCounters((m) => process.send?.(m));
  process.on('message', (m) => counters.onMessage(m));
  setRateCounterStore(counters);
  let snapshot: ConfigSnapshot = loadSnapshotFromFile(o.statePath);
  const proxy = new GatewayProxy(() => snapshot, { trustedIps: parseTrustedIps(o.trustedIps ?? undefined) });
  proxy.onHealth = (health) => process.send?.({ type: HEALTH, health } satisfies HealthMessage);
  proxy.health(); // compile now: the primary learns at once whether the configuration applies
  const stop = watchStateFile(
    o.statePath,
    (s) => {
      snapshot = s;
      proxy.current();
    },
    (err) => proxy.rejected(`state file not applied: ${err.message}`),
  );
  const listeners = await listenProxy(o, proxy);
  reloadTlsOnSignal(o, listeners, () => []);
  const msg: Listening = { type: 'gateway-listening', http: listeners.http, https: listeners.https };
  process.send?.(msg);
  process.on('disconnect', () => {
    stop();
    void listeners.close().then(() => proxy.close()).then(() => process.exit(0));
  });
}

/** The primary's side of the workers' messages: rate-limit counters and health reports. */
class WorkerHub {
  private readonly counters = new LocalCounters();
  private readonly health = new Map<number, ProxyHealth>();

  attach(w: Worker): void {
    w.on('message', (m: RateLimitRequestMessage | HealthMessage) => {
      if (m?.type === RATE_LIMIT_REQUEST) {
        const r = this.counters.take(m);
        if (w.isConnected()) w.send({ type: RATE_LIMIT_REPLY, id: m.id, counts: r.counts, stop: r.stop } satisfies RateLimitReplyMessage);
      } else if (m?.type === HEALTH) {
        this.health.set(w.id, m.health);
      }
    });
    w.once('exit', () => this.health.delete(w.id));
  }

  report(): ProxyHealth | null {
    return combineHealth([...this.health.values()]);
  }
}

function forkWorkers(o: GatewayOptions, hub: WorkerHub): Promise<{ workers: Worker[]; listening: Listening }> {
  return new Promise((resolve, reject) => {
    // A larger young generation: fewer scavenges on the allocation-heavy proxy path.
    // GC on the main thread only: with one worker per core, V8's parallel GC helper
    // threads just compete with the other workers, the upstream and the load
    // (CPU/req 3-26 µs lower in 4 of 4 paired runs, docs/gateway-proxy.md).
    cluster.setupPrimary({ execArgv: [...process.execArgv, '--max-semi-space-size=32', '--single-threaded-gc'] });
    const workers: Worker[] = [];
    let first: Listening | null = null;
    let ready = 0;
    for (let i = 0; i < o.workers; i++) {
      const w = cluster.fork({ [WORKER_ENV]: JSON.stringify(o) });
      hub.attach(w);
      workers.push(w);
      w.on('message', (m: Listening) => {
        if (m?.type !== 'gateway-listening') return;
        first ??= m;
        if (++ready === o.workers) resolve({ workers, listening: first });
      });
      w.once('exit', (code) => {
        if (ready < o.workers) reject(new HospitalApiError('ERR_INTERNAL', { detail: `proxy worker exited with code ${code} while starting` }));
      });
    }
  });
}

let stopping = false;

/** A worker that dies while the gateway runs is replaced (the others keep serving meanwhile). */
function replaceCrashedWorkers(o: GatewayOptions, workers: Worker[], hub: WorkerHub): void {
  const restarts: number[] = [];
  cluster.on('exit', (dead, code, signal) => {
    if (stopping) return;
    const i = workers.indexOf(dead);
    if (i < 0) return;
    const now = Date.now();
    while (restarts.length && restarts[0]! < now - 60_000) restarts.shift();
    if (restarts.push(now) > 10) {
      process.stderr.write('hospital-api gateway: proxy workers keep exiting; not restarting any more\n');
      return;
    }
    process.stderr.write(`hospital-api gateway: proxy worker ${dead.process.pid} exited (${signal ?? code}); starting another\n`);
    workers[i] = cluster.fork({ [WORKER_ENV]: JSON.stringify(o) });
    hub.attach(workers[i] as Worker);
  });
}

export async function runGateway(o: GatewayOptions): Promise<RunningGateway> {
  setServerTokens(o.serverTokens !== false);
  const store = await openStore(o.statePath);
  let admin: AdminServer | null = null;
  let proxy: GatewayProxy | null = null;
  let listeners: ProxyListeners | null = null;
  let workers: Worker[] = [];
  const hub = new WorkerHub();
  const proxyHealth = (): ProxyHealth | null => (proxy ? proxy.health() : hub.report());
  try {
    if (o.admin) {
      admin = await startAdminServer({ host: o.admin.host, port: o.admin.port, store, plugins: PLUGIN_SCHEMAS, version: o.version, proxyHealth });
    }
    let listening: Listening = { type: 'gateway-listening', http: null, https: null };
    if (o.proxy || o.proxySsl) {
      if (o.workers > 1) {
        ({ workers, listening } = await forkWorkers(o, hub));
        replaceCrashedWorkers(o, workers, hub);
        reloadTlsOnSignal(o, null, () => workers);
      } else {
        setRateCounterStore(new LocalCounters());
        proxy = new GatewayProxy(() => store.snapshot(), { trustedIps: parseTrustedIps(o.trustedIps ?? undefined) });
        listeners = await listenProxy(o, proxy);
        listening = { type: 'gateway-listening', http: listeners.http, https: listeners.https };
        reloadTlsOnSignal(o, listeners, () => []);
      }
    }
    return {
      admin: admin ? admin.url.replace(/^http:\/\//, '') : null,
      proxy: addr(listening.http),
      proxySsl: addr(listening.https),
      close: async () => {
        stopping = true;
        await Promise.all(workers.map((w) => new Promise<void>((resolve) => {
          if (w.isDead()) return resolve();
          w.once('exit', () => resolve());
          w.disconnect();
          setTimeout(() => w.kill(), 3000).unref();
        })));
        await listeners?.close();
        await proxy?.close();
        await admin?.close();
      },
    };
  } catch (err) {
    for (const w of workers) w.kill();
    await listeners?.close();
    await proxy?.close();
    await admin?.close();
    throw err;
  }
}
