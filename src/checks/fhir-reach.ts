/**
 * Which routes reach the FHIR server, and what guards each (issues 23, 43). Pure:
 * it reads a gateway snapshot and what the runtime found (each host resolved
 * where the gateway resolves it, and where the FHIR server answers), never the
 * network.
 *
 * A route reaches the FHIR server when its service's host (or, when the host
 * names an upstream, one of the upstream's targets) resolves to an address
 * the FHIR server answers on, at the port it answers on, whatever the objects
 * are named and however the address is spelled (issue 43: a host name in the
 * hosts file, `0x7f000001`, an IPv4-mapped IPv6 address). A host that cannot
 * be resolved may reach it: such a route is judged as one that does (fail
 * closed). The path is not compared: a route to the FHIR server's port with
 * another path still reaches it (the route's path is appended; strip_path can
 * be false), so it fails closed.
 *
 * Which plugin instance runs follows Kong's kong/runloop/plugins_iterator.lua:
 * per plugin name, the most specific enabled instance without a consumer:
 * Route+Service > Route > Service > Global. Consumer-scoped instances run only
 * once a consumer is known, i.e. after authentication; a plugin's own
 * `protocols` (kong/db/schema/entities/plugins.lua, default grpc, grpcs, http,
 * https) decide on which scheme it runs.
 */
import { RE2JS } from 're2js';
import { isIP, type BlockList } from 'node:net';
import { blockListOf, parseIpOrCidr, type IpRange } from '../util/ip-list.js';
import type { FhirListener, HostResolution } from '../runtime/types.js';
import type { GatewayObject, GatewaySnapshot } from './gateway-snapshot.js';

/** The plugins that demand a credential (issue 23: key-auth or basic-auth). */
export const CREDENTIAL_PLUGINS = ['key-auth', 'basic-auth'] as const;
/** Kong's default route protocols (kong/db/schema/entities/routes.lua). */
const ROUTE_DEFAULT_PROTOCOLS = ['http', 'https'];
/** Kong's default plugin protocols (kong/db/schema/entities/plugins.lua). */
const PLUGIN_DEFAULT_PROTOCOLS = ['grpc', 'grpcs', 'http', 'https'];
/** Kong's default target port (kong/db/schema/entities/targets.lua). */
const TARGET_DEFAULT_PORT = 8000;

/** What the runtime found: every destination host resolved where the gateway resolves it, and where the FHIR server answers. */
export interface GatewayReach {
  resolutions: ReadonlyMap<string, HostResolution>;
  listeners: readonly FhirListener[];
}

export interface RouteGuard {
  scheme: 'http' | 'https';
  /** The credential plugin that runs, with its scope, or null. */
  plugin: string | null;
  problem: string | null;
}

export interface FhirRoute {
  routeId: string;
  route: string;
  service: string;
  /**
   * How it reaches the FHIR server: the service's or the upstream target's host:port, the address it
   * resolves to and what answers there (`vm:8080 → 127.0.0.1 (FHIR server)`), or why it may
   * (`x.example:80 (not resolved: ENOTFOUND)`).
   */
  via: string;
  protocols: string[];
  guards: RouteGuard[];
  /** What makes this route open by its configuration (empty: closed on paper; the probe decides the rest). */
  problems: string[];
  /** The request to probe it with, or null when none can be derived. */
  request: ProbeRequest | null;
}

function label(o: GatewayObject | undefined, fallback: string): string {
  return o ? String(o.name ?? o.id) : fallback;
}

function refId(v: unknown): string | null {
  return v && typeof v === 'object' && 'id' in v ? String((v as { id: unknown }).id) : null;
}

export function splitHostPort(target: string, defaultPort: number): { host: string; port: number } {
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(target);
  if (bracketed) return { host: bracketed[1]!.toLowerCase(), port: bracketed[2] ? Number(bracketed[2]) : defaultPort };
  const colons = target.split(':').length - 1;
  if (colons === 1) {
    const [host, port] = target.split(':');
    return { host: host!.toLowerCase(), port: Number(port) };
  }
  return { host: target.toLowerCase(), port: defaultPort };
}

/** Where a service sends traffic: its host:port, or each target of the upstream its host names. */
function destinations(service: GatewayObject, snapshot: GatewaySnapshot): Array<{ host: string; port: number }> {
  const host = String(service.host ?? '').toLowerCase();
  const upstream = snapshot.upstreams.find((u) => String(u.name ?? '').toLowerCase() === host);
  if (!upstream) return [{ host, port: Number(service.port ?? 80) }];
  return snapshot.targets
    .filter((t) => refId(t.upstream) === upstream.id)
    .map((t) => splitHostPort(String(t.target ?? ''), TARGET_DEFAULT_PORT));
}

