/**
 * The proxy's request entry point: compiles the configuration snapshot when
 * it changes (identity check, no work per request otherwise), matches the
 * route and hands the request to an Exchange (Kong's kong/runloop/handler.lua).
 *
 * A version that does not compile (a hand-edited state file: a bad regex, a
 * plugin config its schema refuses, an unknown plugin) is not applied: the
 * last good version keeps serving and `health()` reports the proxy degraded
 * with the reason. With no good version at all, every request gets 503 and
 * health says so: never "up" while every route fails.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { SecureContext } from 'node:tls';
import type { ListenerStats, PrometheusExporter, TargetHealth } from '../plugins/prometheus/exporter.js';
import type { ConfigSnapshot } from '../model/types.js';
import { HealthRegistry } from './balancer.js';
import { compileSnapshot, type CompileCaches, type CompiledConfig } from './compile.js';
import { Exchange, exchangeResponseClosed } from './exchange.js';
import { normalisePath } from './normalise-path.js';
import { BodyBudget, DEFAULT_BODY_LIMITS, type BodyLimits } from './request-body.js';
import { readHead } from './request-head.js';
import { nextRequestId } from './request-id.js';
import { ProxyRequestState } from './request-state.js';
import { compileCertificates, type CertificateTable } from './sni-certificates.js';
import { isTrusted, realIp, type TrustedIps } from './trusted-ips.js';
import { UpstreamPools } from './upstream-pools.js';
import { UpstreamSlots } from './upstream-slots.js';

/** Upstream connections per service pool and requests in flight per caller of a service (issue 45; ProxyLimits, listeners.ts). */
export interface UpstreamLimits {
  upstreamConnectionsPerService: number;
  upstreamRequestsPerCaller: number;
}

export const DEFAULT_UPSTREAM_LIMITS: UpstreamLimits = {
  upstreamConnectionsPerService: 128,
  upstreamRequestsPerCaller: 32,
};

const NO_ROUTE = 'no Route matched with those values';
const NO_HEADERS: Readonly<Record<string, string>> = Object.freeze({});

/** What status/health shows about the proxy's configuration (docs/gateway-proxy.md). */
export interface ProxyHealth {
  /** The state version being served, or null when none could be applied. */
  appliedVersion: number | null;
  /** The newest version seen. */
  latestVersion: number;
  /** True when the newest version was not applied (the last good one serves, or nothing does). */
  degraded: boolean;
  /** Why the newest version was not applied (entity ids and field names, never secrets). */
  error: string | null;
}

function peerIp(req: IncomingMessage): string {
  const ip = req.socket.remoteAddress ?? '';
  return ip.startsWith('::ffff:') && ip.includes('.') ? ip.slice(7) : ip;
}

export interface GatewayProxyOptions {
  /** Kong's trusted_ips (trusted-ips.ts); null = trust no peer. */
  trustedIps?: TrustedIps;
  /** The gateway's prometheus counters, for the prometheus plugin (plugins/prometheus/). */
  prometheus?: PrometheusExporter | null;
}

/** The stats a response counts itself out of when it closes (no per-request closure). */
const STATS = Symbol('listenerStats');
type WithStats = ServerResponse & { [STATS]?: ListenerStats };

/**
 * The one close listener of a proxied response, a shared function: the request is no longer in flight, then
 * its exchange's log phase and upstream call end (exchange.ts). `on`, not `once`: a response closes once, and
 * `once` wraps every listener in a bound function it removes again (issue 49: per-request CPU).
 */
function onResponseClose(this: WithStats): void {
  const stats = this[STATS];
  if (stats !== undefined) {
    this[STATS] = undefined;
    stats.requestsInFlight--;
  }
  exchangeResponseClosed(this);
}

export class GatewayProxy {
  private snapshot: ConfigSnapshot | null = null;
  private compiled: CompiledConfig | null = null;
  private certificates: CertificateTable | null = null;
  private readonly caches: CompileCaches;
  /** Connections and requests on the proxy listeners (kong_nginx_connections_total, kong_nginx_requests_total). */
  readonly stats: ListenerStats = { connectionsAccepted: 0, connectionsActive: 0, requestsTotal: 0, requestsInFlight: 0 };
  private status: ProxyHealth = { appliedVersion: null, latestVersion: 0, degraded: false, error: null };

  private readonly trustedIps: TrustedIps;
  /** Upstream requests in flight (issue 45). */
  private readonly slots = new UpstreamSlots(DEFAULT_UPSTREAM_LIMITS.upstreamRequestsPerCaller);
  /** Request bodies held in memory (request buffering, plugins), bounded by the listeners' limits. */
  private bodyBudget = new BodyBudget(DEFAULT_BODY_LIMITS);

  constructor(
    private readonly source: () => ConfigSnapshot,
    options: GatewayProxyOptions = {},
  ) {
    this.trustedIps = options.trustedIps ?? null;
    this.caches = { pools: new UpstreamPools(), health: new HealthRegistry(), prometheus: options.prometheus ?? null };
  }

  /** Upstream requests dispatched and not yet ended, over every service. */
  upstreamInFlight(): number {
    return this.slots.total();
  }

  /** The body and upstream limits of the listeners serving this proxy (ProxyLimits, listeners.ts): set before they listen. */
  useLimits(limits: BodyLimits & UpstreamLimits): void {
    this.bodyBudget = new BodyBudget({ bodyTimeoutMs: limits.bodyTimeoutMs, maxBufferedBodyBytes: limits.maxBufferedBodyBytes });
    this.slots.perCaller = limits.upstreamRequestsPerCaller;
    if (this.caches.pools.connections !== limits.upstreamConnectionsPerService) {
      this.caches.pools.connections = limits.upstreamConnectionsPerService;
      // Pools are keyed by their cap: the next compile takes new ones, and sweeps the old.
      this.snapshot = null;
    }
  }

