/**
 * Which routes reach the FHIR server, and what guards each (issue 23). Pure:
 * it reads a gateway snapshot, never the network.
 *
 * A route reaches the FHIR server when its service's host and port (or, when
 * the host names an upstream, one of the upstream's targets) are one of the
 * FHIR server's addresses, whatever the objects are named. The path is not
 * compared: a route to the FHIR server's port with another path still reaches
 * it (the route's path is appended; strip_path can be false), so it fails closed.
 *
 * Which plugin instance runs follows Kong's kong/runloop/plugins_iterator.lua:
 * per plugin name, the most specific enabled instance without a consumer:
 * Route+Service > Route > Service > Global. Consumer-scoped instances run only
 * once a consumer is known, i.e. after authentication; a plugin's own
 * `protocols` (kong/db/schema/entities/plugins.lua, default grpc, grpcs, http,
 * https) decide on which scheme it runs.
 */
import { RE2JS } from 're2js';
import type { GatewayObject, GatewaySnapshot } from './gateway-snapshot.js';

/** The plugins that demand a credential (issue 23: key-auth or basic-auth). */
export const CREDENTIAL_PLUGINS = ['key-auth', 'basic-auth'] as const;
/** Kong's default route protocols (kong/db/schema/entities/routes.lua). */
const ROUTE_DEFAULT_PROTOCOLS = ['http', 'https'];
/** Kong's default plugin protocols (kong/db/schema/entities/plugins.lua). */
const PLUGIN_DEFAULT_PROTOCOLS = ['grpc', 'grpcs', 'http', 'https'];
/** Kong's default target port (kong/db/schema/entities/targets.lua). */
const TARGET_DEFAULT_PORT = 8000;

export interface FhirAddress {
  /** Host names and IP literals that designate the FHIR server's host (lowercase). */
  hosts: string[];
  port: number;
}

export interface RouteGuard {
  scheme: 'http' | 'https';
  /** The credential plugin that runs, with its scope, or null. */
  plugin: string | null;
  problem: string | null;
}

export interface FhirRoute {
  route: string;
  service: string;
  /** How it reaches the FHIR server: the service's host:port or the upstream target's. */
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

function reaches(dest: { host: string; port: number }, fhir: FhirAddress): boolean {
  if (dest.port !== fhir.port) return false;
  // all of 127.0.0.0/8 is this host's loopback
  return fhir.hosts.includes(dest.host) || (/^127\.\d+\.\d+\.\d+$/.test(dest.host) && fhir.hosts.includes('127.0.0.1'));
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

/** Every route whose traffic reaches the FHIR server, with what guards it on each scheme it takes. */
export function fhirRoutes(snapshot: GatewaySnapshot, fhir: FhirAddress): FhirRoute[] {
  const out: FhirRoute[] = [];
  for (const route of snapshot.routes) {
    const serviceId = refId(route.service);
    const service = snapshot.services.find((s) => s.id === serviceId);
    // a route without a service goes nowhere; Kong's kong/runloop/handler.lua treats a disabled service's routes as absent
    if (!service || service.enabled === false) continue;
    const hit = destinations(service, snapshot).find((d) => reaches(d, fhir));
    if (!hit) continue;
    const protocols = ((route.protocols as string[] | null) ?? ROUTE_DEFAULT_PROTOCOLS).filter((p) => p === 'http' || p === 'https');
    const effective = effectivePlugins(route, serviceId, snapshot.plugins);
    const guards = protocols.map((p) => guard(p as 'http' | 'https', effective, snapshot));
    const problems: string[] = [];
    if (protocols.includes('http')) problems.push('takes plain http');
    for (const g of guards) if (g.problem && !problems.includes(g.problem)) problems.push(g.problem);
    out.push({
      route: label(route, route.id),
      service: label(service, service.id),
      via: `${hit.host}:${hit.port}`,
      protocols,
      guards,
      problems,
      request: probeRequest(route),
    });
  }
  return out.sort((a, b) => a.route.localeCompare(b.route));
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
export function probeRequest(route: GatewayObject): ProbeRequest | null {
  const path = probePath((route.paths as string[] | null) ?? null);
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

export function probePath(paths: string[] | null): string | null {
  if (!paths || paths.length === 0) return '/metadata';
  for (const p of paths) if (!p.startsWith('~')) return `${p.replace(/\/+$/, '')}/metadata`;
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
    for (const candidate of [`${literal.replace(/\/+$/, '')}/metadata`, literal]) {
      if (candidate.startsWith('/') && re.matcher(candidate).lookingAt()) return candidate;
    }
  }
  return null;
}
