/**
 * Test harness: snapshots built by hand (the proxy needs nothing else), a
 * real echo upstream on 127.0.0.1 and the real proxy listeners on port 0.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect as h2connect, type ClientHttp2Session } from 'node:http2';
import { request } from 'undici';
import { afterAll, beforeAll } from 'vitest';
import type { ConfigSnapshot, Consumer, GatewayConfig, Plugin, Route, Service } from '../../../src/gateway/model/types.js';
import { emptyConfig as modelEmptyConfig } from '../../../src/gateway/model/config.js';
import { PLUGIN_SCHEMAS } from '../../../src/gateway/plugins/index.js';
import { GatewayProxy } from '../../../src/gateway/proxy/gateway-proxy.js';
import { startProxyListeners, type ProxyLimits, type ProxyListeners } from '../../../src/gateway/proxy/listeners.js';
import type { TlsServerPolicy } from '../../../src/tls/cipher-policy.js';

const now = () => Math.floor(Date.now() / 1000);

export function emptyConfig(): GatewayConfig {
  return modelEmptyConfig();
}

export function service(c: GatewayConfig, s: Partial<Service> & { host: string; port: number }): Service {
  const row: Service = {
    id: randomUUID(), created_at: now(), updated_at: now(), name: null, retries: 5, protocol: 'http', path: null,
    connect_timeout: 60000, write_timeout: 60000, read_timeout: 60000, tags: null, client_certificate: null,
    tls_verify: null, tls_verify_depth: null, ca_certificates: null, enabled: true, ...s,
  };
  c.services.push(row);
  return row;
}

export function route(c: GatewayConfig, svc: Service, r: Partial<Route>): Route {
  const row: Route = {
    id: randomUUID(), created_at: now(), updated_at: now(), name: null, protocols: ['http', 'https'], methods: null,
    hosts: null, paths: null, headers: null, snis: null, sources: null, destinations: null, https_redirect_status_code: 426,
    regex_priority: 0, strip_path: true, path_handling: 'v0', preserve_host: false, request_buffering: true,
    response_buffering: true, tags: null, service: { id: svc.id }, ...r,
  };
  c.routes.push(row);
  return row;
}

export function plugin(
  c: GatewayConfig,
  name: string,
  config: Record<string, unknown>,
  scope: { route?: Route; service?: Service; consumer?: Consumer } = {},
): Plugin {
  const v = PLUGIN_SCHEMAS.get(name)?.validate(config);
  if (!v || !v.ok) throw new Error(`bad ${name} config: ${JSON.stringify(v)}`);
  const row: Plugin = {
    id: randomUUID(), name, instance_name: null, created_at: now(), updated_at: now(),
    route: scope.route ? { id: scope.route.id } : null, service: scope.service ? { id: scope.service.id } : null,
    consumer: scope.consumer ? { id: scope.consumer.id } : null, config: v.config, protocols: ['grpc', 'grpcs', 'http', 'https'],
    enabled: true, tags: null,
  };
  c.plugins.push(row);
  return row;
}

export function consumer(c: GatewayConfig, username: string | null, customId: string | null = null): Consumer {
  const row: Consumer = { id: randomUUID(), created_at: now(), updated_at: now(), username, custom_id: customId, tags: null };
  c.consumers.push(row);
  return row;
}

export function keyCredential(c: GatewayConfig, owner: Consumer, key: string, ttl: number | null = null) {
  const row = { id: randomUUID(), created_at: now(), consumer: { id: owner.id }, key, ttl, tags: null };
  c.keyauth_credentials.push(row);
  return row;
}

/** A mutable snapshot source: `set` publishes a new version. */
export class Snapshots {
  private current: ConfigSnapshot = { version: 1, config: emptyConfig() };
  get = (): ConfigSnapshot => this.current;
  set(config: GatewayConfig): void {
    this.current = { version: this.current.version + 1, config: structuredClone(config) };
  }
}

export interface Echo {
  method: string;
  url: string;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

export type UpstreamHandler = (req: IncomingMessage, res: ServerResponse, body: Buffer) => void;

/** An upstream that echoes the request as JSON unless given a handler. */
export async function startUpstream(handler?: UpstreamHandler): Promise<{ server: Server; port: number }> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      if (handler) return handler(req, res, body);
      const echo: Echo = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: body.toString('utf8') };
      res.writeHead(200, { 'content-type': 'application/json', 'x-upstream': 'yes' });
      res.end(JSON.stringify(echo));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port };
}

