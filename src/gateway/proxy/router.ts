/**
 * The router, compiled once per snapshot, ordered as Kong 3.9's
 * traditional_compatible router orders routes (kong/router/transform.lua
 * get_priority), most significant first:
 *   1. how many of methods, hosts, headers, snis, paths the route sets;
 *   2. hosts without wildcards (plain_host_only);
 *   3. the number of headers;
 *   4. a regex path (`~…`) over a plain one;
 *   5. regex_priority (regex paths only);
 *   6. the plain prefix's length;
 * then the older route. A route mixing regex and plain paths is split, as
 * Kong does. Plain paths are string prefixes (not segment-aware); regex paths
 * are anchored at the start and run on RE2 (regex.ts). `hosts` accept exact
 * names or `*.` / `.*` wildcards, with an optional port.
 */
import type { Route } from '../model/types.js';
import { compileRegexPath, isRegexPath, type RegexPath } from './regex.js';

export interface RouteMatcher<T> {
  route: Route;
  target: T;
}

interface Entry<T> {
  prefix: string | null;
  regex: RegexPath | null;
  /** Kong's priority as a tuple, compared left to right. */
  rank: number[];
  created: number;
  hosts: RegExp | null;
  methods: Set<string> | null;
  headers: Array<[string, Set<string>]> | null;
  target: T;
}

export interface Match<T> {
  target: T;
  /** The matched path prefix (for a regex path, the part it matched), or null for routes without paths. */
  prefix: string | null;
  /** Kong's uri_captures for a regex path, else null. */
  captures: Record<string, string> | null;
}

/** A route path that could not be compiled (its route is skipped, the rest keep working). */
export interface RouterProblem {
  routeId: string;
  message: string;
}

function hostsRegex(hosts: string[] | null): RegExp | null {
  if (!hosts || hosts.length === 0) return null;
  const alts = hosts.map((h) => {
    const escaped = h.toLowerCase().replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^.]+');
    return h.includes(':') ? escaped : `${escaped}(?::\\d+)?`;
  });
  return new RegExp(`^(?:${alts.join('|')})$`);
}

function compareRank(a: number[], b: number[]): number {
  for (let i = 0; i < a.length; i++) {
    const d = (b[i] as number) - (a[i] as number);
    if (d !== 0) return d;
  }
  return 0;
}

export class Router<T> {
  private readonly entries: Entry<T>[] = [];
  /** Some route matches on request headers (the caller then passes them). */
  readonly usesHeaders: boolean;
  /** Routes left out because a path did not compile. */
  readonly problems: RouterProblem[] = [];

  constructor(routes: ReadonlyArray<RouteMatcher<T>>) {
    for (const { route, target } of routes) {
      const hosts = hostsRegex(route.hosts);
      const methods = route.methods && route.methods.length ? new Set(route.methods.map((m) => m.toUpperCase())) : null;
      const headers = route.headers
        ? Object.entries(route.headers).map(([k, v]) => [k.toLowerCase(), new Set(v.map((x) => x.toLowerCase()))] as [string, Set<string>])
        : null;
      const headerCount = headers ? headers.length : 0;
      const weight = (hosts ? 1 : 0) + (methods ? 1 : 0) + (headerCount ? 1 : 0) + (route.snis && route.snis.length ? 1 : 0);
      const plainHostOnly = route.hosts !== null && route.hosts.length > 0 && route.hosts.every((h) => !h.includes('*')) ? 1 : 0;
      const paths = route.paths ?? [];
      const regexes: RegexPath[] = [];
      try {
        for (const p of paths) if (isRegexPath(p)) regexes.push(compileRegexPath(p));
      } catch (err) {
        this.problems.push({ routeId: route.id, message: (err as Error).message });
        continue;
      }
      const plain = paths.filter((p) => !isRegexPath(p));
      const base = { created: route.created_at, hosts, methods, headers, target };
      for (const regex of regexes) {
        this.entries.push({ ...base, prefix: null, regex, rank: [weight + 1, plainHostOnly, headerCount, 1, route.regex_priority, 0] });
      }
      for (const prefix of plain) {
        this.entries.push({ ...base, prefix, regex: null, rank: [weight + 1, plainHostOnly, headerCount, 0, 0, prefix.length] });
      }
      if (paths.length === 0) this.entries.push({ ...base, prefix: null, regex: null, rank: [weight, plainHostOnly, headerCount, 0, 0, 0] });
    }
    this.usesHeaders = this.entries.some((e) => e.headers !== null && e.headers.length > 0);
    this.entries.sort((a, b) => compareRank(a.rank, b.rank) || a.created - b.created);
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
      if (e.regex !== null) {
        const m = e.regex.match(path);
        if (m === null) continue;
        return { target: e.target, prefix: m.matched, captures: m.captures };
      }
      return { target: e.target, prefix: e.prefix, captures: null };
    }
    return null;
  }
}
