/**
 * Compiles a configuration snapshot, once per version, into what the hot
 * path needs: the router, a plugin chain per route, upstream pools and the
 * credential maps the auth plugins look keys up in.
 */
import type { Pool } from 'undici';
import type { ConfigSnapshot, Consumer, GatewayConfig, Route, Service } from '../model/types.js';
import { PLUGIN_HANDLERS, PLUGIN_SCHEMAS } from '../plugins/index.js';
import type { CompileEnv } from '../plugins/types.js';
import type { PrometheusExporter } from '../plugins/prometheus/exporter.js';
import { buildChain, scopeLevel, type ChainSlot, type CompiledPlugin } from './plugin-chain.js';
import { Router } from './router.js';
import type { UpstreamPools } from './upstream-pools.js';
import { Balancer, parseTarget, upstreamTargets, type HealthRegistry, type Peer } from './balancer.js';
import { proxyCollections, type Upstream } from './entities.js';
import { secretDigest } from '../../util/constant-time.js';

export interface CompiledService {
  id: string;
  /** The prometheus `service` label: its name, else its host (Kong's kong/plugins/prometheus/exporter.lua `log`). */
  label: string;
  protocol: 'http' | 'https';
  /** Host header sent upstream when preserve_host is false (Kong's kong/runloop/handler.lua). */
  hostHeader: string;
  basePath: string;
  retries: number;
  readTimeout: number;
  writeTimeout: number;
  /** The service's own host and port, or null when its host names an upstream. */
  pool: Pool | null;
  /** The upstream's balancer when the service's host names an upstream (Kong's kong/runloop/balancer/init.lua). */
  balancer: Balancer | null;
}

export interface CompiledRoute {
  route: Route;
  service: CompiledService;
  http: boolean;
  https: boolean;
  chain: ChainSlot[];
  /** Some plugin in the chain has a log phase (prometheus): the exchange then watches for the request's end. */
  logs: boolean;
}

export interface CompiledConfig {
  version: number;
  router: Router<CompiledRoute>;
  /** Global plugins: their header filters apply to 404s (Kong's cors header_filter, kong/plugins/cors/handler.lua). */
  globalChain: ChainSlot[];
  /** Balancers of this version (their active health probes stop when it is replaced). */
  balancers: Balancer[];
}

/** What compileSnapshot keeps across versions: warm pools and target health. */
export interface CompileCaches {
  pools: UpstreamPools;
  health: HealthRegistry;
  /** The gateway's prometheus counters, handed to the plugins (null: none kept). */
  prometheus?: PrometheusExporter | null;
}

export function compileEnv(config: Readonly<GatewayConfig>, prometheus: PrometheusExporter | null = null): CompileEnv {
  const consumerById = new Map<string, Consumer>(config.consumers.map((c) => [c.id, c]));
  const consumerByUsername = new Map<string, Consumer>();
  for (const c of config.consumers) if (c.username !== null) consumerByUsername.set(c.username, c);
  const keyCredentialsByDigest: CompileEnv['keyCredentialsByDigest'] extends ReadonlyMap<string, infer V> ? Map<string, V> : never = new Map();
  for (const k of config.keyauth_credentials) {
    const consumer = consumerById.get(k.consumer.id);
    if (!consumer) continue;
    keyCredentialsByDigest.set(secretDigest(k.key), { id: k.id, consumer, expiresAt: k.ttl ? k.created_at + k.ttl : null });
  }
  const basicCredentials: CompileEnv['basicCredentials'] extends ReadonlyMap<string, infer V> ? Map<string, V> : never = new Map();
  for (const b of config.basicauth_credentials) {
    const consumer = consumerById.get(b.consumer.id);
    if (consumer) basicCredentials.set(b.username, { username: b.username, password: b.password, consumer });
  }
  const groupsByConsumer = new Map<string, string[]>();
  for (const a of config.acls) {
    const list = groupsByConsumer.get(a.consumer.id) ?? [];
    list.push(a.group);
    groupsByConsumer.set(a.consumer.id, list);
  }
  return { consumerById, consumerByUsername, keyCredentialsByDigest, basicCredentials, groupsByConsumer, prometheus };
}

function balancerFor(
  s: Service & { protocol: 'http' | 'https' },
  upstream: Upstream,
  config: Readonly<GatewayConfig>,
  ca: string[] | null,
  caches: CompileCaches,
): Balancer {
  const defaultPort = s.protocol === 'https' ? 443 : 80;
  const peers: Peer[] = upstreamTargets(upstream, proxyCollections(config).targets).map((t) => {
    const { host, port } = parseTarget(t.target);
    const hostHeader = upstream.host_header ?? (port === defaultPort ? host : `${host.includes(':') ? `[${host}]` : host}:${port}`);
    const pool = caches.pools.get({ protocol: s.protocol, host, port, connectTimeout: s.connect_timeout, ca });
    return { id: t.id, host, port, weight: t.weight, hostHeader, pool, current: 0, health: caches.health.get(t.id) };
  });
  return new Balancer(upstream, peers, s.protocol);
}