/** The proxy's listeners, all on 127.0.0.1 with ephemeral ports. */
export interface ListenOn {
  /** A plain HTTP listener; on unless false. */
  http?: boolean;
  /** A TLS listener presenting this certificate. */
  https?: { cert: string; key: string };
  limits?: Partial<ProxyLimits>;
  /** The TLS listener's policy (default: the listener's own, Mozilla intermediate). */
  tlsPolicy?: TlsServerPolicy;
}

export async function startProxy(snapshots: Snapshots, https?: { cert: string; key: string }) {
  return startProxyOn(snapshots, { https });
}

export async function startProxyOn(snapshots: Snapshots, on: ListenOn) {
  const proxy = new GatewayProxy(snapshots.get);
  const listeners: ProxyListeners = await startProxyListeners({
    proxy,
    http: on.http === false ? null : { host: '127.0.0.1', port: 0 },
    https: on.https ? { host: '127.0.0.1', port: 0, ...on.https } : null,
    ...(on.limits ? { limits: on.limits } : {}),
    ...(on.tlsPolicy ? { tlsPolicy: on.tlsPolicy } : {}),
  });
  return {
    proxy,
    listeners,
    url: `http://127.0.0.1:${listeners.http?.port}`,
    httpsUrl: listeners.https ? `https://127.0.0.1:${listeners.https.port}` : '',
    close: async () => {
      await listeners.close();
      await proxy.close();
    },
  };
}

export type RunningProxy = Awaited<ReturnType<typeof startProxy>>;

export interface ProxyFixture {
  /** The snapshot source the proxy reads; `set` publishes a new version. */
  readonly snapshots: Snapshots;
  /** The proxy's plain HTTP base URL. */
  readonly url: string;
  /** The proxy's TLS base URL ('' without a TLS listener). */
  readonly httpsUrl: string;
  readonly listeners: ProxyListeners;
  readonly proxy: GatewayProxy;
  /** The port of the echo upstream the configuration was built against. */
  readonly upstreamPort: number;
}

/**
 * For the enclosing describe block (or file): an echo upstream and the real proxy listeners, started
 * in a beforeAll and closed in an afterAll. `configure` fills an empty configuration, given the
 * upstream's port; it becomes the proxy's first snapshot. `listen`, called after `configure` (so it
 * may use a certificate `configure` issued), says which listeners to open; plain HTTP by default.
 */
export function useProxy(
  configure: (c: GatewayConfig, upstreamPort: number) => void,
  listen: () => ListenOn = () => ({}),
): ProxyFixture {
  const snapshots = new Snapshots();
  let upstream: { server: Server; port: number } | undefined;
  let running: RunningProxy | undefined;
  beforeAll(async () => {
    upstream = await startUpstream();
    const c = emptyConfig();
    configure(c, upstream.port);
    snapshots.set(c);
    running = await startProxyOn(snapshots, listen());
  });
  afterAll(async () => {
    await running?.close();
    upstream?.server.close();
  });
  const started = () => {
    if (!running || !upstream) throw new Error('useProxy: the proxy is not started yet (read it inside a hook or test)');
    return { gw: running, upstream };
  };
  return {
    snapshots,
    get url() {
      return started().gw.url;
    },
    get httpsUrl() {
      return started().gw.httpsUrl;
    },
    get listeners() {
      return started().gw.listeners;
    },
    get proxy() {
      return started().gw.proxy;
    },
    get upstreamPort() {
      return started().upstream.port;
    },
  };
}

export async function get(url: string, options: Parameters<typeof request>[1] = {}) {
  const res = await request(url, options);
  const text = await res.body.text();
  return { status: res.statusCode, headers: res.headers, text, json: () => JSON.parse(text) as Record<string, unknown> };
}

/**
 * An HTTP/2 session to the proxy's TLS listener, verified against `caPem`, once the gateway's SETTINGS
 * have arrived (until then a client assumes 100 concurrent streams).
 */
export function h2Session(httpsUrl: string, caPem: string): Promise<ClientHttp2Session> {
  return new Promise((resolve, reject) => {
    const s = h2connect(httpsUrl, { ca: caPem });
    s.once('remoteSettings', () => resolve(s));
    s.once('error', reject);
  });
}
