/**
 * Issue 23, the route-reachability logic on its own (src/checks/fhir-reach.ts):
 * which routes reach the FHIR server whatever the names (service host:port,
 * upstream targets), which credential plugin runs by Kong's precedence, and
 * the probe request derived from a route. The whole check against real
 * gateways is test/e2e/broken-install.test.ts and its docker twin.
 */
import { describe, expect, it } from 'vitest';
import { fhirRoutes, gatewayRoutes, probePath, probeRequest, reachOf, splitHostPort, type GatewayReach } from '../../src/checks/fhir-reach.js';
import { canonicalIp } from '../../src/runtime/gateway-reach.js';
import type { HostResolution } from '../../src/runtime/types.js';
import { configSha256, effectiveConfig, type GatewayObject, type GatewaySnapshot } from '../../src/checks/gateway-snapshot.js';

/** The FHIR server on loopback at 18080 (a native install), and how the gateway's resolver answers each name. */
const FHIR: GatewayReach = {
  listeners: [{ name: 'FHIR server', port: 18080, ranges: ['127.0.0.0/8', '0.0.0.0/32'] }],
  resolutions: new Map<string, HostResolution>([
    ['127.0.0.1', { addresses: ['127.0.0.1'] }],
    ['127.0.0.2', { addresses: ['127.0.0.2'] }],
    ['localhost', { addresses: ['127.0.0.1'] }],
    ['example.org', { addresses: ['93.184.215.14'] }],
    ['fhir-pool', { error: 'ENOTFOUND' }],
  ]),
};

function snapshot(extra: Partial<GatewaySnapshot> = {}): GatewaySnapshot {
  return {
    services: [
      { id: 's1', name: 'fhir-api-key-auth', protocol: 'http', host: '127.0.0.1', port: 18080, path: '/fhir', enabled: true },
      { id: 's2', name: 'elsewhere', protocol: 'http', host: '127.0.0.1', port: 9999, path: '/', enabled: true },
      ...(extra.services ?? []),
    ],
    routes: [
      { id: 'r1', name: 'fhir-api-key-auth-route', service: { id: 's1' }, paths: ['/fhir-api-key-auth'], protocols: ['https'] },
      { id: 'r2', name: 'other', service: { id: 's2' }, paths: ['/other'], protocols: ['http', 'https'] },
      ...(extra.routes ?? []),
    ],
    upstreams: extra.upstreams ?? [],
    targets: extra.targets ?? [],
    plugins: [
      { id: 'p1', name: 'key-auth', service: { id: 's1' }, route: null, consumer: null, enabled: true, protocols: ['grpc', 'grpcs', 'http', 'https'], config: { anonymous: null } },
      ...(extra.plugins ?? []),
    ],
    consumers: [{ id: 'c1', username: 'hospital-a' }, ...(extra.consumers ?? [])],
  };
}

const problems = (s: GatewaySnapshot) => Object.fromEntries(fhirRoutes(s, FHIR).map((r) => [r.route, r.problems]));