  /** A listener's 'connection' handler: counts the connection while it is open. */
  readonly countConnection = (socket: Socket): void => {
    const stats = this.stats;
    stats.connectionsAccepted++;
    stats.connectionsActive++;
    socket.once('close', () => stats.connectionsActive--);
  };

  /** Every target of the balancers now in use, with Kong's health state (kong_upstream_target_health). */
  targetHealth(): TargetHealth[] {
    const seen = new Set<string>();
    const out: TargetHealth[] = [];
    for (const b of this.current()?.balancers ?? []) {
      const off = b.healthchecksOff();
      for (const p of b.peers) {
        if (seen.has(p.id)) continue;
        seen.add(p.id);
        const address = `${p.host.includes(':') ? `[${p.host}]` : p.host}:${p.port}`;
        out.push({ upstream: b.upstream.name, target: address, address, state: off ? 'healthchecks_off' : p.health.healthy ? 'healthy' : 'unhealthy' });
      }
    }
    return out;
  }

  /** The compiled form of the current snapshot (recompiled when the snapshot object changes), or null if none compiles. */
  current(): CompiledConfig | null {
    const snap = this.source();
    if (snap !== this.snapshot) {
      this.snapshot = snap;
      try {
        const next = compileSnapshot(snap, this.caches);
        const certificates = compileCertificates(snap.config);
        for (const b of this.compiled?.balancers ?? []) b.stop();
        for (const b of next.balancers) b.start();
        this.compiled = next;
        this.certificates = certificates;
        this.status = { appliedVersion: snap.version, latestVersion: snap.version, degraded: false, error: null };
      } catch (err) {
        // Keep serving the last good configuration rather than failing every request.
        const error = `configuration version ${snap.version} not applied: ${(err as Error).message}`;
        process.stderr.write(`gateway: ${error}\n`);
        this.status = { appliedVersion: this.compiled?.version ?? null, latestVersion: snap.version, degraded: true, error };
      }
    }
    return this.compiled;
  }

  health(): ProxyHealth {
    this.current();
    return { ...this.status };
  }


  /** The certificate for a TLS server name (SNICallback), or null for the listener's default. */
  secureContext(servername: string): SecureContext | null {
    this.current();
    return this.certificates === null ? null : this.certificates.lookup(servername);
  }

  handle(req: IncomingMessage, res: ServerResponse, scheme: 'http' | 'https'): void {
    const startedAt = performance.now();
    this.stats.requestsTotal++;
    this.stats.requestsInFlight++;
    (res as WithStats)[STATS] = this.stats;
    res.on('close', onResponseClose);
    const requestId = nextRequestId();
    const cfg = this.current();
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = normalisePath(q < 0 ? url : url.slice(0, q));
    const method = req.method ?? 'GET';
    const head = readHead(req.rawHeaders);
    // HTTP/2 marks a request without a body by END_STREAM on its headers, not by a length.
    if (req.httpVersionMajor === 2) head.hasBody = !(req as unknown as { stream: { endAfterHeaders: boolean } }).stream.endAfterHeaders;
    const bad = path === null || head.hostCount > 1;
    // req.headers is built only when a route matches on headers.
    const match = bad || cfg === null ? null : cfg.router.match(method, head.host, path, cfg.router.usesHeaders ? req.headers : NO_HEADERS);
    const route = match === null ? null : match.target;
    const peer = peerIp(req);
    const trusted = this.trustedIps !== null && isTrusted(this.trustedIps, peer);
    // From a trusted peer, X-Real-IP names the client (Kong's real_ip_header; not recursive).
    const client = trusted ? (realIp(req.headers['x-real-ip'] as string | undefined) ?? peer) : peer;
    const state = new ProxyRequestState(req, method, path ?? '/', q < 0 ? '' : url.slice(q + 1), scheme, client, route === null ? '' : route.service.id, route === null ? '' : route.route.id, head.hasBody, res, this.bodyBudget);
    const exchange = new Exchange(req, res, state, route, match === null ? null : match.prefix, head, requestId, startedAt, this.slots, trusted);
    if (bad) {
      // nginx (and so Kong) refuses a request with two Host headers: "client sent duplicate host header".
      exchange.exit({ status: 400, message: 'Bad request' });
      return;
    }
    if (cfg === null) {
      exchange.exit({ status: 503, message: 'no configuration available' });
      return;
    }
    if (route === null) {
      // Global plugins still shape the 404 (Kong's cors header_filter runs on 404s too).
      exchange.useHeaderFilters(cfg.globalChain);
      exchange.exit({ status: 404, message: NO_ROUTE });
      return;
    }
    if (scheme === 'http' && !route.http) {
      const code = route.route.https_redirect_status_code;
      if (code === 426) {
        exchange.exit({ status: 426, message: 'Please use HTTPS protocol', headers: ['Connection', 'Upgrade', 'Upgrade', 'TLS/1.2, HTTP/1.1'] });
      } else {
        exchange.exit({ status: code, message: '', headers: ['Location', `https://${head.host}${url}`] });
      }
      return;
    }
    if (scheme === 'https' && !route.https) {
      exchange.exit({ status: 404, message: NO_ROUTE });
      return;
    }
    exchange.run(route.chain, 0);
  }

  async close(): Promise<void> {
    for (const b of this.compiled?.balancers ?? []) b.stop();
    await this.caches.pools.closeAll();
  }
}