/** One compiled listener: its ranges as a BlockList (IPv4-mapped IPv6 addresses match their IPv4 ranges). */
interface Answering {
  listener: FhirListener;
  ranges: BlockList;
}

function compile(listeners: readonly FhirListener[]): Answering[] {
  return listeners.map((listener) => ({ listener, ranges: blockListOf(listener.ranges.map(parseIpOrCidr).filter((r): r is IpRange => r !== null)) }));
}

/** Where one destination's traffic goes: the FHIR server (how), maybe (unresolved: why), or elsewhere (null). */
export function reachOf(dest: { host: string; port: number }, reach: GatewayReach, answering: Answering[] = compile(reach.listeners)): string | null {
  const shown = `${dest.host.includes(':') ? `[${dest.host}]` : dest.host}:${dest.port}`;
  const resolved = reach.resolutions.get(dest.host);
  if (!resolved) return `${shown} (not resolved)`;
  if ('error' in resolved) return `${shown} (not resolved: ${resolved.error})`;
  for (const address of resolved.addresses) {
    const family = isIP(address) === 6 ? 'ipv6' : 'ipv4';
    const hit = answering.find((a) => a.listener.port === dest.port && a.ranges.check(address, family));
    if (hit) return address === dest.host ? `${shown} (${hit.listener.name})` : `${shown} → ${address} (${hit.listener.name})`;
  }
  return null;
}

/** Every host a service's traffic may be sent to: services' hosts that name no upstream, and upstream targets' hosts. */
export function destinationHosts(snapshot: GatewaySnapshot): string[] {
  const hosts = new Set<string>();
  for (const service of snapshot.services) {
    if (service.enabled === false) continue;
    for (const d of destinations(service, snapshot)) hosts.add(d.host);
  }
  return [...hosts];
}

/** The credential plugin instance that runs on a route for an unauthenticated request, per plugin name. */
function effectivePlugins(route: GatewayObject, serviceId: string | null, plugins: GatewayObject[]): GatewayObject[] {
  const best = new Map<string, { level: number; plugin: GatewayObject }>();
  for (const p of plugins) {
    if (p.enabled === false || refId(p.consumer) !== null) continue;
    const r = refId(p.route);
    const s = refId(p.service);
    if (r !== null && r !== route.id) continue;
    if (s !== null && s !== serviceId) continue;
    const level = r && s ? 4 : r ? 3 : s ? 2 : 1;
    const name = String(p.name);
    const prev = best.get(name);
    if (!prev || prev.level < level) best.set(name, { level, plugin: p });
  }
  return [...best.values()].map((b) => b.plugin);
}

function scopeOf(p: GatewayObject, snapshot: GatewaySnapshot): string {
  const r = refId(p.route);
  const s = refId(p.service);
  if (r) return `route ${label(snapshot.routes.find((x) => x.id === r), r)}`;
  if (s) return `service ${label(snapshot.services.find((x) => x.id === s), s)}`;
  return 'global';
}

function guard(scheme: 'http' | 'https', effective: GatewayObject[], snapshot: GatewaySnapshot): RouteGuard {
  const auth = effective.filter(
    (p) => (CREDENTIAL_PLUGINS as readonly string[]).includes(String(p.name)) && ((p.protocols as string[] | null) ?? PLUGIN_DEFAULT_PROTOCOLS).includes(scheme),
  );
  if (auth.length === 0) return { scheme, plugin: null, problem: `no enabled key-auth or basic-auth runs on ${scheme}` };
  const closing = auth.find((p) => !(p.config as { anonymous?: unknown } | null)?.anonymous);
  const shown = (p: GatewayObject): string => `${String(p.name)} (${scopeOf(p, snapshot)})`;
  if (closing) return { scheme, plugin: shown(closing), problem: null };
  // every credential plugin lets a request without credentials through as the anonymous consumer
  const anon = auth[0]!;
  const ref = String((anon.config as { anonymous: unknown }).anonymous);
  const consumer = snapshot.consumers.find((c) => c.id === ref || c.username === ref);
  return { scheme, plugin: shown(anon), problem: `${shown(anon)} has anonymous set (consumer ${consumer ? String(consumer.username ?? consumer.id) : ref})` };
}

/** A route of the gateway, whether it reaches the FHIR server (`via` then says how) or goes elsewhere (`via` null). */
export interface GatewayRoute {
  routeId: string;
  route: string;
  service: string;
  via: string | null;
  /** Every protocol it takes (Kong's default: http and https). */
  protocols: string[];
  request: ProbeRequest | null;
  /** The request that asks for patient data (`<path>/Patient`), or null when none can be derived. */
  dataRequest: ProbeRequest | null;
  /** The TLS server name a request must give to be routed here (`snis`), if any. */
  sni: string | null;
}

