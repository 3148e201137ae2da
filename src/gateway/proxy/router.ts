/**
 * The router, compiled once per snapshot (kong.md §4): plain-prefix paths
 * (string prefix, not segment-aware), longest first; `hosts` (exact or
 * `*.` / `.*` wildcards, port optional), `methods`, `headers`. Routes with
 * more matching criteria sort first, as Kong's traditional_compatible router
 * does. Regex paths (`~`) are not supported and never match.
 */
import type { Route } from '../model/types.js';

export interface RouteMatcher<T> {
  route: Route;
  target: T;
}

interface Entry<T> {
  prefix: string | null;
  weight: number;
  created: number;
  hosts: RegExp | null;
  methods: Set<string> | null;
  headers: Array<[string, Set<string>]> | null;
  target: T;
}

export interface Match<T> {
  target: T;
  /** The matched path prefix, or null for routes without paths. */
  prefix: string | null;
}

function hostsRegex(hosts: string[] | null): RegExp | null {
  if (!hosts || hosts.length === 0) return null;
  const alts = hosts.map((h) => {
    const escaped = h.toLowerCase().replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^.]+');
    return h.includes(':') ? escaped : `${escaped}(?::\\d+)?`;
  });
  return new RegExp(`^(?:${alts.join('|')})$`);
}

export class Router<T> {
  private readonly entries: Entry<T>[] = [];
  /** Some route matches on request headers (the caller then passes them). */
  readonly usesHeaders: boolean;

  constructor(routes: ReadonlyArray<RouteMatcher<T>>) {
    for (const { route, target } of routes) {
      const hosts = hostsRegex(route.hosts);
      const methods = route.methods && route.methods.length ? new Set(route.methods.map((m) => m.toUpperCase())) : null;
      const headers = route.headers
        ? Object.entries(route.headers).map(([k, v]) => [k.toLowerCase(), new Set(v.map((x) => x.toLowerCase()))] as [string, Set<string>])
        : null;
      const weight = (hosts ? 1 : 0) + (methods ? 1 : 0) + (headers && headers.length ? 1 : 0);
      const plain = (route.paths ?? []).filter((p) => !p.startsWith('~'));
      if (route.paths && route.paths.length && plain.length === 0) continue;
      const prefixes: Array<string | null> = plain.length ? plain : [null];
      for (const prefix of prefixes) {
        this.entries.push({ prefix, weight: weight + (prefix !== null ? 1 : 0), created: route.created_at, hosts, methods, headers, target });
      }
    }
    this.usesHeaders = this.entries.some((e) => e.headers !== null && e.headers.length > 0);
    this.entries.sort((a, b) => b.weight - a.weight || (b.prefix?.length ?? 0) - (a.prefix?.length ?? 0) || a.created - b.created);
  }

  match(method: string, host: string, path: string, headers: Readonly<Record<string, string | string[] | undefined>>): Match<T> | null {
    const lowerHost = host.toLowerCase();
    for (const e of this.entries) {
      if (e.prefix !== null && !path.startsWith(e.prefix)) continue;
      if (e.methods !== null && !e.methods.has(method)) continue;
      if (e.hosts !== null && !e.hosts.test(lowerHost)) continue;
      if (e.headers !== null && !e.headers.every(([name, values]) => {
        const v = headers[name];
        return typeof v === 'string' && values.has(v.toLowerCase());
      })) continue;
      return { target: e.target, prefix: e.prefix };
    }
    return null;
  }
}