describe('which routes reach the FHIR server', () => {
  it('by host and port, whatever the names; a service elsewhere is not listed', () => {
    expect(problems(snapshot())).toEqual({ 'fhir-api-key-auth-route': [] });
  });

  it('a new service to the FHIR server under another name, another path, another loopback address, no plugin: open', () => {
    const s = snapshot({
      services: [{ id: 's3', name: 'reporting', host: '127.0.0.2', port: 18080, path: '/', enabled: true }],
      routes: [{ id: 'r3', name: 'open', service: { id: 's3' }, paths: ['/open'], protocols: ['https'] }],
    });
    expect(problems(s).open).toEqual(['no enabled key-auth or basic-auth runs on https']);
    expect(fhirRoutes(s, FHIR).find((r) => r.route === 'open')).toMatchObject({ service: 'reporting', via: '127.0.0.2:18080 (FHIR server)', guards: [{ scheme: 'https', plugin: null }] });
  });

  it('through an upstream whose target is the FHIR server (Kong default target port 8000 when none is given)', () => {
    const s = snapshot({
      services: [{ id: 's3', name: 'pooled', host: 'fhir-pool', port: 80, enabled: true }],
      routes: [{ id: 'r3', name: 'via-pool', service: { id: 's3' }, paths: ['/pool'], protocols: ['https'] }],
      upstreams: [{ id: 'u1', name: 'fhir-pool' }],
      targets: [{ id: 't1', upstream: { id: 'u1' }, target: 'example.org' }, { id: 't2', upstream: { id: 'u1' }, target: 'localhost:18080' }],
    });
    expect(fhirRoutes(s, FHIR).map((r) => [r.route, r.via])).toEqual([['fhir-api-key-auth-route', '127.0.0.1:18080 (FHIR server)'], ['via-pool', 'localhost:18080 → 127.0.0.1 (FHIR server)']]);
    const elsewhere = { ...s, targets: [{ id: 't1', upstream: { id: 'u1' }, target: 'localhost' }] };
    expect(fhirRoutes(elsewhere, FHIR).map((r) => r.route)).toEqual(['fhir-api-key-auth-route']);
  });

  it('issue 43: by the address a name resolves to where the gateway resolves it, whatever the spelling', () => {
    const spellings = ['vm', '0x7f000001', '2130706433', '127.1', 'LOCALHOST', '::ffff:127.0.0.1', '0.0.0.0', 'fhir.hospital.test'];
    const reach: GatewayReach = {
      listeners: FHIR.listeners,
      // as getaddrinfo(3) answers them on a host whose /etc/hosts names vm and fhir.hospital.test
      resolutions: new Map<string, HostResolution>([...FHIR.resolutions, ...spellings.map((h): [string, HostResolution] => [h.toLowerCase(), { addresses: [canonicalIp(h) ?? '127.0.0.1'] }])]),
    };
    for (const host of spellings) {
      const s = snapshot({
        services: [{ id: 's3', name: 'spelled', host, port: 18080, enabled: true }],
        routes: [{ id: 'r3', name: 'open', service: { id: 's3' }, paths: ['/open'], protocols: ['https'] }],
      });
      const open = fhirRoutes(s, reach).find((r) => r.route === 'open');
      expect(open?.problems, host).toEqual(['no enabled key-auth or basic-auth runs on https']);
      expect(open!.via, host).toMatch(/\(FHIR server\)$/);
      // another port of the same host is not the FHIR server
      const other = snapshot({ services: [{ id: 's3', name: 'spelled', host, port: 18081, enabled: true }], routes: [{ id: 'r3', name: 'open', service: { id: 's3' }, paths: ['/open'] }] });
      expect(fhirRoutes(other, reach).map((r) => r.route), host).toEqual(['fhir-api-key-auth-route']);
    }
  });

  it('issue 43: an IPv4-mapped or IPv6 address matches as the kernel connects to it; a dual-stack wildcard answers on every address of its host', () => {
    const wildcard: GatewayReach = {
      listeners: [{ name: 'FHIR server', port: 18080, ranges: ['127.0.0.0/8', '0.0.0.0/32', '192.0.2.10/32', '::1/128', '::/128'] }],
      resolutions: new Map([
        ['lan', { addresses: ['192.0.2.10'] }],
        ['mapped', { addresses: ['::ffff:c000:20a'] }],
        ['six', { addresses: ['::1'] }],
        ['away', { addresses: ['192.0.2.11'] }],
      ]),
    };
    expect(reachOf({ host: 'lan', port: 18080 }, wildcard)).toBe('lan:18080 → 192.0.2.10 (FHIR server)');
    expect(reachOf({ host: 'mapped', port: 18080 }, wildcard)).toBe('mapped:18080 → ::ffff:c000:20a (FHIR server)');
    expect(reachOf({ host: 'six', port: 18080 }, wildcard)).toBe('six:18080 → ::1 (FHIR server)');
    expect(reachOf({ host: 'away', port: 18080 }, wildcard)).toBeNull();
    expect(canonicalIp('::ffff:7f00:1')).toBe('127.0.0.1');
    expect(canonicalIp('[::FFFF:127.0.0.1]')).toBe('127.0.0.1');
    expect(canonicalIp('fe80::1%eth0')).toBe('fe80::1');
    expect(canonicalIp('0x7f000001')).toBeNull();
  });

  it('issue 43: a host the gateway cannot resolve may reach the FHIR server: its route is judged as one that does (fail closed)', () => {
    const s = snapshot({
      services: [{ id: 's3', name: 'nowhere', host: 'fhir-pool', port: 80, enabled: true }, { id: 's4', name: 'unasked', host: 'never-asked', port: 80, enabled: true }],
      routes: [{ id: 'r3', name: 'unresolved', service: { id: 's3' }, paths: ['/u'], protocols: ['https'] }, { id: 'r4', name: 'unasked', service: { id: 's4' }, paths: ['/n'], protocols: ['https'] }],
    });
    const routes = fhirRoutes(s, FHIR);
    expect(routes.find((r) => r.route === 'unresolved')).toMatchObject({ via: 'fhir-pool:80 (not resolved: ENOTFOUND)', problems: ['no enabled key-auth or basic-auth runs on https'] });
    expect(routes.find((r) => r.route === 'unasked')).toMatchObject({ via: 'never-asked:80 (not resolved)' });
    // elsewhere: listed among all routes with no via, and not among those that reach FHIR
    expect(gatewayRoutes(s, FHIR).find((r) => r.route === 'other')).toMatchObject({ via: null, dataRequest: { path: '/other/Patient' } });
  });

  it('issue 43: a route to the FHIR server that takes a protocol the check cannot probe is not proven closed', () => {
    const s = snapshot();
    s.routes[0]!.protocols = ['https', 'grpcs'];
    expect(problems(s)['fhir-api-key-auth-route']).toEqual(['takes grpcs (not probed: not proven closed)']);
  });

  it('a route of a disabled service is absent (Kong), and a route without a service goes nowhere', () => {
    const s = snapshot({
      services: [{ id: 's3', name: 'off', host: '127.0.0.1', port: 18080, enabled: false }],
      routes: [{ id: 'r3', name: 'off-route', service: { id: 's3' }, paths: ['/off'] }, { id: 'r4', name: 'no-service', service: null, paths: ['/x'] }],
    });
    expect(Object.keys(problems(s))).toEqual(['fhir-api-key-auth-route']);
  });
});

