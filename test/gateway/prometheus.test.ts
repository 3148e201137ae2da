/**
 * Issue 26: the native gateway's prometheus plugin. The real `hospital-api
 * gateway` child is configured through its admin API as Kong would be (a
 * global `prometheus` instance, services, routes, an upstream, key-auth),
 * real traffic goes through its proxy to a real upstream, and both /metrics
 * (admin API and the status listener) are scraped. Every metric family it
 * shows must be one of Kong 3.9's, with Kong's type and label names, so a
 * dashboard built for Kong's plugin reads this gateway unchanged.
 */
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGatewayProcess, type GatewayProcess } from '../helpers/gateway-process.js';
import { removeTempDirs, tempDir } from '../helpers/tmp.js';
import { checkMetrics, hasPromtool } from '../monitoring/promtool.js';

/**
 * Kong 3.9.3's families (Kong/kong kong/plugins/prometheus/exporter.lua `init`,
 * prometheus.lua DEFAULT_ERROR_METRIC_NAME): type and label names, HTTP
 * subsystem, traditional mode. Histograms list their base name.
 */
const KONG_FAMILIES: Record<string, { type: string; labels: string[] }> = {
  kong_nginx_connections_total: { type: 'gauge', labels: ['node_id', 'subsystem', 'state'] },
  kong_nginx_requests_total: { type: 'gauge', labels: ['node_id', 'subsystem'] },
  kong_nginx_timers: { type: 'gauge', labels: ['state'] },
  kong_datastore_reachable: { type: 'gauge', labels: [] },
  kong_node_info: { type: 'gauge', labels: ['node_id', 'version'] },
  kong_upstream_target_health: { type: 'gauge', labels: ['upstream', 'target', 'address', 'state', 'subsystem'] },
  kong_memory_workers_lua_vms_bytes: { type: 'gauge', labels: ['node_id', 'pid', 'kong_subsystem'] },
  kong_memory_lua_shared_dict_bytes: { type: 'gauge', labels: ['node_id', 'shared_dict', 'kong_subsystem'] },
  kong_memory_lua_shared_dict_total_bytes: { type: 'gauge', labels: ['node_id', 'shared_dict', 'kong_subsystem'] },
  kong_http_requests_total: { type: 'counter', labels: ['service', 'route', 'code', 'source', 'workspace', 'consumer'] },
  kong_kong_latency_ms: { type: 'histogram', labels: ['service', 'route', 'workspace'] },
  kong_upstream_latency_ms: { type: 'histogram', labels: ['service', 'route', 'workspace'] },
  kong_request_latency_ms: { type: 'histogram', labels: ['service', 'route', 'workspace'] },
  kong_bandwidth_bytes: { type: 'counter', labels: ['service', 'route', 'direction', 'workspace', 'consumer'] },
  kong_ai_llm_requests_total: { type: 'counter', labels: ['ai_provider', 'ai_model', 'cache_status', 'vector_db', 'embeddings_provider', 'embeddings_model', 'workspace'] },
  kong_ai_llm_cost_total: { type: 'counter', labels: ['ai_provider', 'ai_model', 'cache_status', 'vector_db', 'embeddings_provider', 'embeddings_model', 'workspace'] },
  kong_ai_llm_tokens_total: { type: 'counter', labels: ['ai_provider', 'ai_model', 'cache_status', 'vector_db', 'embeddings_provider', 'embeddings_model', 'token_type', 'workspace'] },
  kong_ai_llm_provider_latency_ms: { type: 'histogram', labels: ['ai_provider', 'ai_model', 'cache_status', 'vector_db', 'embeddings_provider', 'embeddings_model', 'workspace'] },
  kong_nginx_metric_errors_total: { type: 'counter', labels: [] },
};

/** Kong families with nothing to measure here: nginx timers and shared dicts, AI plugins (docs/gateway-proxy.md). */
const NOT_APPLICABLE = [
  'kong_nginx_timers',
  'kong_memory_lua_shared_dict_bytes',
  'kong_memory_lua_shared_dict_total_bytes',
  'kong_ai_llm_requests_total',
  'kong_ai_llm_cost_total',
  'kong_ai_llm_tokens_total',
  'kong_ai_llm_provider_latency_ms',
];

/** Kong's exporter.lua KONG_LATENCY_BUCKETS and UPSTREAM_LATENCY_BUCKETS. */
const KONG_BUCKETS = ['1', '2', '5', '7', '10', '15', '20', '30', '50', '75', '100', '200', '500', '750', '1000', '3000', '6000', '+Inf'];
const UPSTREAM_BUCKETS = ['25', '50', '80', '100', '250', '400', '700', '1000', '2000', '5000', '10000', '30000', '60000', '+Inf'];

