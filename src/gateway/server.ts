/**
 * `hospital-api gateway`: the admin API (with the store) and the proxy in one
 * process; the proxy reads the store's snapshot, so it sees every change on
 * the next request. The command prints one ready line with the bound addresses.
 */
import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { HospitalApiError } from '../errors/index.js';
import type { ListenAddress } from '../util/listen-address.js';
import { startAdminServer, type AdminServer } from './admin/server.js';
import { PLUGIN_SCHEMAS } from './plugins/index.js';
import { PrometheusExporter } from './plugins/prometheus/exporter.js';
import { KONG_VERSION } from './plugins/version.js';
import { GatewayProxy, type ProxyHealth } from './proxy/gateway-proxy.js';
import { startProxyListeners, type ProxyListeners } from './proxy/listeners.js';
import { setProxyAddHeaders, type AddedHeader } from './proxy/proxy-add-header.js';
import { setServerTokens } from './proxy/kong-response.js';
import { parseTrustedIps } from './proxy/trusted-ips.js';
import { tlsPolicyOf, type KongTlsSettings } from './proxy/tls-settings.js';
import { startStatusServer, type StatusServer } from './status/server.js';
import { openStore } from './store/index.js';
import type { TlsServerPolicy } from '../tls/cipher-policy.js';

export interface GatewayOptions {
  admin: ListenAddress | null;
  proxy: ListenAddress | null;
  proxySsl: ListenAddress | null;
  /** Kong's status_listen: GET /metrics for Prometheus (status/server.ts); null = off. */
  status?: ListenAddress | null;
  /** The token the status listener's every answer requires (`--status-token-file`, issue 45); null: none, as Kong's. */
  statusToken?: string | null;
  certPath: string | null;
  keyPath: string | null;
  statePath: string;
  /**
   * Follow the state file (`--follow-state`): serve each new version another process writes there, as a Kong
   * node serves what another node wrote to their shared database (kong.conf.default db_update_frequency);
   * a version that does not load keeps the last good one (store/index.ts).
   */
  followState?: boolean;
  /** Kong's trusted_ips, comma-separated (proxy/trusted-ips.ts); null = none. */
  trustedIps?: string | null;
  /** Kong's `headers` server_tokens (Server / Via naming kong/x.y.z); default on. */
  serverTokens?: boolean;
  /** Kong's injected `nginx_proxy_add_header` (proxy/proxy-add-header.ts), parsed; default none. */
  proxyAddHeaders?: readonly AddedHeader[];
  /** Kong's ssl_cipher_suite, ssl_ciphers, ssl_protocols, ssl_prefer_server_ciphers (proxy/tls-settings.ts); default intermediate. */
  tls?: KongTlsSettings;
  version: string;
}