describe('what guards a route (Kong plugins_iterator precedence)', () => {
  /** The base snapshot with `plugins` added (one with id p1 replaces the service's key-auth) and the route's protocols set. */
  const withPlugins = (plugins: GatewayObject[], routeProtocols?: string[] | null) => {
    const s = snapshot();
    s.plugins = [...(plugins.some((x) => x.id === 'p1') ? [] : s.plugins), ...plugins];
    if (routeProtocols !== undefined) s.routes[0]!.protocols = routeProtocols;
    return problems(s)['fhir-api-key-auth-route'];
  };

  it('plain http on the route, or no protocols (Kong default http and https), is a problem', () => {
    expect(withPlugins([], ['http', 'https'])).toEqual(['takes plain http']);
    expect(withPlugins([], null)).toEqual(['takes plain http']);
  });

  it('a disabled auth plugin does not count', () => {
    expect(withPlugins([{ id: 'p1', name: 'key-auth', service: { id: 's1' }, route: null, consumer: null, enabled: false, config: { anonymous: null } }])).toEqual([
      'no enabled key-auth or basic-auth runs on https',
    ]);
  });

  it('anonymous on the service plugin names the consumer', () => {
    expect(withPlugins([{ id: 'p1', name: 'key-auth', service: { id: 's1' }, route: null, consumer: null, enabled: true, config: { anonymous: 'c1' } }])).toEqual([
      'key-auth (service fhir-api-key-auth) has anonymous set (consumer hospital-a)',
    ]);
  });

  it('a route-scoped instance with anonymous overrides the service one; a route-scoped one on another route does not', () => {
    const anon = { id: 'p2', name: 'key-auth', service: null, route: { id: 'r1' }, consumer: null, enabled: true, config: { anonymous: 'c1' } };
    expect(withPlugins([anon])).toEqual(['key-auth (route fhir-api-key-auth-route) has anonymous set (consumer hospital-a)']);
    expect(withPlugins([{ ...anon, route: { id: 'r2' } }])).toEqual([]);
    // a disabled route-scoped one is not loaded, so the service one runs
    expect(withPlugins([{ ...anon, enabled: false }])).toEqual([]);
  });

  it('a global basic-auth closes a route that has no plugin of its own; a consumer-scoped one runs only after authentication', () => {
    const s = snapshot({
      services: [{ id: 's3', name: 'reporting', host: 'localhost', port: 18080, enabled: true }],
      routes: [{ id: 'r3', name: 'open', service: { id: 's3' }, paths: ['/open'], protocols: ['https'] }],
      plugins: [{ id: 'p3', name: 'basic-auth', service: null, route: null, consumer: { id: 'c1' }, enabled: true, config: { anonymous: null } }],
    });
    expect(problems(s).open).toEqual(['no enabled key-auth or basic-auth runs on https']);
    s.plugins.push({ id: 'p4', name: 'basic-auth', service: null, route: null, consumer: null, enabled: true, config: { anonymous: null } });
    expect(problems(s).open).toEqual([]);
    expect(fhirRoutes(s, FHIR).find((r) => r.route === 'open')!.guards).toEqual([{ scheme: 'https', plugin: 'basic-auth (global)', problem: null }]);
  });

  it("an auth plugin limited to https leaves a route's http side open", () => {
    expect(withPlugins([{ id: 'p1', name: 'key-auth', service: { id: 's1' }, route: null, consumer: null, enabled: true, protocols: ['https'], config: { anonymous: null } }], ['http', 'https'])).toEqual([
      'takes plain http',
      'no enabled key-auth or basic-auth runs on http',
    ]);
  });

  it('one anonymous instance with another that closes: closed (the plugin without anonymous refuses)', () => {
    expect(withPlugins([{ id: 'p5', name: 'basic-auth', service: { id: 's1' }, route: null, consumer: null, enabled: true, config: { anonymous: 'c1' } }])).toEqual([]);
  });
});

