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
import { GatewayProxy } from './proxy/gateway-proxy.js';
import { startProxyListeners, type ProxyListeners } from './proxy/listeners.js';
import { loadSnapshotFromFile, openStore, watchStateFile } from './store/index.js';

export interface GatewayOptions {
  admin: ListenAddress | null;
  proxy: ListenAddress | null;
  proxySsl: ListenAddress | null;
  certPath: string | null;
  keyPath: string | null;
  statePath: string;
  workers: number;
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
  let snapshot: ConfigSnapshot = loadSnapshotFromFile(o.statePath);
  const stop = watchStateFile(o.statePath, (s) => (snapshot = s));
  const proxy = new GatewayProxy(() => snapshot);
  const listeners = await listenProxy(o, proxy);
  reloadTlsOnSignal(o, listeners, () => []);
  const msg: Listening = { type: 'gateway-listening', http: listeners.http, https: listeners.https };
  process.send?.(msg);
  process.on('disconnect', () => {
    stop();
    void listeners.close().then(() => proxy.close()).then(() => process.exit(0));
  });
}

function forkWorkers(o: GatewayOptions): Promise<{ workers: Worker[]; listening: Listening }> {
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
function replaceCrashedWorkers(o: GatewayOptions, workers: Worker[]): void {
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
  });
}

export async function runGateway(o: GatewayOptions): Promise<RunningGateway> {
  const store = await openStore(o.statePath);
  let admin: AdminServer | null = null;
  let proxy: GatewayProxy | null = null;
  let listeners: ProxyListeners | null = null;
  let workers: Worker[] = [];
  try {
    if (o.admin) admin = await startAdminServer({ host: o.admin.host, port: o.admin.port, store, plugins: PLUGIN_SCHEMAS, version: o.version });
    let listening: Listening = { type: 'gateway-listening', http: null, https: null };
    if (o.proxy || o.proxySsl) {
      if (o.workers > 1) {
        ({ workers, listening } = await forkWorkers(o));
        replaceCrashedWorkers(o, workers);
        reloadTlsOnSignal(o, null, () => workers);
      } else {
        proxy = new GatewayProxy(() => store.snapshot());
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