export interface RunningGateway {
  admin: string | null;
  proxy: string | null;
  proxySsl: string | null;
  status: string | null;
  close(): Promise<void>;
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

async function listenProxy(o: GatewayOptions, proxy: GatewayProxy, tlsPolicy: TlsServerPolicy): Promise<ProxyListeners> {
  const tls = readTls(o);
  try {
    return await startProxyListeners({ proxy, http: o.proxy, https: o.proxySsl && tls ? { ...o.proxySsl, ...tls } : null, tlsPolicy });
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { port?: number; address?: string };
    if (e.code === 'EADDRINUSE') throw new HospitalApiError('ERR_PORT_IN_USE', { host: e.address ?? '', port: e.port ?? 0, detail: '' }, { cause: err });
    // an ssl_ciphers list OpenSSL matches nothing of (custom suite)
    if (/no cipher match/i.test(e.message)) throw new HospitalApiError('ERR_USAGE', { detail: `ssl_ciphers: ${e.message}` }, { cause: err });
    if (e.code === 'ERR_OSSL_PEM_NO_START_LINE' || /PEM|key values mismatch/i.test(e.message)) {
      throw new HospitalApiError('ERR_TLS_MATERIAL', { path: o.certPath ?? '', detail: e.message }, { cause: err });
    }
    throw err;
  }
}

/**
 * SIGHUP rereads --cert/--key and installs them for new TLS connections without
 * closing a socket (`cert renew`); a pair that does not load leaves the old one
 * in force.
 */
function reloadTlsOnSignal(o: GatewayOptions, listeners: ProxyListeners): void {
  // Without a TLS listener there is nothing to reload, but SIGHUP (systemctl reload) must not end the process.
  if (!o.proxySsl) {
    process.on('SIGHUP', () => process.stderr.write('hospital-api gateway: SIGHUP: no TLS listener, nothing to reload\n'));
    return;
  }
  process.on('SIGHUP', () => {
    try {
      const tls = readTls(o);
      if (tls) listeners.setTls(tls);
      process.stderr.write('hospital-api gateway: TLS certificate reloaded\n');
    } catch (err) {
      process.stderr.write(`hospital-api gateway: TLS reload failed, the previous certificate stays in use: ${(err as Error).message}\n`);
    }
  });
}

export async function runGateway(o: GatewayOptions): Promise<RunningGateway> {
  setServerTokens(o.serverTokens !== false);
  setProxyAddHeaders(o.proxyAddHeaders ?? []);
  // a bad TLS setting is refused before anything opens or listens
  const tlsPolicy = tlsPolicyOf(o.tls);
  const store = await openStore(o.statePath, {
    follow: o.followState === true,
    // names the file and the fields, never a value (validate-state.ts)
    onFollowError: (err) => process.stderr.write(`hospital-api gateway: state file not applied, the last good configuration stays in use: ${err.message}\n`),
  });
  let admin: AdminServer | null = null;
  let proxy: GatewayProxy | null = null;
  let listeners: ProxyListeners | null = null;
  let status: StatusServer | null = null;
  const proxyHealth = (): ProxyHealth | null => {
    if (!proxy) return null;
    const health = proxy.health();
    // a followed file that does not load is a newer version not applied, as one that does not compile
    const followError = store.followError();
    return followError === null ? health : { ...health, degraded: true, error: `state file not applied: ${followError}` };
  };
  // One node id for GET / and kong_node_info, as Kong has one per node.
  const nodeId = randomUUID();
  const exporter = new PrometheusExporter({
    nodeId,
    version: KONG_VERSION,
    listeners: () => (proxy ? proxy.stats : { connectionsAccepted: 0, connectionsActive: 0, requestsTotal: 0, requestsInFlight: 0 }),
    targets: () => (proxy ? proxy.targetHealth() : []),
    datastoreReachable: () => existsSync(o.statePath),
  });
  const metrics = (): string => {
    // The counters follow the configuration being served (an instance added or removed shows at once).
    proxy?.current();
    return exporter.render();
  };
  const closeAll = async (): Promise<void> => {
    await status?.close();
    await listeners?.close();
    await proxy?.close();
    await admin?.close();
    store.close();
  };
  try {
    if (o.admin) {
      admin = await startAdminServer({ host: o.admin.host, port: o.admin.port, store, plugins: PLUGIN_SCHEMAS, version: o.version, proxyHealth, metrics, nodeInfo: { nodeId } });
    }
    if (o.proxy || o.proxySsl) {
      proxy = new GatewayProxy(() => store.snapshot(), { trustedIps: parseTrustedIps(o.trustedIps ?? undefined), prometheus: exporter });
      listeners = await listenProxy(o, proxy, tlsPolicy);
      reloadTlsOnSignal(o, listeners);
    }
    if (o.status) status = await startStatusServer(o.status, metrics, {}, o.statusToken ?? null);
    return {
      admin: admin ? admin.url.replace(/^http:\/\//, '') : null,
      proxy: addr(listeners?.http ?? null),
      proxySsl: addr(listeners?.https ?? null),
      status: status?.address ?? null,
      close: closeAll,
    };
  } catch (err) {
    await closeAll();
    throw err;
  }
}