describe('the probe request', () => {
  it('a plain path gets /metadata; no path probes /metadata', () => {
    expect(probePath(['/fhir-api-key-auth'])).toBe('/fhir-api-key-auth/metadata');
    expect(probePath(['/open/'])).toBe('/open/metadata');
    expect(probePath(null)).toBe('/metadata');
    expect(probePath([])).toBe('/metadata');
  });

  it('a regex path: a literal prefix that matches it; none derivable: null (the route fails closed)', () => {
    expect(probePath(['~/fhir-(a|b)'])).toBeNull();
    expect(probePath(['~/open/.*'])).toBe('/open/metadata');
    expect(probePath(['~^/data$'])).toBe('/data');
    expect(probePath(['~/x[0-9]+'])).toBeNull();
    expect(probePath(['~(unclosed'])).toBeNull();
    // the plain one is preferred
    expect(probePath(['~/x[0-9]+', '/plain'])).toBe('/plain/metadata');
    // linear time whatever the pattern (RE2): a pathological one answers at once
    expect(probePath(['~/(a+)+$'])).toBeNull();
  });

  it("honours the route's hosts, methods and headers, and ignores __proto__", () => {
    const headers = JSON.parse('{"x-tenant":["a","b"],"__proto__":["x"]}') as Record<string, string[]>;
    const r = probeRequest({ id: 'r', paths: ['/p'], hosts: ['*.example.org'], methods: ['POST'], headers });
    expect(r).toEqual({ method: 'POST', path: '/p/metadata', headers: { host: 'probe.example.org', 'x-tenant': 'a' } });
    expect(Object.getPrototypeOf(r!.headers)).toBeNull();
    expect(probeRequest({ id: 'r', paths: ['/p'], methods: ['POST', 'GET'] })!.method).toBe('GET');
  });

  it('splits target host:port, IPv6 included', () => {
    expect(splitHostPort('hapi:8080', 8000)).toEqual({ host: 'hapi', port: 8080 });
    expect(splitHostPort('[::1]:18080', 8000)).toEqual({ host: '::1', port: 18080 });
    expect(splitHostPort('Example.org', 8000)).toEqual({ host: 'example.org', port: 8000 });
  });
});

describe('the configuration hash', () => {
  it('ignores ids, timestamps and list order, hides secret-like config values, and changes with any setting', () => {
    const a = snapshot();
    const renumbered = structuredClone(a);
    // the same objects with new ids and timestamps, in another order (as a fresh install makes them)
    for (const o of [...renumbered.services, ...renumbered.routes, ...renumbered.plugins, ...renumbered.consumers]) {
      o.created_at = 123;
      o.updated_at = 456;
    }
    const idMap: Record<string, string> = { s1: 'x1', s2: 'x2', r1: 'y1', r2: 'y2', p1: 'z1', c1: 'w1' };
    const redo = (v: unknown): unknown => (v && typeof v === 'object' && 'id' in v ? { ...(v as object), id: idMap[(v as { id: string }).id] } : v);
    for (const list of [renumbered.services, renumbered.routes, renumbered.plugins, renumbered.consumers]) {
      for (const o of list) {
        o.id = idMap[o.id]!;
        for (const k of ['service', 'route', 'consumer']) if (k in o) o[k] = redo(o[k]);
      }
      list.reverse();
    }
    expect(configSha256(renumbered)).toBe(configSha256(a));
    const changed = structuredClone(a);
    changed.plugins[0]!.config = { anonymous: 'c1' };
    expect(configSha256(changed)).not.toBe(configSha256(a));
    const secret = snapshot({ plugins: [{ id: 'p9', name: 'x', config: { password: 'hunter2-very-secret', client_secret: 's3cr3t-value', key_names: ['apikey'] } }] });
    const text = JSON.stringify(effectiveConfig(secret));
    expect(text).not.toContain('hunter2');
    expect(text).not.toContain('s3cr3t');
    expect(text).toContain('"key_names":["apikey"]');
    expect(text).toContain('"service":"fhir-api-key-auth"');
  });
});