function compileService(
  s: Service,
  config: Readonly<GatewayConfig>,
  caches: CompileCaches,
  upstreams: ReadonlyMap<string, Upstream>,
): CompiledService | null {
  if (s.protocol !== 'http' && s.protocol !== 'https') return null;
  const defaultPort = s.protocol === 'https' ? 443 : 80;
  const ca = s.ca_certificates?.length
    ? config.ca_certificates.filter((c) => s.ca_certificates?.includes(c.id)).map((c) => c.cert)
    : null;
  const upstream = upstreams.get(s.host);
  const balancer = upstream ? balancerFor(s as Service & { protocol: 'http' | 'https' }, upstream, config, ca, caches) : null;
  return {
    id: s.id,
    label: s.name ?? s.host,
    protocol: s.protocol,
    hostHeader: s.port === defaultPort ? s.host : `${s.host}:${s.port}`,
    basePath: s.path ?? '/',
    retries: s.retries,
    readTimeout: s.read_timeout,
    writeTimeout: s.write_timeout,
    pool: balancer ? null : caches.pools.get({ protocol: s.protocol, host: s.host, port: s.port, connectTimeout: s.connect_timeout, ca }),
    balancer,
  };
}

function compilePlugins(config: Readonly<GatewayConfig>, env: CompileEnv): CompiledPlugin[] {
  const out: CompiledPlugin[] = [];
  for (const row of config.plugins) {
    if (!row.enabled) continue;
    // Fail closed: a plugin the proxy cannot run, or whose config its schema
    // refuses (a hand-edited state file), stops this version from applying
    // rather than leaving its routes unprotected.
    const handler = PLUGIN_HANDLERS.get(row.name);
    const schema = PLUGIN_SCHEMAS.get(row.name);
    if (!handler || !schema) throw new Error(`plugin ${row.id}: '${row.name}' is not available`);
    const checked = schema.validate(row.config);
    if (!checked.ok) throw new Error(`plugin ${row.id} (${row.name}): invalid config (${Object.keys(checked.errors).join(', ')})`);
    const runner = handler.compile(checked.config, env);
    out.push({ row, entry: { runner, priority: schema.priority, level: scopeLevel(row), http: row.protocols.includes('http'), https: row.protocols.includes('https') } });
  }
  return out;
}

export function compileSnapshot(snapshot: ConfigSnapshot, caches: CompileCaches): CompiledConfig {
  const { config } = snapshot;
  const env = compileEnv(config, caches.prometheus ?? null);
  const plugins = compilePlugins(config, env);
  const upstreams = new Map(proxyCollections(config).upstreams.map((u) => [u.name, u]));
  caches.pools.begin();
  caches.health.begin();
  const services = new Map<string, CompiledService>();
  const balancers: Balancer[] = [];
  for (const s of config.services) {
    if (!s.enabled) continue; // Kong's kong/runloop/handler.lua: a disabled service's routes behave as absent
    const compiled = compileService(s, config, caches, upstreams);
    if (!compiled) continue;
    services.set(s.id, compiled);
    if (compiled.balancer) balancers.push(compiled.balancer);
  }
  caches.pools.sweep();
  caches.health.sweep();
  const routes = [];
  for (const route of config.routes) {
    const service = route.service ? services.get(route.service.id) : undefined;
    if (!service) continue;
    const http = route.protocols.includes('http');
    const https = route.protocols.includes('https');
    if (!http && !https) continue;
    const chain = buildChain(plugins, route.id, service.id);
    const logs = chain.some((slot) => slot.fixed?.runner.log !== undefined || [...(slot.byConsumer?.values() ?? [])].some((e) => e.runner.log !== undefined));
    routes.push({ route, target: { route, service, http, https, chain, logs } });
  }
  const router = new Router(routes);
  if (router.problems.length > 0) {
    throw new Error(router.problems.map((p) => `route ${p.routeId}: invalid regex path (${p.message})`).join('; '));
  }
  // Kong's exporter `configure`: the per-request families show while an instance is configured.
  if (caches.prometheus) caches.prometheus.enabled = plugins.some((p) => p.row.name === 'prometheus');
  return { version: snapshot.version, router, balancers, globalChain: buildChain(plugins, null, null).filter((s) => s.fixed?.level === 1 || s.byConsumer) };
}