/** Every route that has an enabled service (a route without one goes nowhere), with where its traffic goes. */
export function gatewayRoutes(snapshot: GatewaySnapshot, reach: GatewayReach): GatewayRoute[] {
  const answering = compile(reach.listeners);
  const out: GatewayRoute[] = [];
  for (const route of snapshot.routes) {
    const service = snapshot.services.find((s) => s.id === refId(route.service));
    // Kong's kong/runloop/handler.lua treats a disabled service's routes as absent
    if (!service || service.enabled === false) continue;
    let via: string | null = null;
    for (const d of destinations(service, snapshot)) if ((via = reachOf(d, reach, answering))) break;
    const snis = (route.snis as string[] | null) ?? [];
    out.push({
      routeId: route.id,
      route: label(route, route.id),
      service: label(service, service.id),
      via,
      protocols: (route.protocols as string[] | null) ?? ROUTE_DEFAULT_PROTOCOLS,
      request: probeRequest(route),
      dataRequest: probeRequest(route, 'Patient'),
      sni: snis.length ? snis[0]!.replace('*', 'probe') : null,
    });
  }
  return out.sort((a, b) => a.route.localeCompare(b.route));
}

/**
 * Every route whose traffic reaches (or may reach) the FHIR server, with what guards it on each scheme
 * it takes; of `routes` when the caller has them already.
 */
export function fhirRoutes(snapshot: GatewaySnapshot, reach: GatewayReach, routes: readonly GatewayRoute[] = gatewayRoutes(snapshot, reach)): FhirRoute[] {
  const out: FhirRoute[] = [];
  for (const r of routes) {
    if (r.via === null) continue;
    const route = snapshot.routes.find((x) => x.id === r.routeId)!;
    const serviceId = refId(route.service);
    const protocols = r.protocols.filter((p) => p === 'http' || p === 'https');
    const effective = effectivePlugins(route, serviceId, snapshot.plugins);
    const guards = protocols.map((p) => guard(p as 'http' | 'https', effective, snapshot));
    const problems: string[] = [];
    if (protocols.includes('http')) problems.push('takes plain http');
    // grpc(s), tcp, tls, ws(s): not probed here, so not proven closed
    for (const p of r.protocols) if (p !== 'http' && p !== 'https') problems.push(`takes ${p} (not probed: not proven closed)`);
    for (const g of guards) if (g.problem && !problems.includes(g.problem)) problems.push(g.problem);
    out.push({ routeId: r.routeId, route: r.route, service: r.service, via: r.via, protocols, guards, problems, request: r.request });
  }
  return out;
}

export interface ProbeRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
}

/**
 * The request that probes a route without credentials, or null when no
 * concrete one can be derived (the route then fails closed). A plain path is
 * used as is, plus /metadata; a regex path (`~`, Kong 3's router, matched from
 * the start) only when its literal prefix plus /metadata, or the prefix, matches it
 * (RE2: linear time, whatever the pattern). A route's hosts, methods and
 * headers are honoured (a wildcard host gets `probe` in place of `*`).
 */
export function probeRequest(route: GatewayObject, resource = 'metadata'): ProbeRequest | null {
  const path = probePath((route.paths as string[] | null) ?? null, resource);
  if (path === null) return null;
  const headers: Record<string, string> = Object.create(null) as Record<string, string>;
  const hosts = (route.hosts as string[] | null) ?? [];
  if (hosts.length) headers.host = hosts[0]!.replace('*', 'probe');
  const wanted = (route.headers as Record<string, string[]> | null) ?? {};
  for (const [name, values] of Object.entries(wanted)) {
    if (name === '__proto__' || !Array.isArray(values) || values.length === 0) continue;
    headers[name.toLowerCase()] = String(values[0]);
  }
  const methods = (route.methods as string[] | null) ?? [];
  const method = methods.length === 0 || methods.includes('GET') ? 'GET' : methods[0]!;
  return { method, path, headers };
}

export function probePath(paths: string[] | null, resource = 'metadata'): string | null {
  if (!paths || paths.length === 0) return `/${resource}`;
  for (const p of paths) if (!p.startsWith('~')) return `${p.replace(/\/+$/, '')}/${resource}`;
  for (const p of paths) {
    const source = p.slice(1);
    let re: RE2JS;
    try {
      re = RE2JS.compile(source);
    } catch {
      continue;
    }
    // the literal characters up to the first regex metacharacter
    const literal = /^\^?([A-Za-z0-9/_-]*)/.exec(source)![1]!;
    for (const candidate of [`${literal.replace(/\/+$/, '')}/${resource}`, literal]) {
      if (candidate.startsWith('/') && re.matcher(candidate).lookingAt()) return candidate;
    }
  }
  return null;
}