interface Family {
  type: string;
  help: string;
  /** Label names of each series, sorted and joined, without `le`. */
  labelSets: Set<string>;
  samples: Array<{ name: string; labels: Record<string, string>; value: number }>;
}

/** Reads a text exposition into families (HELP/TYPE and samples). Linear regexes only. */
function parseExposition(text: string): Map<string, Family> {
  const families = new Map<string, Family>();
  const family = (name: string): Family => {
    let f = families.get(name);
    if (!f) {
      f = { type: '', help: '', labelSets: new Set(), samples: [] };
      families.set(name, f);
    }
    return f;
  };
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const meta = /^# (HELP|TYPE) (\S+) (.*)$/.exec(line);
    if (meta) {
      if (meta[1] === 'TYPE') family(meta[2]!).type = meta[3]!;
      else family(meta[2]!).help = meta[3]!;
      continue;
    }
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) throw new Error(`unparsable line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!;
    const name = m[1]!;
    const base = [...families.keys()].find((f) => families.get(f)!.type === 'histogram' && [`${f}_bucket`, `${f}_count`, `${f}_sum`].includes(name)) ?? name;
    const f = family(base);
    f.samples.push({ name, labels, value: Number(m[3]) });
    f.labelSets.add(Object.keys(labels).filter((k) => k !== 'le').sort().join(','));
  }
  return families;
}

function series(f: Map<string, Family>, name: string, labels: Record<string, string>): number | undefined {
  for (const fam of f.values()) {
    for (const s of fam.samples) {
      if (s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v) && Object.keys(s.labels).length === Object.keys(labels).length) return s.value;
    }
  }
  return undefined;
}

interface Running extends GatewayProcess {
  status: string;
}

async function startGatewayWithStatus(state: string): Promise<Running> {
  const g = await startGatewayProcess(state, ['--status-listen', '127.0.0.1:0']);
  return { ...g, status: g.status! };
}


async function admin(g: Running, method: string, path: string, body?: unknown): Promise<{ status: number; json: any }> {
  const res = await request(`${g.admin}${path}`, {
    method: method as 'POST',
    headers: { 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.body.text();
  return { status: res.statusCode, json: text ? JSON.parse(text) : null };
}

async function proxied(g: Running, path: string, headers: Record<string, string> = {}): Promise<number> {
  const res = await request(`${g.proxy}${path}`, { headers });
  await res.body.text();
  return res.statusCode;
}

async function scrape(url: string): Promise<{ status: number; type: string; text: string }> {
  const res = await request(`${url}/metrics`);
  return { status: res.statusCode, type: String(res.headers['content-type']), text: await res.body.text() };
}

let upstream: Server;
let upstreamPort: number;
let gw: Running;

beforeAll(async () => {
  upstream = createServer((req, res) => {
    res.writeHead(req.url?.includes('fail') ? 500 : 200, { 'content-type': 'text/plain' });
    res.end('hello from upstream');
  });
  upstream.listen(0, '127.0.0.1');
  await once(upstream, 'listening');
  upstreamPort = (upstream.address() as AddressInfo).port;
  gw = await startGatewayWithStatus(join(tempDir('gw-prometheus-'), 'state.json'));
});

afterAll(async () => {
  gw?.child.kill('SIGTERM');
  await gw?.child.catch(() => undefined);
  upstream?.close();
  removeTempDirs();
});

describe('prometheus plugin (native gateway)', () => {
  it('serves /metrics on the admin API and the status listener before any instance: node, connections, datastore only', async () => {
    for (const url of [gw.admin, gw.status]) {
      const r = await scrape(url);
      expect(r.status).toBe(200);
      expect(r.type).toBe('text/plain; charset=UTF-8');
      const f = parseExposition(r.text);
      expect([...f.keys()].sort()).toEqual(['kong_datastore_reachable', 'kong_memory_workers_lua_vms_bytes', 'kong_nginx_connections_total', 'kong_nginx_requests_total', 'kong_node_info']);
      expect(series(f, 'kong_datastore_reachable', {})).toBe(1);
    }
    const nodeId = (await admin(gw, 'GET', '/')).json.node_id as string;
    const f = parseExposition((await scrape(gw.status)).text);
    expect(series(f, 'kong_node_info', { node_id: nodeId, version: '3.9.1' })).toBe(1);
    // The status listener answers /metrics only, with Kong's bodies otherwise.
    const other = await request(`${gw.status}/status`);
    expect([other.statusCode, await other.body.json()]).toEqual([404, { message: 'Not found' }]);
    const post = await request(`${gw.status}/metrics`, { method: 'POST' });
    expect([post.statusCode, await post.body.json()]).toEqual([405, { message: 'Method not allowed' }]);
  });

  it("accepts Kong's prometheus config (every switch, defaults off) and refuses an unknown field", async () => {
    const bad = await admin(gw, 'POST', '/plugins', { name: 'prometheus', config: { per_consumer: 'maybe', colour: 1 } });
    expect(bad.status).toBe(400);
    expect(bad.json.fields.config).toEqual({ per_consumer: 'expected a boolean', colour: 'unknown field' });
    const created = await admin(gw, 'POST', '/plugins', { name: 'prometheus' });
    expect(created.status).toBe(201);
    expect(created.json.config).toEqual({
      per_consumer: false,
      status_code_metrics: false,
      ai_metrics: false,
      latency_metrics: false,
      bandwidth_metrics: false,
      upstream_health_metrics: false,
    });
    const on = await admin(gw, 'PATCH', `/plugins/${created.json.id}`, {
      config: { per_consumer: true, status_code_metrics: true, latency_metrics: true, bandwidth_metrics: true, upstream_health_metrics: true },
    });
    expect(on.status).toBe(200);
  });

  it("after traffic shows only Kong's families, with Kong's types, label names and buckets, and counts each request as Kong does", async () => {
    expect((await admin(gw, 'POST', '/services', { name: 'fhir', url: `http://127.0.0.1:${upstreamPort}` })).status).toBe(201);
    expect((await admin(gw, 'POST', '/services/fhir/routes', { name: 'open', paths: ['/open'] })).status).toBe(201);
    expect((await admin(gw, 'POST', '/services/fhir/routes', { name: 'secure', paths: ['/secure'] })).status).toBe(201);
    expect((await admin(gw, 'POST', '/routes/secure/plugins', { name: 'key-auth' })).status).toBe(201);
    expect((await admin(gw, 'POST', '/consumers', { username: 'alice' })).status).toBe(201);
    expect((await admin(gw, 'POST', '/consumers/alice/key-auth', { key: 'alice-test-key-1' })).status).toBe(201);
    expect((await admin(gw, 'POST', '/upstreams', { name: 'pool' })).status).toBe(201);
    expect((await admin(gw, 'POST', '/upstreams/pool/targets', { target: `127.0.0.1:${upstreamPort}` })).status).toBe(201);
    expect((await admin(gw, 'POST', '/services', { name: 'balanced', host: 'pool', port: 80 })).status).toBe(201);
    expect((await admin(gw, 'POST', '/services/balanced/routes', { paths: ['/balanced'] })).status).toBe(201);

    expect(await proxied(gw, '/open/ok')).toBe(200);
    expect(await proxied(gw, '/open/ok')).toBe(200);
    expect(await proxied(gw, '/open/fail')).toBe(500);
    expect(await proxied(gw, '/secure/x')).toBe(401);
    expect(await proxied(gw, '/secure/x', { apikey: 'alice-test-key-1' })).toBe(200);
    expect(await proxied(gw, '/balanced/x')).toBe(200);
    expect(await proxied(gw, '/nowhere')).toBe(404);

    const admin1 = await scrape(gw.admin);
    const status1 = await scrape(gw.status);
    const f = parseExposition(status1.text);
    const shown = [...f.keys()].sort();
    expect(shown).toEqual(Object.keys(KONG_FAMILIES).filter((n) => !NOT_APPLICABLE.includes(n)).sort());
    for (const name of shown) {
      const kong = KONG_FAMILIES[name]!;
      expect(f.get(name)!.type, name).toBe(kong.type);
      expect([...f.get(name)!.labelSets], name).toEqual([[...kong.labels].sort().join(',')]);
    }
    // Both listeners serve the same families.
    expect([...parseExposition(admin1.text).keys()].sort()).toEqual(shown);

    const open = { service: 'fhir', route: 'open', workspace: 'default' };
    expect(series(f, 'kong_http_requests_total', { ...open, code: '200', source: 'service', consumer: '' })).toBe(2);
    expect(series(f, 'kong_http_requests_total', { ...open, code: '500', source: 'service', consumer: '' })).toBe(1);
    // key-auth's 401 is Kong's own answer; the log phase still runs (Kong collects every plugin of the route).
    expect(series(f, 'kong_http_requests_total', { service: 'fhir', route: 'secure', workspace: 'default', code: '401', source: 'kong', consumer: '' })).toBe(1);
    expect(series(f, 'kong_http_requests_total', { service: 'fhir', route: 'secure', workspace: 'default', code: '200', source: 'service', consumer: 'alice' })).toBe(1);
    // A route without a name is labelled by its id; a request that matched no route is not counted.
    const balancedRoute = (await admin(gw, 'GET', '/services/balanced/routes')).json.data[0].id as string;
    expect(series(f, 'kong_http_requests_total', { service: 'balanced', route: balancedRoute, workspace: 'default', code: '200', source: 'service', consumer: '' })).toBe(1);
    expect(f.get('kong_http_requests_total')!.samples.reduce((n, s) => n + s.value, 0)).toBe(6);

    const les = (name: string) => f.get(name)!.samples.filter((s) => s.name === `${name}_bucket` && s.labels.route === 'open').map((s) => s.labels.le);
    expect(les('kong_kong_latency_ms')).toEqual(KONG_BUCKETS);
    expect(les('kong_upstream_latency_ms')).toEqual(UPSTREAM_BUCKETS);
    expect(les('kong_request_latency_ms')).toEqual(UPSTREAM_BUCKETS);
    expect(series(f, 'kong_request_latency_ms_count', open)).toBe(3);
    // No upstream answered the 401: its request is timed, its upstream latency is not.
    const secure = { service: 'fhir', route: 'secure', workspace: 'default' };
    expect(series(f, 'kong_request_latency_ms_count', secure)).toBe(2);
    expect(series(f, 'kong_upstream_latency_ms_count', secure)).toBe(1);

    const egress = series(f, 'kong_bandwidth_bytes', { ...open, direction: 'egress', consumer: '' });
    const ingress = series(f, 'kong_bandwidth_bytes', { ...open, direction: 'ingress', consumer: '' });
    expect(egress).toBeGreaterThan(3 * 'hello from upstream'.length);
    expect(ingress).toBeGreaterThan(3 * 'GET /open/ok HTTP/1.1\r\n'.length);

    const target = `127.0.0.1:${upstreamPort}`;
    for (const [state, value] of [['healthchecks_off', 1], ['healthy', 0], ['unhealthy', 0], ['dns_error', 0]] as const) {
      expect(series(f, 'kong_upstream_target_health', { upstream: 'pool', target, address: target, state, subsystem: 'http' }), state).toBe(value);
    }
    expect(series(f, 'kong_nginx_metric_errors_total', {})).toBe(0);
    const nodeId = (await admin(gw, 'GET', '/')).json.node_id as string;
    expect(series(f, 'kong_nginx_requests_total', { node_id: nodeId, subsystem: 'http' })).toBe(7);
    expect(series(f, 'kong_nginx_connections_total', { node_id: nodeId, subsystem: 'http', state: 'total' })).toBe(7);
    expect(series(f, 'kong_nginx_connections_total', { node_id: nodeId, subsystem: 'http', state: 'accepted' })).toBeGreaterThanOrEqual(1);
  });

  it.skipIf(!hasPromtool)("is an exposition promtool reads, whose only findings are Kong's own names", async () => {
    const r = await checkMetrics((await scrape(gw.status)).text);
    // Kong's names fail promtool's lint (exit 3), exactly as Kong 3.9's own output does; a parse error would be exit 1.
    expect(r.exitCode).toBe(3);
    const findings = r.output.split('\n').filter(Boolean).sort();
    expect(findings).toEqual([
      'kong_bandwidth_bytes counter metrics should have "_total" suffix',
      'kong_kong_latency_ms metric names should not contain abbreviated units',
      'kong_nginx_connections_total non-counter metrics should not have "_total" suffix',
      'kong_nginx_requests_total non-counter metrics should not have "_total" suffix',
      'kong_request_latency_ms metric names should not contain abbreviated units',
      'kong_upstream_latency_ms metric names should not contain abbreviated units',
    ]);
  });

  it('stops showing the per-request families once no instance is configured, and keeps the counts for when one comes back', async () => {
    const id = (await admin(gw, 'GET', '/plugins')).json.data.find((p: { name: string }) => p.name === 'prometheus').id as string;
    expect((await admin(gw, 'DELETE', `/plugins/${id}`)).status).toBe(204);
    expect(await proxied(gw, '/open/ok')).toBe(200);
    const off = parseExposition((await scrape(gw.status)).text);
    expect(off.has('kong_http_requests_total')).toBe(false);
    expect(off.has('kong_upstream_target_health')).toBe(true);
    expect((await admin(gw, 'POST', '/plugins', { name: 'prometheus', config: { status_code_metrics: true } })).status).toBe(201);
    const back = parseExposition((await scrape(gw.status)).text);
    expect(series(back, 'kong_http_requests_total', { service: 'fhir', route: 'open', workspace: 'default', code: '200', source: 'service', consumer: '' })).toBe(2);
  });
});
